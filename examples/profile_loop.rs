//! Runs one workload's plan in a loop, for profilers: `profile_loop FILE.json [ITERATIONS]`.
//! With `--near` as a third argument, loops over planning instead: structures near the
//! workload's (`Workload::near`), each planned from the previous one's plan; with `--plan`,
//! over planning the workload from scratch.

use blockcontract::exec::execute;
use blockcontract::plan::build_plan;
use blockcontract::plan::cache::spec_fingerprint;
use blockcontract::workload::Workload;
use blockcontract::{DynTensor, PlanCache, PlanOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: profile_loop FILE.json [ITERATIONS] [--near | --plan]")?;
    let n: usize = std::env::args().nth(2).map_or(Ok(1000), |s| s.parse())?;
    let w = Workload::load(&path)?;
    let opts = PlanOptions::default();
    if std::env::args().nth(3).as_deref() == Some("--near") {
        // a ring of structures, each near the workload's; a fresh cache per round, so all
        // but the round's first are planned from the previous structure's plan
        let ring: Vec<Vec<DynTensor<f64>>> = (0..16)
            .map(|s| w.near(s).and_then(|x| x.build_operands::<f64>()))
            .collect::<Result<_, _>>()?;
        let fp = spec_fingerprint(&w.contraction);
        let t0 = std::time::Instant::now();
        let mut templated = 0;
        for _ in 0..n.div_ceil(ring.len()) {
            let cache = PlanCache::new();
            for ops in &ring {
                let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
                std::hint::black_box(cache.get_or_plan(&w.contraction, fp, &refs, &opts)?);
            }
            templated += cache.stats().templated;
        }
        let plans = n.div_ceil(ring.len()) * ring.len();
        println!(
            "{:.1} us per plan ({templated} of {plans} from a template)",
            t0.elapsed().as_secs_f64() / plans as f64 * 1e6
        );
        return Ok(());
    }
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    if std::env::args().nth(3).as_deref() == Some("--plan") {
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(build_plan(&w.contraction, &refs, &opts)?);
        }
        println!(
            "{:.1} us per plan from scratch",
            t0.elapsed().as_secs_f64() / n as f64 * 1e6
        );
        return Ok(());
    }
    let plan = build_plan(&w.contraction, &refs, &opts)?;
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(execute(&plan, &refs, 1.0, 1, None)?);
    }
    println!(
        "{:.1} us per call",
        t0.elapsed().as_secs_f64() / n as f64 * 1e6
    );
    Ok(())
}
