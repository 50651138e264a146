//! Prints the plan of a workload: `cargo run --release --example explain -- FILE.json [KIND]
//! [ROWS]` (KIND: `default`, `uncoalesced` or a group kind forced; ROWS: groups listed per
//! step, largest first, 8 by default).

use blockcontract::plan::build_plan;
use blockcontract::workload::Workload;
use blockcontract::{CostModel, DynTensor, PlanOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: explain FILE.json [KIND] [ROWS]")?;
    let rows: usize = match std::env::args().nth(3) {
        Some(r) => r
            .parse()
            .map_err(|_| format!("ROWS: expected a count, got {r}"))?,
        None => 8,
    };
    let w = Workload::load(&path)?;
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    println!("calibrated: {}", CostModel::calibrated());
    let opts = match std::env::args().nth(2).as_deref() {
        None | Some("default") => PlanOptions::default(),
        Some("uncoalesced") => PlanOptions::uncoalesced(),
        Some(k) => {
            let kind = blockcontract::GroupKind::ALL
                .into_iter()
                .find(|g| g.name() == k)
                .ok_or_else(|| format!("unknown kind {k}"))?;
            PlanOptions::only(kind)
        }
    };
    let plan = build_plan(&w.contraction, &refs, &opts)?;
    // measure each group once (after a warm-up run)
    blockcontract::exec::execute(&plan, &refs, 1.0, 1, None)?;
    let mut times = Vec::new();
    blockcontract::exec::execute(&plan, &refs, 1.0, 1, Some(&mut times))?;
    let t0 = std::time::Instant::now();
    for _ in 0..20 {
        blockcontract::exec::execute(&plan, &refs, 1.0, 1, None)?;
    }
    println!(
        "execute: {:.1} us per call",
        t0.elapsed().as_secs_f64() / 20.0 * 1e6
    );
    for (i, st) in plan.steps.iter().enumerate() {
        println!(
            "step {i}: output {} elems ({:.2} MB)",
            st.plan.out_len,
            st.plan.out_len as f64 * 8e-6
        );
    }
    for (i, t) in times.iter().enumerate() {
        println!(
            "step {i}: measured {:.1} us over {} groups",
            t.iter().sum::<f64>() * 1e6,
            t.len()
        );
    }
    for (i, st) in plan.steps.iter().enumerate() {
        println!(
            "step {i} with --threads 2: {}",
            blockcontract::exec::threads_of(&st.plan, 2)
        );
    }
    print!("{}", plan.explain_with(Some(&times), rows));
    // what the CUDA executor would launch, planned with the GPU's default constants
    let gpu = build_plan(
        &w.contraction,
        &refs,
        &PlanOptions {
            model: CostModel::gpu_default(),
            ..opts
        },
    )?;
    let layouts: Vec<Vec<_>> = refs
        .iter()
        .map(|t| t.blocks().iter().map(|b| b.layout.clone()).collect())
        .collect();
    let low = blockcontract::exec::device::lower(&gpu, &layouts);
    let grouped = blockcontract::exec::device::lower_with(
        &gpu,
        &layouts,
        blockcontract::exec::device::LowerOptions { grouped: true },
    );
    println!(
        "GPU plan (default GPU constants): {} pair GEMMs -> {} kernel calls; device launches {} ({} GEMM), with grouped GEMM {} ({} GEMM)",
        gpu.pair_gemms(),
        gpu.kernel_calls(),
        low.launches(),
        low.gemm_launches(),
        grouped.launches(),
        grouped.gemm_launches()
    );
    Ok(())
}
