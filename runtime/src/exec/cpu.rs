//! The CPU executor: runs a step plan's groups with faer (sequential inside a group) and the
//! tiny-GEMM kernel, packing where the plan says so, with rayon across hazard-free components.

use crate::block::DynTensor;
use crate::kernel::{gemm, tiny_gemm, tiny_wins, Accum, RawMat, RawMatMut};
use crate::plan::{Access, Group, GroupKind, KernelCounts, OperandPlan, Place, StepPlan};
use crate::scalar::Scalar;
use crate::step::{Geometry, Side};
use crate::view::{strided_copy, CopyMode, Layout, MatShape, MAX_RANK};
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
        ops: [a, b],
        alpha,
        cache: [
            fill_cache(a, sp.operand(Side::A), g, Side::A),
            fill_cache(b, sp.operand(Side::B), g, Side::B),
        ],
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
    /// The operands, indexed by [`Side::index`] (never told apart by address: one tensor may
    /// be both).
    ops: [&'a DynTensor<T>; 2],
    alpha: T,
    /// Transposed copies of the operand blocks the plan caches, per side.
    cache: [Vec<T>; 2],
}

/// Transposes each cached block once, row-major `rows x cols`, at its slot.
fn fill_cache<T: Scalar>(t: &DynTensor<T>, op: &OperandPlan, g: &Geometry, side: Side) -> Vec<T> {
    let (rows, cols) = g.mat_axes(side);
    let mut v = vec![T::zero(); op.cache_len];
    for (i, slot) in op.cache.iter().enumerate() {
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

impl<T: Scalar> Ctx<'_, T> {
    /// # Safety
    /// `out` is the step's output buffer; no other thread writes the group's blocks.
    unsafe fn run_group(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        // SAFETY: forwarded.
        unsafe {
            if gr.is_members() {
                self.run_members(gr, out, scratch)
            } else {
                self.run_concat(gr, out, scratch)
            }
        }
    }

    /// One member's operand on `side`: its block in place, its cached transpose, or
    /// transposed into `buf`.
    ///
    /// # Safety
    /// `buf` holds the block's elements when it needs a transpose.
    unsafe fn member_operand(&self, side: Side, p: &Place, buf: *mut T) -> RawMat<T> {
        let t = self.ops[side.index()];
        let op = self.sp.operand(side);
        let i = p.block as usize;
        let conj = self.sp.geometry.conj_of(side);
        if let Some(s) = op.mats[i] {
            // SAFETY: the block's offset lies in the tensor's buffer.
            return RawMat::new(unsafe { t.data().as_ptr().add(op.offsets[i]) }, s).with_conj(conj);
        }
        let (rows, cols) = self.sp.geometry.mat_axes(side);
        let l = &t.blocks()[i].layout;
        let mm: usize = rows.iter().map(|&r| l.dims[r]).product();
        let nn: usize = cols.iter().map(|&c| l.dims[c]).product();
        let shape = MatShape::row_major(mm, nn);
        if let Some(o) = op.cache.get(i).copied().flatten() {
            // SAFETY: the cache holds this block's transposed copy at `o`.
            let ptr = unsafe { self.cache[side.index()].as_ptr().add(o) };
            return RawMat::new(ptr, shape).with_conj(conj);
        }
        // SAFETY: `buf` holds at least mm * nn elements (scratch sized by the group).
        unsafe { gather(t.data().as_ptr(), l, rows, cols, buf, nn as isize) };
        RawMat::new(buf as *const T, shape).with_conj(conj)
    }

    /// Single, batched and grouped groups: one GEMM (or tiny kernel) per member.
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
            // SAFETY: block offsets and views come from the operands' own layouts; the
            // scratch regions fit the largest member.
            unsafe {
                let am = self.member_operand(Side::A, pa, sa.as_mut_ptr());
                let bm = self.member_operand(Side::B, pb, sb.as_mut_ptr());
                let cl = &sp.out_layouts[pc.block as usize];
                let (cm, direct) = match sp.c_mats[pc.block as usize] {
                    Some(s) => (RawMatMut::new(out.add(cl.offset), s), true),
                    None => {
                        sc[..m * n].iter_mut().for_each(|x| *x = T::zero());
                        let s = MatShape::row_major(m, n);
                        (RawMatMut::new(sc.as_mut_ptr(), s), false)
                    }
                };
                if tiny {
                    tiny_gemm(cm, am, bm, self.alpha);
                } else {
                    gemm(cm, Accum::Add, am, bm, self.alpha);
                }
                if !direct {
                    scatter_add(sc.as_ptr(), n as isize, cl, &g.c_rows, &g.c_cols, out);
                }
            }
        }
    }

    /// A concatenating group's operand on `side`: in place, or its blocks gathered into `buf`
    /// as one row-major `r x c` matrix.
    ///
    /// # Safety
    /// `buf` holds `r * c` elements when the access is packed; places lie inside the matrix.
    unsafe fn concat_operand(
        &self,
        gr: &Group,
        side: Side,
        (r, c): (usize, usize),
        buf: &mut [T],
    ) -> RawMat<T> {
        let t = self.ops[side.index()];
        let conj = self.sp.geometry.conj_of(side);
        match *gr.access(side) {
            // SAFETY: the plan's base offset lies in the tensor's buffer.
            Access::Direct(s, base) => RawMat::new(unsafe { t.data().as_ptr().add(base) }, s),
            Access::Packed => {
                let (rows, cols) = self.sp.geometry.mat_axes(side);
                for p in gr.places(side) {
                    // SAFETY: forwarded from the caller.
                    unsafe {
                        let dst = buf.as_mut_ptr().add(p.row * c + p.col);
                        let l = &t.blocks()[p.block as usize].layout;
                        gather(t.data().as_ptr(), l, rows, cols, dst, c as isize);
                    }
                }
                RawMat::new(buf.as_ptr(), MatShape::row_major(r, c))
            }
        }
        .with_conj(conj)
    }

    /// Free-axis, contraction-axis and rectangle groups: one GEMM over the whole group.
    unsafe fn run_concat(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        let g = &self.sp.geometry;
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
            let am = self.concat_operand(gr, Side::A, (m, k), sa);
            let bm = self.concat_operand(gr, Side::B, (k, n), sb);
            match gr.c_access {
                Access::Direct(s, base) => gemm(
                    RawMatMut::new(out.add(base), s),
                    Accum::Add,
                    am,
                    bm,
                    self.alpha,
                ),
                Access::Packed => {
                    let cm = RawMatMut::new(sc.as_mut_ptr(), MatShape::row_major(m, n));
                    gemm(cm, Accum::Replace, am, bm, self.alpha);
                    for p in &gr.c {
                        let src = sc.as_ptr().add(p.row * n + p.col);
                        let l = &self.sp.out_layouts[p.block as usize];
                        scatter_add(src, n as isize, l, &g.c_rows, &g.c_cols, out);
                    }
                }
            }
        }
    }
}
