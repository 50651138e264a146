//! Distributed contractions under MPI (feature `mpi`), run by `.ci/run` on 2 and 3 ranks:
//!
//! ```sh
//! cargo test --features mpi --test mpi --no-run
//! mpirun -np 2 target/debug/deps/mpi-<hash>
//! ```
//!
//! (as root add `--allow-run-as-root`, and `--oversubscribe` above the core count). Every
//! check runs on every rank; rank 0 prints one line per check; the process exits non-zero
//! when a check failed on any rank. Run alone (one rank) it checks the same things.

use blockcontract::dist::mpi;
use blockcontract::dist::{Dist, DistTensor, OwnerMap};
use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{
    contract_dyn, Complex64, ContractionSpec, DynTensor, Error, Executor, Leg, Space, Symmetry,
};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Check = Result<String, String>;
/// A named check.
type Named = (&'static str, fn(&Dist) -> Check);

fn workload_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.extension().is_some_and(|e| e == "json")
            && p.file_name().is_some_and(|n| n != "expected.json")
    });
    v.sort();
    v
}

/// Largest element-wise difference relative to the norm of `want`.
fn rel_diff(got: &DynTensor<f64>, want: &DynTensor<f64>) -> f64 {
    let mut d = got.clone();
    if d.axpy(-1.0, want).is_err() {
        return f64::INFINITY;
    }
    d.norm() / want.norm().max(1e-300)
}

fn distribute_all(
    d: &Dist,
    ops: Vec<DynTensor<f64>>,
    map: &OwnerMap,
) -> Result<Vec<DistTensor<f64>>, Error> {
    ops.into_iter().map(|t| d.distribute(t, map)).collect()
}

/// Every shipped workload: the gathered result agrees with `expected.json` and with the
/// single-process planned result to 1e-12 (relative to the norm); messages are never more than
/// the blocks they carry, and fewer on the Hubbard effective Hamiltonians.
fn workloads(d: &Dist) -> Check {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let expected = load_expected(dir.join("expected.json")).map_err(|e| e.to_string())?;
    let files = workload_files();
    if files.len() != 24 {
        return Err(format!("{} workloads found, 24 expected", files.len()));
    }
    let (mut msgs, mut blocks) = (0, 0);
    for f in &files {
        let w = Workload::load(f).map_err(|e| e.to_string())?;
        let ops = w.build_operands::<f64>().map_err(|e| e.to_string())?;
        let dops = distribute_all(d, ops, &OwnerMap::BySector).map_err(|e| e.to_string())?;
        let refs: Vec<&DistTensor<f64>> = dops.iter().collect();
        let (r, stats) = d
            .contract(&w.contraction, &refs, 1.0)
            .map_err(|e| format!("{}: {e}", w.name))?;
        if stats.sent != stats.messages || stats.messages > stats.blocks_transferred {
            return Err(format!(
                "{}: {} messages planned, {} sent, {} blocks transferred",
                w.name, stats.messages, stats.sent, stats.blocks_transferred
            ));
        }
        if w.name.contains("hubbard") && w.name.contains("heff") && d.size() > 1 {
            if stats.messages >= stats.blocks_transferred {
                return Err(format!(
                    "{}: {} messages for {} blocks",
                    w.name, stats.messages, stats.blocks_transferred
                ));
            }
            msgs += stats.messages;
            blocks += stats.blocks_transferred;
        }
        if let Some(full) = d.gather(0, &r).map_err(|e| e.to_string())? {
            let e = &expected[&w.name];
            let (n, c) = (full.norm(), checksum(&full));
            if !e.agrees(n, c, 1e-12) {
                return Err(format!(
                    "{}: norm {n} vs {}, checksum {c} vs {}",
                    w.name, e.norm, e.checksum
                ));
            }
            let (single, _) = w.run::<f64>(Executor::Planned).map_err(|e| e.to_string())?;
            let diff = rel_diff(&full, &single);
            if diff > 1e-12 {
                return Err(format!("{}: differs from one process by {diff:e}", w.name));
            }
        }
    }
    Ok(format!(
        "24 workloads agree with expected.json and one process to 1e-12; Hubbard heff: {msgs} \
         messages for {blocks} blocks crossing ranks"
    ))
}

fn small_case(seed: u64) -> Result<(Vec<DynTensor<f64>>, ContractionSpec), Error> {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(
        &u1,
        &[(vec![-1], 3), (vec![0], 4), (vec![1], 2)],
    )?);
    let a = DynTensor::<f64>::random(vec![Leg::out(&v), Leg::inc(&v)], u1.zero(), seed)?;
    let b = DynTensor::<f64>::random(vec![Leg::out(&v), Leg::inc(&v)], u1.zero(), seed + 1)?;
    let c = DynTensor::<f64>::random(vec![Leg::out(&v), Leg::inc(&v)], u1.zero(), seed + 2)?;
    let spec = ContractionSpec::parse("D[i,l] = A[i,j] * B[j,k] * C[k,l]")?;
    Ok((vec![a, b, c], spec))
}

