//! The coefficient form (a small operand's entries as the scale of the GEMMs of a chain of
//! three matrices) against the per-pair reference: random MPO-like operands with repeated
//! MPO-state charges, exact zeros, random strides, f64 and complex, conjugated operands, 1
//! and 2 threads, both directions; identity environment slices, marked and not.

mod common;

use blockcontract::exec::execute;
use blockcontract::plan::{build_plan, PlanOptions, Policy};
use blockcontract::{
    contract_dyn, ContractionSpec, DynTensor, Error, Executor, Leg, Scalar, Space, Symmetry,
};
use common::Rng;
use num_complex::Complex64;
use proptest::prelude::*;
use std::sync::Arc;

fn always() -> PlanOptions {
    PlanOptions {
        coefficient_form: Some(Policy::Always),
        ..PlanOptions::default()
    }
}

/// An MPO bond: several states per charge (repeated charges), as the MPO builder makes.
fn mpo_bond(rng: &mut Rng) -> Arc<Space> {
    let u1 = Symmetry::u1();
    let secs = vec![
        (vec![0], 1 + rng.below(3)),
        (vec![2], 1 + rng.below(2)),
        (vec![-2], 1 + rng.below(2)),
    ];
    Arc::new(Space::block(&u1, &secs).unwrap())
}

/// A bond space of the MPS: a few sectors of odd and even charges, dims 1..=4.
fn bond(rng: &mut Rng) -> Arc<Space> {
    let u1 = Symmetry::u1();
    let mut secs: Vec<(Vec<i64>, usize)> = Vec::new();
    for q in -2..=2 {
        if rng.below(5) != 0 {
            secs.push((vec![q], 1 + rng.below(4)));
        }
    }
    let secs = if secs.is_empty() {
        vec![(vec![0], 2)]
    } else {
        secs
    };
    Arc::new(Space::block(&u1, &secs).unwrap())
}

/// A physical space: spin 1/2 (one state per charge) or two states of one charge beside
/// another (a fixed leg whose sector is longer than 1).
fn physical(rng: &mut Rng) -> Arc<Space> {
    let u1 = Symmetry::u1();
    let secs = if rng.coin() {
        vec![(vec![-1], 1), (vec![1], 1)]
    } else {
        vec![(vec![-1], 2), (vec![1], 1)]
    };
    Arc::new(Space::local(&u1, &secs).unwrap())
}

/// A random tensor of charge zero with some exact zeros among its elements.
fn with_zeros<T: Scalar>(rng: &mut Rng, legs: Vec<Leg>) -> DynTensor<T> {
    let mut t = common::tensor::<T>(rng, legs.clone(), true);
    if t.charge() != &Symmetry::u1().zero() {
        let seed = rng.next();
        t = DynTensor::from_fn(legs, Symmetry::u1().zero(), None, |i| {
            common::value(seed, i)
        })
        .unwrap();
    }
    let n = t.data().len();
    for k in 0..n / 3 {
        let at = rng.below(n);
        if k % 2 == 0 {
            t.data_mut()[at] = T::zero();
        }
    }
    t
}

/// Plans `text` with the form forced, checks it was taken, and compares with the per-pair
/// reference on 1 and 2 threads.
fn check<T: Scalar>(text: &str, ops: &[&DynTensor<T>]) -> blockcontract::plan::CoefficientPlan {
    let spec = ContractionSpec::parse(text).unwrap();
    let plan = build_plan(&spec, ops, &always()).unwrap();
    let cf = plan
        .coefficient
        .clone()
        .expect("the coefficient form applies");
    let (want, _) = contract_dyn(&spec, ops, T::from_f64(0.5), Executor::Pairwise).unwrap();
    let want = want.to_dense().unwrap();
    for threads in [1, 2] {
        let (got, _, _) = execute(&plan, ops, T::from_f64(0.5), threads, None).unwrap();
        let d = common::rel_diff(&got.to_dense().unwrap(), &want);
        assert!(d < 1e-12, "{text}: {d:e} on {threads} threads");
    }
    (*cf).clone()
}

