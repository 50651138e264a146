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
}
