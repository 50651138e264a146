//! Factorizations, vector operations and Lanczos against their dense counterparts, on random
//! symmetric tensors (U(1), Z2, U(1)xU(1), U(1)xZ3, no symmetry; charged tensors; sectors of
//! dimension 0 and 1; mixed flows; f64 and complex), and the errors of bad input.

mod common;

use blockcontract::linalg::{
    eigh, lanczos, lq, qr, svd, LanczosOptions, Reorthogonalization, Truncation,
};
use blockcontract::{
    contract_dyn, ContractionSpec, DynTensor, Error, Executor, Leg, Scalar, Symmetry,
};
use faer::Mat;
use num_complex::Complex64;
use proptest::prelude::*;

/// `t` as a dense matrix: `rows` legs fused (row-major) into rows, `cols` into columns.
fn matricize<T: Scalar>(t: &DynTensor<T>, rows: &[usize], cols: &[usize]) -> Mat<T> {
    let d = t.to_dense().unwrap();
    let perm: Vec<usize> = rows.iter().chain(cols).copied().collect();
    let p = d.permuted_axes(ndarray::IxDyn(&perm));
    let p = p.as_standard_layout();
    let nr: usize = rows.iter().map(|&l| t.dense_shape()[l]).product();
    let nc: usize = cols.iter().map(|&l| t.dense_shape()[l]).product();
    let flat: Vec<T> = p.iter().copied().collect();
    Mat::from_fn(nr, nc, |i, j| flat[i * nc + j])
}

/// Labels `x0, x1, ...` for `n` legs.
fn labels(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// `left[rows.., k] * right[k, cols..]` back in `t`'s leg order.
fn recombine<T: Scalar>(
    left: &DynTensor<T>,
    right: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
) -> DynTensor<T> {
    let r = rows.len() + cols.len();
    let names = labels("i", r);
    let li: Vec<String> = rows
        .iter()
        .map(|&l| names[l].clone())
        .chain(["k".into()])
        .collect();
    let ri: Vec<String> = ["k".to_string()]
        .into_iter()
        .chain(cols.iter().map(|&l| names[l].clone()))
        .collect();
    let text = format!(
        "T[{}] = L[{}] * R[{}]",
        names.join(","),
        li.join(","),
        ri.join(",")
    );
    let spec = ContractionSpec::parse(&text).unwrap();
    contract_dyn(&spec, &[left, right], T::one(), Executor::Pairwise)
        .unwrap()
        .0
}

/// `conj(q)[rows.., k] * q[rows.., l]` (or over the column legs): the identity on the bond
/// when `q` is an isometry.
fn gram<T: Scalar>(q: &DynTensor<T>, group: &[usize], bond: usize) -> DynTensor<T> {
    let n = q.rank();
    let mut a = labels("i", n);
    let mut b = labels("i", n);
    a[bond] = "k".into();
    b[bond] = "l".into();
    let _ = group;
    let text = format!("G[k,l] = conj(A)[{}] * B[{}]", a.join(","), b.join(","));
    let spec = ContractionSpec::parse(&text).unwrap();
    contract_dyn(&spec, &[q, q], T::one(), Executor::Pairwise)
        .unwrap()
        .0
}

fn max_diff<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>) -> f64 {
    common::rel_diff(&a.to_dense().unwrap(), &b.to_dense().unwrap())
}

/// Identity check on a square dense matrix.
fn is_identity<T: Scalar>(g: &DynTensor<T>) -> f64 {
    let d = g.to_dense().unwrap();
    let mut worst = 0.0f64;
    for ((i, j), v) in d
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .indexed_iter()
    {
        let want = if i == j { 1.0 } else { 0.0 };
        worst = worst.max((v.re() - want).abs() + v.im().abs());
    }
    worst
}

/// A random tensor of rank 2-4 with a random split into rows and columns (both nonempty).
fn case<T: Scalar>(seed: u64, sym: usize) -> (DynTensor<T>, Vec<usize>, Vec<usize>) {
    let mut rng = common::Rng(seed);
    let s = common::symmetry(sym);
    let r = 2 + rng.below(3);
    let legs: Vec<Leg> = (0..r)
        .map(|_| {
            let sp = common::space(&mut rng, &s);
            if rng.coin() {
                Leg::out(&sp)
            } else {
                Leg::inc(&sp)
            }
        })
        .collect();
    let sparse = rng.coin();
    let t = common::tensor::<T>(&mut rng, legs, sparse);
    let mut order: Vec<usize> = (0..r).collect();
    rng.shuffle(&mut order);
    let cut = 1 + rng.below(r - 1);
    let (rows, cols) = order.split_at(cut);
    (t, rows.to_vec(), cols.to_vec())
}

