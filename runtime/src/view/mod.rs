//! Strided views into shared buffers.
//!
//! A [`Layout`] addresses a block inside its tensor's one buffer: element
//! `(i0, .., ir)` lives at `offset + sum_k i_k * strides[k]`. Strides are in
//! elements and signed. Invariants a tensor keeps (its constructors lay blocks
//! out themselves; layouts from a plan are checked against the tensor's
//! structure fingerprint before use): every addressed element lies inside the
//! buffer, and the blocks of one tensor never overlap.

mod copy;
mod mat;
mod pack;

pub use copy::{for_each_pair, strided_copy, Axes, CopyMode};
pub use mat::{mat_shape, split_shape, MatShape, SplitShape};
pub use pack::{PackAxis, PackOp, Packs};

/// Axes stored inline up to this rank (beyond it, on the heap).
const INLINE_AXES: usize = 6;

/// Extents per axis, inline up to rank 6: a block's layout sits in its tensor's block list,
/// not behind two more pointers (executors read thousands of layouts per contraction).
pub type Dims = smallvec::SmallVec<[usize; INLINE_AXES]>;

/// Strides per axis, in elements, inline like [`Dims`].
pub type Strides = smallvec::SmallVec<[isize; INLINE_AXES]>;

/// Dims, signed strides and offset of one block in its buffer.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Extent per axis.
    pub dims: Dims,
    /// Stride per axis, in elements.
    pub strides: Strides,
    /// Offset of element `(0, .., 0)`.
    pub offset: usize,
}

// plans clone thousands of layouts: copied as slices, not element by element
impl Clone for Layout {
    fn clone(&self) -> Self {
        Layout {
            dims: Dims::from_slice(&self.dims),
            strides: Strides::from_slice(&self.strides),
            offset: self.offset,
        }
    }
}

impl Layout {
    /// A row-major contiguous layout at `offset`.
    pub fn row_major(dims: &[usize], offset: usize) -> Self {
        // built in an array and copied once (thousands per plan); beyond MAX_RANK axes, in
        // the vector itself
        let strides = if dims.len() <= MAX_RANK {
            let mut st = [0isize; MAX_RANK];
            let mut acc = 1isize;
            for (s, &d) in st.iter_mut().zip(dims).rev() {
                *s = acc;
                acc *= d.max(1) as isize;
            }
            Strides::from_slice(&st[..dims.len()])
        } else {
            row_major_strides(dims).into_iter().collect()
        };
        Layout {
            dims: Dims::from_slice(dims),
            strides,
            offset,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }
    /// Whether the view has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Lowest and one-past-highest element addressed (None when empty or out of range).
    pub fn span(&self) -> Option<(usize, usize)> {
        if self.is_empty() {
            return None;
        }
        let mut lo = self.offset as isize;
        let mut hi = self.offset as isize;
        for (&d, &s) in self.dims.iter().zip(&self.strides) {
            let ext = (d as isize - 1) * s;
            if ext < 0 {
                lo += ext;
            } else {
                hi += ext;
            }
        }
        (lo >= 0).then_some((lo as usize, hi as usize + 1))
    }
    /// Whether this is row-major contiguous.
    pub fn is_row_major(&self) -> bool {
        fuse(
            &self.dims,
            &self.strides,
            &(0..self.dims.len()).collect::<Vec<_>>(),
        )
        .is_some_and(|(_, s)| s == 1 || self.len() <= 1)
    }
    /// The view with axes reordered: axis `k` of the result is axis `perm[k]` of `self`.
    pub fn permuted(&self, perm: &[usize]) -> Layout {
        Layout {
            dims: perm.iter().map(|&p| self.dims[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }
}

/// Row-major strides for `dims`.
pub fn row_major_strides(dims: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; dims.len()];
    let mut acc = 1isize;
    for k in (0..dims.len()).rev() {
        strides[k] = acc;
        acc *= dims[k].max(1) as isize;
    }
    strides
}

/// Fuses `axes` (in that order, slowest first) into one axis: `(len, stride)`, or
/// `None` when their strides do not nest. Axes of extent 1 are ignored; an empty
/// or all-unit list fuses to `(product, 1)`.
pub fn fuse(dims: &[usize], strides: &[isize], axes: &[usize]) -> Option<(usize, isize)> {
    // one pass, innermost first: the extent so far (the product of every axis seen: unit
    // axes add nothing) and the stride of the innermost axis of extent other than 1
    let mut ext = 1usize;
    let mut inner: Option<isize> = None;
    for &a in axes.iter().rev() {
        let d = dims[a];
        if d == 1 {
            continue;
        }
        let s = strides[a];
        match inner {
            None => inner = Some(s),
            Some(st) if s != st * ext as isize => return None,
            Some(_) => {}
        }
        ext *= d;
    }
    Some((ext, inner.unwrap_or(1)))
}

/// The most axes a strided loop handles (tensors are limited to this rank).
pub const MAX_RANK: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuse_nests_and_skips_unit_axes() {
        let dims = [2, 1, 3, 4];
        let st = row_major_strides(&dims);
        assert_eq!(fuse(&dims, &st, &[0, 1, 2, 3]), Some((24, 1)));
        assert_eq!(fuse(&dims, &st, &[0, 2]), Some((6, 4)));
        assert_eq!(fuse(&dims, &st, &[2, 0]), None);
        assert_eq!(fuse(&dims, &st, &[]), Some((1, 1)));
    }

    #[test]
    fn a_free_side_that_does_not_fuse_splits_into_strided_sub_matrices() {
        // (a, w, z) row-major, read as B (rows w, columns (a, z)) or as A (rows (a, z),
        // columns w): the free side is a sub-matrices, 8 apart
        let l = Layout::row_major(&[3, 2, 4], 5);
        assert_eq!(mat_shape(&l, &[1], &[0, 2]), None);
        let b = split_shape(&l, &[1], &[0, 2], false, 1).unwrap();
        assert_eq!((b.count, b.stride), (3, 8));
        assert_eq!((b.mat.m, b.mat.rs, b.mat.n, b.mat.cs), (2, 4, 4, 1));
        let a = split_shape(&l, &[0, 2], &[1], true, 1).unwrap();
        assert_eq!((a.count, a.stride), (3, 8));
        assert_eq!((a.mat.m, a.mat.rs, a.mat.n, a.mat.cs), (4, 1, 2, 4));
        // the contracted side must fuse; a free side that fuses needs no split
        assert_eq!(split_shape(&l, &[0, 2], &[1], false, 1), None);
        assert_eq!(split_shape(&l, &[1], &[0, 2], true, 1), None);
        let r = Layout::row_major(&[2, 3, 4], 0);
        assert_eq!(split_shape(&r, &[0], &[1, 2], false, 1), None);
        // sub-matrices narrower than asked for: none
        assert_eq!(split_shape(&l, &[1], &[0, 2], false, 5), None);
        assert!(split_shape(&l, &[1], &[0, 2], false, 4).is_some());
    }
}
