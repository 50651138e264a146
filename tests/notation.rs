//! The rest of `@tensor`'s notation against an independent dense evaluation (every index
//! summed explicitly): partial traces (on any factor, several pairs, sparse and charged
//! tensors), sums and differences of terms, the target as a term of its own, `-=`, scalar
//! divisors, `contract!` options, and a macro forwarding its tokens to `contract!`.

mod common;

use blockcontract::{
    build_plan, contract, Assign, Conj, ContractionSpec, DynTensor, Error, IndexSpec, Leg,
    OperandSpec, PlanCache, PlanOptions, Scalar, Space, Tensor,
};
use ndarray::{ArrayD, IxDyn};
use num_complex::Complex64;
use std::collections::HashMap;
use std::sync::Arc;

/// `out[..] = sum over every other index of prod_k ops[k][..]`, indices by name.
fn einsum<T: Scalar>(out: &[&str], ops: &[(&[&str], &ArrayD<T>)]) -> ArrayD<T> {
    let mut dims: HashMap<&str, usize> = HashMap::new();
    for (ix, a) in ops {
        for (k, n) in ix.iter().enumerate() {
            let d = a.shape()[k];
            assert_eq!(*dims.entry(n).or_insert(d), d, "index {n}");
        }
    }
    let mut names: Vec<&str> = out.to_vec();
    for (ix, _) in ops {
        for n in ix.iter() {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    let shape: Vec<usize> = out.iter().map(|n| dims[n]).collect();
    let mut r = ArrayD::from_elem(IxDyn(&shape), T::zero());
    let sizes: Vec<usize> = names.iter().map(|n| dims[n]).collect();
    let total: usize = sizes.iter().product();
    let mut idx = vec![0usize; names.len()];
    for _ in 0..total {
        let val = |n: &str| idx[names.iter().position(|m| *m == n).unwrap()];
        let mut p = T::one();
        for (ix, a) in ops {
            let at: Vec<usize> = ix.iter().map(|n| val(n)).collect();
            p *= a[IxDyn(&at)];
        }
        let at: Vec<usize> = out.iter().map(|n| val(n)).collect();
        r[IxDyn(&at)] += p;
        for k in (0..names.len()).rev() {
            idx[k] += 1;
            if idx[k] < sizes[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    r
}

fn close<T: Scalar>(got: &ArrayD<T>, want: &ArrayD<T>, what: &str) {
    let d = common::rel_diff(got, want);
    assert!(d < 1e-12, "{what}: relative difference {d}");
}

/// Random legs and tensors for one symmetry: `v`, `w` block spaces, `p` local.
struct Fix {
    v: Arc<Space>,
    w: Arc<Space>,
    rng: common::Rng,
}

impl Fix {
    fn new(sym: usize, seed: u64) -> Self {
        let mut rng = common::Rng(seed);
        let s = common::symmetry(sym);
        let v = common::space(&mut rng, &s);
        let w = common::space(&mut rng, &s);
        Fix { v, w, rng }
    }
    /// A random tensor (random charge, some blocks dropped, random memory order).
    fn t<T: Scalar, const N: usize>(&mut self, legs: [Leg; N]) -> Tensor<T, N> {
        Tensor::try_from(common::tensor::<T>(&mut self.rng, legs.to_vec(), true)).unwrap()
    }
    /// A random tensor of charge zero with every allowed block.
    fn neutral<T: Scalar, const N: usize>(&mut self, legs: [Leg; N]) -> Tensor<T, N> {
        let q = legs[0].space.symmetry().zero();
        let seed = self.rng.next() >> 12;
        Tensor::random(legs, q, seed).unwrap()
    }
}

fn traces<T: Scalar>(sym: usize, seed: u64) {
    let mut f = Fix::new(sym, seed);
    let (v, w) = (f.v.clone(), f.w.clone());
    // one pair traced, on a sparse charged tensor
    let a: Tensor<T, 3> = f.t([Leg::out(&v), Leg::out(&w), Leg::inc(&w)]);
    let b = contract!(b[i] := a[i, j, j]).unwrap();
    let want = einsum(&["i"], &[(&["i", "j", "j"], &a.to_dense().unwrap())]);
    close(&b.to_dense().unwrap(), &want, "b[i] := a[i, j, j]");
    assert_eq!(b.charge(), a.charge());
    // two pairs traced, to a scalar
    let x: Tensor<T, 4> = f.t([Leg::out(&v), Leg::inc(&v), Leg::inc(&w), Leg::out(&w)]);
    let s = contract!(s[] := x[i, i, j, j]).unwrap();
    let want = einsum(&[], &[(&["i", "i", "j", "j"], &x.to_dense().unwrap())]);
    close(&s.to_dense().unwrap(), &want, "s[] := x[i, i, j, j]");
    // a trace inside a product, on the second factor, every assignment form
    let m: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let y: Tensor<T, 4> = f.neutral([Leg::out(&v), Leg::out(&w), Leg::inc(&w), Leg::inc(&v)]);
    let c = contract!(c[i, k] := m[i, l] * y[l, j, j, k]).unwrap();
    let want = einsum(
        &["i", "k"],
        &[
            (&["i", "l"], &m.to_dense().unwrap()),
            (&["l", "j", "j", "k"], &y.to_dense().unwrap()),
        ],
    );
    close(
        &c.to_dense().unwrap(),
        &want,
        "c[i, k] := m[i, l] * y[l, j, j, k]",
    );
    let mut acc = c.clone();
    contract!(acc[i, k] += m[i, l] * y[l, j, j, k]).unwrap();
    close(
        &acc.to_dense().unwrap(),
        &want.mapv(|z| z + z),
        "+= with a trace",
    );
    contract!(acc[i, k] -= m[i, l] * y[l, j, j, k]).unwrap();
    close(&acc.to_dense().unwrap(), &want, "-= with a trace");
    contract!(acc[i, k] = m[i, l] * y[l, j, j, k]).unwrap();
    close(&acc.to_dense().unwrap(), &want, "= with a trace");
}

#[test]
fn partial_traces_match_dense() {
    for sym in [0, 2, 4] {
        for seed in 0..8 {
            traces::<f64>(sym, seed);
            traces::<Complex64>(sym, seed + 100);
        }
    }
}

#[test]
fn a_traced_pair_that_does_not_join_is_an_error_naming_the_index() {
    let mut f = Fix::new(0, 1);
    let (v, w) = (f.v.clone(), f.w.clone());
    let a: Tensor<f64, 3> = f.neutral([Leg::out(&v), Leg::out(&w), Leg::out(&w)]);
    let e = contract!(b[i] := a[i, j, j]).unwrap_err();
    assert!(
        matches!(e, Error::FlowMismatch { ref what, .. } if what.contains("`j`")),
        "{e}"
    );
}

#[test]
fn a_plan_refuses_a_traced_spec_naming_the_operand_and_contract_dyn_takes_the_trace() {
    let mut f = Fix::new(0, 2);
    let (v, w) = (f.v.clone(), f.w.clone());
    let a: Tensor<f64, 3> = f.neutral([Leg::out(&v), Leg::out(&w), Leg::inc(&w)]);
    let a = a.into_dyn();
    // b[i] := a[i, j, j], written as a spec by hand: the planner alone takes no traces.
    let ix = |label| IndexSpec {
        label,
        flow: None,
        local: false,
    };
    let spec = ContractionSpec {
        labels: vec!["i".into(), "j".into()],
        output_name: "b".into(),
        output: vec![ix(0)],
        operands: vec![OperandSpec {
            name: "a".into(),
            conj: Conj::No,
            indices: vec![ix(0), ix(1), ix(1)],
        }],
        tree: None,
        assign: Assign::New,
    };
    let e = build_plan(&spec, &[&a], &PlanOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidSpec { ref reason } if reason.contains("operand 0 (a)")
            && reason.contains("(1, 2)")),
        "{e}"
    );
    let (got, _) =
        blockcontract::contract_dyn(&spec, &[&a], 1.0, blockcontract::Executor::Planned).unwrap();
    let want = einsum(&["i"], &[(&["i", "j", "j"], &a.to_dense().unwrap())]);
    close(&got.to_dense().unwrap(), &want, "contract_dyn with a trace");
}

fn sums<T: Scalar>(sym: usize, seed: u64) {
    let mut f = Fix::new(sym, seed);
    let v = f.v.clone();
    let x: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let y: Tensor<T, 2> = f.neutral([Leg::inc(&v), Leg::out(&v)]);
    let a: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let (xd, yd, ad, bd) = (
        x.to_dense().unwrap(),
        y.to_dense().unwrap(),
        a.to_dense().unwrap(),
        b.to_dense().unwrap(),
    );
    let two = T::from_f64(2.0);
    // a difference of terms, one permuted
    let d = contract!(d[i, j] := 2.0 * x[i, j] - y[j, i]).unwrap();
    let want = einsum(&["i", "j"], &[(&["i", "j"], &xd)]).mapv(|z| two * z)
        - einsum(&["i", "j"], &[(&["j", "i"], &yd)]);
    close(&d.to_dense().unwrap(), &want, "2 x - y^T");
    // a product plus a permuted tensor, divided by a scalar
    let n = 4.0;
    let e = contract!(e[i, j] := a[i, k] * b[k, j] / n + 0.5 * y[j, i]).unwrap();
    let p = einsum(&["i", "j"], &[(&["i", "k"], &ad), (&["k", "j"], &bd)]);
    let want = p.mapv(|z| z / T::from_f64(n))
        + einsum(&["i", "j"], &[(&["j", "i"], &yd)]).mapv(|z| T::from_f64(0.5) * z);
    close(&e.to_dense().unwrap(), &want, "a b / n + y^T / 2");
    // the target as a term of its own (BLAS: c = beta c + alpha a b), -= and += of sums
    let mut c = x.clone();
    contract!(c[i, j] = 0.5 * c[i, j] + 2.0 * a[i, k] * b[k, j]).unwrap();
    let want = xd.mapv(|z| T::from_f64(0.5) * z) + p.mapv(|z| two * z);
    close(&c.to_dense().unwrap(), &want, "c = c/2 + 2 a b");
    contract!(c[i, j] -= a[i, k] * b[k, j] - x[i, j]).unwrap();
    let want2 = &want - &p + &xd;
    close(&c.to_dense().unwrap(), &want2, "c -= a b - x");
    contract!(c[i, j] += c[i, j] + x[i, j] / (2.0)).unwrap();
    let want3 = want2.mapv(|z| two * z) + xd.mapv(|z| z / two);
    close(&c.to_dense().unwrap(), &want3, "c += c + x / 2");
    let mut z = x.clone();
    contract!(z[i, j] = -z[i, j]).unwrap();
    close(&z.to_dense().unwrap(), &xd.mapv(|q| -q), "z = -z");
}

#[test]
fn sums_differences_and_divisors_match_dense() {
    for sym in [0, 2, 4] {
        for seed in 0..6 {
            sums::<f64>(sym, seed);
            sums::<Complex64>(sym, seed + 50);
            signs::<f64>(sym, seed + 100);
            signs::<Complex64>(sym, seed + 150);
        }
    }
}

/// Negative literals where a term or a factor begins, and parenthesised sums multiplied out
/// (TensorOperations.jl's `-1.0 * alpha * x * y` and `-(x * v + y * v)`).
fn signs<T: Scalar>(sym: usize, seed: u64) {
    let mut f = Fix::new(sym, seed);
    let v = f.v.clone();
    let x: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let y: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let c0: Tensor<T, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let u: Tensor<T, 1> = f.neutral([Leg::out(&v)]);
    let (xd, yd, cd, ud) = (
        x.to_dense().unwrap(),
        y.to_dense().unwrap(),
        c0.to_dense().unwrap(),
        u.to_dense().unwrap(),
    );
    let s = |z: f64| T::from_f64(z);
    let xy = einsum(&["a", "b"], &[(&["a", "k"], &xd), (&["k", "b"], &yd)]);
    let xu = einsum(&["m"], &[(&["m", "k"], &xd), (&["k"], &ud)]);
    let yu = einsum(&["m"], &[(&["m", "k"], &yd), (&["k"], &ud)]);
    // a term that begins with a negative literal
    let alpha = 0.25;
    let mut c = c0.clone();
    contract!(c[a, b] += -1.0 * alpha * x[a, k] * y[k, b]).unwrap();
    close(
        &c.to_dense().unwrap(),
        &(&cd - &xy.mapv(|z| s(alpha) * z)),
        "c += -1.0 alpha x y",
    );
    let d = contract!(d[a, b] := -2.0 * x[a, b] + -0.5 * y[a, b]).unwrap();
    let want = xd.mapv(|z| s(-2.0) * z) + yd.mapv(|z| s(-0.5) * z);
    close(&d.to_dense().unwrap(), &want, "-2 x + -0.5 y");
    let e = contract!(e[a, b] := 3.0 * -1.0 * x[a, k] * y[k, b] - -1.0 * x[a, b]).unwrap();
    close(
        &e.to_dense().unwrap(),
        &(xy.mapv(|z| s(-3.0) * z) + &xd),
        "3 * -1 x y - -1 x",
    );
    // a negated parenthesised sum
    let r = contract!(r[m] := -(x[m, k] * u[k] + y[m, k] * u[k])).unwrap();
    close(&r.to_dense().unwrap(), &(-(&xu + &yu)), "-(x u + y u)");
    // a scaled, subtracted sum with a difference inside, and a sum next to another factor
    let r = contract!(r[m] := u[m] - 2.0 * (x[m, k] * u[k] - y[m, k] * u[k]) / 4.0).unwrap();
    let want = &ud - &(&xu - &yu).mapv(|z| s(0.5) * z);
    close(&r.to_dense().unwrap(), &want, "u - 2 (x u - y u) / 4");
    let r = contract!(r[m] := (x[m, k] - y[m, k]) * u[k]).unwrap();
    close(&r.to_dense().unwrap(), &(&xu - &yu), "(x - y) u");
    let g = contract!(g[a, b] := -(x[a, k] + -(y[a, k])) * (x[k, b] - c0[k, b])).unwrap();
    let xmy = einsum(
        &["a", "b"],
        &[
            (&["a", "k"], &(&xd + &yd.mapv(|z| -z))),
            (&["k", "b"], &(&xd - &cd)),
        ],
    );
    close(
        &g.to_dense().unwrap(),
        &xmy.mapv(|z| -z),
        "-(x + -y) (x - c)",
    );
}

#[test]
fn options_choose_the_executor_threads_and_cache() {
    let mut f = Fix::new(0, 3);
    let v = f.v.clone();
    let a: Tensor<f64, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<f64, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let want = einsum(
        &["i", "j"],
        &[
            (&["i", "k"], &a.to_dense().unwrap()),
            (&["k", "j"], &b.to_dense().unwrap()),
        ],
    );
    let p = contract!(c[i, j] := a[i, k] * b[k, j]; executor = pairwise).unwrap();
    close(&p.to_dense().unwrap(), &want, "pairwise");
    let d = contract!(c[i, j] := a[i, k] * b[k, j]; executor = dense).unwrap();
    close(&d.to_dense().unwrap(), &want, "dense");
    let cache = PlanCache::new();
    for _ in 0..3 {
        let t = contract!(c[i, j] := a[i, k] * b[k, j]; threads = 2, cache = cache).unwrap();
        close(&t.to_dense().unwrap(), &want, "threads and cache");
    }
    assert_eq!((cache.misses(), cache.hits()), (1, 2));
    let mut out = p.clone();
    contract!(out[i, j] += a[i, k] * b[k, j]; executor = pairwise).unwrap();
    close(
        &out.to_dense().unwrap(),
        &want.mapv(|z| 2.0 * z),
        "+= pairwise",
    );
}

/// A macro that forwards its tokens to `contract!`: the expansion's identifiers must resolve.
macro_rules! checked {
    ($($t:tt)*) => {
        contract!($($t)*)
    };
}

#[test]
fn a_macro_forwarding_to_contract_compiles_and_runs() {
    let mut f = Fix::new(2, 9);
    let v = f.v.clone();
    let a: Tensor<f64, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let b: Tensor<f64, 2> = f.neutral([Leg::out(&v), Leg::inc(&v)]);
    let want = einsum(
        &["i", "j"],
        &[
            (&["i", "k"], &a.to_dense().unwrap()),
            (&["k", "j"], &b.to_dense().unwrap()),
        ],
    );
    let c = checked!(c[i, j] := a[i, k] * b[k, j]).unwrap();
    close(&c.to_dense().unwrap(), &want, ":=");
    let mut d = c.clone();
    checked!(d[i, j] = a[i, k] * b[k, j]).unwrap();
    close(&d.to_dense().unwrap(), &want, "=");
    checked!(d[i, j] += 2.0 * a[i, k] * b[k, j]).unwrap();
    close(&d.to_dense().unwrap(), &want.mapv(|z| 3.0 * z), "+=");
    let e: DynTensor<f64> = checked!(e[i, j] := a[i, k] * b[k, j] - c[i, j])
        .unwrap()
        .into_dyn();
    assert!(e.norm() < 1e-12 * c.norm().max(1.0));
}
