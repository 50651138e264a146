//! Runs a contraction planned in the coefficient form ([`crate::plan::coefficient`]): the
//! first stage's GEMMs side by side into one workspace, then per output block its `Q`
//! buffers, their axpys (exact zeros skipped) and the last stage's GEMMs.

use super::SharedMut;
use crate::block::DynTensor;
use crate::kernel::{gemm, tiny_gemm, Accum, RawMat, RawMatMut};
use crate::plan::coefficient::{Axpy, CoefficientPlan, Source};
use crate::plan::kernel_choice::{coefficient_kernel, Kernel};
use crate::plan::{GroupKind, KernelCounts};
use crate::scalar::{Conj, Scalar};
use crate::threads::{pool, share_out};

/// `C (+)= alpha A B` on the tiny kernel where a library call's fixed cost would dominate
/// ([`coefficient_kernel`]).
///
/// # Safety
/// As [`gemm`].
unsafe fn gemm_auto<T: Scalar>(
    c: RawMatMut<T>,
    accum: Accum,
    a: RawMat<T>,
    b: RawMat<T>,
    alpha: T,
) {
    let (m, n, k) = (c.shape.m, c.shape.n, a.shape.n);
    // SAFETY: forwarded from the caller.
    unsafe {
        if coefficient_kernel(m, n, k) == Kernel::Tiny {
            tiny_gemm(c, accum, a, b, alpha)
        } else {
            gemm(c, accum, a, b, alpha)
        }
    }
}

/// Runs `cf` on `ops` into `out` (the output's buffer, in the layout the plan was made for):
/// `out = alpha · result` (`Replace`, every element written) or `out += alpha · result`.
pub fn run_coefficient<T: Scalar>(
    cf: &CoefficientPlan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    out: &mut [T],
    accum: Accum,
) -> KernelCounts {
    if accum == Accum::Replace {
        out.fill(T::zero());
    }
    let mut t = crate::exec::pool::take::<T>(cf.t_len);
    if t.len() < cf.t_len {
        t.resize(cf.t_len, T::zero());
    }
    let [m1, m2, m3] = cf.chain.map(|k| ops[k]);
    let run = Run {
        cf,
        m: [m1, m2, m3],
        coef: ops[cf.coef].data(),
        alpha,
        t: SharedMut(t.as_mut_ptr()),
        out: SharedMut(out.as_mut_ptr()),
    };
    let first = |i: usize| run.first(i);
    match pool(threads).filter(|_| threads > 1) {
        Some(p) => {
            share_out(&p, threads - 1, cf.firsts.len(), &first);
            let each = |o: usize| {
                let mut q = crate::exec::pool::take::<T>(cf.q_len);
                run.output(o, &mut q);
                crate::exec::pool::give(q);
            };
            share_out(&p, threads - 1, cf.outputs.len(), &each);
        }
        None => {
            (0..cf.firsts.len()).for_each(first);
            let mut q = crate::exec::pool::take::<T>(cf.q_len);
            (0..cf.outputs.len()).for_each(|o| run.output(o, &mut q));
            crate::exec::pool::give(q);
        }
    }
    crate::exec::pool::give(t);
    let mut c = KernelCounts::default();
    c.by_kind[GroupKind::FreeAxis as usize] = cf.firsts.len();
    c.by_kind[GroupKind::ContractionAxis as usize] = cf.seconds.len();
    c.pairs = cf.axpys.len() + cf.direct.len();
    c
}

/// One run of a coefficient plan: the chain's three operands, the coefficients, the
/// workspace of the first stage and the output buffer.
struct Run<'a, T> {
    cf: &'a CoefficientPlan,
    m: [&'a DynTensor<T>; 3],
    coef: &'a [T],
    alpha: T,
    t: SharedMut<T>,
    out: SharedMut<T>,
}

