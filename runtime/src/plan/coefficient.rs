//! The coefficient form (the design note's R/A/B/C apply): a contraction of four operands,
//! one of them small (every leg short: an MPO tensor, or the product of two) and the other
//! three a chain of matrices `M1 · M2 · M3` (each one's remaining legs shared with the small
//! one), is not run as pairwise steps. Each entry `f` of the small operand becomes the scale
//! of the GEMMs around it:
//!
//! ```text
//! Y[r] += Σ f · M1[a] · M2[b] · M3[c]
//! ```
//!
//! run right-first: `T = M2 · M3` once per pair of blocks (the slices of a block at every
//! value of its fixed legs fused into one matrix where their strides nest: a free-axis GEMM),
//! `Q[r, a] = Σ f T[b, c]` (one pass of axpys, exact zeros skipped at run time), and
//! `Y[r] += M1 · Q` (the slices of an `M1` block fused along K: a contraction-axis GEMM);
//! or left-first, the same on the transposed chain. [`choose_coefficient_form`] builds both
//! and keeps the form only where the cost model predicts it faster than the pairwise steps.

use super::cost::CostModel;
use super::options::{PlanOptions, Policy, TIE};
use super::PlannedStep;
use crate::block::DynTensor;
use crate::hash::FxMap;
use crate::scalar::{Conj, Scalar};
use crate::spec::ContractionSpec;
use crate::view::{fuse, Layout, MatShape};

/// The longest leg an operand applied as coefficients may have.
pub const COEF_MAX_LEG: usize = 64;
/// The most elements an operand applied as coefficients may store.
pub const COEF_MAX_ELEMS: usize = 1 << 16;

/// One GEMM of the first stage: `T = A · B` into a row-major region of the workspace.
#[derive(Debug, Clone)]
pub struct FirstGemm {
    /// Offset of `A`'s origin in the chain's middle operand.
    pub a: usize,
    /// `A`'s extents and strides.
    pub a_shape: MatShape,
    /// Offset of `B`'s origin in the chain's last operand.
    pub b: usize,
    /// `B`'s extents and strides.
    pub b_shape: MatShape,
    /// Offset of the `a_shape.m x b_shape.n` row-major result in the workspace.
    pub t: usize,
}

/// One GEMM of the last stage: `Y += alpha · M1 · Q`, after `Q` (`K x N` row-major) is
/// zeroed and its axpys run.
#[derive(Debug, Clone)]
pub struct SecondGemm {
    /// Offset of the output view's origin in the output buffer.
    pub out: usize,
    /// The output view (`m x N`).
    pub out_shape: MatShape,
    /// Offset of `M1`'s origin in the chain's first operand.
    pub m1: usize,
    /// `M1`'s extents and strides (`m x K`).
    pub m1_shape: MatShape,
    /// Its axpys: `axpys[first..end]`.
    pub axpys: (u32, u32),
}

/// Where an axpy reads: the first stage's workspace, or an operand's slice where the
/// other factor of that stage is an identity (no GEMM ran for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The workspace.
    Workspace,
    /// The chain's middle operand (its last one is an identity there).
    Middle,
    /// The chain's last operand (its middle one is an identity there).
    Last,
}

/// `dst[d..] += f · src[s..]` over `rows x cols`, `f` the coefficient operand's element
/// `coef` (times the contraction's scalar when `dst` is the output).
#[derive(Debug, Clone, Copy)]
pub struct Axpy {
    /// Element offset in the coefficient operand's buffer.
    pub coef: usize,
    /// What it reads.
    pub src: Source,
    /// Offset, row and column stride in the source.
    pub s: usize,
    /// Row stride in the source.
    pub s_rs: isize,
    /// Column stride in the source.
    pub s_cs: isize,
    /// Offset in the destination (`Q`, or the output for a direct axpy).
    pub d: usize,
    /// Row stride in the destination.
    pub d_rs: isize,
    /// Column stride in the destination.
    pub d_cs: isize,
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
}

