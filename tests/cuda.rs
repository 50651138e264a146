//! The CUDA executor on a real GPU: every shipped f64 workload against the peer's results, and
//! random contractions against the per-pair reference. Without the `cuda` feature, or with no
//! GPU or driver, each test prints why it is skipped (and the probe must not panic).

mod common;

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_unavailable_is_a_typed_error() {
    let e = blockcontract::exec::cuda::probe().unwrap_err();
    assert!(matches!(e, blockcontract::Error::CudaUnavailable(_)));
    println!("skipping GPU tests: {e}");
}

mod gpu {
    use super::common;
    use blockcontract::exec::cuda::{CudaDevice, DeviceTensor};
    use blockcontract::plan::{build_plan, GroupKind, PlanOptions};
    use blockcontract::workload::{checksum, load_expected, Workload};
    use blockcontract::{contract_dyn, DynTensor, Executor};
    use std::path::Path;

    fn device() -> Option<CudaDevice> {
        match CudaDevice::open(0) {
            Ok(d) => Some(d),
            Err(e) => {
                println!("skipping GPU test: {e}");
                None
            }
        }
    }

    #[test]
    fn shipped_workloads_on_the_gpu_match_the_peer() {
        let Some(dev) = device() else { return };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let expected = load_expected(dir.join("expected.json")).unwrap();
        let model = dev.cost_model().unwrap();
        println!("GPU cost model: {model}");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("expected.json"))
        {
            let w = Workload::load(f).unwrap();
            let ops = w.build_operands::<f64>().unwrap();
            let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
            let dops: Vec<DeviceTensor<f64>> = ops.iter().map(|t| dev.upload(t).unwrap()).collect();
            let drefs: Vec<&DeviceTensor<f64>> = dops.iter().collect();
            for opts in [
                PlanOptions {
                    model,
                    ..PlanOptions::default()
                },
                PlanOptions::uncoalesced(),
            ] {
                let plan = build_plan(&w.contraction, &refs, &opts).unwrap();
                let prep = dev.prepare(&plan, &drefs).unwrap();
                let y = dev
                    .download(&dev.contract(&plan, &prep, &drefs, 1.0).unwrap())
                    .unwrap();
                assert!(
                    expected[&w.name].agrees(y.norm(), checksum(&y), 1e-10),
                    "{} on the GPU",
                    w.name
                );
                println!(
                    "{}: {} pair GEMMs, {} launches",
                    w.name,
                    plan.pair_gemms(),
                    prep.lowered.launches()
                );
            }
        }
    }

    #[test]
    fn random_contractions_on_the_gpu_match_the_reference() {
        let Some(dev) = device() else { return };
        for seed in 0..64u64 {
            let c = common::pair_case::<f64>(seed, seed as usize);
            let ops = [&c.a, &c.b];
            let (want, _) = contract_dyn(&c.spec, &ops, 0.5, Executor::Pairwise).unwrap();
            for kind in GroupKind::ALL {
                let plan = build_plan(&c.spec, &ops, &PlanOptions::only(kind)).unwrap();
                if plan.steps.is_empty() {
                    continue;
                }
                let dops: Vec<DeviceTensor<f64>> =
                    ops.iter().map(|t| dev.upload(t).unwrap()).collect();
                let drefs: Vec<&DeviceTensor<f64>> = dops.iter().collect();
                let prep = dev.prepare(&plan, &drefs).unwrap();
                let got = dev
                    .download(&dev.contract(&plan, &prep, &drefs, 0.5).unwrap())
                    .unwrap();
                assert!(
                    common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap()) < 1e-12,
                    "seed {seed} {kind}"
                );
            }
        }
    }
}