fn sorted_singular_values<T: Scalar>(m: &Mat<T>) -> Vec<f64> {
    if m.nrows() == 0 || m.ncols() == 0 {
        return Vec::new();
    }
    let mut v: Vec<f64> = m
        .as_ref()
        .singular_values()
        .unwrap()
        .into_iter()
        .map(|x| T::from_real_impl(&x).re())
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

fn check_svd<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let (t, rows, cols) = case::<T>(seed, sym);
    let f = svd(&t, &rows, &cols, &Truncation::none()).unwrap();
    let scale = t.norm().max(1.0);
    // u * s * vh == t
    let urows: Vec<usize> = (0..rows.len()).collect();
    let su = {
        let n = f.u.rank();
        let mut a = labels("i", n);
        a[n - 1] = "k".into();
        let mut o = labels("i", n);
        o[n - 1] = "l".into();
        let spec =
            ContractionSpec::parse(&format!("U[{}] = A[{}] * S[k,l]", o.join(","), a.join(",")))
                .unwrap();
        contract_dyn(&spec, &[&f.u, &f.s], T::one(), Executor::Pairwise)
            .unwrap()
            .0
    };
    let back = recombine(&su, &f.vh, &rows, &cols);
    let d = max_diff(&back, &t);
    prop_assert!(d < 1e-12 * scale, "reconstruction off by {d}");
    // u and vh are isometries
    prop_assert!(is_identity(&gram(&f.u, &urows, f.u.rank() - 1)) < 1e-12);
    // the singular values are the dense matrix's
    let dense = sorted_singular_values(&matricize(&t, &rows, &cols));
    let nonzero: Vec<f64> = dense.into_iter().filter(|&x| x > 1e-13 * scale).collect();
    prop_assert!(f.singular_values.len() >= nonzero.len());
    for (i, a) in f.singular_values.iter().enumerate() {
        let b = nonzero.get(i).copied().unwrap_or(0.0);
        prop_assert!((a - b).abs() < 1e-12 * scale, "value {i}: {a} vs {b}");
    }
    // the legs: the row legs, then the bond; the bond, then the column legs
    prop_assert_eq!(
        &f.u.legs()[..rows.len()],
        &rows
            .iter()
            .map(|&l| t.legs()[l].clone())
            .collect::<Vec<_>>()[..]
    );
    prop_assert_eq!(f.vh.charge(), t.charge());
    Ok(())
}

fn check_qr_lq<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let (t, rows, cols) = case::<T>(seed, sym);
    let scale = t.norm().max(1.0);
    let (q, r) = qr(&t, &rows, &cols).unwrap();
    prop_assert!(max_diff(&recombine(&q, &r, &rows, &cols), &t) < 1e-12 * scale);
    if q.num_blocks() > 0 {
        prop_assert!(is_identity(&gram(&q, &[], q.rank() - 1)) < 1e-12);
    }
    let (l, q) = lq(&t, &rows, &cols).unwrap();
    prop_assert!(max_diff(&recombine(&l, &q, &rows, &cols), &t) < 1e-12 * scale);
    if q.num_blocks() > 0 {
        // rows of q orthonormal: q * conj(q) over the column legs
        let n = q.rank();
        let mut a = labels("i", n);
        let mut b = labels("i", n);
        a[0] = "k".into();
        b[0] = "l".into();
        let spec = ContractionSpec::parse(&format!(
            "G[k,l] = A[{}] * conj(B)[{}]",
            a.join(","),
            b.join(",")
        ))
        .unwrap();
        let g = contract_dyn(&spec, &[&q, &q], T::one(), Executor::Pairwise)
            .unwrap()
            .0;
        prop_assert!(is_identity(&g) < 1e-12);
    }
    Ok(())
}

/// A random Hermitian tensor `x + x^dagger` of rank 2 or 4, with its row and column legs.
fn hermitian<T: Scalar>(seed: u64, sym: usize) -> (DynTensor<T>, Vec<usize>, Vec<usize>) {
    let mut rng = common::Rng(seed);
    let s = common::symmetry(sym);
    let r = 1 + rng.below(2);
    let row_legs: Vec<Leg> = (0..r)
        .map(|_| {
            let sp = common::space(&mut rng, &s);
            if rng.coin() {
                Leg::out(&sp)
            } else {
                Leg::inc(&sp)
            }
        })
        .collect();
    let legs: Vec<Leg> = row_legs
        .iter()
        .cloned()
        .chain(row_legs.iter().map(Leg::dual))
        .collect();
    let x = DynTensor::<T>::random(legs, s.zero(), seed).unwrap();
    // h = x + x^dagger (x^dagger: conjugated, rows and columns exchanged)
    let mut perm: Vec<usize> = (r..2 * r).collect();
    perm.extend(0..r);
    let xd = x
        .conj()
        .permuted(&perm, blockcontract::Conj::No, T::one())
        .unwrap();
    let h = x
        .add(&DynTensor::from_dense(x.legs().to_vec(), s.zero(), &xd.to_dense().unwrap()).unwrap())
        .unwrap();
    let rows: Vec<usize> = (0..r).collect();
    let cols: Vec<usize> = (r..2 * r).collect();
    (h, rows, cols)
}

