//! Every form of `contract!` run against the dense reference.

mod common;

use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{
    contract, contract_dyn, ContractionSpec, DynTensor, Error, Executor, Flow, Leg, Space,
    Symmetry, Tensor,
};
use num_complex::Complex64;
use std::path::Path;
use std::sync::Arc;

struct Fixture {
    v: Arc<Space>,
    p: Arc<Space>,
    rng: common::Rng,
}

impl Fixture {
    fn new() -> Self {
        let u1 = Symmetry::u1();
        let v = Arc::new(
            Space::block(
                &u1,
                &[
                    (vec![-2], 1),
                    (vec![-1], 2),
                    (vec![0], 3),
                    (vec![1], 2),
                    (vec![2], 1),
                ],
            )
            .unwrap(),
        );
        let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
        Fixture {
            v,
            p,
            rng: common::Rng(42),
        }
    }
    /// A neutral random tensor with every allowed block.
    fn t<T: blockcontract::Scalar, const N: usize>(&mut self, legs: [Leg; N]) -> Tensor<T, N> {
        let seed = self.rng.next() >> 12;
        let q = legs[0].space.symmetry().zero();
        Tensor::from_fn(legs, q, None, |i| common::value(seed, &i)).unwrap()
    }
}

/// The dense oracle for a workload-notation spec.
fn dense<T: blockcontract::Scalar>(
    text: &str,
    ops: &[&DynTensor<T>],
    alpha: T,
) -> ndarray::ArrayD<T> {
    let spec = ContractionSpec::parse(text).unwrap();
    contract_dyn(&spec, ops, alpha, Executor::Dense)
        .unwrap()
        .0
        .to_dense()
        .unwrap()
}

fn close<T: blockcontract::Scalar>(x: &ndarray::ArrayD<T>, y: &ndarray::ArrayD<T>) {
    let d = common::rel_diff(x, y);
    assert!(d < 1e-13, "relative difference {d}");
}

#[test]
fn new_tensor_from_a_matrix_product() {
    let mut f = Fixture::new();
    let a: Tensor<f64, 2> = f.t([Leg::out(&f.v.clone()), Leg::inc(&f.v.clone())]);
    let b: Tensor<f64, 2> = f.t([Leg::out(&f.v.clone()), Leg::inc(&f.v.clone())]);
    let c: Tensor<f64, 2> = contract!(c[i, j] := a[i, k] * b[k, j]).unwrap();
    close(
        &c.to_dense().unwrap(),
        &dense("C[i,j] = A[i,k] * B[k,j]", &[&a, &b], 1.0),
    );
    // output order is honoured
    let ct = contract!(ct[j, i] := a[i, k] * b[k, j]).unwrap();
    close(
        &ct.to_dense().unwrap(),
        &dense("C[j,i] = A[i,k] * B[k,j]", &[&a, &b], 1.0),
    );
}

#[test]
fn overwrite_and_accumulate_with_scalars() {
    let mut f = Fixture::new();
    let (v, _) = (f.v.clone(), f.p.clone());
    let a: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let mut c: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let c0 = c.to_dense().unwrap();
    contract!(c[i, j] += 0.5 * a[i, k] * b[k, j]).unwrap();
    let ab = dense("C[i,j] = A[i,k] * B[k,j]", &[&a, &b], 1.0);
    close(&c.to_dense().unwrap(), &(&c0 + &ab.mapv(|x| 0.5 * x)));
    contract!(c[i, j] = a[i, k] * b[k, j]).unwrap();
    close(&c.to_dense().unwrap(), &ab);
    let alpha = -2.0;
    contract!(c[i, j] += alpha * a[i, k] * (0.25) * b[k, j]).unwrap();
    close(&c.to_dense().unwrap(), &ab.mapv(|x| x * 0.5));
    // a DynTensor target works the same
    let mut d: DynTensor<f64> =
        DynTensor::zeros(vec![Leg::out(&v), Leg::inc(&v)], v.symmetry().zero()).unwrap();
    contract!(d[i, j] = a[i, k] * b[k, j]).unwrap();
    close(&d.to_dense().unwrap(), &ab);
}

