//! Builds the coefficient form of a chain: one term per coefficient element and chain of
//! blocks, each registering its first-stage GEMM (shared by every term that reads the same
//! pair of slices), its axpy and its last-stage GEMM; then the last stage ordered by output
//! block and the form priced.

use super::coefficient_chain::{by_fixed, legs_of, out_key_index, Chain, Legs, Output};
use super::coefficient_plan::{Axpy, CoefficientPlan, FirstGemm, OutputWork, SecondGemm, Source};
use super::cost::CostModel;
use crate::block::DynTensor;
use crate::hash::FxMap;
use crate::scalar::Scalar;
use crate::spec::ContractionSpec;
use crate::view::{fuse, Layout, MatShape};

/// The form for one direction of the chain; None when a term's output block is not among
/// `out`'s (the pairwise plan writes into a target without it).
pub(super) fn build<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    c: &Chain,
    out: &Output<'_>,
    model: &CostModel,
) -> Option<CoefficientPlan> {
    let fl = spec.operand_labels(c.coef);
    let ctx = Ctx::new(spec, ops, c, out)?;
    let mut plan = empty_plan(spec, c, &fl)?;
    let mut ix = Index::default();
    let f = ops[c.coef];
    for fb in f.blocks() {
        // the chains of blocks depend on the block's sectors only: found once per block
        let chains = ctx.chains(&fb.key)?;
        if chains.is_empty() {
            continue;
        }
        for_each_offset(&fb.layout, |idx, at| {
            let term = Term {
                key: &fb.key,
                idx,
                at,
            };
            for &(blocks, ob) in &chains {
                ctx.add(&term, blocks, ob, &mut plan, &mut ix);
            }
        });
    }
    finish(&mut plan, ix, model);
    Some(plan)
}

/// Where one slice of a block (its fixed legs at given offsets) sits in the matrix a GEMM
/// reads: the matrix (the block's `side` leg fused with its fixed legs where their strides
/// nest, else the slice alone), the slice's first index along the fused side and its step.
#[derive(Debug, Clone, Copy)]
struct SliceAt {
    /// The matrix: its origin's offset and its shape.
    offset: usize,
    shape: MatShape,
    /// Whether the matrix is the slice alone (then `base` names it).
    alone: bool,
    base: usize,
    pos: usize,
    step: isize,
    /// The slice's extent along the fused side (the side leg's dimension).
    side_dim: usize,
}

/// `side_rows`: the fused side is the rows (else the columns).
/// `alone`: the slice stands alone even where it could fuse (its block holds an identity).
fn slice_at(
    l: &Layout,
    side: usize,
    other: usize,
    fixed: &[usize],
    offs: &[usize],
    side_rows: bool,
    alone: bool,
) -> SliceAt {
    let base: isize = fixed
        .iter()
        .zip(offs)
        .map(|(&a, &o)| o as isize * l.strides[a])
        .sum();
    let (ext, inner, pos, step, alone, offset) = fused_side(l, side, fixed, base, alone);
    let (od, os) = (l.dims[other], l.strides[other]);
    let shape = match side_rows {
        true => MatShape {
            m: ext,
            rs: inner,
            n: od,
            cs: os,
        },
        false => MatShape {
            m: od,
            rs: os,
            n: ext,
            cs: inner,
        },
    };
    SliceAt {
        offset,
        shape,
        alone,
        base: base as usize,
        pos,
        step,
        side_dim: l.dims[side],
    }
}

/// The matrix side a slice is read along: the side leg fused with the fixed legs where
/// their strides nest (unless `alone`), else the slice's own side leg; its extent, its
/// stride, the slice's position and step along it, whether it stands alone, and the
/// matrix's origin.
fn fused_side(
    l: &Layout,
    side: usize,
    fixed: &[usize],
    base: isize,
    alone: bool,
) -> (usize, isize, usize, isize, bool, usize) {
    let mut axes: Vec<usize> = std::iter::once(side)
        .chain(fixed.iter().copied())
        .filter(|&a| l.dims[a] > 1)
        .collect();
    axes.sort_by_key(|&a| std::cmp::Reverse(l.strides[a]));
    let fused = fuse(&l.dims, &l.strides, &axes)
        .filter(|&(_, inner)| inner > 0 && base % inner == 0 && l.strides[side] % inner == 0);
    match fused {
        Some((ext, inner)) if axes.len() > 1 && !alone => (
            ext,
            inner,
            (base / inner) as usize,
            l.strides[side] / inner,
            false,
            l.offset,
        ),
        _ => (
            l.dims[side],
            l.strides[side],
            0,
            1,
            true,
            (l.offset as isize + base) as usize,
        ),
    }
}

