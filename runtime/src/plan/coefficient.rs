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
//!
//! The files: this one decides; `coefficient_chain.rs` finds the chain,
//! `coefficient_terms.rs` builds the form, `coefficient_plan.rs` holds what the executors
//! read.

use super::coefficient_chain::{find_chain, Chain, Output};
use super::coefficient_terms::{build, Ctx};
use super::options::{PlanOptions, Policy, TIE};
use super::PlannedStep;
use crate::block::DynTensor;
use crate::hash::FxMap;
use crate::scalar::Scalar;
use crate::spec::ContractionSpec;

pub use super::coefficient_chain::{COEF_MAX_ELEMS, COEF_MAX_LEG};
pub use super::coefficient_plan::{
    Axpy, CoefficientPlan, FirstGemm, OutputWork, SecondGemm, Source,
};

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
    let ctx = Ctx::new(spec, ops, c, out)?;
    let (legs, out_legs) = (&ctx.legs, &ctx.out_legs);
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
