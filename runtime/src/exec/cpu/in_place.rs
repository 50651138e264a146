//! Members and groups that read an operand in place as strided sub-matrices, one kernel call
//! per sub-matrix: a member's split block ([`Reach::Split`](crate::plan::Reach::Split)) and a thin contraction-axis
//! group's big operand ([`Group::thin`]).

use super::Ctx;
use crate::kernel::{tiny_gemm, Accum, RawMat, RawMatMut};
use crate::plan::kernel_choice::{split_kernel, Kernel};
use crate::plan::Group;
use crate::scalar::Scalar;
use crate::step::Side;
use crate::view::MatShape;

impl<T: Scalar> Ctx<'_, T> {
    /// One member whose operand on `side` is read in place as strided sub-matrices (`a` or
    /// `b` the first of them, split `i` of the step): one GEMM per sub-matrix, into the
    /// matching rows (A split) or columns (B split) of `c`.
    ///
    /// # Safety
    /// As [`gemm`]; the split's sub-matrices lie inside the operand's buffer.
    pub(super) unsafe fn run_split(
        &self,
        c: RawMatMut<T>,
        accum: Accum,
        a: RawMat<T>,
        b: RawMat<T>,
        side: Side,
        i: u32,
    ) {
        let s = self.sp.splits[i as usize].split;
        let (cs, k) = (c.shape, a.shape.n);
        let (sub, step) = match side {
            Side::A => (MatShape { m: s.mat.m, ..cs }, s.mat.m as isize * cs.rs),
            Side::B => (MatShape { n: s.mat.n, ..cs }, s.mat.n as isize * cs.cs),
        };
        let tiny = split_kernel(sub.m, sub.n, k) == Kernel::Tiny;
        for o in 0..s.count as isize {
            // SAFETY: sub-matrix `o` of the split operand and its rows or columns of `c` lie
            // inside their buffers (the plan's split covers the block; `c` is the member's).
            unsafe {
                let (mut a, mut b) = (a, b);
                match side {
                    Side::A => a.ptr = a.ptr.offset(o * s.stride),
                    Side::B => b.ptr = b.ptr.offset(o * s.stride),
                }
                let c = RawMatMut::new(c.ptr.offset(o * step), sub);
                if tiny {
                    tiny_gemm(c, accum, a, b, self.alpha);
                } else {
                    self.gemm(c, accum, a, b);
                }
            }
        }
    }

    /// A thin contraction-axis group ([`Group::thin`]): its operand on `side` read in place,
    /// one sub-matrix at a time (the plan's views in [`StepPlan::thin`]); per stretch of the
    /// output those sub-matrices hold, one thin GEMM per contribution on the tiny kernel
    /// (the stretch stays in L1 between them), the first overwriting when the group's first
    /// write may. The other operand, small, is packed once if it must be.
    ///
    /// # Safety
    /// `c` (the output's view, in place) and the views lie inside their buffers.
    pub(super) unsafe fn run_thin(
        &self,
        gr: &Group,
        side: Side,
        start: usize,
        c: *mut T,
        cv: MatShape,
        scratch: &mut Vec<T>,
    ) {
        let (m, n, k) = (gr.m, gr.n, gr.k);
        let (other, small_shape) = match side {
            Side::A => (Side::B, (k, n)),
            Side::B => (Side::A, (m, k)),
        };
        let places = gr.places(side);
        let views = &self.sp.thin[start..start + places.len()];
        let small_len = small_shape.0 * small_shape.1;
        if scratch.len() < small_len {
            scratch.resize(small_len, T::zero());
        }
        // SAFETY: `scratch` holds the small operand's matrix when it is packed.
        let sm = unsafe { self.concat_operand(gr, other, small_shape, scratch) };
        let first = self.accum_of(gr.c().iter().all(|p| p.first));
        let conj = self.sp.geometry.conj_of(side);
        let big = self.ops[side.index()].data().as_ptr();
        let inner = match side {
            Side::A => views[0].split.mat.m,
            Side::B => views[0].split.mat.n,
        };
        for o in 0..views[0].split.count {
            // the output's stretch for sub-matrix `o`: its columns (B) or rows (A)
            let (cs, c_at) = match side {
                Side::B => (MatShape { n: inner, ..cv }, (o * inner) as isize * cv.cs),
                Side::A => (MatShape { m: inner, ..cv }, (o * inner) as isize * cv.rs),
            };
            for (i, (p, v)) in places.iter().zip(views).enumerate() {
                let at = v.at as isize + o as isize * v.split.stride;
                // SAFETY: sub-matrix `o` of the block lies inside it (the plan's view), the
                // small operand's rows (columns) `k0 ..` inside its matrix, the stretch
                // inside the output block.
                unsafe {
                    let x = RawMat::new(big.offset(at), v.split.mat).with_conj(conj);
                    let (a, b) = thin_operands(side, sm, x, (p.row, p.col));
                    let accum = if i == 0 { first } else { Accum::Add };
                    let cm = RawMatMut::new(c.offset(c_at), cs);
                    tiny_gemm(cm, accum, a, b, self.alpha);
                }
            }
        }
    }
}

/// The two operands of one thin GEMM: the block's sub-matrix `x` beside the small operand's
/// rows (`Side::B`: `sm`'s columns from the place's row on) or columns (`Side::A`).
///
/// # Safety
/// The place's rows (columns) of `sm` lie inside its matrix.
unsafe fn thin_operands<T: Scalar>(
    side: Side,
    sm: RawMat<T>,
    x: RawMat<T>,
    (row, col): (usize, usize),
) -> (RawMat<T>, RawMat<T>) {
    match side {
        Side::B => {
            let shape = MatShape {
                n: x.shape.m,
                ..sm.shape
            };
            // SAFETY: forwarded from the caller.
            let ptr = unsafe { sm.ptr.offset(row as isize * sm.shape.cs) };
            (RawMat { ptr, shape, ..sm }, x)
        }
        Side::A => {
            let shape = MatShape {
                m: x.shape.n,
                ..sm.shape
            };
            // SAFETY: forwarded from the caller.
            let ptr = unsafe { sm.ptr.offset(col as isize * sm.shape.rs) };
            (x, RawMat { ptr, shape, ..sm })
        }
    }
}
