//! The measuring tool: runs workload files on chosen executors, interleaving their repeats,
//! and prints time, kernel counts and result checks; writes a Markdown + SVG report.
//!
//! `cargo run --release --example bench -- workloads/*.json [--executor NAME]... [--repeat N]
//!  [--threads N] [--json] [--explain] [--baseline pairwise] [--report DIR] [--peer PATH]`

#[cfg(feature = "mpi")]
mod dist;
mod gpu;
mod report;
mod run;

use blockcontract::workload::{load_expected, Expected, Workload};
use blockcontract::Result;
use clap::Parser;
use std::collections::HashMap;
use std::path::PathBuf;

/// Command-line options.
#[derive(Parser, Debug, Clone)]
#[command(about = "Time block-sparse contractions on workload files")]
pub struct Args {
    /// Workload files (blocksparse-workload/1); other .json files (expected.json) are skipped.
    pub files: Vec<PathBuf>,
    /// Executors: planned (default), planned-steps, planned-form, pairwise, dense; repeat the flag for several.
    #[arg(long = "executor")]
    pub executors: Vec<String>,
    /// Timed repeats per executor after one warm-up.
    #[arg(long, default_value_t = 7)]
    pub repeat: usize,
    /// Threads for the planned executor.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Print each workload's plan with measured group times.
    #[arg(long)]
    pub explain: bool,
    /// Also run this executor and print the ratio planned / baseline (repeats interleaved).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Write report.md and report.svg into this folder (runs planned and pairwise, and the
    /// peer when --peer is given, and a dense-GEMM peak probe).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// The TeNPy harness (`run_peer.sh`), timed in the same run, alternating with ours.
    #[arg(long)]
    pub peer: Option<PathBuf>,
    /// The pairwise order: `given` (the workload's `order`) or `auto` (ignored: the planner
    /// chooses from the block structure). `--executor planned-auto` runs the planner's choice
    /// beside the given order; `--report` includes it.
    #[arg(long, default_value = "given")]
    pub order: String,
    /// expected.json to check results against (default: beside the first file).
    #[arg(long)]
    pub expected: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    match real_main(&args) {
        Ok(0) => {}
        Ok(n) => {
            eprintln!("{n} run(s) failed or disagreed with expected.json");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

fn real_main(args: &Args) -> Result<usize> {
    let files: Vec<PathBuf> = args
        .files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "expected.json"))
        .cloned()
        .collect();
    let expected_path = args.expected.clone().or_else(|| {
        files
            .first()
            .and_then(|f| f.parent())
            .map(|d| d.join("expected.json"))
    });
    let expected: HashMap<String, Expected> = match &expected_path {
        Some(p) if p.exists() => load_expected(p)?,
        _ => HashMap::new(),
    };
    let mut names: Vec<String> = if args.executors.is_empty() {
        vec!["planned".into()]
    } else {
        args.executors.clone()
    };
    if let Some(b) = &args.baseline {
        if !names.contains(b) {
            names.push(b.clone());
        }
    }
    if args.report.is_some() {
        for e in ["planned", "pairwise", "planned-auto"] {
            if !names.iter().any(|n| n == e) {
                names.push(e.into());
            }
        }
    }
    if names.iter().any(|n| n == "mpi") {
        return mpi_main(args, &files, &expected);
    }
    // the device executors are measured apart (data resident, timed to a stream sync)
    let gpu: Vec<String> = names
        .iter()
        .filter(|n| n.starts_with("cuda"))
        .cloned()
        .collect();
    names.retain(|n| !n.starts_with("cuda"));
    for g in &gpu {
        if g != "cuda" && g != "cuda-pairwise" {
            return Err(blockcontract::Error::UnknownExecutor {
                name: g.clone(),
                expected: "cuda or cuda-pairwise".into(),
            });
        }
    }
    let auto = match args.order.as_str() {
        "given" => false,
        "auto" => true,
        o => {
            return Err(blockcontract::Error::InvalidSpec {
                reason: format!("--order {o}: expected `given` or `auto`"),
            })
        }
    };
    let execs: Vec<run::Runner> = names
        .iter()
        .map(|n| run::Runner::parse(n, auto))
        .collect::<Result<_>>()?;
    let peak = if args.report.is_some() {
        Some(run::peak_gflops())
    } else {
        None
    };
    if let Some(p) = peak {
        eprintln!("dense GEMM peak (faer, 1 thread): {p:.1} GFLOP/s");
    }
    let mut failures = 0;
    let mut rows = Vec::new();
    for f in &files {
        let w = Workload::load(f)?;
        for g in &gpu {
            failures += gpu_run(&w, g, args, &expected);
        }
        if execs.is_empty() {
            continue;
        }
        let m = run::measure(&w, f, &execs, args, peak)?;
        for o in &m.outcomes {
            let agrees = expected
                .get(&w.name)
                .map(|e| e.agrees(o.norm, o.checksum, 1e-10));
            if agrees == Some(false) || o.error.is_some() {
                failures += 1;
            }
            run::print(&w, o, agrees, args.json);
        }
        if let Some(b) = &args.baseline {
            if let (Some(p), Some(q)) = (m.get("planned"), m.get(b)) {
                println!(
                    "{:<28} planned / {b}: {:.3} (medians {:.3} / {:.3} ms, repeats interleaved)",
                    w.name,
                    p.median() / q.median(),
                    p.median(),
                    q.median()
                );
            }
        }
        if args.explain {
            if let Some(text) = &m.explain {
                println!("{text}");
            }
        }
        rows.push(m);
    }
    if let Some(dir) = &args.report {
        report::write(dir, &rows, peak.unwrap_or(f64::NAN), args)?;
        eprintln!(
            "wrote {}/report.md and {}/report.svg",
            dir.display(),
            dir.display()
        );
    }
    Ok(failures)
}

fn gpu_run(w: &Workload, name: &str, args: &Args, expected: &HashMap<String, Expected>) -> usize {
    match gpu::measure(w, name == "cuda-pairwise", args) {
        Ok(o) => {
            let agrees = expected
                .get(&w.name)
                .map(|e| e.agrees(o.norm, o.checksum, 1e-10));
            let (_, med, _) = run::stats3(&o.times_ms);
            println!(
                "{:<28} {:<13} pairs {:>5} launches {:>5} {:>9.3} ms  norm {:.10e} checksum {:.10e} {}",
                w.name,
                name,
                o.pair_gemms,
                o.kernel_calls,
                med,
                o.norm,
                o.checksum,
                match agrees {
                    Some(true) => "ok",
                    Some(false) => "MISMATCH",
                    None => "(no expected)",
                }
            );
            usize::from(agrees == Some(false))
        }
        Err(e) => {
            eprintln!("{}: {name}: {e}", w.name);
            1
        }
    }
}

/// `--executor mpi`: the distributed executor under `mpirun` (every other executor is left
/// out: they would run on every rank at once).
#[cfg(feature = "mpi")]
fn mpi_main(args: &Args, files: &[PathBuf], expected: &HashMap<String, Expected>) -> Result<usize> {
    let universe = blockcontract::dist::mpi::initialize().ok_or_else(|| {
        blockcontract::Error::UnknownExecutor {
            name: "mpi".into(),
            expected: "an MPI runtime (MPI could not be initialised)".into(),
        }
    })?;
    let world = universe.world();
    let d = blockcontract::dist::Dist::new(&world)?;
    if d.rank() == 0 {
        let c = d.message_cost();
        eprintln!(
            "mpi: {} ranks, message cost {:.2} us + {:.3} ns/byte (measured)",
            d.size(),
            c.latency_s * 1e6,
            c.s_per_byte * 1e9
        );
    }
    let mut failures = 0;
    for f in files {
        let w = Workload::load(f)?;
        failures += dist::run(&world, &d, &w, args, expected.get(&w.name))?;
    }
    Ok(failures)
}

#[cfg(not(feature = "mpi"))]
fn mpi_main(_: &Args, _: &[PathBuf], _: &HashMap<String, Expected>) -> Result<usize> {
    Err(blockcontract::Error::UnknownExecutor {
        name: "mpi".into(),
        expected: "a build with the mpi feature (cargo run --release --features mpi --example \
                   bench -- ... --executor mpi, under mpirun)"
            .into(),
    })
}
