//! The CPU executor: runs a step plan's groups with faer and the tiny-GEMM kernel, packing
//! where the plan says so; on several threads, hazard-free components side by side or large
//! GEMMs cut into panels (`split` decides which, `crate::threads` shares the work out).

use crate::block::DynTensor;
use crate::kernel::{gemm_par, tiny_gemm, Accum, Par, RawMat, RawMatMut};
use crate::plan::kernel_choice::{member_kernel, view_kernel, Kernel};
use crate::plan::{Access, Group, GroupKind, KernelCounts, Reach, StepPlan};
use crate::scalar::Scalar;
use crate::step::Side;
use crate::threads::{pool, share_out};
use crate::view::{for_each_pair, CopyMode, Layout, MatShape, MAX_RANK};
use std::time::Instant;

pub mod coefficient;
mod in_place;
mod split;

pub use split::threads_of;
use split::{big_gemm, longest_first, panels, split, Split};

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

/// A group's scratch for its packed A, B and output (empty where reached in place), the
/// buffer grown to fit: every element used is written before it is read (packed operands tile
/// their matrices, packed results are overwritten), so none is zeroed.
fn scratch_parts<'s, T: Scalar>(gr: &Group, scratch: &'s mut Vec<T>) -> [&'s mut [T]; 3] {
    let (m, n, k) = (gr.m, gr.n, gr.k);
    let need = |acc: &Access, len: usize| if acc.is_packed() { len } else { 0 };
    let (la, lb, lc) = (
        need(&gr.a_access, m * k),
        need(&gr.b_access, k * n),
        need(&gr.c_access, m * n),
    );
    if scratch.len() < la + lb + lc {
        scratch.resize(la + lb + lc, T::zero());
    }
    let (sa, rest) = scratch.split_at_mut(la);
    let (sb, sc) = rest.split_at_mut(lb);
    [sa, sb, sc]
}

/// A GEMM's three views, shared by the threads that run its panels.
#[derive(Clone, Copy)]
struct Views<T>(RawMatMut<T>, RawMat<T>, RawMat<T>);
// SAFETY: the threads read the operands and write disjoint panels of the output.
unsafe impl<T: Sync> Sync for Views<T> {}

/// Runs one planned step into `out` (`out_len` elements). With `Accum::Replace` the output
/// is overwritten: each block's first writer overwrites it (BLAS beta = 0) and the plan's
/// `zero_blocks` are zeroed, so no other element is read before it is written; with
/// `Accum::Add` every write adds into `out`. With `times`, each group's wall time is
/// recorded (sequentially) for `explain`.
#[allow(clippy::too_many_arguments)]
pub fn run_step<T: Scalar>(
    sp: &StepPlan,
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    alpha: T,
    threads: usize,
    out: &mut [T],
    accum: Accum,
    times: Option<&mut Vec<f64>>,
) -> KernelCounts {
    prepare_output(sp, out, accum);
    let out = SharedMut(out.as_mut_ptr());
    let counts = step_counts(sp);
    let how = if times.is_some() {
        Split::Sequential
    } else {
        split(sp, threads)
    };
    let ctx = Ctx {
        sp,
        ops: [a, b],
        alpha,
        accum,
        par: match how {
            Split::Gemms(n) => Par::Threads(n),
            _ => Par::Seq,
        },
        cache: [
            fill_cache(a, sp, Side::A, None),
            fill_cache(b, sp, Side::B, None),
        ],
    };
    let parallel = match how {
        Split::Components => pool(threads),
        _ => None,
    };
    match parallel {
        Some(pool) => run_side_by_side(&ctx, &pool, threads, &out),
        None => run_in_order(&ctx, &out, times),
    }
    ctx.cache.into_iter().for_each(super::pool::give);
    counts
}

/// The kernel calls and block pairs of a step, by group kind.
fn step_counts(sp: &StepPlan) -> KernelCounts {
    let mut counts = KernelCounts::default();
    for gr in &sp.groups {
        counts.by_kind[gr.kind as usize] += gr.kernel_calls();
        counts.pairs += gr.pairs.len();
    }
    counts
}