/// The work on one output block, one parallel unit: `seconds[s.0..s.1]` (each with its
/// `Q`), then `direct[d.0..d.1]` (terms whose `M1` is an identity: added to it directly).
#[derive(Debug, Clone, Copy)]
pub struct OutputWork {
    /// Its last-stage GEMMs.
    pub seconds: (u32, u32),
    /// Its direct axpys.
    pub direct: (u32, u32),
}

/// A contraction planned in the coefficient form; see the module's text.
#[derive(Debug, Clone)]
pub struct CoefficientPlan {
    /// The operand applied as coefficients.
    pub coef: usize,
    /// Whether its values are conjugated.
    pub coef_conj: Conj,
    /// The chain's operands in the order multiplied (`M1, M2, M3`).
    pub chain: [usize; 3],
    /// Their conjugations.
    pub conj: [Conj; 3],
    /// Whether the chain is the written one transposed (left-first: `T = M1 · M2` first).
    pub left_first: bool,
    /// The first stage.
    pub firsts: Vec<FirstGemm>,
    /// The first stage's workspace, elements.
    pub t_len: usize,
    /// The last stage, by output block.
    pub outputs: Vec<OutputWork>,
    /// The last stage's GEMMs.
    pub seconds: Vec<SecondGemm>,
    /// Every axpy into a `Q`.
    pub axpys: Vec<Axpy>,
    /// Every axpy into the output (an identity `M1`).
    pub direct: Vec<Axpy>,
    /// GEMMs skipped because a factor is a marked identity (terms routed around them).
    pub identity_terms: usize,
    /// The largest `Q`, elements.
    pub q_len: usize,
    /// Useful flops of both GEMM stages.
    pub flops: f64,
    /// Elements the axpys stream.
    pub axpy_elems: usize,
    /// Predicted seconds of this form.
    pub predicted_s: f64,
    /// Predicted seconds of the other direction (scaled by the two directions' flop proxy:
    /// only the direction taken is built).
    pub other_direction_s: f64,
    /// Predicted seconds of the pairwise steps it replaces.
    pub pairwise_s: f64,
}

impl CoefficientPlan {
    /// Kernel calls: both GEMM stages.
    pub fn kernel_calls(&self) -> usize {
        self.firsts.len() + self.seconds.len()
    }
    /// Approximate memory held, bytes.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Self>()
            + self.firsts.len() * size_of::<FirstGemm>()
            + self.seconds.len() * size_of::<SecondGemm>()
            + (self.axpys.len() + self.direct.len()) * size_of::<Axpy>()
            + self.outputs.len() * size_of::<OutputWork>()
    }
}

/// The coefficient form of `spec` on `ops` when it applies and the cost model (or
/// `options.coefficient_form`) takes it over the pairwise `steps`; None otherwise.
/// `out_layouts` are the output's blocks (keys and layouts) the last step writes.
pub(crate) fn choose_coefficient_form<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    steps: &[PlannedStep],
    options: &PlanOptions,
) -> Option<CoefficientPlan> {
    let policy = options.coefficient_form?;

    let last = steps.last()?;
    let chain = find_chain(spec, ops)?;
    let out = Output {
        labels: spec.output_labels(),
        blocks: last.plan.out_index.blocks(),
    };
    let model = &options.model;
    // the direction by a flop proxy of its two GEMM stages, so that one form is built
    let (right, left) = direction_flops(spec, ops, &chain, &out)?;

    let left_wins = left < right * (1.0 - TIE);
    let take = if left_wins { chain.reversed() } else { chain };
    let mut best = build(spec, ops, &take, &out, model)?;
    let (mine, other) = if left_wins {
        (left, right)
    } else {
        (right, left)
    };
    best.other_direction_s = best.predicted_s * other / mine.max(1.0);
    best.pairwise_s = steps.iter().map(|s| s.plan.predicted_s()).sum();
    let wins = best.predicted_s < best.pairwise_s * (1.0 - TIE);
    (policy == Policy::Always || wins).then_some(best)
}

