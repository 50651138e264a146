//! Copying blocks between a tensor's buffer and a GEMM-ready matrix: the axis setup of one
//! block's sub-matrix, gather (block -> matrix) and scatter (matrix -> block).

use crate::kernel::Accum;
use crate::scalar::Scalar;
use crate::view::{strided_copy, CopyMode, Layout, MAX_RANK};

/// A block's axes ordered rows then columns: dims, its own strides, and the strides it has
/// inside a row-major matrix of row stride `rs` — all on the stack.
#[inline]
fn matrix_axes(
    l: &Layout,
    rows: &[usize],
    cols: &[usize],
    rs: isize,
) -> (
    usize,
    [usize; MAX_RANK],
    [isize; MAX_RANK],
    [isize; MAX_RANK],
) {
    let mut dims = [0usize; MAX_RANK];
    let mut own = [0isize; MAX_RANK];
    let mut mat = [0isize; MAX_RANK];
    let nr = rows.len();
    let n = nr + cols.len();
    let mut acc = rs;
    for j in (0..nr).rev() {
        let ax = rows[j];
        dims[j] = l.dims[ax];
        own[j] = l.strides[ax];
        mat[j] = acc;
        acc *= l.dims[ax] as isize;
    }
    let mut acc = 1isize;
    for j in (0..cols.len()).rev() {
        let ax = cols[j];
        dims[nr + j] = l.dims[ax];
        own[nr + j] = l.strides[ax];
        mat[nr + j] = acc;
        acc *= l.dims[ax] as isize;
    }
    (n, dims, own, mat)
}

/// Copies a block (rows x cols axes) into a matrix at `dst` with row stride `rs`.
///
/// # Safety
/// `src` is the tensor's buffer; `dst` must hold the block's sub-matrix.
pub(super) unsafe fn gather<T: Scalar>(
    src: *const T,
    l: &Layout,
    rows: &[usize],
    cols: &[usize],
    dst: *mut T,
    rs: isize,
) {
    let (n, dims, own, mat) = matrix_axes(l, rows, cols, rs);
    // SAFETY: forwarded from the caller.
    unsafe {
        strided_copy(
            &dims[..n],
            src.add(l.offset),
            &own[..n],
            dst,
            &mat[..n],
            CopyMode::Set,
        )
    };
}

/// Writes (`Accum::Replace`) or adds (`Accum::Add`) a sub-matrix at `src` (row stride `rs`)
/// into a block of the output.
///
/// # Safety
/// `dst` is the output buffer; `src` must hold the block's sub-matrix.
pub(super) unsafe fn scatter<T: Scalar>(
    src: *const T,
    rs: isize,
    l: &Layout,
    (rows, cols): (&[usize], &[usize]),
    dst: *mut T,
    accum: Accum,
) {
    let (n, dims, own, mat) = matrix_axes(l, rows, cols, rs);
    let mode = match accum {
        Accum::Replace => CopyMode::Set,
        Accum::Add => CopyMode::AddScaled(T::one()),
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        strided_copy(
            &dims[..n],
            src,
            &mat[..n],
            dst.add(l.offset),
            &own[..n],
            mode,
        )
    };
}