/// A step's components side by side on `threads`: longest first, one at a time (a thread
/// takes the next when free, so a component that runs longer than priced does not hold the
/// others back), each with a scratch buffer from the spares.
fn run_side_by_side<T: Scalar>(
    ctx: &Ctx<'_, T>,
    pool: &rayon::ThreadPool,
    threads: usize,
    out: &SharedMut<T>,
) {
    let sp = ctx.sp;
    let order = longest_first(sp);
    let work = |i: usize| {
        let mut scratch = super::pool::take::<T>(sp.scratch_elems);
        for &gi in &sp.components[order[i]] {
            // SAFETY: `out` holds `out_len` elements; components write disjoint blocks.
            unsafe { ctx.run_group(&sp.groups[gi as usize], out.get(), &mut scratch) };
        }
        super::pool::give(scratch);
    };
    share_out(pool, threads - 1, order.len(), &work);
}

/// A step's groups in plan order on this thread, each timed when `times` is given.
fn run_in_order<T: Scalar>(ctx: &Ctx<'_, T>, out: &SharedMut<T>, mut times: Option<&mut Vec<f64>>) {
    let sp = ctx.sp;
    let mut scratch = super::pool::take::<T>(sp.scratch_elems);
    for gr in &sp.groups {
        // the clock is read only when asked for: a read costs about as much as a small group
        let t0 = times.is_some().then(Instant::now);
        // SAFETY: `out` holds `out_len` elements and no other thread writes it (a large
        // GEMM split over threads writes disjoint panels of it).
        unsafe { ctx.run_group(gr, out.get(), &mut scratch) };
        if let (Some(t), Some(t0)) = (times.as_deref_mut(), t0) {
            t.push(t0.elapsed().as_secs_f64());
        }
    }
    super::pool::give(scratch);
}

/// Runs the groups of the components `keep` selects, sequentially in plan order, into `out`
/// (the distributed executor's share of a step: every writer of a block is in one component,
/// so the blocks those groups write are complete). Blocks no group writes are zeroed
/// (`Replace`); the other blocks of `out` are left as they are.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn run_components<T: Scalar>(
    sp: &StepPlan,
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    alpha: T,
    out: &mut [T],
    accum: Accum,
    keep: &[bool],
) -> KernelCounts {
    prepare_output(sp, out, accum);
    // only the blocks the kept groups read are transposed into the cache
    let mut read = [vec![false; a.num_blocks()], vec![false; b.num_blocks()]];
    for (comp, _) in sp.components.iter().zip(keep).filter(|(_, &k)| k) {
        for &gi in comp {
            for &pi in &sp.groups[gi as usize].pairs {
                let p = &sp.pairs[pi as usize];
                read[0][p.a as usize] = true;
                read[1][p.b as usize] = true;
            }
        }
    }
    let ctx = Ctx {
        sp,
        ops: [a, b],
        alpha,
        accum,
        par: Par::Seq,
        cache: [
            fill_cache(a, sp, Side::A, Some(&read[0])),
            fill_cache(b, sp, Side::B, Some(&read[1])),
        ],
    };
    let out = SharedMut(out.as_mut_ptr());
    let mut scratch = super::pool::take::<T>(sp.scratch_elems);
    let mut counts = KernelCounts::default();
    for (comp, _) in sp.components.iter().zip(keep).filter(|(_, &k)| k) {
        for &gi in comp {
            let gr = &sp.groups[gi as usize];
            counts.by_kind[gr.kind as usize] += gr.kernel_calls();
            counts.pairs += gr.pairs.len();
            // SAFETY: `out` holds `out_len` elements and no other thread writes it.
            unsafe { ctx.run_group(gr, out.get(), &mut scratch) };
        }
    }
    super::pool::give(scratch);
    ctx.cache.into_iter().for_each(super::pool::give);
    counts
}

/// Checks the output's length and, when the step overwrites it, zeroes the blocks no first
/// writer overwrites (the plan's `zero_blocks`).
fn prepare_output<T: Scalar>(sp: &StepPlan, out: &mut [T], accum: Accum) {
    assert!(
        out.len() >= sp.out_len,
        "output buffer shorter than the plan's output"
    );
    if accum == Accum::Replace {
        for &bi in &sp.zero_blocks {
            fill_block(out, sp.out_layout(bi as usize), T::zero());
        }
    }
}

/// How a write into the output goes: overwrite (BLAS beta = 0) or add.
fn copy_mode<T: Scalar>(accum: Accum) -> CopyMode<T> {
    match accum {
        Accum::Replace => CopyMode::Set,
        Accum::Add => CopyMode::AddScaled(T::one()),
    }
}