/// The builder's indices: first-stage GEMMs by their two matrices, last-stage GEMMs by
/// output view and `M1` matrix.
#[derive(Default)]
struct Index {
    firsts: FxMap<(usize, usize, usize, usize), usize>,
    seconds: FxMap<(usize, usize, usize, usize), usize>,
    axpys: Vec<Vec<Axpy>>,
    q_len: Vec<usize>,
    out_block: Vec<usize>,
    direct: FxMap<usize, Vec<Axpy>>,
    /// Each chain operand's slices met so far, by (operand, block, offset of the slice).
    slices: FxMap<(usize, usize, isize), SliceOf>,
}

/// The form of chain `c` before its terms: which operands, conjugated how, in which
/// direction (`fl` the coefficient operand's labels).
fn empty_plan(spec: &ContractionSpec, c: &Chain, fl: &[usize]) -> Option<CoefficientPlan> {
    Some(CoefficientPlan {
        coef: c.coef,
        coef_conj: spec.operands[c.coef].conj,
        chain: c.ops,
        conj: c.ops.map(|o| spec.operands[o].conj),
        left_first: c.out_row
            != spec
                .output_labels()
                .iter()
                .copied()
                .find(|l| !fl.contains(l))?,
        firsts: Vec::new(),
        t_len: 0,
        outputs: Vec::new(),
        seconds: Vec::new(),
        axpys: Vec::new(),
        direct: Vec::new(),
        identity_terms: 0,
        q_len: 0,
        flops: 0.0,
        axpy_elems: 0,
        predicted_s: 0.0,
        other_direction_s: 0.0,
        pairwise_s: 0.0,
    })
}

/// One element of the coefficient operand: its block key, its offsets in the block, its
/// element offset in the buffer.
struct Term<'a> {
    #[allow(dead_code)]
    key: &'a [u32],
    idx: &'a [usize],
    at: usize,
}

