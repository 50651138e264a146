//! The planned executor on 2 threads over 1 thread, alternating in one process (a noisy
//! machine moves both alike): `threads_ratio FILE.json...`, one line per workload with the
//! medians of 60 calls each.

use blockcontract::exec::execute;
use blockcontract::plan::build_plan;
use blockcontract::workload::Workload;
use blockcontract::{DynTensor, PlanOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        return Err("usage: threads_ratio FILE.json...".into());
    }
    let reps = 60;
    for path in files {
        let w = Workload::load(&path)?;
        let ops = w.build_operands::<f64>()?;
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        let plan = build_plan(&w.contraction, &refs, &PlanOptions::default())?;
        let mut ms = [Vec::new(), Vec::new()];
        for _ in 0..reps {
            for (times, threads) in ms.iter_mut().zip([1, 2]) {
                let t0 = std::time::Instant::now();
                std::hint::black_box(execute(&plan, &refs, 1.0, threads, None)?);
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        let [one, two] = ms.map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[reps / 2]
        });
        println!(
            "{:28} 1 thread {:9.3} ms  2 threads {:9.3} ms  2 / 1 {:.2}",
            w.name,
            one,
            two,
            two / one
        );
    }
    Ok(())
}