fn check_eigh<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let (h, rows, cols) = hermitian::<T>(seed, sym);
    let e = eigh(&h, &rows, &cols).unwrap();
    // dense eigenvalues
    let m = matricize(&h, &rows, &cols);
    let mut want: Vec<f64> = if m.nrows() == 0 {
        Vec::new()
    } else {
        m.as_ref()
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .unwrap()
            .into_iter()
            .map(|x| T::from_real_impl(&x).re())
            .collect()
    };
    want.sort_by(f64::total_cmp);
    // the dense matrix also has the zero rows of absent sectors: compare the nonzero parts
    let scale = h.norm().max(1.0);
    let nz = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .copied()
            .filter(|x| x.abs() > 1e-10 * scale)
            .collect()
    };
    let (a, b) = (nz(&e.values), nz(&want));
    prop_assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        prop_assert!((x - y).abs() < 1e-10 * scale, "{x} vs {y}");
    }
    // h == v d v^dagger
    let n = e.v.rank();
    let mut a1 = labels("i", n);
    a1[n - 1] = "k".into();
    let mut b1 = labels("j", n);
    b1[n - 1] = "l".into();
    let out: Vec<String> = labels("i", rows.len())
        .into_iter()
        .chain(labels("j", rows.len()))
        .collect();
    let spec = ContractionSpec::parse(&format!(
        "H[{}] = V[{}] * D[k,l] * conj(W)[{}]",
        out.join(","),
        a1.join(","),
        b1.join(",")
    ))
    .unwrap();
    let back = contract_dyn(&spec, &[&e.v, &e.d, &e.v], T::one(), Executor::Pairwise)
        .unwrap()
        .0;
    prop_assert!(max_diff(&back, &h) < 1e-10 * scale);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn svd_matches_dense_f64(seed in any::<u64>(), sym in 0usize..5) { check_svd::<f64>(seed, sym)?; }

    #[test]
    fn svd_matches_dense_complex(seed in any::<u64>(), sym in 0usize..5) { check_svd::<Complex64>(seed, sym)?; }

    #[test]
    fn qr_and_lq_match_dense_f64(seed in any::<u64>(), sym in 0usize..5) { check_qr_lq::<f64>(seed, sym)?; }

    #[test]
    fn qr_and_lq_match_dense_complex(seed in any::<u64>(), sym in 0usize..5) { check_qr_lq::<Complex64>(seed, sym)?; }

    #[test]
    fn eigh_matches_dense_f64(seed in any::<u64>(), sym in 0usize..5) { check_eigh::<f64>(seed, sym)?; }

    #[test]
    fn eigh_matches_dense_complex(seed in any::<u64>(), sym in 0usize..5) { check_eigh::<Complex64>(seed, sym)?; }
}

#[test]
fn truncation_keeps_the_largest_values_over_all_sectors() {
    let u1 = blockcontract::Symmetry::u1();
    let v = std::sync::Arc::new(
        blockcontract::Space::block(&u1, &[(vec![-1], 6), (vec![0], 9), (vec![1], 5)]).unwrap(),
    );
    let p = std::sync::Arc::new(
        blockcontract::Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap(),
    );
    let t = DynTensor::<f64>::random(vec![Leg::inc(&v), Leg::inc(&p), Leg::out(&v)], u1.zero(), 3)
        .unwrap();
    let all = sorted_singular_values(&matricize(&t, &[0, 1], &[2]));
    let total: f64 = all.iter().map(|x| x * x).sum();
    for k in [1, 3, 7, 12] {
        let f = svd(&t, &[0, 1], &[2], &Truncation::new(k, 0.0)).unwrap();
        assert_eq!(f.singular_values.len(), k);
        for (a, b) in f.singular_values.iter().zip(&all) {
            assert!((a - b).abs() < 1e-12, "{k}: {a} vs {b}");
        }
        let disc: f64 = all[k..].iter().map(|x| x * x).sum::<f64>() / total;
        assert!((f.discarded_weight - disc).abs() < 1e-12, "{k}");
        assert_eq!(f.u.legs()[2].space.dim(), k);
    }
    // a relative cutoff drops the small values
    let cut = all[4] / all[0] * 1.0001;
    let f = svd(
        &t,
        &[0, 1],
        &[2],
        &Truncation {
            max_dim: None,
            cutoff: cut,
        },
    )
    .unwrap();
    assert_eq!(f.singular_values.len(), 4);
}

#[test]
fn lanczos_finds_the_ground_state_of_a_dense_symmetric_matrix() {
    let triv = blockcontract::Symmetry::none();
    let n = 40;
    let sp = std::sync::Arc::new(blockcontract::Space::block(&triv, &[(vec![], n)]).unwrap());
    let h = DynTensor::<f64>::random(vec![Leg::out(&sp), Leg::inc(&sp)], triv.zero(), 11).unwrap();
    // symmetrise: h + h^T
    let hd = h.to_dense().unwrap();
    let sym = &hd + &hd.t();
    let h = DynTensor::from_dense(h.legs().to_vec(), triv.zero(), &sym.into_dyn()).unwrap();
    let spec = ContractionSpec::parse("Y[i] = H[i,j] * X[j]").unwrap();
    let x0 = DynTensor::<f64>::random(vec![Leg::out(&sp)], triv.zero(), 5).unwrap();
    let r = lanczos(
        |x: &DynTensor<f64>| contract_dyn(&spec, &[&h, x], 1.0, Executor::Pairwise).map(|r| r.0),
        &x0,
        &LanczosOptions {
            max_iter: n,
            min_iter: 2,
            tol: 1e-14,
            ..LanczosOptions::default()
        },
    )
    .unwrap();
    let m = matricize(&h, &[0], &[1]);
    let e0 = m
        .as_ref()
        .self_adjoint_eigenvalues(faer::Side::Lower)
        .unwrap()[0];
    assert!((r.value - e0).abs() < 1e-10, "{} vs {e0}", r.value);
    assert!(r.converged && r.applications <= n);
    // H v = e v, to the square root of the energy tolerance (the energy converges quadratically
    // faster than the vector)
    let hv = contract_dyn(&spec, &[&h, &r.vector], 1.0, Executor::Pairwise)
        .unwrap()
        .0;
    let mut res = hv.clone();
    res.axpy(-r.value, &r.vector).unwrap();
    assert!(res.norm() < 1e-5, "residual {}", res.norm());
    assert!((r.vector.norm() - 1.0).abs() < 1e-12);
}