impl<T: Scalar> Run<'_, T> {
    /// The first stage's GEMM `i` into its region of the workspace.
    fn first(&self, i: usize) {
        let (cf, [_, m2, m3]) = (self.cf, self.m);
        let f = &cf.firsts[i];
        let a = RawMat::new(m2.data().as_ptr().wrapping_add(f.a), f.a_shape).with_conj(cf.conj[1]);
        let b = RawMat::new(m3.data().as_ptr().wrapping_add(f.b), f.b_shape).with_conj(cf.conj[2]);
        let shape = crate::view::MatShape::row_major(f.a_shape.m, f.b_shape.n);
        // SAFETY: the plan gives each first-stage GEMM its own region of the workspace, which
        // holds `t_len` elements; `a` and `b` are views inside their operands' buffers.
        unsafe {
            gemm_auto(
                RawMatMut::new(self.t.get().add(f.t), shape),
                Accum::Replace,
                a,
                b,
                T::one(),
            )
        };
    }

    /// The coefficient an axpy scales by, conjugated as the coefficient operand is.
    fn value(&self, a: &Axpy) -> T {
        match self.cf.coef_conj {
            Conj::No => self.coef[a.coef],
            Conj::Yes => self.coef[a.coef].conj(),
        }
    }

    /// The buffer an axpy reads.
    fn source(&self, a: &Axpy) -> *const T {
        match a.src {
            Source::Workspace => self.t.get(),
            Source::Middle => self.m[1].data().as_ptr(),
            Source::Last => self.m[2].data().as_ptr(),
        }
    }

    /// How an axpy's source is conjugated: as its operand, when read straight from it.
    fn conj_of(&self, a: &Axpy) -> Conj {
        match a.src {
            Source::Workspace => Conj::No,
            Source::Middle => self.cf.conj[1],
            Source::Last => self.cf.conj[2],
        }
    }

    /// Output block `o`: each of its last-stage GEMMs after summing its `Q` (in `q`), then
    /// its direct axpys.
    fn output(&self, o: usize, q: &mut Vec<T>) {
        let cf = self.cf;
        let w = cf.outputs[o];
        if q.len() < cf.q_len {
            q.resize(cf.q_len, T::zero());
        }
        for g in &cf.seconds[w.seconds.0 as usize..w.seconds.1 as usize] {
            let (k, n) = (g.m1_shape.n, g.out_shape.n);
            let q = &mut q[..k * n];
            q.fill(T::zero());
            if !self.sum_q(&cf.axpys[g.axpys.0 as usize..g.axpys.1 as usize], q) {
                continue;
            }
            let a = RawMat::new(self.m[0].data().as_ptr().wrapping_add(g.m1), g.m1_shape)
                .with_conj(cf.conj[0]);
            let b = RawMat::new(q.as_ptr(), crate::view::MatShape::row_major(k, n));
            // SAFETY: output blocks are written by one task each; the view lies in `out`.
            unsafe {
                gemm_auto(
                    RawMatMut::new(self.out.get().add(g.out), g.out_shape),
                    Accum::Add,
                    a,
                    b,
                    self.alpha,
                )
            };
        }
        for a in &cf.direct[w.direct.0 as usize..w.direct.1 as usize] {
            let f = self.value(a) * self.alpha;
            if f != T::zero() {
                // SAFETY: as above; the destination is this task's output block.
                unsafe { axpy(self.out.get(), f, self.source(a), self.conj_of(a), a) };
            }
        }
    }

    /// `Q = sum of the axpys` (exact zeros skipped); whether any was not zero. A run of axpys
    /// into one region of `Q` (the plan sorts them so) is summed in one pass over the region,
    /// up to `FUSED` sources at a time.
    fn sum_q(&self, axpys: &[Axpy], q: &mut [T]) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < axpys.len() {
            let run = same_region(&axpys[i..]);
            let mut srcs = [(T::zero(), std::ptr::null::<T>()); FUSED];
            let mut n = 0;
            for a in &axpys[i..i + run] {
                let f = self.value(a);
                if f == T::zero() {
                    continue;
                }
                if a.s_cs == 1 && self.conj_of(a) == Conj::No {
                    srcs[n] = (f, self.source(a).wrapping_add(a.s));
                    n += 1;
                    if n == FUSED {
                        // SAFETY: as below, every source a view like `a`'s.
                        unsafe { axpy_fused(q.as_mut_ptr(), &srcs[..n], a) };
                        n = 0;
                    }
                } else {
                    // SAFETY: the first stage is done; the plan keeps every slice inside
                    // its source and every destination inside `Q` (`k x n`).
                    unsafe { axpy(q.as_mut_ptr(), f, self.source(a), self.conj_of(a), a) };
                }
                any = true;
            }
            if n > 0 {
                // SAFETY: the run's axpys share one destination region and unit-stride
                // rows (`same_region`); each source view lies in its buffer.
                unsafe { axpy_fused(q.as_mut_ptr(), &srcs[..n], &axpys[i]) };
            }
            i += run;
        }
        any
    }
}

/// Sources summed in one pass over a destination region.
const FUSED: usize = 4;

/// The length of the run at the start of `axpys` that writes one destination region (the
/// same offset, extents and strides), with unit-stride rows in the destination; at least 1.
fn same_region(axpys: &[Axpy]) -> usize {
    let a = &axpys[0];
    if a.d_cs != 1 {
        return 1;
    }
    let key = |b: &Axpy| (b.d, b.rows, b.cols, b.d_rs, b.d_cs, b.s_rs);
    1 + axpys[1..].iter().take_while(|b| key(b) == key(a)).count()
}

