//! The reference executor: one faer GEMM per block pair, transposing only where a
//! GEMM cannot take a block's strides directly. The correctness oracle and the
//! baseline the planner must beat.

use super::pairs::{Conj, Geometry, PairList};
use crate::block::{Block, DynTensor};
use crate::scalar::Scalar;
use crate::view::{fuse, row_major_strides, strided_copy, CopyMode, Layout};
use faer::linalg::matmul::matmul_with_conj;
use faer::{Accum, MatMut, MatRef, Par};

/// Counters of one step's execution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepStats {
    /// Block-pair GEMMs the step comprises.
    pub pair_gemms: usize,
    /// GEMM kernel calls actually issued.
    pub kernel_calls: usize,
    /// Operand blocks copied because their strides did not fit a GEMM.
    pub transposes: usize,
}

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

/// Copies the block's `rows ++ cols` axes into `buf` row-major; returns its matrix shape there.
pub(crate) fn pack_block<T: Scalar>(
    data: &[T],
    layout: &Layout,
    rows: &[usize],
    cols: &[usize],
    buf: &mut Vec<T>,
) -> MatShape {
    let perm: Vec<usize> = rows.iter().chain(cols).copied().collect();
    let p = layout.permuted(&perm);
    buf.clear();
    buf.resize(p.len(), T::zero());
    let dst = row_major_strides(&p.dims);
    // SAFETY: the block lies in `data`; `buf` holds exactly `p.len()` elements, row-major.
    unsafe {
        strided_copy(
            &p.dims,
            data.as_ptr().add(p.offset),
            &p.strides,
            buf.as_mut_ptr(),
            &dst,
            CopyMode::Set,
        );
    }
    let m: usize = rows.iter().map(|&r| layout.dims[r]).product();
    let n: usize = cols.iter().map(|&c| layout.dims[c]).product();
    MatShape {
        m,
        rs: n as isize,
        n,
        cs: 1,
    }
}

/// `C = alpha * op(A) * op(B)` with raw pointers: one faer call, sequential.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm<T: Scalar>(
    c: *mut T,
    cs: MatShape,
    accum: Accum,
    a: *const T,
    ash: MatShape,
    conj_a: Conj,
    b: *const T,
    bsh: MatShape,
    conj_b: Conj,
    alpha: T,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let am = MatRef::<T>::from_raw_parts(a, ash.m, ash.n, ash.rs, ash.cs);
        let bm = MatRef::<T>::from_raw_parts(b, bsh.m, bsh.n, bsh.rs, bsh.cs);
        let cm = MatMut::<T>::from_raw_parts_mut(c, cs.m, cs.n, cs.rs, cs.cs);
        matmul_with_conj(
            cm,
            accum,
            am,
            conj_a.faer(),
            bm,
            conj_b.faer(),
            alpha,
            Par::Seq,
        );
    }
}