/// The map `x -> diag(d) x` on a space without symmetry, and that space.
fn diagonal(
    d: &[f64],
) -> (
    std::sync::Arc<blockcontract::Space>,
    impl Fn(&DynTensor<f64>) -> blockcontract::Result<DynTensor<f64>>,
) {
    let (triv, n) = (blockcontract::Symmetry::none(), d.len());
    let sp = std::sync::Arc::new(blockcontract::Space::block(&triv, &[(vec![], n)]).unwrap());
    let dense = ndarray::Array2::from_shape_fn((n, n), |(i, j)| if i == j { d[i] } else { 0.0 });
    let legs = vec![Leg::out(&sp), Leg::inc(&sp)];
    let h = DynTensor::from_dense(legs, triv.zero(), &dense.into_dyn()).unwrap();
    let spec = ContractionSpec::parse("Y[i] = H[i,j] * X[j]").unwrap();
    let apply = move |x: &DynTensor<f64>| {
        contract_dyn(&spec, &[&h, x], 1.0, Executor::Pairwise).map(|r| r.0)
    };
    (sp, apply)
}

/// A spectrum of three tight clusters: the Krylov space is nearly invariant after three
/// vectors, so each new vector is mostly cancellation. Found in DMRG (Heisenberg L = 20,
/// a Ritz value 2 below the spectrum): one Gram-Schmidt pass lost orthogonality there. The
/// value must never fall below the lowest eigenvalue, and must be the vector's Rayleigh
/// quotient.
#[test]
fn lanczos_stays_variational_when_the_krylov_space_is_nearly_invariant() {
    let diag: Vec<f64> = (0..40)
        .map(|i| [-2.0, 0.5, 3.0][i % 3] + i as f64 * 1e-9)
        .collect();
    let (sp, apply) = diagonal(&diag);
    let triv = blockcontract::Symmetry::none();
    let e0 = diag.iter().cloned().fold(f64::INFINITY, f64::min);
    for seed in 0..20 {
        let x0 = DynTensor::<f64>::random(vec![Leg::out(&sp)], triv.zero(), seed).unwrap();
        let opts = LanczosOptions {
            max_iter: 30,
            min_iter: 30,
            tol: 0.0,
            ..LanczosOptions::default()
        };
        let r = lanczos(&apply, &x0, &opts).unwrap();
        let hv = apply(&r.vector).unwrap();
        let rq = r.vector.inner(&hv).unwrap();
        assert!(r.value >= e0 - 1e-9, "seed {seed}: {} below {e0}", r.value);
        assert!(
            (r.value - rq).abs() < 1e-8,
            "seed {seed}: value {} vs <v|H|v> {rq}",
            r.value
        );
        assert!(
            (r.value - e0).abs() < 1e-7,
            "seed {seed}: {} vs {e0}",
            r.value
        );
    }
}

/// An isolated ground state converges in a few steps; forced on for 40, the Krylov basis of a
/// bare three-term recurrence loses orthogonality (the estimate must notice it: some passes
/// against the whole basis, far fewer than full reorthogonalisation's one per step), and the
/// Ritz pair stays what full reorthogonalisation gives: the eigenvalue, its Rayleigh quotient
/// and a small residual. (The nearly invariant case above fails without those passes.)
#[test]
fn partial_reorthogonalisation_keeps_the_ritz_pair_past_convergence() {
    // -10 alone, the rest in [0, 1]
    let diag: Vec<f64> = (0..120)
        .map(|i| {
            if i == 7 {
                -10.0
            } else {
                (i as f64 * 0.618).fract()
            }
        })
        .collect();
    let (sp, apply) = diagonal(&diag);
    let triv = blockcontract::Symmetry::none();
    let x0 = DynTensor::<f64>::random(vec![Leg::out(&sp)], triv.zero(), 3).unwrap();
    let mut passes = Vec::new();
    for mode in [Reorthogonalization::Partial, Reorthogonalization::Full] {
        let opts = LanczosOptions {
            max_iter: 40,
            min_iter: 40,
            tol: 0.0,
            reorthogonalization: mode,
        };
        let r = lanczos(&apply, &x0, &opts).unwrap();
        assert_eq!(r.applications, 40, "{mode:?}");
        assert!((r.value + 10.0).abs() < 1e-10, "{mode:?}: {}", r.value);
        let hv = apply(&r.vector).unwrap();
        let rq = r.vector.inner(&hv).unwrap();
        assert!(
            (r.value - rq).abs() < 1e-10,
            "{mode:?}: {} vs {rq}",
            r.value
        );
        let mut res = hv.clone();
        res.axpy(-r.value, &r.vector).unwrap();
        assert!(res.norm() < 1e-6, "{mode:?}: residual {}", res.norm());
        passes.push(r.full_passes);
    }
    // full: every step after the first; partial: some (the basis did lose orthogonality), far
    // fewer
    assert_eq!(passes[1], 39);
    assert!(
        passes[0] > 0 && passes[0] < 20,
        "partial passes {}",
        passes[0]
    );
}

