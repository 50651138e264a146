//! The one adapter to faer's GEMM: our raw views and BLAS's alpha/beta in, one sequential
//! faer call out.

use super::{Accum, Par, RawMat, RawMatMut};
use crate::scalar::Scalar;
use faer::linalg::matmul::matmul_with_conj;
use faer::{MatMut, MatRef};

/// `C = alpha op(A) op(B)` or `C += alpha op(A) op(B)`: one faer call, sequential.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
pub unsafe fn gemm<T: Scalar>(c: RawMatMut<T>, accum: Accum, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    // SAFETY: forwarded from the caller.
    unsafe { gemm_par(c, accum, a, b, alpha, Par::Seq) }
}

/// [`gemm`] on `par` threads (faer's own split; call it inside a rayon pool of that size).
///
/// # Safety
/// As [`gemm`].
pub unsafe fn gemm_par<T: Scalar>(
    c: RawMatMut<T>,
    accum: Accum,
    a: RawMat<T>,
    b: RawMat<T>,
    alpha: T,
    par: Par,
) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    // SAFETY: forwarded from the caller.
    unsafe {
        let am = MatRef::<T>::from_raw_parts(a.ptr, ash.m, ash.n, ash.rs, ash.cs);
        let bm = MatRef::<T>::from_raw_parts(b.ptr, bsh.m, bsh.n, bsh.rs, bsh.cs);
        let cm = MatMut::<T>::from_raw_parts_mut(c.ptr, cs.m, cs.n, cs.rs, cs.cs);
        let accum = match accum {
            Accum::Replace => faer::Accum::Replace,
            Accum::Add => faer::Accum::Add,
        };
        matmul_with_conj(
            cm,
            accum,
            am,
            a.conj.faer(),
            bm,
            b.conj.faer(),
            alpha,
            match par {
                Par::Seq => faer::Par::Seq,
                Par::Threads(n) => faer::Par::rayon(n),
            },
        );
    }
}
