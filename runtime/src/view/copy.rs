//! Strided loops and copies between same-shape views.

use super::MAX_RANK;
use crate::scalar::Scalar;

/// Calls `f(src_offset, dst_offset, inner_len, inner_src_stride, inner_dst_stride)` once per
/// innermost row of two same-shape views (offsets relative to each view's origin).
#[inline]
pub fn for_each_pair(
    dims: &[usize],
    src_strides: &[isize],
    dst_strides: &[isize],
    mut f: impl FnMut(isize, isize, usize, isize, isize),
) {
    let r = dims.len();
    assert!(
        r <= MAX_RANK,
        "rank {r} exceeds MAX_RANK (checked at tensor construction)"
    );
    if dims.contains(&0) {
        return;
    }
    if r == 0 {
        f(0, 0, 1, 0, 0);
        return;
    }
    let inner = dims[r - 1];
    let (ss, ds) = (src_strides[r - 1], dst_strides[r - 1]);
    let mut idx = [0usize; MAX_RANK];
    let (mut so, mut dof) = (0isize, 0isize);
    loop {
        f(so, dof, inner, ss, ds);
        let mut k = r - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            // wrapping: offsets stay in range by the views' contract, and a user's overflow
            // checks must not reach this loop
            idx[k] += 1;
            so = so.wrapping_add(src_strides[k]);
            dof = dof.wrapping_add(dst_strides[k]);
            if idx[k] < dims[k] {
                break;
            }
            so = so.wrapping_sub(src_strides[k].wrapping_mul(dims[k] as isize));
            dof = dof.wrapping_sub(dst_strides[k].wrapping_mul(dims[k] as isize));
            idx[k] = 0;
        }
    }
}

/// Rows shorter than this are not run innermost when a longer axis exists (each row costs
/// a loop step of its own).
pub const SHORT_ROW: usize = 8;

/// Axes of a strided loop, on the stack.
#[derive(Debug, Clone, Copy)]
pub struct Axes {
    /// Number of axes.
    pub len: usize,
    /// Extents.
    pub dims: [usize; MAX_RANK],
    /// Source strides.
    pub src: [isize; MAX_RANK],
    /// Destination strides.
    pub dst: [isize; MAX_RANK],
}

impl Axes {
    /// Drops unit axes and merges adjacent axes whose strides nest in both views, so loops run
    /// over as few and as long rows as possible; a short innermost row (under
    /// `SHORT_ROW` elements) trades places with the longest axis.
    pub fn simplified(dims: &[usize], ss: &[isize], ds: &[isize]) -> Axes {
        let mut ax = Axes {
            len: dims.len(),
            dims: [0; MAX_RANK],
            src: [0; MAX_RANK],
            dst: [0; MAX_RANK],
        };
        ax.dims[..dims.len()].copy_from_slice(dims);
        ax.src[..dims.len()].copy_from_slice(ss);
        ax.dst[..dims.len()].copy_from_slice(ds);
        ax.len = Self::simplify(&mut ax.dims[..dims.len()], &mut ax.src, &mut ax.dst);
        ax
    }

    /// [`Axes::simplified`] in place: the first `dims.len()` axes of the three arrays become
    /// the simplified axes, whose number is returned (no copy of the arrays is made).
    pub fn simplify(dims: &mut [usize], src: &mut [isize], dst: &mut [isize]) -> usize {
        let n = Self::merge(dims, src, dst);
        Self::long_rows_inner(&mut dims[..n], &mut src[..n], &mut dst[..n]);
        n
    }

    /// The longest axis innermost when the innermost row is short and a longer axis exists:
    /// fewer, longer rows (any loop order copies the same elements once).
    fn long_rows_inner(dims: &mut [usize], src: &mut [isize], dst: &mut [isize]) {
        let n = dims.len();
        if n < 2 || dims[n - 1] >= SHORT_ROW {
            return;
        }
        // the longest axis, one walked by unit steps on either side first
        let unit = |k: usize| src[k].abs() == 1 || dst[k].abs() == 1;
        let best = (0..n - 1)
            .max_by_key(|&k| (unit(k) && dims[k] > dims[n - 1], dims[k]))
            .unwrap_or(n - 1);
        if dims[best] > dims[n - 1] {
            dims.swap(best, n - 1);
            src.swap(best, n - 1);
            dst.swap(best, n - 1);
        }
    }

    /// Unit axes dropped, nesting neighbours merged, in the given order, written over the
    /// front of the arrays (an axis is only ever moved forward); returns how many remain.
    fn merge(dims: &mut [usize], src: &mut [isize], dst: &mut [isize]) -> usize {
        let mut n = 0;
        for k in 0..dims.len() {
            let (d, s, t) = (dims[k], src[k], dst[k]);
            if d == 1 {
                continue;
            }
            if n > 0 && src[n - 1] == s * d as isize && dst[n - 1] == t * d as isize {
                dims[n - 1] *= d;
                src[n - 1] = s;
                dst[n - 1] = t;
                continue;
            }
            dims[n] = d;
            src[n] = s;
            dst[n] = t;
            n += 1;
        }
        n
    }
}