/// Runs every pair of `list` as its own GEMM; the output's blocks are `list.out_keys`, row-major.
pub fn run_pairwise<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    g: &Geometry,
    list: &PairList,
    alpha: T,
) -> (DynTensor<T>, StepStats) {
    let mut c = DynTensor::<T>::from_valid_keys(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        list.out_keys.clone(),
    );
    let mut stats = StepStats {
        pair_gemms: list.pairs.len(),
        ..Default::default()
    };
    let (mut abuf, mut bbuf, mut cbuf) = (Vec::new(), Vec::new(), Vec::new());
    let c_blocks: Vec<Block> = c.blocks().to_vec();
    let cdata = c.data_mut();
    for p in &list.pairs {
        if p.m == 0 || p.n == 0 || p.k == 0 {
            continue;
        }
        let ab = &a.blocks()[p.a as usize].layout;
        let bb = &b.blocks()[p.b as usize].layout;
        let cb = &c_blocks[p.c as usize].layout;
        let (aptr, ash) = match mat_shape(ab, &g.a_free, &g.a_contr) {
            // SAFETY: offset of a stored block is inside `a`'s buffer.
            Some(s) => (unsafe { a.data().as_ptr().add(ab.offset) }, s),
            None => {
                stats.transposes += 1;
                let s = pack_block(a.data(), ab, &g.a_free, &g.a_contr, &mut abuf);
                (abuf.as_ptr(), s)
            }
        };
        let (bptr, bsh) = match mat_shape(bb, &g.b_contr, &g.b_free) {
            // SAFETY: as above, for `b`.
            Some(s) => (unsafe { b.data().as_ptr().add(bb.offset) }, s),
            None => {
                stats.transposes += 1;
                let s = pack_block(b.data(), bb, &g.b_contr, &g.b_free, &mut bbuf);
                (bbuf.as_ptr(), s)
            }
        };
        stats.kernel_calls += 1;
        match mat_shape(cb, &g.c_rows, &g.c_cols) {
            // SAFETY: the output block lies in `cdata`, which aliases neither input.
            Some(csh) => unsafe {
                gemm(
                    cdata.as_mut_ptr().add(cb.offset),
                    csh,
                    Accum::Add,
                    aptr,
                    ash,
                    g.conj.0,
                    bptr,
                    bsh,
                    g.conj.1,
                    alpha,
                );
            },
            None => {
                // compute into a row-major temporary, then add it into the block's permuted view
                stats.transposes += 1;
                cbuf.clear();
                cbuf.resize(p.m * p.n, T::zero());
                let tsh = MatShape {
                    m: p.m,
                    rs: p.n as isize,
                    n: p.n,
                    cs: 1,
                };
                let axes: Vec<usize> = g.c_rows.iter().chain(&g.c_cols).copied().collect();
                let cv = cb.permuted(&axes);
                // SAFETY: `cbuf` holds m*n elements; the block's view lies in `cdata`.
                unsafe {
                    gemm(
                        cbuf.as_mut_ptr(),
                        tsh,
                        Accum::Replace,
                        aptr,
                        ash,
                        g.conj.0,
                        bptr,
                        bsh,
                        g.conj.1,
                        alpha,
                    );
                    strided_copy(
                        &cv.dims,
                        cbuf.as_ptr(),
                        &row_major_strides(&cv.dims),
                        cdata.as_mut_ptr().add(cv.offset),
                        &cv.strides,
                        CopyMode::AddScaled(T::one()),
                    );
                }
            }
        }
    }
    (c, stats)
}

/// `alpha * op(t)` with legs permuted: output leg `k` is leg `perm[k]` of `t`.
pub fn permute<T: Scalar>(t: &DynTensor<T>, perm: &[usize], conj: Conj, alpha: T) -> DynTensor<T> {
    let (legs, sym, charge, blocks, data) = t.parts();
    let (legs, charge): (Vec<_>, _) = match conj {
        Conj::No => (
            perm.iter().map(|&p| legs[p].clone()).collect(),
            charge.clone(),
        ),
        Conj::Yes => (
            perm.iter().map(|&p| legs[p].dual()).collect(),
            sym.neg(charge),
        ),
    };
    let keys = {
        let mut k: Vec<_> = blocks
            .iter()
            .map(|b| perm.iter().map(|&p| b.key[p]).collect::<Box<[u32]>>())
            .collect();
        k.sort();
        k
    };
    let mut out = DynTensor::<T>::from_valid_keys(legs, sym.clone(), charge, keys);
    for b in blocks {
        let key: Vec<u32> = perm.iter().map(|&p| b.key[p]).collect();
        let dst = out.blocks()[out.find_block(&key).expect("permuted key present")]
            .layout
            .clone();
        let src = b.layout.permuted(perm);
        let odata = out.data_mut();
        for_each_scaled(data, &src, odata, &dst, conj, alpha);
    }
    out
}

fn for_each_scaled<T: Scalar>(
    src: &[T],
    sl: &Layout,
    dst: &mut [T],
    dl: &Layout,
    conj: Conj,
    alpha: T,
) {
    if sl.is_empty() {
        return;
    }
    // SAFETY: both layouts lie inside their buffers and have the same dims.
    unsafe {
        let s = src.as_ptr().add(sl.offset);
        let d = dst.as_mut_ptr().add(dl.offset);
        let mode = if conj == Conj::Yes && T::IS_COMPLEX {
            CopyMode::Conj
        } else {
            CopyMode::Set
        };
        strided_copy(&sl.dims, s, &sl.strides, d, &dl.strides, mode);
    }
    if alpha != T::one() {
        let zero = vec![0isize; dl.dims.len()];
        crate::view::for_each_pair(&dl.dims, &dl.strides, &zero, |o, _, n, st, _| {
            for i in 0..n as isize {
                let x = &mut dst[(dl.offset as isize + o + i * st) as usize];
                *x = alpha * *x;
            }
        });
    }
}
