//! Every form of the notation compiles and runs, for f64 and complex tensors.
use blockcontract::{contract, DynTensor, Leg, Space, Symmetry, Tensor};
use num_complex::Complex64;
use std::sync::Arc;

fn main() -> blockcontract::Result<()> {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(&u1, &[(vec![-1], 2), (vec![0], 3), (vec![1], 2)])?);
    let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)])?);
    let q = u1.zero();
    let m = Tensor::<f64, 2>::from_fn([Leg::out(&v), Leg::inc(&v)], q.clone(), None, |[i, j]| (i * 7 + j) as f64)?;
    let psi = Tensor::<f64, 3>::from_fn([Leg::out(&v), Leg::out(&p), Leg::inc(&v)], q.clone(), None, |[a, s, b]| (a + s + b) as f64)?;
    let w = Tensor::<f64, 4>::from_fn([Leg::out(&v), Leg::inc(&v), Leg::out(&p), Leg::inc(&p)], q.clone(), None, |_| 1.0)?;

    // new tensors, with and without annotations, output permuted
    let c = contract!(c[i, j] := m[i, k] * m[k, j])?;
    let _ct = contract!(ct[j, i] := m[i, k] * m[k, j])?;
    let _ca = contract!(c[i: out, j: in] := m[i: out, k: in] * m[k: out, j: in])?;
    let t = contract!(t[x, s, y] := m[x, k] * psi[k, s: out local, y])?;
    // parentheses fix the order
    let _y = contract!(y[a, s, b] := (m[a, x] * psi[x, t, z]) * w[z, b, s, t])?;
    let _y2 = contract!(y[a, s, b] := m[a, x] * (psi[x, t, z] * w[z, b, s, t]))?;
    // overwrite and accumulate, with scalars
    let mut c2 = c.clone();
    contract!(c2[i, j] = m[i, k] * m[k, j])?;
    contract!(c2[i, j] += 0.5 * m[i, k] * m[k, j])?;
    let alpha = 2.0;
    contract!(c2[i, j] += alpha * m[i, k] * (alpha * 0.5) * m[k, j])?;
    // operand expressions and DynTensor operands
    struct Env {
        left: Tensor<f64, 2>,
    }
    let env = Env { left: m.clone() };
    let d: DynTensor<f64> = t.clone().into_dyn();
    let _e = contract!(e[a, s, y] := (env.left)[a, x] * d[x, s, y])?;
    let mut dd: DynTensor<f64> = c.clone().into_dyn();
    contract!(dd[i, j] += m[i, k] * (env.left)[k, j])?;
    // sums and differences of terms, divisors, the target as a term, -=, traces, options
    let _s = contract!(s[i, j] := m[i, k] * m[k, j] - 0.5 * m[i, j] + m[i, j] / 2.0)?;
    contract!(c2[i, j] = 0.5 * c2[i, j] + m[i, k] * m[k, j])?;
    contract!(c2[i, j] -= m[i, k] * m[k, j] / alpha)?;
    let _tr = contract!(r[a, b] := w[a, b, s, s])?;
    let _o = contract!(o[i, j] := m[i, k] * m[k, j]; executor = pairwise, threads = 1)?;
    let cache = blockcontract::PlanCache::new();
    let _o2 = contract!(o[i, j] := m[i, k] * m[k, j]; cache = cache)?;
    // a macro forwarding its tokens to contract! (hygiene of the generated temporaries)
    macro_rules! fwd {
        ($($t:tt)*) => { contract!($($t)*) };
    }
    let f = fwd!(f[i, j] := m[i, k] * m[k, j])?;
    let mut g = f.clone();
    fwd!(g[i, j] = m[i, k] * f[k, j])?;
    fwd!(g[i, j] += m[i, k] * f[k, j] - f[i, j])?;

    // complex: conj in both spellings, complex scalars
    let mc = Tensor::<Complex64, 2>::from_fn([Leg::out(&v), Leg::inc(&v)], q.clone(), None, |[i, j]| Complex64::new(i as f64, j as f64))?;
    let mut cc = Tensor::<Complex64, 2>::zeros([Leg::out(&v), Leg::inc(&v)], q)?;
    let z = Complex64::new(0.0, 1.0);
    contract!(cc[i, j] += z * conj(mc[k, i]) * mc[k, j])?;
    let _h = contract!(h[i, j] := conj(mc)[k, i] * mc[k, j])?;
    Ok(())
}
