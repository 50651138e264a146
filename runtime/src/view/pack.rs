//! Copies between a block and a GEMM-ready row-major matrix, worked out once when a step is
//! planned: the block's axes put in matrix order (rows, then columns), its strides and the
//! matrix's, simplified, kept in flat lists per step. Running one reads a few contiguous
//! entries instead of the block's layout (which, among thousands of blocks, misses the cache).

use super::copy::{copy_row, for_each_pair, Axes, CopyMode};
use super::{Layout, MAX_RANK};
use crate::scalar::Scalar;

/// One precomputed copy between a block and a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackOp {
    /// The block's offset in its tensor's buffer.
    pub block_off: usize,
    /// The block's first element's offset in the matrix.
    pub mat_off: usize,
    /// Its axes: entries `start..start + len` of the step's [`Packs`].
    pub start: u32,
    /// Number of axes (after simplification).
    pub len: u32,
}

/// One axis of a precomputed copy: its extent and its strides in the block and the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PackAxis {
    /// Extent.
    pub dim: usize,
    /// Stride in the block (the tensor's buffer).
    pub block: isize,
    /// Stride in the matrix.
    pub mat: isize,
}

/// A step's precomputed copies.
#[derive(Debug, Clone, Default)]
pub struct Packs {
    /// Every copy's axes, one copy after another (one list: a copy reads its axes from one
    /// place, and adding one appends a few entries, no bulk copy per list).
    pub axes: Vec<PackAxis>,
    /// The copies.
    pub ops: Vec<PackOp>,
}

impl Packs {
    /// Empty, with room for as many copies and axes as `like` holds.
    pub fn with_room_of(like: &Packs) -> Self {
        Packs {
            axes: Vec::with_capacity(like.axes.len()),
            ops: Vec::with_capacity(like.ops.len()),
        }
    }
    /// Adds the copy of block `l` (its `rows` then `cols` axes) to a matrix of row stride `rs`
    /// at `mat_off`; returns its index.
    pub fn push(
        &mut self,
        l: &Layout,
        (rows, cols): (&[usize], &[usize]),
        rs: isize,
        mat_off: usize,
    ) -> u32 {
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
        let start = self.axes.len() as u32;
        let empty = dims[..n].contains(&0);
        let len = Axes::simplify(&mut dims[..n], &mut own, &mut mat);
        if !empty {
            let axes = dims[..len].iter().zip(&own[..len]).zip(&mat[..len]);
            for ((&dim, &block), &mat) in axes {
                self.axes.push(PackAxis { dim, block, mat });
            }
        }
        self.ops.push(PackOp {
            block_off: l.offset,
            mat_off,
            start,
            // an empty block copies nothing: marked by u32::MAX
            len: if empty { u32::MAX } else { len as u32 },
        });
        (self.ops.len() - 1) as u32
    }

    /// Approximate memory held, in bytes.
    pub fn approx_bytes(&self) -> usize {
        self.axes.len() * std::mem::size_of::<PackAxis>()
            + self.ops.len() * std::mem::size_of::<PackOp>()
    }

    /// Calls `f(block_offset, matrix_offset, len, block_stride, matrix_stride)` once per
    /// innermost row of copy `op` (offsets from the origins of the tensor's buffer and of the
    /// matrix); nothing for an empty block. Copies of one to three axes (after
    /// simplification, nearly all of them) run as plain nested loops: a pack's rows are short
    /// (a dozen elements on the Hubbard heff steps), so a general odometer's bookkeeping per
    /// row would cost as much as the row.
    #[inline]
    fn rows(&self, op: u32, mut f: impl FnMut(isize, isize, usize, isize, isize)) {
        let op = self.ops[op as usize];
        if op.len == u32::MAX {
            return;
        }
        let axes = &self.axes[op.start as usize..(op.start + op.len) as usize];
        let (bo, mo) = (op.block_off as isize, op.mat_off as isize);
        // wrapping steps: offsets stay in range by the views' contract (as `for_each_pair`)
        match *axes {
            [x] => f(bo, mo, x.dim, x.block, x.mat),
            [o, x] => {
                let (mut b, mut m) = (bo, mo);
                for _ in 0..o.dim {
                    f(b, m, x.dim, x.block, x.mat);
                    b = b.wrapping_add(o.block);
                    m = m.wrapping_add(o.mat);
                }
            }
            [o0, o1, x] => {
                let (mut b0, mut m0) = (bo, mo);
                for _ in 0..o0.dim {
                    let (mut b, mut m) = (b0, m0);
                    for _ in 0..o1.dim {
                        f(b, m, x.dim, x.block, x.mat);
                        b = b.wrapping_add(o1.block);
                        m = m.wrapping_add(o1.mat);
                    }
                    b0 = b0.wrapping_add(o0.block);
                    m0 = m0.wrapping_add(o0.mat);
                }
            }
            _ => {
                let mut dims = [0usize; MAX_RANK];
                let mut bs = [0isize; MAX_RANK];
                let mut ms = [0isize; MAX_RANK];
                for (k, x) in axes.iter().enumerate() {
                    (dims[k], bs[k], ms[k]) = (x.dim, x.block, x.mat);
                }
                let n = axes.len();
                for_each_pair(&dims[..n], &bs[..n], &ms[..n], |b, m, n, s, t| {
                    f(bo.wrapping_add(b), mo.wrapping_add(m), n, s, t)
                })
            }
        }
    }

