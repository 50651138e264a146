//! The tensor model's construction paths and their errors.

use blockcontract::{
    contract_dyn, ChargeKind, ContractionSpec, DynTensor, Error, Executor, Flow, Leg, Space,
    Symmetry, Tensor,
};
use ndarray::{ArrayD, IxDyn};
use std::sync::Arc;

fn setup() -> (Symmetry, Arc<Space>, Arc<Space>) {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(&u1, &[(vec![-1], 2), (vec![0], 3), (vec![1], 1)]).unwrap());
    let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
    (u1, v, p)
}

#[test]
fn zeros_stores_exactly_the_allowed_blocks() {
    let (u1, v, p) = setup();
    let t =
        DynTensor::<f64>::zeros(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], u1.zero()).unwrap();
    // allowed: q_a + q_s - q_b = 0
    for b in t.blocks() {
        let q: i64 = v.sectors()[b.key[0] as usize].charge.values()[0]
            + p.sectors()[b.key[1] as usize].charge.values()[0]
            - v.sectors()[b.key[2] as usize].charge.values()[0];
        assert_eq!(q, 0);
    }
    assert_eq!(t.num_blocks(), 4); // (-1,+1,0) (0,-1,-1) (0,+1,+1) (1,-1,0)
    assert_eq!(t.data().len(), 2 * 3 + 3 * 2 + 3 + 3);
    assert!(t.find_block(&[1, 0, 0]).is_some());
    assert!(t.find_block(&[0, 0, 0]).is_none());
}

#[test]
fn dense_round_trip_and_symmetry_breaking_rejected() {
    let (u1, v, _) = setup();
    let legs = vec![Leg::out(&v), Leg::inc(&v)];
    let mut d = ArrayD::<f64>::zeros(IxDyn(&[6, 6]));
    d[[0, 1]] = 1.5; // sector (0, 0): allowed
    d[[3, 4]] = -2.0; // sector (1, 1): allowed
    let t = DynTensor::from_dense(legs.clone(), u1.zero(), &d).unwrap();
    assert_eq!(t.to_dense().unwrap(), d);
    d[[0, 5]] = 3.0; // sectors (0, 2): charges -1 vs 1, forbidden
    match DynTensor::from_dense(legs.clone(), u1.zero(), &d) {
        Err(Error::SymmetryBroken { index, key, .. }) => {
            assert_eq!(index, vec![0, 5]);
            assert_eq!(key, vec![0, 2]);
        }
        other => panic!("expected SymmetryBroken, got {other:?}"),
    }
    let wrong = ArrayD::<f64>::zeros(IxDyn(&[6, 5]));
    assert!(matches!(
        DynTensor::from_dense(legs, u1.zero(), &wrong),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn explicit_blocks_are_validated() {
    let (u1, v, _) = setup();
    let legs = vec![Leg::out(&v), Leg::inc(&v)];
    let t = DynTensor::<f64>::zeros_with_blocks(legs.clone(), u1.zero(), &[vec![2, 2], vec![0, 0]])
        .unwrap();
    assert_eq!(t.num_blocks(), 2);
    assert_eq!(&*t.blocks()[0].key, &[0, 0]); // sorted
    let err =
        DynTensor::<f64>::zeros_with_blocks(legs.clone(), u1.zero(), &[vec![0, 1]]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidBlock { ref key, .. } if key == &vec![0, 1]),
        "{err}"
    );
    assert!(err.to_string().contains("selection rule"));
    let err =
        DynTensor::<f64>::zeros_with_blocks(legs.clone(), u1.zero(), &[vec![0, 7]]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidBlock { ref reason, .. } if reason.contains("leg 1")),
        "{err}"
    );
    assert!(matches!(
        DynTensor::<f64>::zeros_with_blocks(legs, u1.zero(), &[vec![1, 1], vec![1, 1]]),
        Err(Error::InvalidBlock { .. })
    ));
}

#[test]
fn mixed_symmetries_and_bad_charges_are_errors() {
    let (u1, v, _) = setup();
    let z2 = Symmetry::zn(2).unwrap();
    let w = Arc::new(Space::block(&z2, &[(vec![0], 1), (vec![1], 1)]).unwrap());
    assert!(matches!(
        DynTensor::<f64>::zeros(vec![Leg::out(&v), Leg::inc(&w)], u1.zero()),
        Err(Error::SymmetryMismatch { .. })
    ));
    let uz = Symmetry::new(vec![ChargeKind::U1, ChargeKind::Zn(2)]).unwrap();
    assert!(matches!(
        DynTensor::<f64>::zeros(vec![Leg::out(&v)], uz.zero()),
        Err(Error::ChargeMismatch { .. })
    ));
}

#[test]
fn static_rank_tensor_converts_both_ways() {
    let (u1, v, p) = setup();
    let t: Tensor<f64, 3> = Tensor::from_fn(
        [Leg::out(&v), Leg::out(&p), Leg::inc(&v)],
        u1.zero(),
        None,
        |[a, s, b]| (a * 100 + s * 10 + b) as f64,
    )
    .unwrap();
    let d: DynTensor<f64> = t.clone().into_dyn();
    assert_eq!(d.rank(), 3);
    let back: Tensor<f64, 3> = d.clone().try_into().unwrap();
    assert_eq!(back.to_dense().unwrap(), t.to_dense().unwrap());
    let err = Tensor::<f64, 2>::try_from(d).unwrap_err();
    assert!(matches!(
        err,
        Error::RankMismatch {
            expected: 2,
            found: 3,
            ..
        }
    ));
}

#[test]
fn relayout_keeps_values_and_changes_strides() {
    let (u1, v, p) = setup();
    let t = DynTensor::<f64>::from_fn(
        vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)],
        u1.zero(),
        None,
        |i| (i[0] * 100 + i[1] * 10 + i[2]) as f64,
    )
    .unwrap();
    let r = t.relayout(&[2, 0, 1]).unwrap();
    assert_eq!(r.to_dense().unwrap(), t.to_dense().unwrap());
    assert!(r.blocks().iter().any(|b| !b.layout.is_row_major()));
    assert!(matches!(
        t.relayout(&[0, 0, 1]),
        Err(Error::NotAPermutation { rank: 3, .. })
    ));
    let c = t.conj();
    assert_eq!(c.legs()[0].flow, Flow::In);
    assert_eq!(c.legs()[2].flow, Flow::Out);
}

