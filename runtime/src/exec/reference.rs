//! The reference executor: one faer GEMM per block pair, transposing only where a
//! GEMM cannot take a block's strides directly. The correctness oracle and the
//! baseline the planner must beat.

use super::{RunStats, StepStats};
use crate::block::DynTensor;
use crate::error::Result;
use crate::kernel::{gemm, Accum, RawMat, RawMatMut};
use crate::scalar::{Conj, Scalar};
use crate::spec::{permutation, ContractionSpec};
use crate::step::{enumerate, geometry, step_desc, Geometry, PairList, Side};
use crate::view::{mat_shape, row_major_strides, strided_copy, CopyMode, Layout, MatShape};
use std::borrow::Cow;

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
    MatShape::row_major(m, n)
}

/// One operand block as a GEMM operand: in place when its strides fuse, else packed into `buf`.
fn operand<T: Scalar>(
    t: &DynTensor<T>,
    block: u32,
    g: &Geometry,
    side: Side,
    buf: &mut Vec<T>,
    stats: &mut StepStats,
) -> RawMat<T> {
    let l = &t.blocks()[block as usize].layout;
    let (rows, cols) = g.mat_axes(side);
    let m = match mat_shape(l, rows, cols) {
        // SAFETY: offset of a stored block is inside the tensor's buffer.
        Some(s) => RawMat::new(unsafe { t.data().as_ptr().add(l.offset) }, s),
        None => {
            stats.transposes += 1;
            let s = pack_block(t.data(), l, rows, cols, buf);
            RawMat::new(buf.as_ptr(), s)
        }
    };
    m.with_conj(g.conj_of(side))
}

/// Runs every pair of `list` as its own GEMM; the output's blocks are `list.out_keys`, row-major.
pub fn run_pairwise<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    g: &Geometry,
    list: &PairList,
    alpha: T,
) -> Result<(DynTensor<T>, StepStats)> {
    let mut c = DynTensor::<T>::from_valid_keys(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        list.out_keys.clone(),
    )?;
    let mut stats = StepStats {
        pair_gemms: list.pairs.len(),
        ..Default::default()
    };
    let (mut abuf, mut bbuf, mut cbuf) = (Vec::new(), Vec::new(), Vec::new());
    let c_layouts: Vec<Layout> = c.blocks().iter().map(|b| b.layout.clone()).collect();
    let cdata = c.data_mut();
    for p in &list.pairs {
        if p.m == 0 || p.n == 0 || p.k == 0 {
            continue;
        }
        let am = operand(a, p.a, g, Side::A, &mut abuf, &mut stats);
        let bm = operand(b, p.b, g, Side::B, &mut bbuf, &mut stats);
        let cb = &c_layouts[p.c as usize];
        stats.kernel_calls += 1;
        match mat_shape(cb, &g.c_rows, &g.c_cols) {
            // SAFETY: the output block lies in `cdata`, which aliases neither input.
            Some(csh) => unsafe {
                let cm = RawMatMut::new(cdata.as_mut_ptr().add(cb.offset), csh);
                gemm(cm, Accum::Add, am, bm, alpha);
            },
            None => {
                // compute into a row-major temporary, then add it into the block's permuted view
                stats.transposes += 1;
                cbuf.clear();
                cbuf.resize(p.m * p.n, T::zero());
                let axes: Vec<usize> = g.c_rows.iter().chain(&g.c_cols).copied().collect();
                let cv = cb.permuted(&axes);
                // SAFETY: `cbuf` holds m*n elements; the block's view lies in `cdata`.
                unsafe {
                    let tm = RawMatMut::new(cbuf.as_mut_ptr(), MatShape::row_major(p.m, p.n));
                    gemm(tm, Accum::Replace, am, bm, alpha);
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
    Ok((c, stats))
}

/// Contracts a validated spec (operands checked) as one GEMM per block pair, step by step.
pub(crate) fn contract_pairwise<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
) -> Result<(DynTensor<T>, RunStats)> {
    let mut stats = RunStats::default();
    let out_labels = spec.output_labels();
    let p = spec.tree_or_default()?.fold(
        &mut |i| {
            Ok(Partial {
                t: Cow::Borrowed(ops[i]),
                labels: spec.operand_labels(i),
                conj: spec.operands[i].conj,
            })
        },
        &mut |pl, pr, root| {
            let root_out = root.then_some(out_labels.as_slice());
            let (desc, labels) = step_desc(
                &pl.labels,
                pl.conj,
                &pr.labels,
                pr.conj,
                root_out,
                &spec.labels,
            );
            let step_alpha = if root { alpha } else { T::one() };
            let g = geometry(&pl.t, &pr.t, &desc)?;
            let list = enumerate(&pl.t, &pr.t, &g);
            stats.flops += list.pairs.iter().map(|p| p.flops()).sum::<f64>();
            let (t, s) = run_pairwise(&pl.t, &pr.t, &g, &list, step_alpha)?;
            stats.steps.push(s);
            Ok(Partial {
                t: Cow::Owned(t),
                labels,
                conj: Conj::No,
            })
        },
    )?;
    // a step's result already carries alpha and the output order
    if p.labels == out_labels && p.conj == Conj::No && matches!(p.t, Cow::Owned(_)) {
        return Ok((p.t.into_owned(), stats));
    }
    // single operand: a permutation (and conjugation, scaling)
    let perm = permutation(&p.labels, &out_labels)?;
    Ok((p.t.permuted(&perm, p.conj, alpha)?, stats))
}

struct Partial<'a, T: Clone> {
    t: Cow<'a, DynTensor<T>>,
    labels: Vec<usize>,
    conj: Conj,
}
