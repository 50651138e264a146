//! The measuring tool: runs workload files on chosen executors and prints time, counts and
//! result summaries (one JSON object per line with `--json`).
//!
//! `cargo run --release --example bench -- workloads/*.json [--executor NAME] [--repeat N] [--json]`

use blockcontract::workload::{checksum, load_expected, Expected, Workload};
use blockcontract::{contract_dyn, DType, DynTensor, Executor, Result, RunStats, Scalar};
use clap::Parser;
use num_complex::Complex64;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Time block-sparse contractions on workload files")]
struct Args {
    /// Workload files (blocksparse-workload/1).
    files: Vec<PathBuf>,
    /// Executors to run: pairwise, planned, dense (repeatable).
    #[arg(long = "executor", default_values_t = vec!["pairwise".to_string()])]
    executors: Vec<String>,
    /// Timed repeats after one warm-up.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// expected.json to check results against (default: beside the first file).
    #[arg(long)]
    expected: Option<PathBuf>,
}

struct Outcome {
    stats: RunStats,
    blocks: Vec<(String, usize)>,
    times_ms: Vec<f64>,
    norm: f64,
    checksum: f64,
}

fn run_typed<T: Scalar>(w: &Workload, exec: Executor, repeat: usize) -> Result<Outcome> {
    let ops = w.build_operands::<T>()?;
    let refs: Vec<&DynTensor<T>> = ops.iter().collect();
    let blocks = w
        .contraction
        .operands
        .iter()
        .zip(&ops)
        .map(|(o, t)| (o.name.clone(), t.num_blocks()))
        .collect();
    let (mut result, stats) = contract_dyn(&w.contraction, &refs, T::one(), exec)?;
    let mut times_ms = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t0 = Instant::now();
        let (r, _) = contract_dyn(&w.contraction, &refs, T::one(), exec)?;
        times_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        result = r;
    }
    Ok(Outcome {
        stats,
        blocks,
        times_ms,
        norm: result.norm(),
        checksum: checksum(&result),
    })
}

fn run(w: &Workload, exec: Executor, repeat: usize) -> Result<Outcome> {
    match w.dtype {
        DType::F64 => run_typed::<f64>(w, exec, repeat),
        DType::F32 => run_typed::<f32>(w, exec, repeat),
        DType::C64 => run_typed::<Complex64>(w, exec, repeat),
    }
}

fn stats3(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

fn main() {
    let args = Args::parse();
    if let Err(e) = real_main(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn real_main(args: &Args) -> Result<()> {
    let expected_path = args.expected.clone().or_else(|| {
        args.files
            .first()
            .and_then(|f| f.parent())
            .map(|d| d.join("expected.json"))
    });
    let expected: HashMap<String, Expected> = match &expected_path {
        Some(p) if p.exists() => load_expected(p)?,
        _ => HashMap::new(),
    };
    let mut failures = 0;
    for f in &args.files {
        let w = Workload::load(f)?;
        for ename in &args.executors {
            let exec = Executor::from_name(ename)?;
            let o = match run(&w, exec, args.repeat) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("{}: {}: {e}", w.name, exec.name());
                    failures += 1;
                    continue;
                }
            };
            let (min, med, max) = stats3(&o.times_ms);
            let exp = expected.get(&w.name);
            let agrees = exp.map(|e| e.agrees(o.norm, o.checksum, 1e-10));
            if agrees == Some(false) {
                failures += 1;
            }
            if args.json {
                let blocks: serde_json::Map<String, serde_json::Value> = o
                    .blocks
                    .iter()
                    .map(|(n, b)| (n.clone(), (*b).into()))
                    .collect();
                let line = serde_json::json!({
                    "name": w.name, "executor": exec.name(), "blocks": blocks,
                    "pair_gemms": o.stats.pair_gemms(), "kernel_calls": o.stats.kernel_calls(),
                    "flops": o.stats.flops,
                    "time_ms": {"min": min, "median": med, "max": max},
                    "norm": o.norm, "checksum": o.checksum, "matches_expected": agrees,
                });
                println!("{line}");
            } else {
                println!(
                    "{:<28} {:<9} pairs {:>6} calls {:>6} {:>9.3} GFLOP  median {:>9.3} ms (min {:.3}, max {:.3})  norm {:.12e} checksum {:.12e} {}",
                    w.name,
                    exec.name(),
                    o.stats.pair_gemms(),
                    o.stats.kernel_calls(),
                    o.stats.flops / 1e9,
                    med,
                    min,
                    max,
                    o.norm,
                    o.checksum,
                    match agrees {
                        Some(true) => "ok",
                        Some(false) => "MISMATCH",
                        None => "(no expected)",
                    }
                );
            }
        }
    }
    if failures > 0 {
        eprintln!("{failures} run(s) failed or disagreed with expected.json");
        std::process::exit(1);
    }
    Ok(())
}