/// The flops of the two GEMM stages, right-first and left-first, from the chains of blocks
/// alone (each pair of blocks a first-stage GEMM, each output block and outer block a
/// last-stage one; the slices' fusion not modelled): the direction the form is built in.
fn direction_flops<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    c: &Chain,
    out: &Output<'_>,
) -> Option<(f64, f64)> {
    let fl = spec.operand_labels(c.coef);
    let legs: Vec<Legs> = (0..3)
        .map(|k| legs_of(&spec.operand_labels(c.ops[k]), c.rows[k], c.cols[k], &fl))
        .collect::<Option<_>>()?;
    let out_legs = legs_of(&out.labels, c.out_row, c.out_col, &fl)?;
    let maps: Vec<_> = (0..3)
        .map(|k| by_fixed(ops[c.ops[k]], &legs[k], k > 0))
        .collect();
    let out_keys = out_key_index(out);
    let ctx = Ctx {
        ops,
        c,
        legs: &legs,
        out_legs: &out_legs,
        maps: &maps,
        out,
        out_keys: &out_keys,
    };
    let block = |k: usize, b: usize| &ops[c.ops[k]].blocks()[b].layout;
    let elems = |k: usize, b: usize| block(k, b).dims.iter().product::<usize>() as f64;
    let out_slices = |ob: usize| -> f64 {
        let l = &out.blocks[ob].layout;
        out_legs
            .fixed
            .iter()
            .map(|&(a, _)| l.dims[a])
            .product::<usize>() as f64
    };
    let mut seen: FxMap<(u8, usize, usize), ()> = FxMap::default();
    let (mut right, mut left) = (0.0, 0.0);
    for fb in ops[c.coef].blocks() {
        for ([b1, b2, b3], ob) in ctx.chains(&fb.key)? {
            let l = &out.blocks[ob].layout;
            let (e1, e2) = (l.dims[out_legs.row] as f64, l.dims[out_legs.col] as f64);
            let i1 = block(0, b1).dims[legs[0].col].max(1) as f64;
            let i2 = block(2, b3).dims[legs[2].row].max(1) as f64;
            if seen.insert((0, b2, b3), ()).is_none() {
                right += elems(1, b2) * elems(2, b3) / i2;
            }
            if seen.insert((1, ob, b1), ()).is_none() {
                right += elems(0, b1) * e2 * out_slices(ob);
            }
            if seen.insert((2, b1, b2), ()).is_none() {
                left += elems(0, b1) * elems(1, b2) / i1;
            }
            if seen.insert((3, ob, b3), ()).is_none() {
                left += elems(2, b3) * e1 * out_slices(ob);
            }
        }
    }
    Some((2.0 * right, 2.0 * left))
}

/// The output's blocks by key.
fn out_key_index<'a>(out: &Output<'a>) -> FxMap<&'a [u32], usize> {
    let mut m: FxMap<&[u32], usize> = FxMap::default();
    for (i, b) in out.blocks.iter().enumerate() {
        m.insert(&b.key, i);
    }
    m
}

/// The output's labels and the blocks the contraction writes.
struct Output<'a> {
    labels: Vec<usize>,
    blocks: &'a [crate::block::Block],
}

/// A chain `M1 · M2 · M3` and the operand applied as coefficients: per chain operand its
/// row and column labels (`cols[k] == rows[k + 1]`), the output's row and column labels.
#[derive(Debug, Clone)]
struct Chain {
    coef: usize,
    ops: [usize; 3],
    rows: [usize; 3],
    cols: [usize; 3],
    out_row: usize,
    out_col: usize,
}