/// Contracts a small case with every operand on `map`, gathers, compares with one process.
fn with_map(d: &Dist, map: &OwnerMap) -> Result<(), String> {
    let (ops, spec) = small_case(7).map_err(|e| e.to_string())?;
    let refs1: Vec<&DynTensor<f64>> = ops.iter().collect();
    let (want, _) =
        contract_dyn(&spec, &refs1, 0.5, Executor::Planned).map_err(|e| e.to_string())?;
    let dops = distribute_all(d, ops, map).map_err(|e| e.to_string())?;
    let refs: Vec<&DistTensor<f64>> = dops.iter().collect();
    let (r, _) = d.contract(&spec, &refs, 0.5).map_err(|e| e.to_string())?;
    if let Some(full) = d.gather(0, &r).map_err(|e| e.to_string())? {
        let diff = rel_diff(&full, &want);
        if diff > 1e-13 {
            return Err(format!("{map:?}: differs by {diff:e}"));
        }
    }
    Ok(())
}

/// Every block on rank 0, then on the last rank: the other ranks own nothing.
fn ranks_that_own_nothing(d: &Dist) -> Check {
    with_map(d, &OwnerMap::On(0))?;
    let last = d.size() - 1;
    with_map(d, &OwnerMap::Custom(Arc::new(move |_, _| last)))?;
    Ok("every block on one rank (rank 0, then the last): correct".into())
}

/// A tensor with a single block, scattered from rank 0 and contracted.
fn one_block(d: &Dist) -> Check {
    let u1 = Symmetry::u1();
    let s = Arc::new(Space::block(&u1, &[(vec![1], 5)]).map_err(|e| e.to_string())?);
    let t = DynTensor::<f64>::random(vec![Leg::out(&s), Leg::inc(&s)], u1.zero(), 3)
        .map_err(|e| e.to_string())?;
    let spec = ContractionSpec::parse("C[i,k] = A[i,j] * B[j,k]").map_err(|e| e.to_string())?;
    let (want, _) =
        contract_dyn(&spec, &[&t, &t], 1.0, Executor::Planned).map_err(|e| e.to_string())?;
    // only rank 0's values count: the others pass the structure with zeros
    let mine = if d.rank() == 0 {
        t.clone()
    } else {
        t.zeros_like()
    };
    let dt = d
        .scatter(0, &mine, &OwnerMap::BySector)
        .map_err(|e| e.to_string())?;
    let (r, stats) = d
        .contract(&spec, &[&dt, &dt], 1.0)
        .map_err(|e| e.to_string())?;
    if let Some(full) = d.gather(0, &r).map_err(|e| e.to_string())? {
        let diff = rel_diff(&full, &want);
        if diff > 1e-13 {
            return Err(format!("differs by {diff:e}"));
        }
    }
    Ok(format!("one block: correct, {} messages", stats.messages))
}

/// Owner maps that differ between ranks: an error on every rank (no hang), naming the rank.
fn mismatched_owner_maps(d: &Dist) -> Check {
    if d.size() == 1 {
        return Ok("mismatched owner maps: needs 2 ranks (skipped)".into());
    }
    let me = d.rank();
    let map = OwnerMap::Custom(Arc::new(move |k: &[u32], n| (k[0] as usize + me) % n));
    let (ops, _) = small_case(1).map_err(|e| e.to_string())?;
    match distribute_all(d, ops, &map) {
        Err(Error::Distributed { rank: 1, .. }) => {
            Ok("mismatched owner maps: an error on every rank naming rank 1".into())
        }
        Err(e) => Err(format!("unexpected error {e}")),
        Ok(_) => Err("mismatched owner maps accepted".into()),
    }
}

/// An error on one rank only (its owner map sends a block out of range): every rank returns
/// it, with that rank's message.
fn one_rank_fails(d: &Dist) -> Check {
    let failing = d.size() - 1;
    let me = d.rank();
    let map = OwnerMap::Custom(Arc::new(
        move |_: &[u32], n| if me == failing { n } else { 0 },
    ));
    let (ops, _) = small_case(2).map_err(|e| e.to_string())?;
    match distribute_all(d, ops, &map) {
        Err(Error::Distributed { rank, reason, .. })
            if rank == failing && reason.contains("ranks") =>
        {
            Ok(format!(
                "a failure on rank {failing} only: the same error on every rank"
            ))
        }
        Err(e) => Err(format!("unexpected error {e}")),
        Ok(_) => Err("a failing owner map was accepted".into()),
    }
}

