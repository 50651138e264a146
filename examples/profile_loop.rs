//! Runs one workload's plan in a loop, for profilers: `profile_loop FILE.json [ITERATIONS]`.
//! With `--near` as a third argument, loops over planning instead: structures near the
//! workload's (`Workload::near`), each planned from the previous one's plan; with `--plan`,
//! over planning the workload from scratch; with `--first`, times each step of a new plan's
//! first run against its later runs, and a later run right after planning again (the first
//! run's extra cost is the executor's data pushed out of the caches by planning).

use blockcontract::exec::execute;
use blockcontract::plan::build_plan;
use blockcontract::plan::cache::spec_fingerprint;
use blockcontract::workload::Workload;
use blockcontract::{DynTensor, PlanCache, PlanOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: profile_loop FILE.json [ITERATIONS] [--near | --plan | --first]")?;
    let n: usize = std::env::args().nth(2).map_or(Ok(1000), |s| s.parse())?;
    let w = Workload::load(&path)?;
    let opts = PlanOptions::default();
    if std::env::args().nth(3).as_deref() == Some("--first") {
        return first_runs(&w, n.max(3), &opts);
    }
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

/// Median per step (microseconds, group times summed) over `n` structures near `w`'s, each
/// planned from the plan of `w`'s structure in a fresh cache: the first run, the second, a
/// run right after planning that structure again (in another fresh cache), and one more.
fn first_runs(
    w: &Workload,
    n: usize,
    opts: &PlanOptions,
) -> Result<(), Box<dyn std::error::Error>> {
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let fp = spec_fingerprint(&w.contraction);
    let mut t: Vec<[Vec<f64>; 4]> = Vec::new();
    let mut bytes = (0, 0, 0);
    for s in 0..n as u64 {
        let near = w.near(0x6669_7273 + s)?;
        let nops = near.build_operands::<f64>()?;
        let nrefs: Vec<&DynTensor<f64>> = nops.iter().collect();
        let cache = PlanCache::new();
        let p0 = cache.get_or_plan(&w.contraction, fp, &refs, opts)?;
        std::hint::black_box(execute(&p0, &refs, 1.0, 1, None)?);
        let plan = cache.get_or_plan(&w.contraction, fp, &nrefs, opts)?;
        bytes = (
            plan.approx_bytes(),
            nops.iter().map(|x| x.data().len() * 8).sum::<usize>(),
            plan.steps.iter().map(|x| x.plan.out_len * 8).sum::<usize>(),
        );
        for k in 0..4 {
            if k == 2 {
                let again = PlanCache::new();
                again.get_or_plan(&w.contraction, fp, &refs, opts)?;
                std::hint::black_box(again.get_or_plan(&w.contraction, fp, &nrefs, opts)?);
            }
            let mut times = Vec::new();
            std::hint::black_box(execute(&plan, &nrefs, 1.0, 1, Some(&mut times))?);
            t.resize_with(times.len(), Default::default);
            for (i, g) in times.iter().enumerate() {
                t[i][k].push(g.iter().sum::<f64>() * 1e6);
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{}: plan {} kB, operands {} kB, step outputs {} kB; per step, medians over {n} near structures (us):",
        w.name,
        bytes.0 / 1000,
        bytes.1 / 1000,
        bytes.2 / 1000
    );
    println!("step   first  second  after replanning  later");
    let mut sum = [0.0; 4];
    for (i, st) in t.iter_mut().enumerate() {
        let m: Vec<f64> = st.iter_mut().map(med).collect();
        for k in 0..4 {
            sum[k] += m[k];
        }
        println!(
            "{i:>4} {:>7.0} {:>7.0} {:>17.0} {:>6.0}",
            m[0], m[1], m[2], m[3]
        );
    }
    println!(
        " sum {:>7.0} {:>7.0} {:>17.0} {:>6.0}",
        sum[0], sum[1], sum[2], sum[3]
    );
    Ok(())
}