/// Sets every element of one block.
fn fill_block<T: Scalar>(data: &mut [T], l: &Layout, v: T) {
    if l.is_empty() {
        return;
    }
    if l.is_row_major() {
        data[l.offset..l.offset + l.len()].fill(v);
        return;
    }
    let zero = [0isize; MAX_RANK];
    for_each_pair(
        &l.dims,
        &l.strides,
        &zero[..l.dims.len()],
        |o, _, n, st, _| {
            for i in 0..n as isize {
                data[(l.offset as isize + o + i * st) as usize] = v;
            }
        },
    );
}

struct Ctx<'a, T> {
    sp: &'a StepPlan,
    /// The operands, indexed by [`Side::index`] (never told apart by address: one tensor may
    /// be both).
    ops: [&'a DynTensor<T>; 2],
    alpha: T,
    /// `Replace`: each block's first writer overwrites it; `Add`: every write adds.
    accum: Accum,
    /// Threads inside one large GEMM.
    par: Par,
    /// Transposed copies of the operand blocks the plan caches, per side.
    cache: [Vec<T>; 2],
}

/// Transposes each cached block once, row-major `rows x cols`, at its slot, in a buffer from
/// the process's spares (no fresh, zeroed pages per call: a slot is read only after its block
/// is copied in; give it back with [`super::pool::give`]).
fn fill_cache<T: Scalar>(
    t: &DynTensor<T>,
    sp: &StepPlan,
    side: Side,
    read: Option<&[bool]>,
) -> Vec<T> {
    let op = sp.operand(side);
    // not cut to its length: the spare keeps the length it was filled to (see `step_buffer`)
    let mut v = super::pool::take::<T>(op.cache_len);
    if v.len() < op.cache_len {
        v.resize(op.cache_len, T::zero());
    }
    for (i, slot) in op.cache.iter().enumerate() {
        if read.is_some_and(|r| !r[i]) {
            continue;
        }
        if let Some(o) = slot {
            // SAFETY: the slot holds the whole block (sized by the plan); the block is in `t`;
            // a cached block is one that needs a transpose, so it has a copy.
            unsafe {
                sp.packs
                    .gather(op.block_pack[i], t.data().as_ptr(), v.as_mut_ptr().add(*o))
            };
        }
    }
    v
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

    /// One member's operand on `side` (a `rows x cols` matrix): its block in place, its
    /// cached transpose, or transposed into `buf`.
    ///
    /// # Safety
    /// `buf` holds the block's elements when it needs a transpose.
    unsafe fn member_operand(
        &self,
        side: Side,
        reach: Reach,
        buf: *mut T,
        (rows, cols): (usize, usize),
    ) -> RawMat<T> {
        let t = self.ops[side.index()];
        let conj = self.sp.geometry.conj_of(side);
        let (ptr, shape) = match reach {
            // SAFETY: the block's offset lies in the tensor's buffer.
            Reach::Direct { at, rs, cs } => (unsafe { t.data().as_ptr().add(at) }, {
                MatShape {
                    m: rows,
                    rs,
                    n: cols,
                    cs,
                }
            }),
            // SAFETY: the cache holds this block's transposed copy at `o`.
            Reach::Cached(o) => (
                unsafe { self.cache[side.index()].as_ptr().add(o) },
                MatShape::row_major(rows, cols),
            ),
            Reach::Packed(op) => {
                // SAFETY: `buf` holds at least rows * cols elements (scratch sized by the
                // group).
                unsafe { self.sp.packs.gather(op, t.data().as_ptr(), buf) };
                (buf as *const T, MatShape::row_major(rows, cols))
            }
            Reach::Split(i) => {
                // its first sub-matrix; [`Ctx::run_split`] steps to the others
                let s = &self.sp.splits[i as usize];
                // SAFETY: the block's offset lies in the tensor's buffer.
                (unsafe { t.data().as_ptr().add(s.at) }, s.split.mat)
            }
        };
        RawMat::new(ptr, shape).with_conj(conj)
    }

    /// How a write to an output block goes: overwrite when it is the block's first write and
    /// the step overwrites its output, else add.
    fn accum_of(&self, first: bool) -> Accum {
        if first && self.accum == Accum::Replace {
            Accum::Replace
        } else {
            Accum::Add
        }
    }

    /// One GEMM: on the tiny kernel when its views are thin ([`view_kernel`]), else on faer, on the
    /// step's threads when it is large enough to gain.
    ///
    /// # Safety
    /// As [`gemm`].
    unsafe fn gemm(&self, c: RawMatMut<T>, accum: Accum, a: RawMat<T>, b: RawMat<T>) {
        if view_kernel(&c, &a, &b) == Kernel::Tiny {
            // SAFETY: forwarded from the caller.
            return unsafe { tiny_gemm(c, accum, a, b, self.alpha) };
        }
        let (m, n, k) = (c.shape.m, c.shape.n, a.shape.n);
        let pool = match self.par {
            Par::Threads(t) if t > 1 && big_gemm(m, n, k) => pool(t).map(|p| (t, p)),
            _ => None,
        };
        let Some((threads, pool)) = pool else {
            // SAFETY: forwarded from the caller.
            return unsafe { gemm_par(c, accum, a, b, self.alpha, Par::Seq) };
        };
        // panels of the output along its longer side, each one sequential GEMM, shared by
        // this thread and the pool's ([`share_out`]: none waits for another to wake)
        let panels = panels(m.max(n), threads);
        let views = &Views(c, a, b);
        let work = |i: usize| {
            let Views(c, a, b) = *views;
            let (c, a, b) = if n >= m {
                let (j0, j1) = (panels[i], panels[i + 1]);
                (c.cols(j0, j1), a, b.cols(j0, j1))
            } else {
                let (i0, i1) = (panels[i], panels[i + 1]);
                (c.rows(i0, i1), a.rows(i0, i1), b)
            };
            // SAFETY: forwarded from the caller; the panels are disjoint parts of `c`.
            unsafe { gemm_par(c, accum, a, b, self.alpha, Par::Seq) }
        };
        share_out(&pool, threads - 1, panels.len() - 1, &work);
    }

    /// Single, batched and grouped groups: one GEMM (or tiny kernel) per member.
    unsafe fn run_members(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        let sp = self.sp;
        let (m, n, k) = (gr.m, gr.n, gr.k);
        let [sa, sb, sc] = scratch_parts(gr, scratch);
        let tiny = member_kernel(gr.kind, m, n, k) == Kernel::Tiny;
        let members = &sp.members[gr.members as usize..][..gr.pairs.len()];
        for (mb, &pi) in members.iter().zip(&gr.pairs) {
            // each member's own shape: the group's for single and batched members (one shape),
            // the pair's for grouped ones (they differ; the scratch fits the largest)
            let (m, n, k) = if gr.kind == GroupKind::Grouped {
                let pr = &sp.pairs[pi as usize];
                (pr.m, pr.n, pr.k)
            } else {
                (m, n, k)
            };
            // SAFETY: block offsets and views come from the operands' own layouts; the
            // scratch regions fit the largest member.
            unsafe {
                let am = self.member_operand(Side::A, mb.a, sa.as_mut_ptr(), (m, k));
                let bm = self.member_operand(Side::B, mb.b, sb.as_mut_ptr(), (k, n));
                let (cm, accum) = match mb.c {
                    Reach::Direct { at, rs, cs } => {
                        let s = MatShape { m, rs, n, cs };
                        (RawMatMut::new(out.add(at), s), self.accum_of(mb.first))
                    }
                    _ => {
                        let s = MatShape::row_major(m, n);
                        (RawMatMut::new(sc.as_mut_ptr(), s), Accum::Replace)
                    }
                };
                match (mb.a, mb.b) {
                    (Reach::Split(i), _) => self.run_split(cm, accum, am, bm, Side::A, i),
                    (_, Reach::Split(i)) => self.run_split(cm, accum, am, bm, Side::B, i),
                    _ if tiny => tiny_gemm(cm, accum, am, bm, self.alpha),
                    _ => self.gemm(cm, accum, am, bm),
                }
                if let Reach::Packed(op) = mb.c {
                    let mode = copy_mode(self.accum_of(mb.first));
                    sp.packs.scatter(op, sc.as_ptr(), out, mode);
                }
            }
        }
    }

    /// A concatenating group's operand on `side`: in place, or its blocks gathered into `buf`
    /// as one contiguous `r x c` matrix (row-major, or column-major where the plan says so).
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
                let first = gr.packs[side.index()];
                for i in 0..gr.places(side).len() as u32 {
                    // SAFETY: forwarded from the caller: the copies address the places.
                    unsafe {
                        self.sp
                            .packs
                            .gather(first + i, t.data().as_ptr(), buf.as_mut_ptr())
                    };
                }
                let col_major = gr.packed_col_major[side.index()];
                RawMat::new(buf.as_ptr(), MatShape::contiguous(r, c, col_major))
            }
        }
        .with_conj(conj)
    }

    /// Free-axis, contraction-axis and rectangle groups: one GEMM over the whole group.
    unsafe fn run_concat(&self, gr: &Group, out: *mut T, scratch: &mut Vec<T>) {
        if let (Some((side, start)), Access::Direct(c, base)) = (gr.thin, gr.c_access) {
            // SAFETY: forwarded from the caller; the plan's views lie in the operand's blocks.
            return unsafe { self.run_thin(gr, side, start as usize, out.add(base), c, scratch) };
        }
        let (m, n, k) = (gr.m, gr.n, gr.k);
        let [sa, sb, sc] = scratch_parts(gr, scratch);
        // SAFETY: places lie inside the group's matrices; blocks inside their buffers.
        unsafe {
            let am = self.concat_operand(gr, Side::A, (m, k), sa);
            let bm = self.concat_operand(gr, Side::B, (k, n), sb);
            match gr.c_access {
                Access::Direct(s, base) => {
                    // a direct group's first writes are all of its blocks or none (planned so)
                    let first = gr.c().iter().all(|p| p.first);
                    let cm = RawMatMut::new(out.add(base), s);
                    self.gemm(cm, self.accum_of(first), am, bm)
                }
                Access::Packed => {
                    let shape = MatShape::contiguous(m, n, gr.packed_col_major[2]);
                    let cm = RawMatMut::new(sc.as_mut_ptr(), shape);
                    self.gemm(cm, Accum::Replace, am, bm);
                    for (i, p) in gr.c().iter().enumerate() {
                        let mode = copy_mode(self.accum_of(p.first));
                        let op = gr.packs[2] + i as u32;
                        self.sp.packs.scatter(op, sc.as_ptr(), out, mode);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::execute;
    use crate::plan::{build_plan, CostModel, Plan, PlanOptions};
    use crate::workload::Workload;

    /// A shipped workload (`name` under `workloads/`, without `.json`): its operands and its
    /// plan, made with the fixed default constants (the same plan on every machine). Shared
    /// with `split`'s tests.
    pub(super) fn shipped(name: &str) -> (Vec<DynTensor<f64>>, Plan) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../workloads/");
        let opts = PlanOptions {
            model: CostModel::default(),
            ..PlanOptions::default()
        };
        let w = Workload::load(format!("{dir}{name}.json")).unwrap();
        let ops = w.build_operands::<f64>().unwrap();
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        let plan = build_plan(&w.contraction, &refs, &opts).unwrap();
        (ops, plan)
    }

    /// Shipped m = 512 workloads, planned with the fixed default constants: some step spreads
    /// its components over 2 threads, and the result is the 1-thread result bit for bit (each
    /// output block is written by one component, in plan order).
    #[test]
    fn components_on_two_threads_give_the_one_thread_result() {
        let mut parallel_steps = 0;
        for name in ["heisenberg_u1_m512_heff1", "hubbard_u1u1_m512_heff2"] {
            let (ops, plan) = shipped(name);
            let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
            parallel_steps += plan
                .steps
                .iter()
                .filter(|st| split(&st.plan, 2) == Split::Components)
                .count();
            let (one, _, _) = execute(&plan, &refs, 1.0, 1, None).unwrap();
            let (two, _, _) = execute(&plan, &refs, 1.0, 2, None).unwrap();
            assert!(one.data() == two.data(), "{name}: 2 threads differ from 1");
        }
        assert!(parallel_steps > 0, "no step ran its components in parallel");
    }

    /// A step whose one group holds large GEMMs (the transverse-field Ising m = 380 `gemm`:
    /// two 361 x 364 x 180 blocks) splits each into output panels over 2 threads; the result
    /// is the 1-thread result (each element is one panel's, summed over the same k in the
    /// same order).
    #[test]
    fn large_gemms_split_into_panels_give_the_one_thread_result() {
        let (ops, plan) = shipped("other/tfi_m380_gemm");
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        assert_eq!(split(&plan.steps[0].plan, 2), Split::Gemms(2));
        let (one, _, _) = execute(&plan, &refs, 1.0, 1, None).unwrap();
        let (two, _, _) = execute(&plan, &refs, 1.0, 2, None).unwrap();
        let scale = one.data().iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let worst = one
            .data()
            .iter()
            .zip(two.data())
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(worst <= 1e-13 * scale, "2 threads differ from 1 by {worst}");
    }
}
