//! The reference executor: one faer GEMM per block pair, transposing only where a
//! GEMM cannot take a block's strides directly. The correctness oracle and the
//! baseline the planner must beat.

use super::{RunStats, StepStats};
use crate::block::{permute, Block, DynTensor};
use crate::error::Result;
use crate::kernel::gemm;
use crate::scalar::{Conj, Scalar};
use crate::spec::ContractionSpec;
use crate::spec::Tree;
use crate::step::{enumerate, geometry, step_desc, Geometry, PairList};
use crate::view::{mat_shape, row_major_strides, strided_copy, CopyMode, Layout, MatShape};
use faer::Accum;
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
    MatShape {
        m,
        rs: n as isize,
        n,
        cs: 1,
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

/// Contracts a validated spec (operands checked) as one GEMM per block pair, step by step.
pub(crate) fn contract_pairwise<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
) -> Result<(DynTensor<T>, RunStats)> {
    let tree = match &spec.tree {
        Some(t) => t.clone(),
        None => Tree::left_to_right(ops.len()).expect("validated: at least one operand"),
    };
    let mut stats = RunStats::default();
    let out_labels: Vec<usize> = spec.output.iter().map(|i| i.label).collect();
    let p = eval(&tree, spec, ops, Some(&out_labels), alpha, &mut stats)?;
    if p.labels == out_labels && p.conj == Conj::No {
        return Ok((p.t.into_owned(), stats));
    }
    // single operand: a permutation (and conjugation, scaling)
    let perm: Vec<usize> = out_labels
        .iter()
        .map(|l| {
            p.labels
                .iter()
                .position(|x| x == l)
                .expect("validated labels")
        })
        .collect();
    Ok((permute(&p.t, &perm, p.conj, alpha), stats))
}

struct Partial<'a, T: Clone> {
    t: Cow<'a, DynTensor<T>>,
    labels: Vec<usize>,
    conj: Conj,
}

fn eval<'a, T: Scalar>(
    tree: &Tree,
    spec: &ContractionSpec,
    ops: &[&'a DynTensor<T>],
    root_out: Option<&[usize]>,
    alpha: T,
    stats: &mut RunStats,
) -> Result<Partial<'a, T>> {
    let (l, r) = match tree {
        Tree::Leaf(i) => {
            return Ok(Partial {
                t: Cow::Borrowed(ops[*i]),
                labels: spec.operands[*i].indices.iter().map(|x| x.label).collect(),
                conj: Conj::from_bool(spec.operands[*i].conj),
            })
        }
        Tree::Node(l, r) => (l, r),
    };
    let pl = eval(l, spec, ops, None, alpha, stats)?;
    let pr = eval(r, spec, ops, None, alpha, stats)?;
    let (desc, out_labels) = step_desc(
        &pl.labels,
        pl.conj,
        &pr.labels,
        pr.conj,
        root_out,
        &spec.labels,
    );
    let step_alpha = if root_out.is_some() { alpha } else { T::one() };
    let g = geometry(&pl.t, &pr.t, &desc)?;
    let list = enumerate(&pl.t, &pr.t, &g);
    stats.flops += list.pairs.iter().map(|p| p.flops()).sum::<f64>();
    let (t, s) = run_pairwise(&pl.t, &pr.t, &g, &list, step_alpha);
    stats.steps.push(s);
    Ok(Partial {
        t: Cow::Owned(t),
        labels: out_labels,
        conj: Conj::No,
    })
}
