//! Reductions over contiguous slices with independent accumulators, so the compiler
//! vectorises them (one running sum is latency-bound: one add per 3-4 cycles).

use crate::scalar::Scalar;

/// Independent partial sums per reduction.
const LANES: usize = 8;

/// `sum_i conj(a_i) * b_i` over equal-length slices (the shorter length otherwise).
pub fn dot_conj<T: Scalar>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [T::zero(); LANES];
    let (ca, ra) = (a.chunks_exact(LANES), a.chunks_exact(LANES).remainder());
    let cb = b.chunks_exact(LANES);
    let rb = cb.remainder();
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += x[l].conj() * y[l];
        }
    }
    let mut s = T::zero();
    for (&x, &y) in ra.iter().zip(rb) {
        s += x.conj() * y;
    }
    acc.iter().fold(s, |s, &v| s + v)
}

/// `sum_i |a_i|^2`, every `step`-th element of `a` (step >= 1).
pub fn sum_abs2<T: Scalar>(a: &[T], step: usize) -> f64 {
    if step > 1 {
        return a.iter().step_by(step).map(|x| x.abs2()).sum();
    }
    let mut acc = [0.0f64; LANES];
    let chunks = a.chunks_exact(LANES);
    let rest = chunks.remainder();
    for x in chunks {
        for l in 0..LANES {
            acc[l] += x[l].abs2();
        }
    }
    rest.iter().map(|x| x.abs2()).sum::<f64>() + acc.iter().sum::<f64>()
}

/// Elements of one cache-resident piece of a vector in [`project_out`] (16 KiB of complex).
const PIECE: usize = 1024;

/// One classical Gram-Schmidt pass, blocked for the cache: `coefs[i] = <basis_i|w>` (`w` as
/// given), then `w -= sum_i coefs[i] * basis_i`. Every vector is read once per half while a
/// piece of `w` stays in cache (`2k + 3` passes over memory where `k` dots and `k` axpys
/// take `5k`), and four basis vectors are taken at a time (one load and store of `w` per
/// four). Returns `|w|^2` before and after. The basis slices are as long as `w`; `coefs`
/// has one entry per basis vector.
pub fn project_out<T: Scalar>(w: &mut [T], basis: &[&[T]], coefs: &mut [T]) -> (f64, f64) {
    let n = w.len();
    assert!(
        basis.iter().all(|b| b.len() == n) && coefs.len() == basis.len(),
        "project_out: every basis vector as long as w, one coefficient each"
    );
    coefs.fill(T::zero());
    let mut before = 0.0;
    for start in (0..n).step_by(PIECE) {
        let piece = start..(start + PIECE).min(n);
        let wp = &w[piece.clone()];
        before += sum_abs2(wp, 1);
        let mut cs = coefs.chunks_exact_mut(4);
        let mut bs = basis.chunks_exact(4);
        for (c, b) in (&mut cs).zip(&mut bs) {
            let d = dot4([0, 1, 2, 3].map(|j| &b[j][piece.clone()]), wp);
            c.iter_mut().zip(d).for_each(|(c, d)| *c += d);
        }
        for (c, b) in cs.into_remainder().iter_mut().zip(bs.remainder()) {
            *c += dot_conj(&b[piece.clone()], wp);
        }
    }
    let mut after = 0.0;
    for start in (0..n).step_by(PIECE) {
        let piece = start..(start + PIECE).min(n);
        let wp = &mut w[piece.clone()];
        let mut cs = coefs.chunks_exact(4);
        let mut bs = basis.chunks_exact(4);
        for (c, b) in (&mut cs).zip(&mut bs) {
            let [b0, b1, b2, b3] = [0, 1, 2, 3].map(|j| &b[j][piece.clone()]);
            for (i, x) in wp.iter_mut().enumerate() {
                *x -= c[0] * b0[i] + c[1] * b1[i] + c[2] * b2[i] + c[3] * b3[i];
            }
        }
        for (&c, b) in cs.remainder().iter().zip(bs.remainder()) {
            for (x, &y) in wp.iter_mut().zip(&b[piece.clone()]) {
                *x -= c * y;
            }
        }
        after += sum_abs2(wp, 1);
    }
    (before, after)
}