/// `dst = src` (or `dst += alpha * src`, `dst = conj(src)`) element-wise between two same-shape
/// strided views.
///
/// # Safety
/// Both views must address valid, non-overlapping memory for their whole extent.
pub unsafe fn strided_copy<T: Scalar>(
    dims: &[usize],
    src: *const T,
    src_strides: &[isize],
    dst: *mut T,
    dst_strides: &[isize],
    mode: CopyMode<T>,
) {
    if dims.contains(&0) {
        return;
    }
    let ax = Axes::simplified(dims, src_strides, dst_strides);
    let n = ax.len;
    for_each_pair(
        &ax.dims[..n],
        &ax.src[..n],
        &ax.dst[..n],
        // SAFETY: the caller guarantees every addressed element is valid.
        |so, dof, n, ss, ds| unsafe {
            copy_row(
                src.wrapping_offset(so),
                ss,
                dst.wrapping_offset(dof),
                ds,
                n,
                mode,
            )
        },
    );
}

/// One row of a strided copy: `n` elements from `s` (stride `ss`) to `d` (stride `ds`).
///
/// # Safety
/// Every addressed element is valid; the rows do not overlap.
#[inline(always)]
pub(super) unsafe fn copy_row<T: Scalar>(
    s: *const T,
    ss: isize,
    d: *mut T,
    ds: isize,
    n: usize,
    mode: CopyMode<T>,
) {
    // Rows are walked by slices (contiguous) or wrapping pointer steps (strided): no
    // per-element overflow or precondition checks, so the loop is the same tight loop when a
    // user's build turns on overflow checks and debug assertions.
    if ss == 1 && ds == 1 {
        // SAFETY: the caller vouches for both rows.
        let (sv, dv) = unsafe {
            (
                std::slice::from_raw_parts(s, n),
                std::slice::from_raw_parts_mut(d, n),
            )
        };
        match mode {
            // a library memcpy costs a call: only worth it for long rows
            CopyMode::Set if n >= 32 => dv.copy_from_slice(sv),
            CopyMode::Set => dv.iter_mut().zip(sv).for_each(|(x, &y)| *x = y),
            CopyMode::Conj => dv.iter_mut().zip(sv).for_each(|(x, y)| *x = y.conj()),
            CopyMode::AddScaled(alpha) => dv.iter_mut().zip(sv).for_each(|(x, &y)| *x += alpha * y),
        }
        return;
    }
    let (mut s, mut d) = (s, d);
    for _ in 0..n {
        // SAFETY: as above.
        unsafe {
            match mode {
                CopyMode::Set => *d = *s,
                CopyMode::Conj => *d = (*s).conj(),
                CopyMode::AddScaled(alpha) => *d += alpha * *s,
            }
        }
        s = s.wrapping_offset(ss);
        d = d.wrapping_offset(ds);
    }
}

/// What [`strided_copy`] does per element.
#[derive(Debug, Clone, Copy)]
pub enum CopyMode<T> {
    /// `dst = src`.
    Set,
    /// `dst = conj(src)`.
    Conj,
    /// `dst += alpha * src`.
    AddScaled(T),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_nested_axes_and_drops_units() {
        let ax = Axes::simplified(&[2, 1, 3, 4], &[12, 12, 4, 1], &[12, 99, 4, 1]);
        assert_eq!((ax.len, ax.dims[0], ax.src[0], ax.dst[0]), (1, 24, 1, 1));
        let ax = Axes::simplified(&[2, 3], &[1, 2], &[3, 1]);
        assert_eq!(&ax.dims[..ax.len], &[2, 3]);
    }

    #[test]
    fn short_rows_trade_places_with_the_longest_axis() {
        // 17 rows of 3 into a matrix of row stride 5: run as 3 rows of 17
        let ax = Axes::simplified(&[17, 3], &[3, 1], &[5, 1]);
        let got = (&ax.dims[..ax.len], &ax.src[..ax.len], &ax.dst[..ax.len]);
        assert_eq!(got, (&[3, 17][..], &[1, 3][..], &[1, 5][..]));
        // rows of SHORT_ROW or more stay innermost
        let ax = Axes::simplified(&[17, SHORT_ROW], &[9, 1], &[20, 1]);
        assert_eq!(&ax.dims[..ax.len], &[17, SHORT_ROW]);
        // a unit-stride axis is preferred to a longer strided one
        let ax = Axes::simplified(&[40, 12, 2], &[100, 1, 12], &[24, 2, 1]);
        assert_eq!(&ax.dims[..ax.len], &[40, 2, 12]);
        // the same copy either way
        let src: Vec<f64> = (0..17 * 3).map(|x| x as f64).collect();
        let mut dst = vec![0.0; 17 * 5];
        // SAFETY: src holds 17 rows of 3, dst 17 rows of 5.
        unsafe {
            strided_copy(
                &[17, 3],
                src.as_ptr(),
                &[3, 1],
                dst.as_mut_ptr(),
                &[5, 1],
                CopyMode::Set,
            )
        };
        for r in 0..17 {
            assert_eq!(&dst[r * 5..r * 5 + 3], &src[r * 3..r * 3 + 3]);
            assert_eq!(&dst[r * 5 + 3..r * 5 + 5], &[0.0, 0.0]);
        }
    }

    #[test]
    fn strided_copy_transposes() {
        let src: Vec<f64> = (0..6).map(|x| x as f64).collect();
        let mut dst = vec![0.0; 6];
        // src is 2x3 row-major; write it transposed into a 3x2 row-major dst
        // SAFETY: both buffers hold the 6 elements the views address.
        unsafe {
            strided_copy(
                &[2, 3],
                src.as_ptr(),
                &[3, 1],
                dst.as_mut_ptr(),
                &[1, 2],
                CopyMode::Set,
            );
        }
        assert_eq!(dst, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }
}