/// Calls `f(offsets, element offset)` for every element of a block.
fn for_each_offset(l: &Layout, mut f: impl FnMut(&[usize], usize)) {
    let n: usize = l.dims.iter().product();
    let mut idx = vec![0usize; l.dims.len()];
    for _ in 0..n {
        let at = l.offset as isize
            + idx
                .iter()
                .zip(&l.strides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>();
        f(&idx, at as usize);
        for a in (0..idx.len()).rev() {
            idx[a] += 1;
            if idx[a] < l.dims[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// What the term builder reads: the operands, the chain, where their legs sit, the blocks
/// by their fixed sectors, and the output's blocks.
pub(super) struct Ctx<'a, T: Scalar> {
    pub(super) ops: &'a [&'a DynTensor<T>],
    pub(super) c: &'a Chain,
    pub(super) legs: Vec<Legs>,
    pub(super) out_legs: Legs,
    pub(super) maps: Vec<FxMap<Vec<u32>, Vec<usize>>>,
    pub(super) out: &'a Output<'a>,
    pub(super) out_keys: FxMap<&'a [u32], usize>,
}

impl<'a, T: Scalar> Ctx<'a, T> {
    /// Where the chain's legs sit, its operands' blocks by their fixed sectors and the
    /// output's blocks by key; None when a leg is not where the chain has it.
    pub(super) fn new(
        spec: &ContractionSpec,
        ops: &'a [&'a DynTensor<T>],
        c: &'a Chain,
        out: &'a Output<'a>,
    ) -> Option<Self> {
        let fl = spec.operand_labels(c.coef);
        let legs: Vec<Legs> = (0..3)
            .map(|k| legs_of(&spec.operand_labels(c.ops[k]), c.rows[k], c.cols[k], &fl))
            .collect::<Option<_>>()?;
        let out_legs = legs_of(&out.labels, c.out_row, c.out_col, &fl)?;
        let maps = (0..3)
            .map(|k| by_fixed(ops[c.ops[k]], &legs[k], k > 0))
            .collect();
        Some(Ctx {
            ops,
            c,
            legs,
            out_legs,
            maps,
            out,
            out_keys: out_key_index(out),
        })
    }

    /// Every chain of blocks `(M1, M2, M3)` and its output block that a coefficient block of
    /// `key` selects; None when an output block is missing.
    #[allow(clippy::type_complexity)]
    pub(super) fn chains(&self, key: &[u32]) -> Option<Vec<([usize; 3], usize)>> {
        let (legs, ts) = (&self.legs, [0, 1, 2].map(|k| self.ops[self.c.ops[k]]));
        let mut buf: Vec<u32> = Vec::new();
        // the blocks of chain operand `k` at the coefficient block's fixed sectors (and `row`)
        let mut find = |k: usize, row: Option<u32>| -> Option<&Vec<usize>> {
            buf.clear();
            buf.extend(legs[k].fixed.iter().map(|&(_, fa)| key[fa]));
            buf.extend(row);
            self.maps[k].get(&buf[..])
        };
        let mut out = Vec::new();
        let Some(m1_blocks) = find(0, None) else {
            return Some(out);
        };
        let mut okey = vec![0u32; self.out.labels.len()];
        for &(a, fa) in &self.out_legs.fixed {
            okey[a] = key[fa];
        }
        for &b1 in m1_blocks {
            let k1 = &ts[0].blocks()[b1].key;
            let Some(b2s) = find(1, Some(k1[legs[0].col])) else {
                continue;
            };
            for &b2 in b2s {
                let k2 = &ts[1].blocks()[b2].key;
                let Some(b3s) = find(2, Some(k2[legs[1].col])) else {
                    continue;
                };
                for &b3 in b3s {
                    okey[self.out_legs.row] = k1[legs[0].row];
                    okey[self.out_legs.col] = ts[2].blocks()[b3].key[legs[2].col];
                    let &ob = self.out_keys.get(&okey[..])?;
                    out.push(([b1, b2, b3], ob));
                }
            }
        }
        Some(out)
    }

    /// Adds the term of one coefficient element on one chain of blocks.
    fn add(
        &self,
        term: &Term<'_>,
        blocks: [usize; 3],
        ob: usize,
        plan: &mut CoefficientPlan,
        ix: &mut Index,
    ) {
        let mut at = |k: usize| {
            let t = self.ops[self.c.ops[k]];
            let l = &t.blocks()[blocks[k]].layout;
            let base: isize = self.legs[k]
                .fixed
                .iter()
                .map(|&(a, fa)| term.idx[fa] as isize * l.strides[a])
                .sum();
            *ix.slices
                .entry((k, blocks[k], base))
                .or_insert_with(|| SliceOf::new(t, &self.legs[k], blocks[k], term))
        };
        let slices = [at(0), at(1), at(2)];
        if slices.iter().any(|x| x.identity && !x.diagonal) {
            return; // a zero block of an identity slice
        }
        let view = out_view(&self.out.blocks[ob].layout, &self.out_legs, term, ob);
        add_term(term.at, blocks, &slices, &view, plan, ix);
    }
}

/// One chain operand's slice in a term: where it sits in the matrix a GEMM reads (fused
/// along its rows, as the middle operand is read, or its columns, as the first and last
/// are), the slice alone, and whether it is a marked identity.
#[derive(Clone, Copy)]
struct SliceOf {
    rows: SliceAt,
    cols: SliceAt,
    /// The slice alone: its origin's offset and its shape (row leg by column leg).
    own: (usize, MatShape),
    identity: bool,
    /// Whether its row and column sectors are equal.
    diagonal: bool,
}

impl SliceOf {
    fn new<T: Scalar>(t: &DynTensor<T>, legs: &Legs, block: usize, term: &Term<'_>) -> SliceOf {
        let b = &t.blocks()[block];
        let l = &b.layout;
        let fixed: Vec<usize> = legs.fixed.iter().map(|&(a, _)| a).collect();
        let offs: Vec<usize> = legs.fixed.iter().map(|&(_, fa)| term.idx[fa]).collect();
        // a rank-3 operand with one fixed leg may have identity slices on it; a block that
        // holds one keeps its slices apart, so that no GEMM runs over the identity
        let (identity, holds) = match (t.rank(), fixed.len()) {
            (3, 1) => {
                let marked = |i: usize| t.is_identity_slice(fixed[0], i);
                let first = t.legs()[fixed[0]].space.offset_of(b.key[fixed[0]] as usize);
                let holds = (first..first + l.dims[fixed[0]]).any(marked);
                (marked(first + offs[0]), holds)
            }
            _ => (false, false),
        };
        let base: isize = fixed
            .iter()
            .zip(&offs)
            .map(|(&a, &o)| o as isize * l.strides[a])
            .sum();
        SliceOf {
            rows: slice_at(l, legs.row, legs.col, &fixed, &offs, true, holds),
            cols: slice_at(l, legs.col, legs.row, &fixed, &offs, false, holds),
            own: (
                (l.offset as isize + base) as usize,
                MatShape {
                    m: l.dims[legs.row],
                    rs: l.strides[legs.row],
                    n: l.dims[legs.col],
                    cs: l.strides[legs.col],
                },
            ),
            identity,
            diagonal: b.key[legs.row] == b.key[legs.col],
        }
    }
}

/// An output block's view at one value of its fixed legs.
struct OutView {
    block: usize,
    offset: usize,
    shape: MatShape,
}

fn out_view(ol: &Layout, out_legs: &Legs, term: &Term<'_>, block: usize) -> OutView {
    let base: isize = out_legs
        .fixed
        .iter()
        .map(|&(a, fa)| term.idx[fa] as isize * ol.strides[a])
        .sum();
    OutView {
        block,
        offset: (ol.offset as isize + base) as usize,
        shape: MatShape {
            m: ol.dims[out_legs.row],
            rs: ol.strides[out_legs.row],
            n: ol.dims[out_legs.col],
            cs: ol.strides[out_legs.col],
        },
    }
}

/// Registers one term: the first-stage GEMM it reads (none where the middle or last factor
/// is an identity: it reads the other factor's slice), then its axpy into a `Q` before a
/// last-stage GEMM, or straight into the output where `M1` is an identity.
fn add_term(
    coef: usize,
    blocks: [usize; 3],
    s: &[SliceOf; 3],
    view: &OutView,
    plan: &mut CoefficientPlan,
    ix: &mut Index,
) {
    let (rows, cols) = (s[1].rows.side_dim, s[2].cols.side_dim);
    if rows == 0 || cols == 0 || view.shape.m == 0 {
        return;
    }
    let (src, so, s_rs, s_cs) = term_source(blocks, s, plan, ix);
    let mut axpy = Axpy {
        coef,
        src,
        s: so,
        s_rs,
        s_cs,
        d: 0,
        d_rs: 0,
        d_cs: 1,
        rows: rows as u32,
        cols: cols as u32,
    };
    if s.iter().any(|x| x.identity) {
        plan.identity_terms += 1;
    }
    if s[0].identity {
        (axpy.d, axpy.d_rs, axpy.d_cs) = (view.offset, view.shape.rs, view.shape.cs);
        ix.direct.entry(view.block).or_default().push(axpy);
        return;
    }
    let si = second_gemm(blocks[0], &s[0].cols, view, plan, ix);
    let (m1, n) = (&s[0].cols, view.shape.n);
    (axpy.d, axpy.d_rs) = (m1.pos * n, m1.step * n as isize);
    ix.axpys[si].push(axpy);
}

/// Where a term's axpy reads: the first-stage GEMM of its middle and last slices (registered
/// once per pair of slices), or the other factor's slice where one is an identity; the
/// source, its offset and its row and column strides.
fn term_source(
    blocks: [usize; 3],
    s: &[SliceOf; 3],
    plan: &mut CoefficientPlan,
    ix: &mut Index,
) -> (Source, usize, isize, isize) {
    if s[2].identity {
        return (Source::Middle, s[1].own.0, s[1].own.1.rs, s[1].own.1.cs);
    }
    if s[1].identity {
        return (Source::Last, s[2].own.0, s[2].own.1.rs, s[2].own.1.cs);
    }
    let (a, b) = (&s[1].rows, &s[2].cols);
    let key = |x: &SliceAt| if x.alone { x.base + 1 } else { 0 };
    let fk = (blocks[1], key(a), blocks[2], key(b));
    let fi = *ix.firsts.entry(fk).or_insert_with(|| {
        let t = plan.t_len;
        plan.t_len += a.shape.m * b.shape.n;
        plan.firsts.push(FirstGemm {
            a: a.offset,
            a_shape: a.shape,
            b: b.offset,
            b_shape: b.shape,
            t,
        });
        plan.firsts.len() - 1
    });
    let f = &plan.firsts[fi];
    let n = f.b_shape.n;
    (
        Source::Workspace,
        f.t + a.pos * n + b.pos,
        a.step * n as isize,
        b.step,
    )
}

/// The last-stage GEMM `Y += M1 · Q` of an output view and `M1` slice (block `b1`),
/// registered once per pair with its `Q`: its index.
fn second_gemm(
    b1: usize,
    m1: &SliceAt,
    view: &OutView,
    plan: &mut CoefficientPlan,
    ix: &mut Index,
) -> usize {
    let key = if m1.alone { m1.base + 1 } else { 0 };
    let sk = (view.offset, b1, key, view.block);
    *ix.seconds.entry(sk).or_insert_with(|| {
        plan.seconds.push(SecondGemm {
            out: view.offset,
            out_shape: view.shape,
            m1: m1.offset,
            m1_shape: m1.shape,
            axpys: (0, 0),
        });
        ix.axpys.push(Vec::new());
        ix.q_len.push(m1.shape.n * view.shape.n);
        ix.out_block.push(view.block);
        plan.seconds.len() - 1
    })
}

/// Orders the last stage by output block (one parallel unit each), lays out the axpys, and
/// prices the form.
fn finish(plan: &mut CoefficientPlan, mut ix: Index, model: &CostModel) {
    let mut blocks: Vec<usize> = ix.out_block.clone();
    blocks.extend(ix.direct.keys().copied());
    blocks.sort_unstable();
    blocks.dedup();
    let mut by_block: FxMap<usize, Vec<usize>> = FxMap::default();
    for (i, &b) in ix.out_block.iter().enumerate() {
        by_block.entry(b).or_default().push(i);
    }
    let old = std::mem::take(&mut plan.seconds);
    for b in blocks {
        let s0 = plan.seconds.len() as u32;
        for &i in by_block.get(&b).map_or(&[][..], |v| v.as_slice()) {
            let mut g = old[i].clone();
            let from = plan.axpys.len() as u32;
            // by destination, so that the executor sums the axpys into one region of `Q`
            // in one pass (see `same_region`)
            ix.axpys[i].sort_by_key(|a| (a.d, a.rows, a.cols, a.d_rs, a.d_cs));
            plan.axpys.append(&mut ix.axpys[i]);
            g.axpys = (from, plan.axpys.len() as u32);
            plan.seconds.push(g);
            plan.q_len = plan.q_len.max(ix.q_len[i]);
        }
        let d0 = plan.direct.len() as u32;
        if let Some(mut d) = ix.direct.remove(&b) {
            plan.direct.append(&mut d);
        }
        plan.outputs.push(OutputWork {
            seconds: (s0, plan.seconds.len() as u32),
            direct: (d0, plan.direct.len() as u32),
        });
    }
    price(plan, model);
}

/// The form's flops and predicted time: both GEMM stages, zeroing each `Q`, the axpys.
fn price(plan: &mut CoefficientPlan, model: &CostModel) {
    let mut s = 0.0;
    let mut flops = 0.0;
    for f in &plan.firsts {
        let (m, n, k) = (f.a_shape.m, f.b_shape.n, f.a_shape.n);
        flops += 2.0 * (m * n * k) as f64;
        s += model.gemm_s(m, n, k);
    }
    for g in &plan.seconds {
        let (m, n, k) = (g.out_shape.m, g.out_shape.n, g.m1_shape.n);
        flops += 2.0 * (m * n * k) as f64;
        s += model.gemm_s(m, n, k) + (k * n) as f64 * model.elem_s;
    }
    let elems: usize = plan
        .axpys
        .iter()
        .chain(&plan.direct)
        .map(|a| a.rows as usize * a.cols as usize)
        .sum();
    plan.axpy_elems = elems;
    plan.flops = flops;
    // an axpy streams its slice and its share of the `Q` region it adds into (runs into one
    // region are summed in one pass): priced at the stream rate (`elem_s`), not a copy's
    plan.predicted_s = s + elems as f64 * model.elem_s;
}