impl Chain {
    /// The transposed chain `M3ᵀ · M2ᵀ · M1ᵀ` of the transposed output.
    fn reversed(&self) -> Chain {
        let r = |a: [usize; 3]| [a[2], a[1], a[0]];
        Chain {
            coef: self.coef,
            ops: r(self.ops),
            rows: r(self.cols),
            cols: r(self.rows),
            out_row: self.out_col,
            out_col: self.out_row,
        }
    }
}

/// Whether operand `t` may be applied as coefficients: every leg at most [`COEF_MAX_LEG`]
/// long and at most [`COEF_MAX_ELEMS`] stored.
fn small<T: Scalar>(t: &DynTensor<T>) -> bool {
    t.legs().iter().all(|l| l.space.dim() <= COEF_MAX_LEG) && t.data().len() <= COEF_MAX_ELEMS
}

/// The chain and the coefficient operand of a four-operand contraction, if it has that form:
/// one small operand, and three more each with exactly two legs not shared with it, linked
/// end to end from the output's first such leg to its second.
fn find_chain<T: Scalar>(spec: &ContractionSpec, ops: &[&DynTensor<T>]) -> Option<Chain> {
    if spec.operands.len() != 4 {
        return None;
    }
    (0..4)
        .filter(|&f| small(ops[f]))
        .find_map(|f| chain_around(spec, f))
}

/// The chain of the operands other than `coef`, if they form one.
fn chain_around(spec: &ContractionSpec, coef: usize) -> Option<Chain> {
    let fl = spec.operand_labels(coef);
    let free = |labels: Vec<usize>| -> Vec<usize> {
        labels.into_iter().filter(|l| !fl.contains(l)).collect()
    };
    let ends = free(spec.output_labels());
    if ends.len() != 2 {
        return None;
    }
    let mut rest: Vec<(usize, Vec<usize>)> = (0..4)
        .filter(|&i| i != coef)
        .map(|i| (i, free(spec.operand_labels(i))))
        .collect();
    if rest.iter().any(|(_, m)| m.len() != 2 || m[0] == m[1]) {
        return None;
    }
    let (mut ops, mut rows, mut cols) = ([0; 3], [0; 3], [0; 3]);
    let mut at = ends[0];
    for k in 0..3 {
        let p = rest.iter().position(|(_, m)| m.contains(&at))?;
        let (op, m) = rest.swap_remove(p);
        let other = if m[0] == at { m[1] } else { m[0] };
        (ops[k], rows[k], cols[k]) = (op, at, other);
        at = other;
    }
    (at == ends[1]).then_some(Chain {
        coef,
        ops,
        rows,
        cols,
        out_row: ends[0],
        out_col: ends[1],
    })
}

/// Where a tensor's legs sit for the form: the row and column legs, and each fixed leg with
/// the coefficient operand's leg it is shared with.
struct Legs {
    row: usize,
    col: usize,
    fixed: Vec<(usize, usize)>,
}

