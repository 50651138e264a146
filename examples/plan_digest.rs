//! Digests of the plans of workloads: `plan_digest FILE.json...`. Each workload and a
//! structure near it (`Workload::near`) is planned from scratch with the cost model's fixed
//! default constants (no calibration, so the same on every run and machine), and the Debug
//! text of its steps hashed: one line per plan and one over all. A change that must not
//! alter plans (a refactor of the planner) prints the same lines before and after.

use blockcontract::plan::build_plan;
use blockcontract::workload::Workload;
use blockcontract::{CostModel, DynTensor, PlanOptions};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        return Err("usage: plan_digest FILE.json...".into());
    }
    let opts = PlanOptions {
        model: CostModel::default(),
        ..PlanOptions::default()
    };
    let mut all = DefaultHasher::new();
    for f in &files {
        let w = Workload::load(f)?;
        for (what, ww) in [("as stored", w.clone()), ("near", w.near(7)?)] {
            let ops = ww.build_operands::<f64>()?;
            let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
            let plan = build_plan(&ww.contraction, &refs, &opts)?;
            let text = format!("{:?}", plan.steps);
            let mut h = DefaultHasher::new();
            text.hash(&mut h);
            text.hash(&mut all);
            println!("{:<32} {what:<9} {:016x}", w.name, h.finish());
        }
    }
    println!("all {:016x}", all.finish());
    Ok(())
}
