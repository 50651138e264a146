//! The CPU executor: runs a step plan's groups with faer (sequential inside a group) and the
//! tiny-GEMM kernel, packing where the plan says so, with rayon across hazard-free components.

use crate::block::DynTensor;
use crate::kernel::{gemm, tiny_gemm, tiny_wins};
use crate::plan::{Access, Group, GroupKind, KernelCounts, Place, StepPlan};
use crate::scalar::{Conj, Scalar};
use crate::view::{strided_copy, CopyMode, Layout, MatShape, MAX_RANK};
use faer::Accum;
use rayon::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

struct SharedMut<T>(*mut T);

impl<T> SharedMut<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}
// SAFETY: groups in different components write disjoint output blocks (plan invariant),
// so concurrent writes through this pointer never touch the same element.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}

type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;

/// A rayon pool of `threads` threads, built once per size; None when the OS refuses the
/// threads (the step then runs sequentially: same result).
fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let pools = POOLS.get_or_init(|| Mutex::new(Vec::new()));
    let mut g = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = g.iter().find(|(n, _)| *n == threads) {
        return Some(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .ok()?,
    );
    g.push((threads, p.clone()));
    Some(p)
}

/// Runs one planned step into `data` (reused; zeroed and sized here), every group executed.
/// With `times`, each group's wall time is recorded (sequentially) for `explain`.
pub fn run_step<T: Scalar>(
    sp: &StepPlan,
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    alpha: T,
    threads: usize,
    mut data: Vec<T>,
    mut times: Option<&mut Vec<f64>>,
) -> (DynTensor<T>, KernelCounts) {
    let g = &sp.geometry;
    data.clear();
    data.resize(sp.out_len, T::zero());
    let out = SharedMut(data.as_mut_ptr());
    let mut counts = KernelCounts::default();
    for gr in &sp.groups {
        counts.by_kind[gr.kind as usize] += gr.kernel_calls();
        counts.pairs += gr.pairs.len();
    }
    let ctx = Ctx {
        sp,
        a,
        b,
        out_layouts: &sp.out_layouts,
        alpha,
        cache: (
            fill_cache(a, &sp.a_cache, sp.cache_len.0, &g.a_free, &g.a_contr),
            fill_cache(b, &sp.b_cache, sp.cache_len.1, &g.b_contr, &g.b_free),
        ),
    };
    let parallel = if threads > 1 && sp.components.len() > 1 && times.is_none() {
        pool(threads)
    } else {
        None
    };
    if let Some(pool) = parallel {
        pool.install(|| {
            sp.components
                .par_iter()
                .for_each_init(Vec::new, |scratch, comp| {
                    for &gi in comp {
                        // SAFETY: `out` holds `out_len` elements; components write disjoint blocks.
                        unsafe { ctx.run_group(&sp.groups[gi as usize], out.get(), scratch) };
                    }
                });
        });
    } else {
        let mut scratch = Vec::with_capacity(sp.scratch_elems);
        for gr in &sp.groups {
            let t0 = Instant::now();
            // SAFETY: `out` holds `out_len` elements and no other thread writes it.
            unsafe { ctx.run_group(gr, out.get(), &mut scratch) };
            if let Some(t) = times.as_deref_mut() {
                t.push(t0.elapsed().as_secs_f64());
            }
        }
    }
    let t = DynTensor::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        sp.out_index.clone(),
        data,
    );
    (t, counts)
}

struct Ctx<'a, T> {
    sp: &'a StepPlan,
    a: &'a DynTensor<T>,
    b: &'a DynTensor<T>,
    out_layouts: &'a [Layout],
    alpha: T,
    /// Transposed copies of the operand blocks the plan caches (A, then B).
    cache: (Vec<T>, Vec<T>),
}