fn legs_of(labels: &[usize], row: usize, col: usize, coef_labels: &[usize]) -> Option<Legs> {
    let pos = |l: usize| labels.iter().position(|&x| x == l);
    let fixed = labels
        .iter()
        .enumerate()
        .filter(|(_, l)| **l != row && **l != col)
        .map(|(i, l)| Some((i, coef_labels.iter().position(|x| x == l)?)))
        .collect::<Option<Vec<_>>>()?;
    Some(Legs {
        row: pos(row)?,
        col: pos(col)?,
        fixed,
    })
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
    let mut axes: Vec<usize> = std::iter::once(side)
        .chain(fixed.iter().copied())
        .filter(|&a| l.dims[a] > 1)
        .collect();
    axes.sort_by_key(|&a| std::cmp::Reverse(l.strides[a]));
    let fused = fuse(&l.dims, &l.strides, &axes)
        .filter(|&(_, inner)| inner > 0 && base % inner == 0 && l.strides[side] % inner == 0);
    let (ext, inner, pos, step, alone, offset) = match fused {
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
    };
    let (od, os) = (l.dims[other], l.strides[other]);
    let shape = if side_rows {
        MatShape {
            m: ext,
            rs: inner,
            n: od,
            cs: os,
        }
    } else {
        MatShape {
            m: od,
            rs: os,
            n: ext,
            cs: inner,
        }
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

/// The blocks of a chain operand by their fixed legs' sectors, and their row sector when
/// `with_row`.
fn by_fixed<T: Scalar>(
    t: &DynTensor<T>,
    legs: &Legs,
    with_row: bool,
) -> FxMap<Vec<u32>, Vec<usize>> {
    let mut m: FxMap<Vec<u32>, Vec<usize>> = FxMap::default();
    for (i, b) in t.blocks().iter().enumerate() {
        let mut k: Vec<u32> = legs.fixed.iter().map(|&(a, _)| b.key[a]).collect();
        if with_row {
            k.push(b.key[legs.row]);
        }
        m.entry(k).or_default().push(i);
    }
    m
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

/// The form for one direction of the chain; None when a term's output block is not among
/// `out`'s (the pairwise plan writes into a target without it).
fn build<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    c: &Chain,
    out: &Output<'_>,
    model: &CostModel,
) -> Option<CoefficientPlan> {
    let fl = spec.operand_labels(c.coef);
    let legs: Vec<Legs> = (0..3)
        .map(|k| legs_of(&spec.operand_labels(c.ops[k]), c.rows[k], c.cols[k], &fl))
        .collect::<Option<_>>()?;
    let out_legs = legs_of(&out.labels, c.out_row, c.out_col, &fl)?;
    let maps: Vec<_> = (0..3)
        .map(|k| by_fixed(ops[c.ops[k]], &legs[k], k > 0))
        .collect();
    let out_keys = out_key_index(out);
    let mut plan = CoefficientPlan {
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
    };
    let mut ix = Index::default();
    let f = ops[c.coef];
    let ctx = Ctx {
        ops,
        c,
        legs: &legs,
        out_legs: &out_legs,
        maps: &maps,
        out,
        out_keys: &out_keys,
    };
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
struct Ctx<'a, T: Scalar> {
    ops: &'a [&'a DynTensor<T>],
    c: &'a Chain,
    legs: &'a [Legs],
    out_legs: &'a Legs,
    maps: &'a [FxMap<Vec<u32>, Vec<usize>>],
    out: &'a Output<'a>,
    out_keys: &'a FxMap<&'a [u32], usize>,
}

impl<T: Scalar> Ctx<'_, T> {
    /// Every chain of blocks `(M1, M2, M3)` and its output block that a coefficient block of
    /// `key` selects; None when an output block is missing.
    #[allow(clippy::type_complexity)]
    fn chains(&self, key: &[u32]) -> Option<Vec<([usize; 3], usize)>> {
        let (legs, ts) = (self.legs, [0, 1, 2].map(|k| self.ops[self.c.ops[k]]));
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
        let view = out_view(&self.out.blocks[ob].layout, self.out_legs, term, ob);
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
    let (src, so, s_rs, s_cs) = if s[2].identity {
        (Source::Middle, s[1].own.0, s[1].own.1.rs, s[1].own.1.cs)
    } else if s[1].identity {
        (Source::Last, s[2].own.0, s[2].own.1.rs, s[2].own.1.cs)
    } else {
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
    };
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
    let m1 = &s[0].cols;
    let key = if m1.alone { m1.base + 1 } else { 0 };
    let sk = (view.offset, blocks[0], key, view.block);
    let si = *ix.seconds.entry(sk).or_insert_with(|| {
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
    });
    let n = view.shape.n;
    (axpy.d, axpy.d_rs) = (m1.pos * n, m1.step * n as isize);
    ix.axpys[si].push(axpy);
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