/// `dst[a.d + i d_rs + j] += sum_t f_t src_t[i s_rs + j]` over `a.rows x a.cols`, the
/// sources (`src_t` already at its view's origin) contiguous along a row, one pass over the
/// destination.
///
/// # Safety
/// Every element of each view lies in its buffer; the destination is not read or written by
/// another thread meanwhile.
unsafe fn axpy_fused<T: Scalar>(dst: *mut T, srcs: &[(T, *const T)], a: &Axpy) {
    let (rows, cols) = (a.rows as isize, a.cols as usize);
    for i in 0..rows {
        // SAFETY: by the caller's contract (rows and columns inside every view).
        unsafe {
            let d = std::slice::from_raw_parts_mut(dst.offset(a.d as isize + i * a.d_rs), cols);
            let row = |t: usize| std::slice::from_raw_parts(srcs[t].1.offset(i * a.s_rs), cols);
            match srcs.len() {
                1 => {
                    let (f0, s0) = (srcs[0].0, row(0));
                    for (d, &x) in d.iter_mut().zip(s0) {
                        *d += f0 * x;
                    }
                }
                2 => {
                    let (f0, s0, f1, s1) = (srcs[0].0, row(0), srcs[1].0, row(1));
                    for ((d, &x), &y) in d.iter_mut().zip(s0).zip(s1) {
                        *d += f0 * x + f1 * y;
                    }
                }
                3 => {
                    let (f0, f1, f2) = (srcs[0].0, srcs[1].0, srcs[2].0);
                    let (s0, s1, s2) = (row(0), row(1), row(2));
                    for (((d, &x), &y), &z) in d.iter_mut().zip(s0).zip(s1).zip(s2) {
                        *d += f0 * x + f1 * y + f2 * z;
                    }
                }
                _ => {
                    let (f0, f1, f2, f3) = (srcs[0].0, srcs[1].0, srcs[2].0, srcs[3].0);
                    let (s0, s1, s2, s3) = (row(0), row(1), row(2), row(3));
                    for ((((d, &x), &y), &z), &w) in d.iter_mut().zip(s0).zip(s1).zip(s2).zip(s3) {
                        *d += f0 * x + f1 * y + f2 * z + f3 * w;
                    }
                }
            }
        }
    }
}

/// `dst[a.d + i d_rs + j d_cs] += f src[a.s + i s_rs + j s_cs]` over `a.rows x a.cols`,
/// the source conjugated where `conj` says.
///
/// # Safety
/// Every element of both views lies in its buffer; the destination is not read or written
/// by another thread meanwhile.
unsafe fn axpy<T: Scalar>(dst: *mut T, f: T, src: *const T, conj: Conj, a: &Axpy) {
    let (rows, cols) = (a.rows as isize, a.cols as isize);
    for i in 0..rows {
        // SAFETY: by the caller's contract (rows and columns inside both views).
        unsafe {
            let d = dst.offset(a.d as isize + i * a.d_rs);
            let s = src.offset(a.s as isize + i * a.s_rs);
            match (conj, a.d_cs, a.s_cs) {
                (Conj::No, 1, 1) => {
                    for j in 0..cols {
                        *d.offset(j) += f * *s.offset(j);
                    }
                }
                (Conj::No, _, _) => {
                    for j in 0..cols {
                        *d.offset(j * a.d_cs) += f * *s.offset(j * a.s_cs);
                    }
                }
                (Conj::Yes, _, _) => {
                    for j in 0..cols {
                        *d.offset(j * a.d_cs) += f * (*s.offset(j * a.s_cs)).conj();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    fn view(s: usize, d: usize) -> Axpy {
        Axpy {
            coef: 0,
            src: Source::Workspace,
            s,
            s_rs: 7,
            s_cs: 1,
            d,
            d_rs: 5,
            d_cs: 1,
            rows: 3,
            cols: 4,
        }
    }

    /// One pass over a region with 1 to 4 sources equals the axpys one by one, strided rows.
    #[test]
    fn fused_axpys_equal_one_by_one() {
        let src: Vec<Complex64> = (0..200)
            .map(|i| Complex64::new(i as f64 * 0.37 - 9.0, (i % 7) as f64))
            .collect();
        for n in 1..=FUSED {
            let axpys: Vec<Axpy> = (0..n).map(|t| view(3 + 31 * t, 2)).collect();
            assert_eq!(same_region(&axpys), n);
            let f = |t: usize| Complex64::new(0.5 + t as f64, -(t as f64));
            let mut one = vec![Complex64::new(1.0, 1.0); 20];
            let mut fused = one.clone();
            for (t, a) in axpys.iter().enumerate() {
                // SAFETY: every view lies inside `src` (200) and the 20-element destination.
                unsafe { axpy(one.as_mut_ptr(), f(t), src.as_ptr(), Conj::No, a) };
            }
            let srcs: Vec<_> = (0..n)
                .map(|t| (f(t), src.as_ptr().wrapping_add(axpys[t].s)))
                .collect();
            // SAFETY: as above.
            unsafe { axpy_fused(fused.as_mut_ptr(), &srcs, &axpys[0]) };
            for (x, y) in one.iter().zip(&fused) {
                assert!((x - y).norm() < 1e-12, "{n} sources: {x} against {y}");
            }
        }
        // a different destination, or strided destination columns, ends a run
        let mut other = view(3, 2);
        other.d = 3;
        assert_eq!(same_region(&[view(3, 2), other, view(3, 2)]), 1);
        let mut strided = view(3, 2);
        strided.d_cs = 2;
        assert_eq!(same_region(&[strided, strided]), 1);
    }
}