/// Three random legs of `s`, flowing out, in, out.
fn out_in_out(rng: &mut common::Rng, s: &Symmetry) -> Vec<Leg> {
    (0..3)
        .map(|i| {
            let sp = common::space(rng, s);
            if i == 1 {
                Leg::inc(&sp)
            } else {
                Leg::out(&sp)
            }
        })
        .collect()
}

#[test]
fn vector_operations_match_dense() {
    let mut rng = common::Rng(9);
    let s = common::symmetry(2);
    let legs = out_in_out(&mut rng, &s);
    let a = common::tensor::<Complex64>(&mut rng, legs.clone(), true);
    // another tensor of the same legs and charge, other blocks and memory order
    let b = DynTensor::<Complex64>::random(legs, a.charge().clone(), 4)
        .unwrap()
        .relayout(&[2, 0, 1])
        .unwrap();
    let alpha = Complex64::new(0.5, -2.0);
    let mut y = a.clone();
    y.axpy(alpha, &b).unwrap();
    let want = &a.to_dense().unwrap() + &b.to_dense().unwrap().mapv(|x| alpha * x);
    assert!(common::rel_diff(&y.to_dense().unwrap(), &want) < 1e-13);
    let ip = a.inner(&b).unwrap();
    let want: Complex64 = a
        .to_dense()
        .unwrap()
        .iter()
        .zip(b.to_dense().unwrap().iter())
        .map(|(x, y)| x.conj() * y)
        .sum();
    assert!((ip - want).norm() < 1e-12 * want.norm().max(1.0));
    assert!((a.inner(&a).unwrap().re - a.norm().powi(2)).abs() < 1e-10);
    // other legs: a typed error, nothing changed
    let other = a.conj();
    assert!(matches!(
        y.axpy(alpha, &other),
        Err(Error::FlowMismatch { .. })
    ));
}

/// `project_out` removes `<b_i|w> b_i` with the coefficients of `w` as given, on the
/// cache-blocked path (every basis tensor in `w`'s layout) and on the block-by-block one (a
/// basis tensor in another memory order), equal to the same sums on dense arrays; bad input
/// gets a typed error.
#[test]
fn project_out_matches_dense() {
    let s = common::symmetry(3);
    let legs = out_in_out(&mut common::Rng(11), &s);
    let w0 = DynTensor::<Complex64>::random(legs.clone(), s.zero(), 1).unwrap();
    let b0 = DynTensor::<Complex64>::random(legs.clone(), s.zero(), 2).unwrap();
    let b1 = DynTensor::<Complex64>::random(legs.clone(), s.zero(), 3).unwrap();
    let permuted = b1.relayout(&[1, 2, 0]).unwrap();
    let dense = |t: &DynTensor<Complex64>| t.to_dense().unwrap();
    let dot = |a: &DynTensor<Complex64>, b: &DynTensor<Complex64>| -> Complex64 {
        dense(a)
            .iter()
            .zip(dense(b).iter())
            .map(|(x, y)| x.conj() * y)
            .sum()
    };
    let (c0, c1) = (dot(&b0, &w0), dot(&b1, &w0));
    let want = &dense(&w0) - &(&dense(&b0).mapv(|x| c0 * x) + &dense(&b1).mapv(|x| c1 * x));
    let want_norm = want.iter().map(|x| x.norm_sqr()).sum::<f64>().sqrt();
    for (basis, path) in [([&b0, &b1], "fused"), ([&b0, &permuted], "per block")] {
        let mut w = w0.clone();
        let p = w.project_out(&basis).unwrap();
        let tol = 1e-12 * (1.0 + w0.norm().powi(2));
        assert!((p.coefs[0] - c0).norm() < tol, "{path}");
        assert!((p.coefs[1] - c1).norm() < tol, "{path}");
        assert!((p.norm_before - w0.norm()).abs() < tol, "{path}");
        assert!((p.norm_after - want_norm).abs() < tol, "{path}");
        assert!(common::rel_diff(&dense(&w), &want) < 1e-12, "{path}");
    }
    // other legs: a typed error
    let other = b0.conj();
    let mut w = w0.clone();
    assert!(matches!(
        w.project_out(&[&b0, &other]),
        Err(Error::FlowMismatch { .. })
    ));
}