/// Transposes each cached block once, row-major `rows x cols`, at its slot.
fn fill_cache<T: Scalar>(
    t: &DynTensor<T>,
    slots: &[Option<usize>],
    len: usize,
    rows: &[usize],
    cols: &[usize],
) -> Vec<T> {
    let mut v = vec![T::zero(); len];
    for (i, slot) in slots.iter().enumerate() {
        if let Some(o) = slot {
            let l = &t.blocks()[i].layout;
            let nn: usize = cols.iter().map(|&c| l.dims[c]).product();
            // SAFETY: the slot holds the whole block (sized by the plan); the block is in `t`.
            unsafe {
                gather(
                    t.data().as_ptr(),
                    l,
                    rows,
                    cols,
                    v.as_mut_ptr().add(*o),
                    nn as isize,
                )
            };
        }
    }
    v
}

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
unsafe fn gather<T: Scalar>(
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

/// Adds a sub-matrix at `src` (row stride `rs`) into a block of the output.
///
/// # Safety
/// `dst` is the output buffer; `src` must hold the block's sub-matrix.
unsafe fn scatter_add<T: Scalar>(
    src: *const T,
    rs: isize,
    l: &Layout,
    rows: &[usize],
    cols: &[usize],
    dst: *mut T,
) {
    let (n, dims, own, mat) = matrix_axes(l, rows, cols, rs);
    // SAFETY: forwarded from the caller.
    unsafe {
        strided_copy(
            &dims[..n],
            src,
            &mat[..n],
            dst.add(l.offset),
            &own[..n],
            CopyMode::AddScaled(T::one()),
        )
    };
}

/// A concatenating group's operand: in place, or its blocks gathered into `buf` as one
/// row-major `r x c` matrix.
///
/// # Safety
/// `buf` holds `r * c` elements when the access is packed; places lie inside the matrix.
unsafe fn concat_operand<T: Scalar>(
    t: &DynTensor<T>,
    access: &Access,
    places: &[Place],
    rows: &[usize],
    cols: &[usize],
    (r, c): (usize, usize),
    buf: &mut [T],
) -> (*const T, MatShape) {
    match *access {
        // SAFETY: the plan's base offset lies in the tensor's buffer.
        Access::Direct(s, base) => (unsafe { t.data().as_ptr().add(base) }, s),
        Access::Packed => {
            for p in places {
                // SAFETY: forwarded from the caller.
                unsafe {
                    let dst = buf.as_mut_ptr().add(p.row * c + p.col);
                    gather(
                        t.data().as_ptr(),
                        &t.blocks()[p.block as usize].layout,
                        rows,
                        cols,
                        dst,
                        c as isize,
                    );
                }
            }
            (
                buf.as_ptr(),
                MatShape {
                    m: r,
                    rs: c as isize,
                    n: c,
                    cs: 1,
                },
            )
        }
    }
}

impl<T: Scalar> Ctx<'_, T> {
    /// # Safety
    /// `out` is the step's output buffer; no other thread writes the group's blocks.
    unsafe fn run_group(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        // SAFETY: forwarded.
        unsafe {
            match gr.kind {
                GroupKind::Single | GroupKind::Batched | GroupKind::Grouped => {
                    self.run_members(gr, out, scratch)
                }
                _ => self.run_concat(gr, out, scratch),
            }
        }
    }

    unsafe fn run_members(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        let sp = self.sp;
        let g = &sp.geometry;
        let (m, n, k) = (gr.m, gr.n, gr.k);
        scratch.clear();
        scratch.resize(m * k + k * n + m * n, T::zero());
        let (sa, rest) = scratch.split_at_mut(m * k);
        let (sb, sc) = rest.split_at_mut(k * n);
        let tiny = gr.kind == GroupKind::Batched && tiny_wins(m, n, k);
        for (((pa, pb), pc), &pi) in gr.a.iter().zip(&gr.b).zip(&gr.c).zip(&gr.pairs) {
            // each member's own shape (grouped members differ; the scratch fits the largest)
            let (m, n) = (sp.pairs[pi as usize].m, sp.pairs[pi as usize].n);
            // SAFETY: block offsets and views come from the operands' own layouts.
            unsafe {
                let (ap, ash) = self.operand(
                    self.a,
                    &sp.a_mats,
                    &sp.a_offsets,
                    pa,
                    &g.a_free,
                    &g.a_contr,
                    sa.as_mut_ptr(),
                );
                let (bp, bsh) = self.operand(
                    self.b,
                    &sp.b_mats,
                    &sp.b_offsets,
                    pb,
                    &g.b_contr,
                    &g.b_free,
                    sb.as_mut_ptr(),
                );
                let cl = &self.out_layouts[pc.block as usize];
                let (cp, csh, direct) = match sp.c_mats[pc.block as usize] {
                    Some(s) => (out.add(cl.offset), s, true),
                    None => {
                        sc[..m * n].iter_mut().for_each(|x| *x = T::zero());
                        (
                            sc.as_mut_ptr(),
                            MatShape {
                                m,
                                rs: n as isize,
                                n,
                                cs: 1,
                            },
                            false,
                        )
                    }
                };
                if tiny {
                    tiny_gemm(cp, csh, ap, ash, g.conj.0, bp, bsh, g.conj.1, self.alpha);
                } else {
                    gemm(
                        cp,
                        csh,
                        Accum::Add,
                        ap,
                        ash,
                        g.conj.0,
                        bp,
                        bsh,
                        g.conj.1,
                        self.alpha,
                    );
                }
                if !direct {
                    scatter_add(sc.as_ptr(), n as isize, cl, &g.c_rows, &g.c_cols, out);
                }
            }
        }
    }

    /// A member operand: its block in place, or transposed into `buf`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn operand(
        &self,
        t: &DynTensor<T>,
        mats: &[Option<MatShape>],
        offsets: &[usize],
        p: &Place,
        rows: &[usize],
        cols: &[usize],
        buf: *mut T,
    ) -> (*const T, MatShape) {
        let i = p.block as usize;
        match mats[i] {
            // SAFETY: the block's offset lies in the tensor's buffer.
            Some(s) => (unsafe { t.data().as_ptr().add(offsets[i]) }, s),
            None => {
                let l = &t.blocks()[i].layout;
                let mm: usize = rows.iter().map(|&r| l.dims[r]).product();
                let nn: usize = cols.iter().map(|&c| l.dims[c]).product();
                let (slots, cache) = if std::ptr::eq(t, self.a) {
                    (&self.sp.a_cache, &self.cache.0)
                } else {
                    (&self.sp.b_cache, &self.cache.1)
                };
                if let Some(o) = slots.get(i).copied().flatten() {
                    // SAFETY: the cache holds this block's transposed copy at `o`.
                    return (
                        unsafe { cache.as_ptr().add(o) },
                        MatShape {
                            m: mm,
                            rs: nn as isize,
                            n: nn,
                            cs: 1,
                        },
                    );
                }
                // SAFETY: `buf` holds at least mm * nn elements (scratch sized by the group).
                unsafe { gather(t.data().as_ptr(), l, rows, cols, buf, nn as isize) };
                (
                    buf as *const T,
                    MatShape {
                        m: mm,
                        rs: nn as isize,
                        n: nn,
                        cs: 1,
                    },
                )
            }
        }
    }

    unsafe fn run_concat(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        let sp = self.sp;
        let g = &sp.geometry;
        let (m, n, k) = (gr.m, gr.n, gr.k);
        let need = |acc: &Access, len: usize| if acc.is_packed() { len } else { 0 };
        let (la, lb, lc) = (
            need(&gr.a_access, m * k),
            need(&gr.b_access, k * n),
            need(&gr.c_access, m * n),
        );
        scratch.clear();
        scratch.resize(la + lb + lc, T::zero());
        let (sa, rest) = scratch.split_at_mut(la);
        let (sb, sc) = rest.split_at_mut(lb);
        // SAFETY: places lie inside the group's matrices; blocks inside their buffers.
        unsafe {
            let (ap, ash) = concat_operand(
                self.a,
                &gr.a_access,
                &gr.a,
                &g.a_free,
                &g.a_contr,
                (m, k),
                sa,
            );
            let (bp, bsh) = concat_operand(
                self.b,
                &gr.b_access,
                &gr.b,
                &g.b_contr,
                &g.b_free,
                (k, n),
                sb,
            );
            match gr.c_access {
                Access::Direct(s, base) => gemm(
                    out.add(base),
                    s,
                    Accum::Add,
                    ap,
                    ash,
                    g.conj.0,
                    bp,
                    bsh,
                    g.conj.1,
                    self.alpha,
                ),
                Access::Packed => {
                    let csh = MatShape {
                        m,
                        rs: n as isize,
                        n,
                        cs: 1,
                    };
                    gemm(
                        sc.as_mut_ptr(),
                        csh,
                        Accum::Replace,
                        ap,
                        ash,
                        g.conj.0,
                        bp,
                        bsh,
                        g.conj.1,
                        self.alpha,
                    );
                    for p in &gr.c {
                        let src = sc.as_ptr().add(p.row * n + p.col);
                        scatter_add(
                            src,
                            n as isize,
                            &self.out_layouts[p.block as usize],
                            &g.c_rows,
                            &g.c_cols,
                            out,
                        );
                    }
                }
            }
        }
    }
}

/// `C += alpha op(A) op(B)` through faer (sequential), for probes and benchmarks.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn faer_gemm<T: Scalar>(
    c: *mut T,
    cs: MatShape,
    a: *const T,
    ash: MatShape,
    ca: Conj,
    b: *const T,
    bsh: MatShape,
    cb: Conj,
    alpha: T,
) {
    // SAFETY: forwarded from the caller.
    unsafe { gemm(c, cs, Accum::Add, a, ash, ca, b, bsh, cb, alpha) }
}