#[test]
fn accumulate_into_a_sparser_target_grows_it() {
    let mut f = Fixture::new();
    let v = f.v.clone();
    let a: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let mut c = Tensor::<f64, 2>::zeros_with_blocks(
        [Leg::out(&v), Leg::inc(&v)],
        v.symmetry().zero(),
        &[[2, 2]],
    )
    .unwrap();
    c.data_mut().iter_mut().for_each(|x| *x = 1.0);
    let before = c.to_dense().unwrap();
    contract!(c[i, j] += a[i, k] * b[k, j]).unwrap();
    assert_eq!(c.num_blocks(), 5);
    close(
        &c.to_dense().unwrap(),
        &(&before + &dense("C[i,j] = A[i,k] * B[k,j]", &[&a, &b], 1.0)),
    );
}

#[test]
fn complex_conj_and_annotations() {
    let mut f = Fixture::new();
    let v = f.v.clone();
    let a: Tensor<Complex64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<Complex64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let mut c =
        Tensor::<Complex64, 2>::zeros([Leg::out(&v), Leg::inc(&v)], v.symmetry().zero()).unwrap();
    let alpha = Complex64::new(0.5, -1.0);
    // conj(a)[k, i]: a's legs (out, in) reversed, so k flows in and i flows out
    contract!(c[i, j] += alpha * conj(a[k, i]) * b[k, j]).unwrap();
    let want = dense("C[i,j] = conj(A)[k,i] * B[k,j]", &[&a, &b], alpha);
    close(&c.to_dense().unwrap(), &want);
    // conj(x)[..] spelling and flow annotations
    let d = contract!(d[i: out, j: in] := conj(a)[k: in, i: out] * b[k: out, j: in]).unwrap();
    close(&d.to_dense().unwrap(), &want.mapv(|x| x / alpha));
    // an annotation that contradicts the tensor is a run-time error naming the index
    let e = contract!(e[i, j] := a[i: in, k] * b[k, j]).unwrap_err();
    assert!(
        matches!(e, Error::FlowMismatch { ref what, .. } if what.contains("`i`")),
        "{e}"
    );
}

#[test]
fn one_tensor_as_both_operands() {
    let mut f = Fixture::new();
    let (v, p) = (f.v.clone(), f.p.clone());
    let psi: Tensor<Complex64, 4> = f.t([Leg::out(&v), Leg::out(&p), Leg::out(&p), Leg::inc(&v)]);
    // a two-site reduced density matrix: the same psi on both sides, one conjugated
    let rho = contract!(rho[i, j, m, n] := conj(psi)[a, i, j, b] * psi[a, m, n, b]).unwrap();
    let want = dense(
        "R[i,j,m,n] = conj(P)[a,i,j,b] * Q[a,m,n,b]",
        &[&psi, &psi],
        Complex64::new(1.0, 0.0),
    );
    close(&rho.to_dense().unwrap(), &want);
    // the middle legs contracted, the same tensor stored column-major on both sides
    let cm = psi.relayout(&[3, 2, 1, 0]).unwrap();
    let e = contract!(e[a, b, c, d] := conj(cm)[a, i, j, b] * cm[c, i, j, d]).unwrap();
    let want = dense(
        "E[a,b,c,d] = conj(P)[a,i,j,b] * Q[c,i,j,d]",
        &[&cm, &cm],
        Complex64::new(1.0, 0.0),
    );
    close(&e.to_dense().unwrap(), &want);
    // a matrix squared
    let m: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let m2 = contract!(m2[i, j] := m[i, k] * m[k, j]).unwrap();
    close(
        &m2.to_dense().unwrap(),
        &dense("M[i,j] = A[i,k] * B[k,j]", &[&m, &m], 1.0),
    );
}

#[test]
fn local_legs_and_parentheses() {
    let mut f = Fixture::new();
    let (v, p) = (f.v.clone(), f.p.clone());
    let m: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let psi: Tensor<f64, 3> = f.t([Leg::out(&v), Leg::out(&p), Leg::inc(&v)]);
    let t = contract!(t[x, s, y] := m[x, k] * psi[k, s: out local, y]).unwrap();
    close(
        &t.to_dense().unwrap(),
        &dense("T[x,s,y] = M[x,k] * P[k,s,y]", &[&m, &psi], 1.0),
    );
    // `local` on a block leg is a run-time error naming the index
    let e = contract!(t[x, s, y] := m[x, k: local] * psi[k, s, y]).unwrap_err();
    assert!(e.to_string().contains("`k`"), "{e}");
    let r: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let y1 = contract!(y[x, s, z] := m[x, k] * (psi[k, s, y] * r[y, z])).unwrap();
    let y2 = contract!(y[x, s, z] := (m[x, k] * psi[k, s, y]) * r[y, z]).unwrap();
    let want = dense(
        "Y[x,s,z] = M[x,k] * P[k,s,y] * R[y,z]",
        &[&m, &psi, &r],
        1.0,
    );
    close(&y1.to_dense().unwrap(), &want);
    close(&y2.to_dense().unwrap(), &want);
}

