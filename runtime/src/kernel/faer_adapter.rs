//! The one adapter to faer's GEMM: raw strided views in, BLAS alpha/beta meaning out.

use crate::scalar::{Conj, Scalar};
use crate::view::MatShape;
use faer::linalg::matmul::matmul_with_conj;
use faer::{Accum, MatMut, MatRef, Par};

/// `C = alpha * op(A) * op(B)` with raw pointers: one faer call, sequential.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm<T: Scalar>(
    c: *mut T,
    cs: MatShape,
    accum: Accum,
    a: *const T,
    ash: MatShape,
    conj_a: Conj,
    b: *const T,
    bsh: MatShape,
    conj_b: Conj,
    alpha: T,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let am = MatRef::<T>::from_raw_parts(a, ash.m, ash.n, ash.rs, ash.cs);
        let bm = MatRef::<T>::from_raw_parts(b, bsh.m, bsh.n, bsh.rs, bsh.cs);
        let cm = MatMut::<T>::from_raw_parts_mut(c, cs.m, cs.n, cs.rs, cs.cs);
        matmul_with_conj(
            cm,
            accum,
            am,
            conj_a.faer(),
            bm,
            conj_b.faer(),
            alpha,
            Par::Seq,
        );
    }
}
