//! Matrix views of blocks: which axes become rows and columns, and their strides.

use super::{fuse, Layout};

/// A matrix view into a buffer: `(rows, row stride, cols, col stride)` from the view's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatShape {
    /// Rows.
    pub m: usize,
    /// Row stride.
    pub rs: isize,
    /// Columns.
    pub n: usize,
    /// Column stride.
    pub cs: isize,
}

/// The matrix view of `layout` with `rows` axes fused into rows and `cols` into columns, if their strides nest.
pub fn mat_shape(layout: &Layout, rows: &[usize], cols: &[usize]) -> Option<MatShape> {
    let (m, rs) = fuse(&layout.dims, &layout.strides, rows)?;
    let (n, cs) = fuse(&layout.dims, &layout.strides, cols)?;
    Some(MatShape { m, rs, n, cs })
}

/// A block's matrix view whose free side (A's rows or B's columns) fuses into two strides,
/// not one: `count` sub-matrices `mat`, `stride` apart in the buffer; sub-matrix `o` holds
/// rows (or columns) `o * inner .. (o + 1) * inner` of the whole, `inner` being `mat.m` (rows
/// split) or `mat.n` (columns split).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitShape {
    /// Sub-matrices.
    pub count: usize,
    /// Buffer distance from one sub-matrix to the next.
    pub stride: isize,
    /// The first sub-matrix.
    pub mat: MatShape,
}

/// The view of `layout` as [`SplitShape`] when `rows` fuse into one stride and `cols` into
/// two (`split_rows`: the other way round), sub-matrices at least `min_inner` wide (tall): the
/// split with the fewest sub-matrices; None when there is none (or the whole fuses: use
/// [`mat_shape`]).
pub fn split_shape(
    layout: &Layout,
    rows: &[usize],
    cols: &[usize],
    split_rows: bool,
    min_inner: usize,
) -> Option<SplitShape> {
    let (whole, split) = if split_rows {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let extent: usize = split.iter().map(|&a| layout.dims[a]).product();
    if extent < 2 * min_inner.max(1) {
        return None;
    }
    let (w, ws) = fuse(&layout.dims, &layout.strides, whole)?;
    if fuse(&layout.dims, &layout.strides, split).is_some() {
        return None;
    }
    (1..split.len()).find_map(|s| {
        let (count, stride) = fuse(&layout.dims, &layout.strides, &split[..s])?;
        let (inner, is) = fuse(&layout.dims, &layout.strides, &split[s..])?;
        let mat = if split_rows {
            MatShape {
                m: inner,
                rs: is,
                n: w,
                cs: ws,
            }
        } else {
            MatShape {
                m: w,
                rs: ws,
                n: inner,
                cs: is,
            }
        };
        (count > 1 && inner > 1 && inner >= min_inner).then_some(SplitShape { count, stride, mat })
    })
}

impl MatShape {
    /// A row-major contiguous `m x n` matrix.
    pub fn row_major(m: usize, n: usize) -> Self {
        MatShape {
            m,
            rs: n as isize,
            n,
            cs: 1,
        }
    }
    /// A column-major contiguous `m x n` matrix.
    pub fn col_major(m: usize, n: usize) -> Self {
        MatShape {
            m,
            rs: 1,
            n,
            cs: m as isize,
        }
    }
    /// A contiguous `m x n` matrix, column-major or row-major.
    pub fn contiguous(m: usize, n: usize, col_major: bool) -> Self {
        if col_major {
            Self::col_major(m, n)
        } else {
            Self::row_major(m, n)
        }
    }
}