#[test]
fn bad_factorization_input_gets_typed_errors() {
    let (t, _, _) = case::<f64>(1, 0);
    let r = t.rank();
    assert!(matches!(
        svd(&t, &[0, 1], &[1], &Truncation::none()),
        Err(Error::InvalidLegs { reason }) if reason.contains("leg 1")
    ));
    assert!(matches!(
        svd(&t, &[0], &[r + 3], &Truncation::none()),
        Err(Error::InvalidLegs { reason }) if reason.contains(&format!("leg {}", r + 3))
    ));
    assert!(matches!(qr(&t, &[0], &[]), Err(Error::InvalidLegs { .. })));
    let cols: Vec<usize> = (1..r).collect();
    assert!(matches!(
        svd(&t, &[0], &cols, &Truncation { max_dim: None, cutoff: -1.0 }),
        Err(Error::InvalidArgument { name, .. }) if name == "cutoff"
    ));
    assert!(matches!(
        svd(&t, &[0], &cols, &Truncation::new(0, 0.0)),
        Err(Error::InvalidArgument { name, .. }) if name == "max_dim"
    ));
    assert!(matches!(
        eigh(&t, &[0], &cols),
        Err(Error::InvalidLegs { .. } | Error::ChargeMismatch { .. })
    ));
}

/// The factorizations on 3 threads (sectors side by side) give the 1-thread results bit for
/// bit: each sector is the same sequential faer call.
#[test]
fn factorizations_on_several_threads_equal_one_thread() {
    fn all<T: Scalar>(seed: u64, sym: usize) -> Vec<Vec<T>> {
        let (t, rows, cols) = case::<T>(seed, sym);
        let f = svd(&t, &rows, &cols, &Truncation::new(usize::MAX, 0.0)).unwrap();
        let (q, r) = qr(&t, &rows, &cols).unwrap();
        let (l, k) = lq(&t, &rows, &cols).unwrap();
        let (h, hr, hc) = hermitian::<T>(seed, sym);
        let e = eigh(&h, &hr, &hc).unwrap();
        [&f.u, &f.s, &f.vh, &q, &r, &l, &k, &e.v, &e.d]
            .iter()
            .map(|x| x.data().to_vec())
            .collect()
    }
    for seed in 0..40u64 {
        let sym = seed as usize;
        blockcontract::linalg::set_threads(1);
        let one = (all::<f64>(seed, sym), all::<Complex64>(seed, sym));
        blockcontract::linalg::set_threads(3);
        let three = (all::<f64>(seed, sym), all::<Complex64>(seed, sym));
        blockcontract::linalg::set_threads(1);
        assert!(one == three, "seed {seed}: 3 threads differ from 1");
    }
}

