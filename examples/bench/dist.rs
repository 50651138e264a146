//! `--executor mpi` (feature `mpi`, under `mpirun`): the distributed executor on every rank,
//! alternating with the planned executor on rank 0 alone (the other ranks wait), so the ratio
//! of the two comes from the same run. Rank 0 prints; with `--json` one line per workload with
//! the usual fields plus `messages`, `bytes`, `blocks_transferred` and `ranks`.

use crate::run::stats3;
use crate::Args;
use blockcontract::dist::mpi::collective::SystemOperation;
use blockcontract::dist::mpi::traits::*;
use blockcontract::dist::{Dist, DistTensor, OwnerMap};
use blockcontract::workload::{checksum, Expected, Workload};
use blockcontract::{contract_dyn, DType, Error, Executor, Result};
use std::time::Instant;

/// The slowest rank's time of `f`, started together.
fn timed<X>(world: &impl Communicator, f: impl FnOnce() -> X) -> (X, f64) {
    world.barrier();
    let t0 = Instant::now();
    let x = f();
    let mine = t0.elapsed().as_secs_f64() * 1e3;
    let mut slowest = 0.0f64;
    world.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
    (x, slowest)
}

/// Runs one workload distributed and on rank 0 alone; returns 1 if it failed or disagreed.
pub fn run(
    world: &impl Communicator,
    d: &Dist,
    w: &Workload,
    args: &Args,
    expected: Option<&Expected>,
) -> Result<usize> {
    if w.dtype != DType::F64 {
        return Err(Error::UnsupportedDtype {
            dtype: w.dtype,
            executor: "the mpi bench (f64 workloads)".into(),
        });
    }
    let ops = w.build_operands::<f64>()?;
    let dops: Vec<DistTensor<f64>> = ops
        .iter()
        .map(|t| d.distribute(t.clone(), &OwnerMap::BySector))
        .collect::<Result<_>>()?;
    let drefs: Vec<&DistTensor<f64>> = dops.iter().collect();
    let refs: Vec<_> = ops.iter().collect();
    // warm-up: plans cached on both paths
    let (r, stats) = d.contract(&w.contraction, &drefs, 1.0)?;
    let single_once =
        |root: bool| root.then(|| contract_dyn(&w.contraction, &refs, 1.0, Executor::Planned));
    single_once(d.rank() == 0).transpose()?;
    let (mut dist_ms, mut single_ms) = (Vec::new(), Vec::new());
    for _ in 0..args.repeat {
        let (x, t) = timed(world, || single_once(d.rank() == 0));
        x.transpose()?;
        single_ms.push(t);
        let (x, t) = timed(world, || d.contract(&w.contraction, &drefs, 1.0));
        x?;
        dist_ms.push(t);
    }
    let full = d.gather(0, &r)?;
    let Some(full) = full else {
        return Ok(0);
    };
    let (norm, sum) = (full.norm(), checksum(&full));
    let agrees = expected.map(|e| e.agrees(norm, sum, 1e-10));
    let (min, med, max) = stats3(&dist_ms);
    let (_, single, _) = stats3(&single_ms);
    let ratio = stats.messages as f64 / stats.blocks_transferred.max(1) as f64;
    if args.json {
        let line = serde_json::json!({
            "name": w.name, "executor": "mpi", "ranks": d.size(),
            "time_ms": {"min": min, "median": med, "max": max},
            "single_process_ms": single,
            "messages": stats.messages, "bytes": stats.bytes,
            "blocks_transferred": stats.blocks_transferred,
            "norm": norm, "checksum": sum, "matches_expected": agrees,
        });
        println!("{line}");
    } else {
        println!(
            "{:<28} mpi x{} {:>8.3} ms (min {min:.3}, max {max:.3}) vs one process {single:.3} \
             ms: {:.2}x; {} messages, {} bytes, {} blocks crossed ranks (messages/blocks \
             {ratio:.3})  norm {norm:.10e} checksum {sum:.10e} {}",
            w.name,
            d.size(),
            med,
            single / med,
            stats.messages,
            stats.bytes,
            stats.blocks_transferred,
            match agrees {
                Some(true) => "ok",
                Some(false) => "MISMATCH",
                None => "(no expected)",
            }
        );
    }
    Ok(usize::from(agrees == Some(false)))
}
