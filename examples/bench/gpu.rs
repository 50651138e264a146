//! `--executor cuda` / `cuda-pairwise`: the device executor with the coalescing plan (GPU
//! cost model) or one GEMM launch per block pair, data resident, timed to a stream sync.

use crate::run::Outcome;
use crate::Args;
use blockcontract::exec::cuda::{CudaDevice, DeviceTensor};
use blockcontract::plan::{build_plan, PlanOptions};
use blockcontract::workload::{checksum, Workload};
use blockcontract::{DType, DynTensor, Error, Executor, Result};
use std::sync::OnceLock;
use std::time::Instant;

fn device() -> Result<&'static CudaDevice> {
    static DEV: OnceLock<Result<CudaDevice>> = OnceLock::new();
    DEV.get_or_init(|| CudaDevice::open(0))
        .as_ref()
        .map_err(Clone::clone)
}

/// Measures one workload on the device; `per_block` selects the per-pair launching baseline.
pub fn measure(w: &Workload, per_block: bool, args: &Args) -> Result<Outcome> {
    if w.dtype != DType::F64 {
        return Err(Error::CudaUnavailable(format!(
            "{}: the CUDA bench runs f64 workloads",
            w.name
        )));
    }
    let dev = device()?;
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let opts = if per_block {
        PlanOptions::uncoalesced()
    } else {
        PlanOptions {
            model: dev.cost_model()?,
            ..PlanOptions::default()
        }
    };
    let plan = build_plan(&w.contraction, &refs, &opts)?;
    let dops: Vec<DeviceTensor<f64>> = ops.iter().map(|t| dev.upload(t)).collect::<Result<_>>()?;
    let drefs: Vec<&DeviceTensor<f64>> = dops.iter().collect();
    let prep = dev.prepare(&plan, &drefs)?;
    let y = dev.contract(&plan, &prep, &drefs, 1.0)?;
    let host = dev.download(&y)?;
    let mut times_ms = Vec::new();
    for _ in 0..args.repeat {
        let t0 = Instant::now();
        // the result lives to the end of the iteration: its free is not timed
        let _y = dev.contract(&plan, &prep, &drefs, 1.0)?;
        dev.synchronize()?;
        times_ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Outcome {
        executor: crate::run::Runner {
            exec: Executor::Planned,
            auto_order: false,
            form: blockcontract::PlanOptions::default().coefficient_form,
        },
        blocks: w
            .contraction
            .operands
            .iter()
            .zip(&ops)
            .map(|(o, t)| (o.name.clone(), t.num_blocks()))
            .collect(),
        pair_gemms: plan.pair_gemms(),
        kernel_calls: prep.lowered.launches(),
        steps: plan.steps.len(),
        flops: plan.flops(),
        times_ms,
        norm: host.norm(),
        checksum: checksum(&host),
        plan_ms: Some(plan.plan_s * 1e3),
        near_ms: None,
        cached_us: None,
        gemm_ms: None,
        floor_ms: None,
        error: None,
    })
}