fn heff1<T: Scalar>(seed: u64) {
    let mut rng = Rng(seed);
    let (w, p, a, c) = (
        mpo_bond(&mut rng),
        physical(&mut rng),
        bond(&mut rng),
        bond(&mut rng),
    );
    let l = with_zeros::<T>(&mut rng, vec![Leg::out(&a), Leg::inc(&w), Leg::inc(&a)]);
    let x = with_zeros::<T>(&mut rng, vec![Leg::out(&a), Leg::out(&p), Leg::inc(&c)]);
    let m = with_zeros::<T>(
        &mut rng,
        vec![Leg::out(&w), Leg::inc(&w), Leg::out(&p), Leg::inc(&p)],
    );
    let r = with_zeros::<T>(&mut rng, vec![Leg::out(&c), Leg::out(&w), Leg::inc(&c)]);
    // the chain read from either end: the form runs it right-first or left-first
    let ops = [&l, &x, &m, &r];
    let one = check(
        "Y[a,s,b] = L[a,w,x] * X[x,t,y] * W[w,v,s,t] * R[y,v,b]",
        &ops,
    );
    let other = check(
        "Y[b,s,a] = L[a,w,x] * X[x,t,y] * W[w,v,s,t] * R[y,v,b]",
        &ops,
    );
    for cf in [one, other] {
        assert!(
            cf.chain == [0, 1, 3] || cf.chain == [3, 1, 0],
            "{:?}",
            cf.chain
        );
    }
}

fn heff2<T: Scalar>(seed: u64) {
    let mut rng = Rng(seed);
    let (w, p, a, c) = (
        mpo_bond(&mut rng),
        physical(&mut rng),
        bond(&mut rng),
        bond(&mut rng),
    );
    let l = with_zeros::<T>(&mut rng, vec![Leg::out(&a), Leg::inc(&w), Leg::inc(&a)]);
    let x = with_zeros::<T>(
        &mut rng,
        vec![Leg::out(&a), Leg::out(&p), Leg::out(&p), Leg::inc(&c)],
    );
    let legs = vec![
        Leg::out(&w),
        Leg::inc(&w),
        Leg::out(&p),
        Leg::out(&p),
        Leg::inc(&p),
        Leg::inc(&p),
    ];
    let f = with_zeros::<T>(&mut rng, legs);
    let r = with_zeros::<T>(&mut rng, vec![Leg::out(&c), Leg::out(&w), Leg::inc(&c)]);
    // the MPO written between the environments and the state, and the output's legs permuted
    check(
        "Y[b,t2,a,t1] = L[a,w,x] * F[w,u,t1,t2,s1,s2] * X[x,s1,s2,y] * R[y,u,b]",
        &[&l, &f, &x, &r],
    );
}

