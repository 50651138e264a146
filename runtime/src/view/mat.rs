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
}