    /// Copies block `op` from the tensor buffer at `block` into the matrix at `mat`.
    ///
    /// # Safety
    /// Both buffers hold every element the copy addresses; they do not overlap.
    #[inline]
    pub unsafe fn gather<T: Scalar>(&self, op: u32, block: *const T, mat: *mut T) {
        self.rows(op, |bo, mo, n, bs, ms| {
            let (b, m) = (block.wrapping_offset(bo), mat.wrapping_offset(mo));
            // SAFETY: forwarded from the caller.
            unsafe { copy_row(b, bs, m, ms, n, CopyMode::Set) }
        })
    }

    /// Writes (`CopyMode::Set`) or adds (`CopyMode::AddScaled`) the matrix at `mat` into block
    /// `op` of the tensor buffer at `block`.
    ///
    /// # Safety
    /// As [`Packs::gather`].
    #[inline]
    pub unsafe fn scatter<T: Scalar>(
        &self,
        op: u32,
        mat: *const T,
        block: *mut T,
        mode: CopyMode<T>,
    ) {
        self.rows(op, |bo, mo, n, bs, ms| {
            let (b, m) = (block.wrapping_offset(bo), mat.wrapping_offset(mo));
            // SAFETY: forwarded from the caller.
            unsafe { copy_row(m, ms, b, bs, n, mode) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packed copy there and back equals the strided copy it replaces, for blocks with
    /// permuted, unit, empty and short axes, and copies of zero to five axes after
    /// simplification (each loop of [`Packs::rows`]).
    #[test]
    fn packs_match_strided_copies() {
        let cases: [(&[usize], &[usize], &[usize]); 10] = [
            (&[3, 4, 5], &[2, 0], &[1]),
            (&[2, 1, 6, 3], &[1, 3], &[0, 2]),
            (&[4, 0, 2], &[0], &[1, 2]),
            (&[7], &[], &[0]),
            // short rows (run along the longer axis instead)
            (&[17, 3], &[0], &[1]),
            (&[2, 19], &[1], &[0]),
            (&[3, 11, 2], &[1, 0], &[2]),
            // a scalar block
            (&[], &[], &[]),
            // four and five axes that do not merge
            (&[2, 3, 2, 9], &[2, 0], &[3, 1]),
            (&[2, 3, 2, 3, 10], &[4, 2, 0], &[3, 1]),
        ];
        let mut axes = std::collections::BTreeSet::new();
        for (dims, rows, cols) in cases {
            let l = Layout::row_major(dims, 3);
            let len: usize = dims.iter().product();
            let src: Vec<f64> = (0..len + 3).map(|i| i as f64).collect();
            let nn: usize = cols.iter().map(|&c| dims[c]).product();
            let mm: usize = rows.iter().map(|&r| dims[r]).product();
            let mut packs = Packs::default();
            let i = packs.push(&l, (rows, cols), nn as isize + 2, 1);
            axes.insert(packs.ops[i as usize].len);
            let mut mat = vec![-1.0; 1 + mm * (nn + 2)];
            // SAFETY: the buffers hold the block and the matrix.
            unsafe { packs.gather(i, src.as_ptr(), mat.as_mut_ptr()) };
            // element (r, c) of the matrix is the block element at the row-major multi-index
            for r in 0..mm {
                for c in 0..nn {
                    let mut idx = vec![0usize; dims.len()];
                    let (mut rr, mut cc) = (r, c);
                    for &a in rows.iter().rev() {
                        idx[a] = rr % dims[a];
                        rr /= dims[a];
                    }
                    for &a in cols.iter().rev() {
                        idx[a] = cc % dims[a];
                        cc /= dims[a];
                    }
                    let off: usize = 3 + idx
                        .iter()
                        .zip(l.strides.iter())
                        .map(|(&i, &s)| i * s as usize)
                        .sum::<usize>();
                    assert_eq!(mat[1 + r * (nn + 2) + c], src[off], "{dims:?} ({r}, {c})");
                }
            }
            // and back, adding
            let mut back = vec![0.0; len + 3];
            // SAFETY: as above.
            unsafe { packs.scatter(i, mat.as_ptr(), back.as_mut_ptr(), CopyMode::AddScaled(2.0)) };
            for j in 3..len + 3 {
                assert_eq!(back[j], 2.0 * src[j]);
            }
        }
        // every loop shape ran (u32::MAX: the empty block)
        assert_eq!(
            axes.into_iter().collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, u32::MAX]
        );
    }
}
