//! A GEMM kernel for tiny shapes, where a library call's fixed cost dominates.

use super::{Accum, RawMat, RawMatMut};
use crate::scalar::{Conj, Scalar};

/// The largest `m*n*k` the tiny-GEMM kernel takes for any shape.
pub const TINY_MNK: usize = 64;

/// Whether batched members run on the tiny-GEMM kernel rather than faer: very small
/// products, and thin ones (`n*k <= 16`: B fits in registers; `m*k <= 8`: few long rows).
/// On isolated contiguous shapes faer is often as fast (`examples/kernel_probe`), but on the
/// MPO steps of the m = 512 workloads this rule measured 3-5% faster in the same run.
pub fn tiny_wins(m: usize, n: usize, k: usize) -> bool {
    let small = |x: usize, y: usize, lim: usize| x.checked_mul(y).is_some_and(|p| p <= lim);
    small(m, n, TINY_MNK) && small(m * n, k, TINY_MNK) || small(n, k, 16) || small(m, k, 8)
}

/// `C = alpha * op(A) * op(B)` (`Accum::Replace`: C is not read) or `C += ...`, by a plain
/// triple loop; for `m*n*k` up to a few hundred, or thin shapes.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
#[inline]
pub unsafe fn tiny_gemm<T: Scalar>(
    c: RawMatMut<T>,
    accum: Accum,
    a: RawMat<T>,
    b: RawMat<T>,
    alpha: T,
) {
    let plain = a.conj == Conj::No && b.conj == Conj::No;
    let add = accum == Accum::Add;
    if plain && c.shape.n * a.shape.n <= 16 {
        // SAFETY: the caller vouches for the views.
        unsafe { thin(c, add, a, b, alpha) }
    } else if plain && c.shape.cs == 1 && b.shape.cs == 1 {
        // SAFETY: as above.
        unsafe { rows_of_b(c, add, a, b, alpha) }
    } else {
        // SAFETY: as above.
        unsafe { general(c, add, a, b, alpha) }
    }
}

/// Thin B (n * k <= 16): the whole of B in registers, one pass down the rows of A and C.
///
/// # Safety
/// As [`tiny_gemm`].
unsafe fn thin<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    let mut bv = [T::zero(); 16];
    for p in 0..k {
        for j in 0..n {
            // SAFETY: (p, j) is inside B's view.
            bv[p * n + j] = alpha * unsafe { *b.offset(p as isize * bsh.rs + j as isize * bsh.cs) };
        }
    }
    for i in 0..m as isize {
        for j in 0..n {
            let mut acc = T::zero();
            for p in 0..k {
                // SAFETY: (i, p) is inside A's view.
                acc += unsafe { *a.offset(i * ash.rs + p as isize * ash.cs) } * bv[p * n + j];
            }
            // SAFETY: (i, j) is inside C's view.
            let cij = unsafe { &mut *c.offset(i * cs.rs + j as isize * cs.cs) };
            *cij = if add { *cij + acc } else { acc };
        }
    }
}

/// Row-major C and B: rows of C accumulate scaled rows of B (vectorisable).
///
/// # Safety
/// As [`tiny_gemm`].
unsafe fn rows_of_b<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    for i in 0..m as isize {
        // SAFETY: rows i of C and p of B are inside their views (caller's guarantee).
        let crow = unsafe { std::slice::from_raw_parts_mut(c.offset(i * cs.rs), n) };
        if !add {
            crow.fill(T::zero());
        }
        for p in 0..k as isize {
            // SAFETY: (i, p) is inside A's view.
            let x = alpha * unsafe { *a.offset(i * ash.rs + p * ash.cs) };
            // SAFETY: row p of B (n contiguous elements, `bsh.cs == 1`) is inside its view.
            let brow = unsafe { std::slice::from_raw_parts(b.offset(p * bsh.rs), n) };
            for (y, &z) in crow.iter_mut().zip(brow) {
                *y += x * z;
            }
        }
    }
}

/// Any strides, either side conjugated: one dot product per element of C.
///
/// # Safety
/// As [`tiny_gemm`].
unsafe fn general<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (conj_a, conj_b) = (a.conj, b.conj);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    for i in 0..m as isize {
        for j in 0..n as isize {
            let mut acc = T::zero();
            for p in 0..k as isize {
                // SAFETY: indices are inside the views the caller vouches for.
                let (mut x, mut y) = unsafe {
                    (
                        *a.offset(i * ash.rs + p * ash.cs),
                        *b.offset(p * bsh.rs + j * bsh.cs),
                    )
                };
                if conj_a == Conj::Yes {
                    x = x.conj();
                }
                if conj_b == Conj::Yes {
                    y = y.conj();
                }
                acc += x * y;
            }
            // SAFETY: as above, for `c`.
            let cij = unsafe { &mut *c.offset(i * cs.rs + j * cs.cs) };
            *cij = if add { *cij + alpha * acc } else { alpha * acc };
        }
    }
}