#[test]
fn rank_zero_tensors_need_a_neutral_charge() {
    let u1 = Symmetry::u1();
    let s = DynTensor::<f64>::zeros_in(&u1, vec![], u1.zero()).unwrap();
    assert_eq!(s.num_blocks(), 1);
    let s1 = DynTensor::<f64>::zeros_in(&u1, vec![], u1.charge(&[1]).unwrap()).unwrap();
    assert_eq!(s1.num_blocks(), 0);
}

#[test]
fn sizes_are_checked_never_an_abort_or_a_wrong_buffer() {
    let u1 = Symmetry::u1();
    let huge = Arc::new(Space::block(&u1, &[(vec![0], 1 << 40)]).unwrap());
    // 2^40 x 2^40 elements: more than the address space
    let e = DynTensor::<f64>::zeros(vec![Leg::out(&huge), Leg::inc(&huge)], u1.zero()).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { ref what, ref reason } if what.contains("1099511627776") && reason.contains("[1099511627776, 1099511627776]")),
        "{e}"
    );
    // 2^40 elements fit the address space but not this machine: a typed error, not an abort
    let e = DynTensor::<f64>::zeros(vec![Leg::out(&huge)], u1.zero()).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { ref reason, .. } if reason.contains("cannot allocate")),
        "{e}"
    );
    // a space whose dimension overflows
    let e = Space::block(&u1, &[(vec![0], usize::MAX), (vec![1], 2)]).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    // a contraction whose result cannot be held: the outer product of two 2^20-vectors
    let big = Arc::new(Space::block(&u1, &[(vec![0], 1 << 20)]).unwrap());
    let a = DynTensor::<f64>::zeros(vec![Leg::out(&big)], u1.zero()).unwrap();
    let b = DynTensor::<f64>::zeros(vec![Leg::inc(&big)], u1.zero()).unwrap();
    let spec = ContractionSpec::parse("C[i,j] = A[i] * B[j]").unwrap();
    for exec in [Executor::Pairwise, Executor::Planned, Executor::Dense] {
        let e = contract_dyn(&spec, &[&a, &b], 1.0, exec).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{exec:?}: {e}");
    }
}

#[test]
fn rank_zero_results_hold_their_element() {
    let (u1, v, _) = setup();
    let a = DynTensor::<f64>::from_fn(vec![Leg::out(&v), Leg::inc(&v)], u1.zero(), None, |i| {
        (i[0] + i[1]) as f64
    })
    .unwrap();
    // a full contraction: the trace of a * a^T
    let spec = ContractionSpec::parse("S[] = A[i,j] * B[i,j]").unwrap();
    let b = a.conj();
    for exec in [Executor::Pairwise, Executor::Planned, Executor::Dense] {
        let (s, _) = contract_dyn(&spec, &[&a, &b], 1.0, exec).unwrap();
        assert_eq!(s.rank(), 0);
        assert_eq!(s.data().len(), 1, "{exec:?}");
        let want: f64 = a.to_dense().unwrap().iter().map(|x| x * x).sum();
        assert!((s.scalar().unwrap() - want).abs() < 1e-9, "{exec:?}");
    }
    // blocks that never meet: the result is still one element, zero
    let empty =
        DynTensor::<f64>::zeros_with_blocks(vec![Leg::inc(&v), Leg::out(&v)], u1.zero(), &[])
            .unwrap();
    let (s, _) = contract_dyn(&spec, &[&a, &empty.conj().conj()], 1.0, Executor::Planned).unwrap();
    assert_eq!(s.data(), &[0.0]);
    assert!(matches!(a.scalar(), Err(Error::RankMismatch { .. })));
}

