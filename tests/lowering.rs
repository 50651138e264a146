//! The device op list that the CUDA executor consumes, run by its CPU interpreter (cuBLAS's
//! column-major, op, leading-dimension, batch-stride and alpha/beta semantics) against the
//! per-pair reference: every group kind, real and complex, random tensors and workloads.

mod common;

use blockcontract::exec::device::{interpret, lower, lower_with, LowerOptions, Op};
use blockcontract::plan::{build_plan, GroupKind, Plan, PlanOptions};
use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{contract_dyn, DynTensor, Executor, Scalar};
use num_complex::Complex64;
use proptest::prelude::*;
use std::path::Path;

fn layouts<T: Scalar>(ops: &[&DynTensor<T>]) -> Vec<Vec<blockcontract::view::Layout>> {
    ops.iter()
        .map(|t| t.blocks().iter().map(|b| b.layout.clone()).collect())
        .collect()
}

fn options() -> Vec<PlanOptions> {
    let mut v: Vec<PlanOptions> = GroupKind::ALL[1..]
        .iter()
        .map(|&k| PlanOptions::only(k))
        .collect();
    v.push(PlanOptions::uncoalesced());
    v.push(PlanOptions {
        policy: blockcontract::plan::Policy::CostModel,
        ..PlanOptions::only(GroupKind::Rectangle)
    });
    v
}

/// Grouped lowering: no more GEMM launches than groups, each grouped launch's outputs in
/// different hazard-free sets, and the same result.
fn check_grouped<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    want: &ndarray::ArrayD<T>,
) {
    let plain = lower(plan, &layouts(ops));
    let grouped = lower_with(plan, &layouts(ops), LowerOptions { grouped: true });
    assert!(grouped.gemm_launches() <= plain.gemm_launches());
    assert_eq!(
        grouped.launches() + plain.gemm_launches(),
        plain.launches() + grouped.gemm_launches()
    );
    let got = interpret(plan, &grouped, ops, alpha).unwrap();
    assert!(common::rel_diff(&got.to_dense().unwrap(), want) < 1e-12);
}

/// With grouped GEMM, one GEMM launch per plan group and at most three gathers per group;
/// without it, a grouped call costs one launch per member.
fn check_launches(plan: &Plan, layouts: &[Vec<blockcontract::view::Layout>]) {
    let grouped = lower_with(plan, layouts, LowerOptions { grouped: true });
    let plain = lower(plan, layouts);
    let groups: usize = plan.steps.iter().map(|s| s.plan.groups.len()).sum();
    // the grouped lowering may merge lone GEMMs of different groups further
    assert!(grouped.gemm_launches() <= plan.kernel_calls());
    assert!(grouped.launches() <= 4 * groups);
    assert!(plain.gemm_launches() >= plan.kernel_calls());
    for st in grouped.steps.iter().chain(&plain.steps) {
        for op in &st.ops {
            if let Op::GemmStridedBatched { batch, .. } = op {
                assert!(*batch > 1);
            }
        }
    }
}

fn check<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let c = common::pair_case::<T>(seed, sym);
    let ops = [&c.a, &c.b];
    let alpha = T::from_parts(0.5, -0.25);
    let (want, _) = contract_dyn(&c.spec, &ops, alpha, Executor::Pairwise)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for opts in options() {
        let plan =
            build_plan(&c.spec, &ops, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        if plan.steps.is_empty() {
            continue;
        }
        let low = lower(&plan, &layouts(&ops));
        check_launches(&plan, &layouts(&ops));
        let got = interpret(&plan, &low, &ops, alpha).unwrap();
        check_grouped(&plan, &ops, alpha, &want.to_dense().unwrap());
        let d = common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap());
        prop_assert!(d <= 1e-12, "relative difference {d}");
    }
    Ok(())
}

fn check_same<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let c = common::same_tensor_case::<T>(seed, sym);
    let ops = [&c.x, &c.x];
    let alpha = T::from_parts(0.5, -0.25);
    let (want, _) = contract_dyn(&c.spec, &ops, alpha, Executor::Dense)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for opts in options() {
        let plan =
            build_plan(&c.spec, &ops, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = interpret(&plan, &lower(&plan, &layouts(&ops)), &ops, alpha).unwrap();
        let d = common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap());
        prop_assert!(d <= 1e-12, "relative difference {d}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn one_tensor_as_both_operands_lowers_correctly_f64(seed in any::<u64>(), sym in 0usize..5) {
        check_same::<f64>(seed, sym)?;
    }

    #[test]
    fn one_tensor_as_both_operands_lowers_correctly_complex(seed in any::<u64>(), sym in 0usize..5) {
        check_same::<Complex64>(seed, sym)?;
    }

    #[test]
    fn lowered_ops_match_the_reference_f64(seed in any::<u64>(), sym in 0usize..5) {
        check::<f64>(seed, sym)?;
    }

    #[test]
    fn lowered_ops_match_the_reference_complex(seed in any::<u64>(), sym in 0usize..5) {
        check::<Complex64>(seed, sym)?;
    }
}

#[test]
fn lowered_workloads_match_the_peer_and_cut_launches() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let expected = load_expected(dir.join("expected.json")).unwrap();
    for name in [
        "hubbard_u1u1_m64_heff2",
        "heisenberg_u1_m64_heff1",
        "hubbard_u1u1_m64_gemm",
    ] {
        let w = Workload::load(dir.join(format!("{name}.json"))).unwrap();
        let ops = w.build_operands::<f64>().unwrap();
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        for opts in [
            PlanOptions::uncoalesced(),
            PlanOptions::default(),
            PlanOptions::only(GroupKind::FreeAxis),
        ] {
            let plan = build_plan(&w.contraction, &refs, &opts).unwrap();
            let low = lower(&plan, &layouts(&refs));
            check_launches(&plan, &layouts(&refs));
            let y = interpret(&plan, &low, &refs, 1.0).unwrap();
            assert!(
                expected[name].agrees(y.norm(), checksum(&y), 1e-10),
                "{name}"
            );
            let grouped = lower_with(&plan, &layouts(&refs), LowerOptions { grouped: true });
            let yg = interpret(&plan, &grouped, &refs, 1.0).unwrap();
            assert!(
                expected[name].agrees(yg.norm(), checksum(&yg), 1e-10),
                "{name} grouped"
            );
            eprintln!(
                "{name}: {} pair GEMMs, {} launches ({} GEMM), grouped {} ({} GEMM)",
                plan.pair_gemms(),
                low.launches(),
                low.gemm_launches(),
                grouped.launches(),
                grouped.gemm_launches()
            );
            assert!(
                expected[name].agrees(y.norm(), checksum(&y), 1e-10),
                "{name}"
            );
        }
    }
}

#[test]
fn a_plan_without_pairwise_steps_is_an_error_not_a_panic() {
    let c = common::pair_case::<f64>(3, 0);
    let spec = blockcontract::ContractionSpec::parse("B[j,i] = A[i,j]").unwrap();
    let a = common::tensor::<f64>(
        &mut common::Rng(5),
        vec![c.a.legs()[0].clone(), c.a.legs()[0].dual()],
        false,
    );
    let plan = build_plan(&spec, &[&a], &PlanOptions::default()).unwrap();
    assert!(plan.steps.is_empty());
    let low = lower(&plan, &layouts(&[&a]));
    assert!(matches!(
        interpret(&plan, &low, &[&a], 1.0),
        Err(blockcontract::Error::EmptyPlan { .. })
    ));
}
