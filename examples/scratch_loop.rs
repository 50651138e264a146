use blockcontract::plan::{build_plan, execute};
use blockcontract::workload::Workload;
use blockcontract::{DynTensor, PlanOptions};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let w = Workload::load(&path).unwrap();
    let ops = w.build_operands::<f64>().unwrap();
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let plan = build_plan(&w.contraction, &refs, &PlanOptions::default()).unwrap();
    for _ in 0..2000 {
        let _ = execute(&plan, &refs, 1.0, 1, None);
    }
}