/// The truncated split by the Gram matrix against the dense SVD: the kept factor an isometry,
/// the discarded weight and the kept singular values the dense ones, the product `t` up to
/// exactly the discarded weight.
fn check_split<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    use blockcontract::linalg::{truncated_split, Keep};
    let (t, rows, cols) = case::<T>(seed, sym);
    let dense = sorted_singular_values(&matricize(&t, &rows, &cols));
    let total: f64 = dense.iter().map(|s| s * s).sum();
    if total == 0.0 {
        return Ok(());
    }
    let mut rng = common::Rng(seed ^ 0x5eed);
    let chi = 1 + rng.below(dense.len().max(1));
    for keep in [Keep::Left, Keep::Right] {
        let f = truncated_split(&t, &rows, &cols, &Truncation::new(chi, 1e-14), keep).unwrap();
        let (iso, bond) = match keep {
            Keep::Left => (&f.left, f.left.rank() - 1),
            Keep::Right => (&f.right, 0),
        };
        prop_assert!(
            is_identity(&gram(iso, &[], bond)) < 1e-13,
            "{keep:?} not an isometry"
        );
        // the dense values the truncation keeps: the largest `chi` above the cutoff
        let kept: Vec<f64> = dense
            .iter()
            .copied()
            .filter(|&s| s > 1e-14 * dense[0])
            .take(chi)
            .collect();
        let dw: f64 = (total - kept.iter().map(|s| s * s).sum::<f64>()) / total;
        prop_assert!(
            (f.discarded_weight - dw).abs() < 1e-12,
            "{} vs {dw}",
            f.discarded_weight
        );
        for (a, b) in f.singular_values.iter().zip(&kept) {
            prop_assert!((a * a - b * b).abs() < 1e-13 * total, "{a} vs {b}");
            if *b > 1e-3 * dense[0] {
                prop_assert!((a - b).abs() < 1e-9 * b, "{a} vs {b}");
            }
        }
        let back = recombine(&f.left, &f.right, &rows, &cols);
        let mut diff = back.clone();
        diff.axpy(-T::one(), &t).unwrap();
        let lost = diff.norm().powi(2) / total;
        prop_assert!(
            (lost - f.discarded_weight).abs() < 1e-12,
            "{lost} vs {}",
            f.discarded_weight
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn truncated_split_matches_the_dense_svd_f64(seed in any::<u64>(), sym in 0usize..5) {
        check_split::<f64>(seed, sym)?;
    }

    #[test]
    fn truncated_split_matches_the_dense_svd_complex(seed in any::<u64>(), sym in 0usize..5) {
        check_split::<Complex64>(seed, sym)?;
    }
}

#[test]
fn truncated_split_is_exact_with_near_degenerate_and_tiny_singular_values() {
    use blockcontract::linalg::{truncated_split, Keep};
    let triv = blockcontract::Symmetry::none();
    let n = 12;
    let sp = std::sync::Arc::new(blockcontract::Space::block(&triv, &[(vec![], n)]).unwrap());
    // orthogonal U, V from the QR of seeded matrices; singular values with a near-degenerate
    // pair, values at 1e-9, 1e-15 and exact zeros
    let q = |seed: u64| {
        let m = Mat::<f64>::from_fn(n, n, |i, j| common::value::<f64>(seed, &[i, j]));
        m.as_ref().qr().compute_Q()
    };
    let (u, v) = (q(1), q(2));
    let s = [
        1.0,
        1.0 + 1e-12,
        0.5,
        0.5 - 1e-13,
        0.1,
        1e-3,
        1e-6,
        1e-9,
        1e-12,
        1e-15,
        0.0,
        0.0,
    ];
    let m = Mat::<f64>::from_fn(n, n, |i, j| {
        (0..n).map(|k| u[(i, k)] * s[k] * v[(j, k)]).sum()
    });
    let d = ndarray::Array2::from_shape_fn((n, n), |(i, j)| m[(i, j)]).into_dyn();
    let t = DynTensor::from_dense(vec![Leg::out(&sp), Leg::inc(&sp)], triv.zero(), &d).unwrap();
    let total: f64 = s.iter().map(|x| x * x).sum();
    for chi in [1, 2, 3, 4, 8, 9, 10, 12] {
        for keep in [Keep::Left, Keep::Right] {
            let f = truncated_split(&t, &[0], &[1], &Truncation::new(chi, 1e-14), keep).unwrap();
            let mut sorted = s.to_vec();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let kept: Vec<f64> = sorted
                .into_iter()
                .filter(|&x| x > 1e-14)
                .take(chi)
                .collect();
            let dw = (total - kept.iter().map(|x| x * x).sum::<f64>()) / total;
            assert!(
                (f.discarded_weight - dw).abs() < 1e-14,
                "chi {chi} {keep:?}: {} vs {dw}",
                f.discarded_weight
            );
            let (iso, bond) = match keep {
                Keep::Left => (&f.left, 1),
                Keep::Right => (&f.right, 0),
            };
            assert!(
                is_identity(&gram(iso, &[], bond)) < 1e-13,
                "chi {chi} {keep:?}"
            );
            let back = recombine(&f.left, &f.right, &[0], &[1]);
            let mut diff = back;
            diff.axpy(-1.0, &t).unwrap();
            assert!(
                (diff.norm().powi(2) / total - dw).abs() < 1e-14,
                "chi {chi} {keep:?}"
            );
            // squares to 1e-14 of the largest: a value's relative precision falls as
            // (s_max / s)^2, full near the top
            for (a, b) in f.singular_values.iter().zip(&kept) {
                assert!((a * a - b * b).abs() < 1e-14, "chi {chi}: {a} vs {b}");
                if *b > 1e-3 {
                    assert!((a - b).abs() < 1e-9 * b, "chi {chi}: {a} vs {b}");
                }
            }
        }
    }
}

/// The Frobenius norm of `m`.
fn fro<T: Scalar>(m: &Mat<T>) -> f64 {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)].abs2()))
        .sum::<f64>()
        .sqrt()
}

/// `[a, b]`: the columns of `a`, then those of `b` (the same rows).
fn hstack<T: Scalar>(a: &Mat<T>, b: &Mat<T>) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols() + b.ncols(), |i, j| {
        if j < a.ncols() {
            a[(i, j)]
        } else {
            b[(i, j - a.ncols())]
        }
    })
}

