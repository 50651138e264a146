//! Runs one workload's plan in a loop, for profilers: `profile_loop FILE.json [ITERATIONS]`.

use blockcontract::exec::execute;
use blockcontract::plan::build_plan;
use blockcontract::workload::Workload;
use blockcontract::{DynTensor, PlanOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: profile_loop FILE.json [ITERATIONS]")?;
    let n: usize = std::env::args().nth(2).map_or(Ok(1000), |s| s.parse())?;
    let w = Workload::load(&path)?;
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let plan = build_plan(&w.contraction, &refs, &PlanOptions::default())?;
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