/// `<b_j|w>` for four slices as long as `w`, `w` read once.
fn dot4<T: Scalar>(b: [&[T]; 4], w: &[T]) -> [T; 4] {
    const L: usize = LANES / 2;
    let mut acc = [[T::zero(); L]; 4];
    let n = w.len() / L * L;
    let b = b.map(|x| &x[..w.len()]);
    for i in (0..n).step_by(L) {
        for l in 0..L {
            let y = w[i + l];
            for j in 0..4 {
                acc[j][l] += b[j][i + l].conj() * y;
            }
        }
    }
    let mut out = acc.map(|a| a.iter().fold(T::zero(), |s, &v| s + v));
    for i in n..w.len() {
        for j in 0..4 {
            out[j] += b[j][i].conj() * w[i];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn dot_and_norm_agree_with_a_plain_loop_at_every_length() {
        for n in [0usize, 1, 7, 8, 9, 31, 64, 1001] {
            let a: Vec<Complex64> = (0..n)
                .map(|i| Complex64::new(i as f64 * 0.5 - 3.0, 1.0 / (i + 1) as f64))
                .collect();
            let b: Vec<Complex64> = (0..n)
                .map(|i| Complex64::new((i % 5) as f64, -(i as f64) * 0.25))
                .collect();
            let plain: Complex64 = a.iter().zip(&b).map(|(x, y)| x.conj() * y).sum();
            assert!((dot_conj(&a, &b) - plain).norm() <= 1e-12 * (1.0 + plain.norm()));
            let n2: f64 = a.iter().map(|x| x.norm_sqr()).sum();
            assert!((sum_abs2(&a, 1) - n2).abs() <= 1e-12 * (1.0 + n2));
            let n3: f64 = a.iter().step_by(3).map(|x| x.norm_sqr()).sum();
            assert!((sum_abs2(&a, 3) - n3).abs() <= 1e-12 * (1.0 + n3));
        }
    }

    #[test]
    fn project_out_equals_dots_then_axpys() {
        // lengths around the piece size; one to six basis vectors (groups of four and the
        // rest)
        for n in [0usize, 5, PIECE - 1, PIECE, 2 * PIECE + 17] {
            let vec_of = |seed: usize| -> Vec<Complex64> {
                (0..n)
                    .map(|i| {
                        let x = ((i * 7 + seed * 13) % 23) as f64 - 11.0;
                        Complex64::new(x / 7.0, ((i + seed) % 5) as f64 - 2.0)
                    })
                    .collect()
            };
            let dot = |a: &[Complex64], b: &[Complex64]| -> Complex64 {
                a.iter().zip(b).map(|(x, y)| x.conj() * y).sum()
            };
            let w0 = vec_of(0);
            for k in 1..=6 {
                let basis: Vec<Vec<Complex64>> = (1..=k).map(vec_of).collect();
                let refs: Vec<&[Complex64]> = basis.iter().map(|b| b.as_slice()).collect();
                let mut w = w0.clone();
                let mut coefs = vec![Complex64::new(9.0, 9.0); k];
                let (before, after) = project_out(&mut w, &refs, &mut coefs);
                let want_c: Vec<Complex64> = basis.iter().map(|b| dot(b, &w0)).collect();
                let tol = 1e-10 * (1.0 + dot(&w0, &w0).norm());
                for (c, d) in coefs.iter().zip(&want_c) {
                    assert!((c - d).norm() <= tol, "{c} vs {d} at n = {n}, k = {k}");
                }
                let want: Vec<Complex64> = (0..n)
                    .map(|i| w0[i] - (0..k).map(|j| want_c[j] * basis[j][i]).sum::<Complex64>())
                    .collect();
                for (x, y) in w.iter().zip(&want) {
                    assert!((x - y).norm() <= tol, "{x} vs {y} at n = {n}, k = {k}");
                }
                assert!((before - dot(&w0, &w0).re).abs() <= tol);
                assert!((after - dot(&want, &want).re).abs() <= tol * (1.0 + after));
            }
        }
        // real: w loses exactly its component along a unit vector
        let mut w = vec![3.0f64, 4.0, 5.0];
        let mut c = [0.0];
        let (before, after) = project_out(&mut w, &[&[0.0, 1.0, 0.0]], &mut c);
        assert_eq!((c[0], before, after), (4.0, 50.0, 34.0));
        assert_eq!(w, [3.0, 0.0, 5.0]);
    }
}