/// An environment update with a conjugated operand: the chain `Aᵀ · L · conj(A)`.
fn environment<T: Scalar>(seed: u64) {
    let mut rng = Rng(seed);
    let (w, p, a, c) = (
        mpo_bond(&mut rng),
        physical(&mut rng),
        bond(&mut rng),
        bond(&mut rng),
    );
    let l = with_zeros::<T>(&mut rng, vec![Leg::out(&a), Leg::out(&w), Leg::inc(&a)]);
    let s = with_zeros::<T>(&mut rng, vec![Leg::inc(&a), Leg::inc(&p), Leg::out(&c)]);
    let m = with_zeros::<T>(
        &mut rng,
        vec![Leg::inc(&w), Leg::out(&w), Leg::inc(&p), Leg::out(&p)],
    );
    check(
        "N[x,v,z] = L[y,w,yp] * A[y,s,x] * W[w,v,sp,s] * conj(A)[yp,sp,z]",
        &[&l, &s, &m, &s],
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn heff1_in_the_coefficient_form_equals_the_per_pair_reference(seed in any::<u64>()) {
        heff1::<f64>(seed);
        heff1::<Complex64>(seed);
    }
    #[test]
    fn heff2_in_the_coefficient_form_equals_the_per_pair_reference(seed in any::<u64>()) {
        heff2::<f64>(seed);
        heff2::<Complex64>(seed);
    }
    #[test]
    fn environment_updates_in_the_coefficient_form_equal_the_reference(seed in any::<u64>()) {
        environment::<f64>(seed);
        environment::<Complex64>(seed);
    }
}

/// An environment whose slice at `w_id` of its MPO leg is the identity, the rest random.
/// `right`: a right environment `R[y, v, b]` (its MPO leg flows out), else a left one.
fn env_with_identity<T: Scalar>(
    a: &Arc<Space>,
    w: &Arc<Space>,
    w_id: usize,
    seed: u64,
    right: bool,
) -> DynTensor<T> {
    let mid = if right { Leg::out(w) } else { Leg::inc(w) };
    let legs = vec![Leg::out(a), mid, Leg::inc(a)];
    DynTensor::from_fn(legs, Symmetry::u1().zero(), None, |i| {
        if i[1] == w_id {
            T::from_f64((i[0] == i[2]) as u8 as f64)
        } else {
            common::value(seed, i)
        }
    })
    .unwrap()
}

/// The identity terms found and whether the marks cut the flops.
fn identity_case<T: Scalar>(seed: u64) -> (usize, bool) {
    let mut rng = Rng(seed);
    let (w, p, a) = (mpo_bond(&mut rng), physical(&mut rng), bond(&mut rng));
    // the MPO's first and last states carry charge zero, as the identity's must
    let (first, last) = (0, w.dim_of(0) - 1);
    let mut l = env_with_identity::<T>(&a, &w, first, rng.next(), false);
    let mut r = env_with_identity::<T>(&a, &w, last, rng.next(), true);
    let x = with_zeros::<T>(&mut rng, vec![Leg::out(&a), Leg::out(&p), Leg::inc(&a)]);
    let m = with_zeros::<T>(
        &mut rng,
        vec![Leg::out(&w), Leg::inc(&w), Leg::out(&p), Leg::inc(&p)],
    );
    let text = "Y[a,s,b] = L[a,w,x] * X[x,t,y] * W[w,v,s,t] * R[y,v,b]";
    let unmarked = check(text, &[&l, &x, &m, &r]);
    assert_eq!(unmarked.identity_terms, 0);
    l.mark_identity(1, first).unwrap();
    r.mark_identity(1, last).unwrap();
    let marked = check(text, &[&l, &x, &m, &r]);
    assert!(marked.flops <= unmarked.flops);
    (marked.identity_terms, marked.flops < unmarked.flops)
}

#[test]
fn identity_environment_slices_skip_their_gemms_and_change_no_result() {
    let (mut terms, mut fewer) = (0, 0);
    for seed in 0..24 {
        for (t, f) in [identity_case::<f64>(seed), identity_case::<Complex64>(seed)] {
            terms += t;
            fewer += f as usize;
        }
    }
    // random MPO tensors with dropped blocks do not always reach the identity slices
    assert!(
        terms > 0 && fewer >= 12,
        "{terms} identity terms; fewer flops in {fewer} of 48"
    );
}

#[test]
fn a_slice_marked_identity_that_is_not_one_is_refused_naming_it() {
    let mut rng = Rng(7);
    let (w, a) = (mpo_bond(&mut rng), bond(&mut rng));
    let legs = vec![Leg::out(&a), Leg::inc(&w), Leg::inc(&a)];
    let mut t =
        DynTensor::<f64>::from_fn(legs, Symmetry::u1().zero(), None, |i| common::value(3, i))
            .unwrap();
    match t.mark_identity(1, 0) {
        Err(Error::NotIdentity {
            leg: 1,
            index: 0,
            reason,
        }) => {
            assert!(reason.contains("element"), "{reason}")
        }
        other => panic!("expected NotIdentity, got {other:?}"),
    }
    assert!(t.identity_marks().is_empty());
    // a leg past the rank, an index past the leg, a rank other than 3
    assert!(matches!(
        t.mark_identity(3, 0),
        Err(Error::NotIdentity { .. })
    ));
    assert!(matches!(
        t.mark_identity(1, 99),
        Err(Error::NotIdentity { .. })
    ));
}

#[test]
fn a_mark_is_forgotten_when_the_values_change_and_plans_tell_the_two_apart() {
    let mut rng = Rng(11);
    let (w, a) = (mpo_bond(&mut rng), bond(&mut rng));
    let mut l = env_with_identity::<f64>(&a, &w, 0, 5, false);
    let before = l.structure_fingerprint();
    // within the tolerance: accepted, and set exactly
    l.data_mut()[0] += 1e-13;
    l.mark_identity(1, 0).unwrap();
    assert_eq!(l.identity_marks(), vec![(1, 0)]);
    assert_ne!(
        l.structure_fingerprint(),
        before,
        "a plan for the marked tensor differs"
    );
    l.scale(2.0);
    assert!(l.identity_marks().is_empty(), "scaling forgets the mark");
    assert_eq!(l.structure_fingerprint(), before);
    l.scale(0.5);
    l.mark_identity(1, 0).unwrap();
    l.data_mut()[0] = 3.0;
    assert!(l.identity_marks().is_empty(), "writing forgets the mark");
}