#[test]
fn parenthesised_operand_expressions_and_dyn_operands() {
    struct Env {
        left: Tensor<f64, 2>,
    }
    let mut f = Fixture::new();
    let v = f.v.clone();
    let env = Env {
        left: f.t([Leg::out(&v), Leg::inc(&v)]),
    };
    let x: DynTensor<f64> = f.t::<f64, 2>([Leg::out(&v), Leg::inc(&v)]).into_dyn();
    let refs = [&x];
    let y = contract!(y[a, b] := (env.left)[a, k] * (refs[0])[k, b]).unwrap();
    close(
        &y.to_dense().unwrap(),
        &dense("Y[a,b] = L[a,k] * X[k,b]", &[&env.left, &x], 1.0),
    );
    // a pure permutation with a scalar
    let z = contract!(z[b, a] := 3.0 * x[a, b]).unwrap();
    close(
        &z.to_dense().unwrap(),
        &dense("Z[b,a] = X[a,b]", &[&x], 3.0),
    );
    // a DynTensor with the wrong rank is a run-time error
    let e = contract!(w[a] := x[a, k, q] * (env.left)[k, q]).unwrap_err();
    assert!(matches!(e, Error::RankMismatch { .. }), "{e}");
}

#[test]
fn two_site_effective_hamiltonian_on_a_shipped_workload() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m64_heff2.json")).unwrap();
    let t = |n: &str| w.build_tensor::<f64>(n).unwrap();
    let (l, psi, w0, w1, r) = (t("L"), t("psi"), t("W0"), t("W1"), t("R"));
    // TeNPy's matvec order, written with parentheses
    let y = contract!(
        y[a, s, u, b] := (((l[a, w, x] * psi[x, t, q, z]) * w0[w, v, s, t]) * w1[v, k, u, q]) * r[z, k, b]
    )
    .unwrap();
    let exp = load_expected(dir.join("expected.json")).unwrap()[&w.name];
    assert!(
        exp.agrees(y.norm(), checksum(&y), 1e-10),
        "norm {} checksum {}",
        y.norm(),
        checksum(&y)
    );
    // and without parentheses (the runtime picks the order)
    let y2: Tensor<f64, 4> = contract!(y[a, s, u, b] := l[a, w, x] * psi[x, t, q, z] * w0[w, v, s, t] * w1[v, k, u, q] * r[z, k, b]).unwrap();
    assert!(exp.agrees(y2.norm(), checksum(&y2), 1e-10));
}

#[test]
fn flows_of_new_tensors_follow_their_sources() {
    let mut f = Fixture::new();
    let v = f.v.clone();
    let a: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::inc(&v)]);
    let c = contract!(c[i: out, j: in] := a[i: out, k: in] * b[k: out, j: in]).unwrap();
    assert_eq!(c.legs()[0].flow, Flow::Out);
    assert_eq!(c.legs()[1].flow, Flow::In);
    // two `out` legs contracted: a run-time flow error naming the index
    let bo: Tensor<f64, 2> = f.t([Leg::out(&v), Leg::out(&v)]);
    let e = contract!(c[i, j] := a[k, i] * bo[j, k]).unwrap_err();
    assert!(
        matches!(e, Error::FlowMismatch { ref what, .. } if what.contains("`k`")),
        "{e}"
    );
    // assigning into a target with other legs fails and leaves it untouched
    let mut t = Tensor::<f64, 2>::zeros([Leg::out(&v), Leg::out(&v)], v.symmetry().zero()).unwrap();
    let before = t.to_dense().unwrap();
    assert!(matches!(
        contract!(t[i, j] = a[i, k] * b[k, j]),
        Err(Error::FlowMismatch { .. })
    ));
    assert_eq!(t.to_dense().unwrap(), before);
}