#[test]
fn degenerate_symmetries_are_rejected() {
    assert!(matches!(
        Symmetry::zn(0),
        Err(Error::InvalidSymmetry { .. })
    ));
    assert!(matches!(
        Symmetry::new(vec![ChargeKind::U1, ChargeKind::Zn(0)]),
        Err(Error::InvalidSymmetry { ref reason }) if reason.contains("component 1")
    ));
    assert_eq!(
        Symmetry::zn(1).unwrap().charge(&[5]).unwrap().values(),
        &[0]
    );
}

/// The direct sum along a leg holds each summand's elements where its states sit in the
/// summed sector (the first's first), charges only one summand has included; a padding
/// (no blocks) adds zeros; mismatched legs, flows or a leg out of range are typed errors.
#[test]
fn direct_sum_along_a_leg_places_each_summand() {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(&u1, &[(vec![-1], 2), (vec![0], 3), (vec![1], 1)]).unwrap());
    let p = Arc::new(Space::block(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
    let ya = Arc::new(Space::block(&u1, &[(vec![0], 2), (vec![-2], 1)]).unwrap());
    let yb = Arc::new(Space::block(&u1, &[(vec![1], 2), (vec![0], 3), (vec![2], 1)]).unwrap());
    let a = Tensor::<f64, 3>::random([Leg::inc(&v), Leg::inc(&p), Leg::out(&ya)], u1.zero(), 1)
        .unwrap()
        .into_dyn();
    let b = Tensor::<f64, 3>::random([Leg::inc(&v), Leg::inc(&p), Leg::out(&yb)], u1.zero(), 2)
        .unwrap()
        .into_dyn();
    let s = a.direct_sum(&b, 2).unwrap();
    let y = &s.legs()[2].space;
    let dims: Vec<(i64, usize)> = y
        .sectors()
        .iter()
        .map(|x| (x.charge.values()[0], x.dim))
        .collect();
    assert_eq!(dims, [(0, 5), (-2, 1), (1, 2), (2, 1)]);
    let (da, db, ds) = (
        a.to_dense().unwrap(),
        b.to_dense().unwrap(),
        s.to_dense().unwrap(),
    );
    let mut checked = 0;
    for ((i, j, k), &x) in ds
        .view()
        .into_dimensionality::<ndarray::Ix3>()
        .unwrap()
        .indexed_iter()
    {
        let (sec, at) = y.locate(k).unwrap();
        let q = &y.sectors()[sec].charge;
        let in_a = ya.find(q).map_or(0, |t| ya.dim_of(t));
        let want = if at < in_a {
            da[[i, j, ya.offset_of(ya.find(q).unwrap()) + at]]
        } else {
            let t = yb.find(q).unwrap();
            db[[i, j, yb.offset_of(t) + at - in_a]]
        };
        assert_eq!(x, want, "element ({i}, {j}, {k})");
        checked += 1;
    }
    assert_eq!(checked, ds.len());
    assert!(ds.iter().any(|&x| x != 0.0));

    // a padding: the same elements, zeros over the new states
    let pad = DynTensor::<f64>::zeros_with_blocks(
        vec![Leg::inc(&v), Leg::inc(&p), Leg::out(&yb)],
        u1.zero(),
        &[],
    )
    .unwrap();
    let padded = a.direct_sum(&pad, 2).unwrap().to_dense().unwrap();
    let na: f64 = da.iter().map(|x| x * x).sum();
    assert!((padded.iter().map(|x| x * x).sum::<f64>() - na).abs() < 1e-12);

    // errors name the leg
    let e = a.direct_sum(&b, 1).unwrap_err().to_string();
    assert!(e.contains("leg 2"), "{e}");
    let flipped =
        Tensor::<f64, 3>::random([Leg::inc(&v), Leg::inc(&p), Leg::inc(&yb)], u1.zero(), 3)
            .unwrap()
            .into_dyn();
    let e = a.direct_sum(&flipped, 2).unwrap_err().to_string();
    assert!(e.contains("leg 2") && e.contains("flow"), "{e}");
    assert!(a.direct_sum(&b, 3).is_err());
}