/// Operands of different structures on different ranks: an error on every rank.
fn mismatched_structures(d: &Dist) -> Check {
    if d.size() == 1 {
        return Ok("mismatched structures: needs 2 ranks (skipped)".into());
    }
    let (ops, spec) = small_case(3).map_err(|e| e.to_string())?;
    let u1 = Symmetry::u1();
    let other = Arc::new(Space::block(&u1, &[(vec![0], 2 + d.rank())]).map_err(|e| e.to_string())?);
    let odd = DynTensor::<f64>::random(vec![Leg::out(&other), Leg::inc(&other)], u1.zero(), 1)
        .map_err(|e| e.to_string())?;
    let local: Vec<DynTensor<f64>> = vec![odd, ops[1].clone(), ops[2].clone()];
    // each rank's tensors are consistent with themselves: distribute per rank alone fails the
    // structure check
    match distribute_all(d, local, &OwnerMap::BySector) {
        Err(Error::Distributed { .. }) => {
            Ok("mismatched structures: an error on every rank".into())
        }
        Err(e) => Err(format!("unexpected error {e}")),
        Ok(dops) => {
            let refs: Vec<&DistTensor<f64>> = dops.iter().collect();
            match d.contract(&spec, &refs, 1.0) {
                Err(Error::Distributed { .. }) => {
                    Ok("mismatched structures: an error on every rank".into())
                }
                Err(e) => Err(format!("unexpected error {e}")),
                Ok(_) => Err("mismatched structures accepted".into()),
            }
        }
    }
}

/// Complex operands with a conjugated one, against one process; `explain` names the
/// placement and the messages.
fn complex_and_explain(d: &Dist) -> Check {
    let u1 = Symmetry::u1();
    let v = Arc::new(
        Space::block(&u1, &[(vec![-1], 4), (vec![0], 5), (vec![1], 4)])
            .map_err(|e| e.to_string())?,
    );
    let a = DynTensor::<Complex64>::random(
        vec![Leg::out(&v), Leg::inc(&v), Leg::out(&v)],
        u1.charge(&[1]).map_err(|e| e.to_string())?,
        5,
    )
    .map_err(|e| e.to_string())?;
    let spec =
        ContractionSpec::parse("C[i,k] = conj(A)[i,j,l] * A[k,j,l]").map_err(|e| e.to_string())?;
    let (want, _) = contract_dyn(
        &spec,
        &[&a, &a],
        Complex64::new(1.0, 0.5),
        Executor::Planned,
    )
    .map_err(|e| e.to_string())?;
    let da = d
        .distribute(a, &OwnerMap::BySector)
        .map_err(|e| e.to_string())?;
    let (r, _) = d
        .contract(&spec, &[&da, &da], Complex64::new(1.0, 0.5))
        .map_err(|e| e.to_string())?;
    let text = d.explain(&spec, &[&da, &da]).map_err(|e| e.to_string())?;
    if !text.contains("placement of step 0") || !text.contains("messages") {
        return Err(format!("explain lacks the placement:\n{text}"));
    }
    if let Some(full) = d.gather(0, &r).map_err(|e| e.to_string())? {
        let mut diff = full.clone();
        diff.axpy(-Complex64::new(1.0, 0.0), &want)
            .map_err(|e| e.to_string())?;
        if diff.norm() > 1e-13 * want.norm() {
            return Err(format!("complex: differs by {}", diff.norm()));
        }
    }
    Ok("complex with conj: correct; explain shows the placement".into())
}

fn main() {
    let Some(universe) = mpi::initialize() else {
        eprintln!("mpi: MPI could not be initialised");
        std::process::exit(2);
    };
    let world = universe.world();
    let d = match Dist::new(&world) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mpi: {e}");
            std::process::exit(2);
        }
    };
    let checks: [Named; 7] = [
        ("workloads", workloads),
        ("ranks_that_own_nothing", ranks_that_own_nothing),
        ("one_block", one_block),
        ("mismatched_owner_maps", mismatched_owner_maps),
        ("one_rank_fails", one_rank_fails),
        ("mismatched_structures", mismatched_structures),
        ("complex_and_explain", complex_and_explain),
    ];
    let mut failed = 0i32;
    for (name, check) in checks {
        let r = check(&d);
        let mut any = 0i32;
        world.all_reduce_into(&i32::from(r.is_err()), &mut any, SystemOperation::sum());
        failed += i32::from(any > 0);
        match r {
            Ok(m) if d.rank() == 0 => println!("mpi ({} ranks) {name}: ok: {m}", d.size()),
            Err(m) => println!(
                "mpi ({} ranks) {name}: FAILED on rank {}: {m}",
                d.size(),
                d.rank()
            ),
            _ => {}
        }
    }
    if d.rank() == 0 {
        let c = d.message_cost();
        println!(
            "mpi ({} ranks): {} of 7 checks failed; message cost {:.2} us + {:.3} ns/byte",
            d.size(),
            failed,
            c.latency_s * 1e6,
            c.s_per_byte * 1e9
        );
    }
    drop(universe);
    std::process::exit(i32::from(failed > 0));
}
