//! Property tests: the per-pair block-sparse reference agrees with the dense oracle on random
//! symmetric tensors (U(1), Z2, U(1)xU(1), U(1)xZ3, no symmetry; mixed flows; local legs;
//! sectors of dimension 0 and 1; ranks 1-4; 0-4 contracted legs; random output orders;
//! non-row-major blocks; f64, f32 and complex with conj).

mod common;

use blockcontract::{contract_dyn, DynTensor, Executor, Scalar};
use num_complex::Complex64;
use proptest::prelude::*;

fn check<T: Scalar>(seed: u64, sym: usize, tol: f64) -> Result<(), TestCaseError> {
    let c = common::pair_case::<T>(seed, sym);
    let ops: [&DynTensor<T>; 2] = [&c.a, &c.b];
    let (r, stats) = contract_dyn(&c.spec, &ops, T::from_f64(0.75), Executor::Pairwise)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (d, _) = contract_dyn(&c.spec, &ops, T::from_f64(0.75), Executor::Dense)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let diff = common::rel_diff(&r.to_dense().unwrap(), &d.to_dense().unwrap());
    prop_assert!(
        diff <= tol,
        "relative difference {diff} (pairs {})",
        stats.pair_gemms()
    );
    prop_assert_eq!(r.legs(), d.legs());
    prop_assert_eq!(r.charge(), d.charge());
    Ok(())
}

fn check_same<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let c = common::same_tensor_case::<T>(seed, sym);
    let ops: [&DynTensor<T>; 2] = [&c.x, &c.x];
    let (r, _) = contract_dyn(&c.spec, &ops, T::from_f64(0.75), Executor::Pairwise)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (d, _) = contract_dyn(&c.spec, &ops, T::from_f64(0.75), Executor::Dense)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let diff = common::rel_diff(&r.to_dense().unwrap(), &d.to_dense().unwrap());
    prop_assert!(diff <= 1e-13, "relative difference {diff}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_tensor_as_both_operands_f64(seed in any::<u64>(), sym in 0usize..5) {
        check_same::<f64>(seed, sym)?;
    }

    #[test]
    fn one_tensor_as_both_operands_complex(seed in any::<u64>(), sym in 0usize..5) {
        check_same::<Complex64>(seed, sym)?;
    }

    #[test]
    fn f64_matches_dense(seed in any::<u64>(), sym in 0usize..5) {
        check::<f64>(seed, sym, 1e-13)?;
    }

    #[test]
    fn complex_with_conj_matches_dense(seed in any::<u64>(), sym in 0usize..5) {
        check::<Complex64>(seed, sym, 1e-13)?;
    }

    #[test]
    fn f32_matches_dense(seed in any::<u64>(), sym in 0usize..5) {
        check::<f32>(seed, sym, 1e-5)?;
    }
}

#[test]
fn three_operand_chain_matches_dense_in_every_order() {
    use blockcontract::spec::Tree;
    use blockcontract::{ContractionSpec, Flow, Leg, Space, Symmetry};
    use std::sync::Arc;
    let u1 = Symmetry::u1();
    let v = Arc::new(
        Space::block(
            &u1,
            &[(vec![-1], 2), (vec![0], 0), (vec![1], 3), (vec![2], 1)],
        )
        .unwrap(),
    );
    let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
    let mut rng = common::Rng(7);
    let a = common::tensor::<f64>(
        &mut rng,
        vec![
            Leg::new(&v, Flow::Out),
            Leg::new(&p, Flow::In),
            Leg::new(&v, Flow::In),
        ],
        false,
    );
    let b = common::tensor::<f64>(
        &mut rng,
        vec![
            Leg::new(&v, Flow::Out),
            Leg::new(&p, Flow::Out),
            Leg::new(&v, Flow::In),
        ],
        true,
    );
    let c = common::tensor::<f64>(
        &mut rng,
        vec![Leg::new(&v, Flow::Out), Leg::new(&v, Flow::In)],
        false,
    );
    let mut spec = ContractionSpec::parse("Y[a,s,t,z] := A[a,s,x] * B[x,t,y] * C[y,z]").unwrap();
    let (d, _) = contract_dyn(&spec, &[&a, &b, &c], 1.0, Executor::Dense).unwrap();
    assert!(d.norm() > 0.0);
    let leaf = |i| Box::new(Tree::Leaf(i));
    for tree in [
        Tree::Node(Box::new(Tree::Node(leaf(0), leaf(1))), leaf(2)),
        Tree::Node(leaf(0), Box::new(Tree::Node(leaf(1), leaf(2)))),
        Tree::Node(Box::new(Tree::Node(leaf(2), leaf(0))), leaf(1)),
    ] {
        spec.tree = Some(tree);
        let (r, _) = contract_dyn(&spec, &[&a, &b, &c], 1.0, Executor::Pairwise).unwrap();
        assert!(common::rel_diff(&r.to_dense().unwrap(), &d.to_dense().unwrap()) < 1e-13);
    }
}

#[test]
fn random_cases_are_not_vacuous() {
    // the generator must mostly produce contractions with real work and nonzero results
    let (mut nonzero, mut with_pairs, n) = (0, 0, 300);
    for seed in 0..n {
        let c = common::pair_case::<f64>(seed, seed as usize);
        let (r, s) = contract_dyn(&c.spec, &[&c.a, &c.b], 1.0, Executor::Pairwise).unwrap();
        nonzero += usize::from(r.norm() > 0.0);
        with_pairs += usize::from(s.pair_gemms() > 1);
    }
    assert!(
        nonzero * 2 > n as usize,
        "only {nonzero}/{n} nonzero results"
    );
    assert!(
        with_pairs * 3 > n as usize,
        "only {with_pairs}/{n} cases with several pairs"
    );
}