/// The expanded split of a random tensor by a random term on its isometry legs plus a leg
/// of its own (so that the term reaches sectors the tensor lacks): the isometry orthonormal,
/// the other factor the tensor projected on it, and, with room for the whole of the term's
/// range, the kept Ritz values the dense singular values of `[M, alpha P]`; with `alpha` 0,
/// those of `M`.
fn check_expanded<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    use blockcontract::linalg::{expanded_split, Expansion, Keep};
    let (t, rows, cols) = case::<T>(seed, sym);
    let mut rng = common::Rng(seed ^ 0xe4a4);
    let s = common::symmetry(sym);
    for keep in [Keep::Left, Keep::Right] {
        let (iso, other) = match keep {
            Keep::Left => (&rows, &cols),
            Keep::Right => (&cols, &rows),
        };
        let extra = common::space(&mut rng, &s);
        let mut plegs: Vec<Leg> = iso.iter().map(|&l| t.legs()[l].clone()).collect();
        plegs.push(if rng.coin() {
            Leg::out(&extra)
        } else {
            Leg::inc(&extra)
        });
        let p = common::tensor::<T>(&mut rng, plegs, false);
        let shared: Vec<usize> = (0..iso.len()).collect();
        let mdense = matricize(&t, iso, other);
        let pdense = matricize(&p, &shared, &[iso.len()]);
        for alpha in [0.0, 0.3] {
            let e = Expansion {
                p: &p,
                shared: &shared,
                rest: &[iso.len()],
                alpha,
                ratio: 1e6,
                seed,
            };
            let scaled = Mat::from_fn(pdense.nrows(), pdense.ncols(), |i, j| {
                pdense[(i, j)] * T::from_f64(alpha)
            });
            let dense = sorted_singular_values(&hstack(&mdense, &scaled));
            if dense.is_empty() || dense[0] == 0.0 {
                continue;
            }
            let chi = 1 + rng.below(dense.len());
            let trunc = Truncation::new(chi, 1e-12);
            let f = expanded_split(&t, &rows, &cols, keep, &e, &trunc).unwrap();
            let (lm, rm) = (
                matricize(&f.left, &(0..rows.len()).collect::<Vec<_>>(), &[rows.len()]),
                matricize(&f.right, &[0], &(1..=cols.len()).collect::<Vec<_>>()),
            );
            let tm = matricize(&t, &rows, &cols);
            let scale = fro(&tm).max(1e-300);
            let (defect, projected) = match keep {
                Keep::Left => (
                    lm.adjoint() * &lm,
                    fro(&(rm.clone() - lm.adjoint() * &tm)) / scale,
                ),
                Keep::Right => (
                    &rm * rm.adjoint(),
                    fro(&(lm.clone() - &tm * rm.adjoint())) / scale,
                ),
            };
            let eye = Mat::<T>::identity(defect.nrows(), defect.ncols());
            prop_assert!(fro(&(defect - eye)) < 1e-12, "{keep:?}: not an isometry");
            prop_assert!(
                projected < 1e-12,
                "{keep:?}: not the projection, {projected}"
            );
            // the values the truncation keeps, where the sketch's floor (1e-7 of a sector's
            // largest) cannot have dropped a direction
            let top = dense[0];
            for (a, b) in f.singular_values.iter().zip(&dense) {
                if *b > 1e-5 * top {
                    prop_assert!(
                        (a - b).abs() < 1e-9 * top,
                        "{keep:?} alpha {alpha}: {a} vs {b}"
                    );
                }
            }
            prop_assert!(f.singular_values.len() <= chi);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn expanded_split_matches_the_dense_svd_of_the_enlarged_matrix_f64(
        seed in any::<u64>(), sym in 0usize..5
    ) {
        check_expanded::<f64>(seed, sym)?;
    }

    #[test]
    fn expanded_split_matches_the_dense_svd_of_the_enlarged_matrix_complex(
        seed in any::<u64>(), sym in 0usize..5
    ) {
        check_expanded::<Complex64>(seed, sym)?;
    }
}

#[test]
fn expanded_split_of_a_sector_with_nothing_in_range_keeps_nothing_there() {
    // this case has a sector where neither the tensor nor the term has a column: its
    // eigenproblem is empty (faer's eigensolver is not called on a 0 x 0 matrix)
    check_expanded::<f64>(1376800198091160353, 0).unwrap();
    check_expanded::<Complex64>(1376800198091160353, 0).unwrap();
}

#[test]
fn expanded_split_rejects_a_term_on_other_legs_and_a_negative_weight() {
    use blockcontract::linalg::{expanded_split, Expansion, Keep};
    let u1 = Symmetry::u1();
    let v = std::sync::Arc::new(
        blockcontract::Space::block(&u1, &[(vec![-1], 2), (vec![0], 3), (vec![1], 2)]).unwrap(),
    );
    let t = DynTensor::<f64>::random(vec![Leg::inc(&v), Leg::out(&v)], u1.zero(), 3).unwrap();
    // the term's first leg flows the other way
    let p = DynTensor::<f64>::random(vec![Leg::out(&v), Leg::out(&v)], u1.zero(), 4).unwrap();
    let e = Expansion {
        p: &p,
        shared: &[0],
        rest: &[1],
        alpha: 0.1,
        ratio: 1.0,
        seed: 1,
    };
    let trunc = Truncation::new(4, 0.0);
    let err = expanded_split(&t, &[0], &[1], Keep::Left, &e, &trunc).unwrap_err();
    assert!(matches!(err, Error::FlowMismatch { .. }), "{err:?}");
    let p = DynTensor::<f64>::random(vec![Leg::inc(&v), Leg::out(&v)], u1.zero(), 4).unwrap();
    let e = Expansion {
        p: &p,
        alpha: -1.0,
        ..e
    };
    let err = expanded_split(&t, &[0], &[1], Keep::Left, &e, &trunc).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name, .. } if name == "alpha"),
        "{err:?}"
    );
    let e = Expansion { alpha: 0.1, ..e };
    let err = expanded_split(&t, &[0], &[1, 1], Keep::Left, &e, &trunc).unwrap_err();
    assert!(matches!(err, Error::InvalidLegs { .. }), "{err:?}");
}
