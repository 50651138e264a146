//! Pricing a group once layouts are known.

use super::cost::CostModel;
use super::group::{Access, Group, GroupKind, Place};
use super::layout::matrix_access;
use super::step_plan::StepPlan;
use crate::step::{PairGemm, Side};
use crate::view::{MatShape, SplitShape};

/// A member GEMM's predicted time as one call of `kind`, its copies aside: faer for a single,
/// the batched kernel for a batch member, a loop iteration for a grouped member.
pub(super) fn member_base(
    model: &CostModel,
    kind: GroupKind,
    (m, n, k): (usize, usize, usize),
) -> f64 {
    match kind {
        GroupKind::Batched => model.batched_member_s(m, n, k),
        GroupKind::Grouped => model.gemm_s(m, n, k) - model.call_s + model.member_s,
        _ => model.gemm_s(m, n, k),
    }
}

/// Which operand of a member GEMM of shape `(m, n, k)` on blocks `(a, b)` runs in place as
/// strided sub-GEMMs (see [`SplitShape`]), and their predicted time: the side whose block has
/// no matrix view but splits, where that beats copying it and running `base` (the member as
/// one call). B is tried first; at most one side splits.
fn member_split(
    sp: &StepPlan,
    (m, n, k): (usize, usize, usize),
    (a, b): (u32, u32),
    base: f64,
    model: &CostModel,
) -> Option<(Side, SplitShape, f64)> {
    [(Side::B, b), (Side::A, a)]
        .into_iter()
        .find_map(|(side, blk)| {
            let s = sp.operand(side).split_of(blk)?;
            let (sub, elems) = match side {
                Side::A => ((s.mat.m, n, k), m * k),
                Side::B => ((m, s.mat.n, k), k * n),
            };
            let t = s.count as f64 * model.split_sub_s(sub.0, sub.1, sub.2);
            (t < base + model.pack_s(elems)).then_some((side, *s, t))
        })
}

/// One member GEMM of shape `(m, n, k)` on blocks `(a, b, c)` (`c`: None before the output
/// is laid out), `base` its [`member_base`]: its predicted time with its copies, the elements
/// it copies (an operand block without a matrix view, unless it splits; an output block
/// without one, written to scratch then added: twice), and its split side.
#[inline]
pub(super) fn member_cost(
    sp: &StepPlan,
    (m, n, k): (usize, usize, usize),
    (a, b, c): (u32, u32, Option<u32>),
    base: f64,
    model: &CostModel,
) -> (f64, usize, Option<(Side, SplitShape)>) {
    let (ma, mb) = (
        sp.operand(Side::A).mats[a as usize].is_none(),
        sp.operand(Side::B).mats[b as usize].is_none(),
    );
    let c_packed = c.is_some_and(|c| sp.c_mats[c as usize].is_none());
    if !(ma || mb || c_packed) {
        return (base, 0, None);
    }
    let can_split = |side: Side, none: bool| none && !sp.operand(side).splits.is_empty();
    let split = if can_split(Side::A, ma) || can_split(Side::B, mb) {
        member_split(sp, (m, n, k), (a, b), base, model)
    } else {
        None
    };
    let side = split.map(|x| x.0);
    let mut packed = 0;
    if ma && side != Some(Side::A) {
        packed += m * k;
    }
    if mb && side != Some(Side::B) {
        packed += k * n;
    }
    if c_packed {
        packed += 2 * m * n;
    }
    let t = split.map_or(base, |x| x.2);
    (t + model.pack_s(packed), packed, split.map(|x| (x.0, x.1)))
}

/// Per pair of the step: its predicted time as its own GEMM, its operands copied or split
/// where they must be (its output's copy aside).
fn pair_prices(sp: &StepPlan, model: &CostModel) -> Vec<f64> {
    sp.pairs
        .iter()
        .map(|pr| price_pair(sp, pr, GroupKind::Single, model))
        .collect()
}

/// One pair's predicted time as a member of `kind`, copies or splits included.
fn price_pair(sp: &StepPlan, pr: &PairGemm, kind: GroupKind, model: &CostModel) -> f64 {
    let shape = (pr.m, pr.n, pr.k);
    let base = member_base(model, kind, shape);
    // most pairs read both blocks in place: no copy, no split to weigh
    if sp.operand(Side::A).mats[pr.a as usize].is_some()
        && sp.operand(Side::B).mats[pr.b as usize].is_some()
    {
        return base;
    }
    member_cost(sp, shape, (pr.a, pr.b, None), base, model).0
}

/// The planner's draft of a step: what only planning reads, apart from the [`StepPlan`] the
/// executors read, and dropped once the step is planned. Each pair's predicted time as its
/// own GEMM (copies or splits included), priced once for the many candidates that quote it.
pub(super) struct Draft {
    pair_s: Vec<f64>,
}

impl Draft {
    /// The draft of `sp`, its pairs priced by `model` ([`pair_prices`]).
    pub(super) fn new(sp: &StepPlan, model: &CostModel) -> Draft {
        Draft {
            pair_s: pair_prices(sp, model),
        }
    }

    /// Predicted time of pair `p` as its own GEMM.
    pub(super) fn single_cost(&self, p: u32) -> f64 {
        self.pair_s[p as usize]
    }
}

/// Predicted time of pair `p` as a batch member.
pub(super) fn batch_member_cost(sp: &StepPlan, p: u32, model: &CostModel) -> f64 {
    price_pair(sp, &sp.pairs[p as usize], GroupKind::Batched, model)
}

/// Per member of the member groups, in record order: the side it splits, if any (the same
/// decisions as the groups' prices, [`price_member_group`]); empty when none splits.
pub(super) fn member_splits(
    sp: &StepPlan,
    groups: &[Group],
    model: &CostModel,
) -> Vec<Option<(Side, SplitShape)>> {
    let mut out = Vec::new();
    if groups.iter().all(|g| g.split_members == 0) {
        return out;
    }
    for gr in groups.iter().filter(|g| g.is_members()) {
        if gr.split_members == 0 {
            out.resize(out.len() + gr.pairs.len(), None);
            continue;
        }
        let mut base = member_base(model, gr.kind, (gr.m, gr.n, gr.k));
        for ((pa, pb), &pi) in gr.a().iter().zip(gr.b()).zip(&gr.pairs) {
            let shape = member_shape(sp, gr, pi);
            if gr.kind == GroupKind::Grouped {
                base = member_base(model, gr.kind, shape);
            }
            out.push(member_cost(sp, shape, (pa.block, pb.block, None), base, model).2);
        }
    }
    out
}

/// A member's shape: the group's for single and batched members, the pair's for grouped.
fn member_shape(sp: &StepPlan, gr: &Group, p: u32) -> (usize, usize, usize) {
    if gr.kind == GroupKind::Grouped {
        let pr = &sp.pairs[p as usize];
        (pr.m, pr.n, pr.k)
    } else {
        (gr.m, gr.n, gr.k)
    }
}

/// Decides each operand's access from the final layouts; prices the group; writes its reason.
pub(super) fn finalize(sp: &StepPlan, draft: &Draft, gr: &mut Group, model: &CostModel) {
    // for the reason only (a single's reason quotes no alternative)
    if gr.kind != GroupKind::Single {
        gr.uncoalesced_s = gr.pairs.iter().map(|&p| draft.single_cost(p)).sum();
    }
    match gr.kind {
        GroupKind::Single | GroupKind::Batched | GroupKind::Grouped => {
            price_member_group(sp, gr, model)
        }
        _ => price_concat(sp, gr, model),
    }
}

/// Member groups (single, batched, grouped): one call's overhead (a single's is its GEMM's,
/// a grouped call's [`CostModel::grouped_call_s`]), plus each member's time and copies.
fn price_member_group(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let mut packed = 0;
    let mut t = match gr.kind {
        GroupKind::Single => 0.0,
        GroupKind::Grouped => model.grouped_call_s(),
        _ => model.call_s,
    };
    let mut split = 0;
    let mut base = member_base(model, gr.kind, (gr.m, gr.n, gr.k));
    for i in 0..gr.pairs.len() {
        let shape = member_shape(sp, gr, gr.pairs[i]);
        if gr.kind == GroupKind::Grouped {
            base = member_base(model, gr.kind, shape);
        }
        let blocks = (gr.a()[i].block, gr.b()[i].block, Some(gr.c()[i].block));
        let (s, p, x) = member_cost(sp, shape, blocks, base, model);
        t += s;
        packed += p;
        split += x.is_some() as u32;
    }
    gr.a_access = member_access(&sp.operand(Side::A).mats, gr.a());
    gr.b_access = member_access(&sp.operand(Side::B).mats, gr.b());
    gr.c_access = member_access(&sp.c_mats, gr.c());
    gr.packed_elems = packed;
    gr.split_members = split;
    gr.predicted_s = t;
}

/// The uniform access of member blocks: direct when every member's block is addressable.
fn member_access(mats: &[Option<MatShape>], places: &[Place]) -> Access {
    let all = places.iter().all(|p| mats[p.block as usize].is_some());
    match places.first().and_then(|p| mats[p.block as usize]) {
        Some(s) if all => Access::Direct(s, 0),
        _ => Access::Packed,
    }
}

/// Concatenating groups (free-axis, contraction-axis, rectangle): one GEMM.
fn price_concat(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let a = sp.operand(Side::A);
    let b = sp.operand(Side::B);
    gr.a_access = matrix_access(gr.a(), &a.mats, &a.offsets);
    gr.b_access = matrix_access(gr.b(), &b.mats, &b.offsets);
    gr.c_access = matrix_access(gr.c(), &sp.c_mats, &sp.c_offsets);
    let mut packed = 0;
    if gr.a_access.is_packed() {
        packed += gr.m * gr.k;
    }
    if gr.b_access.is_packed() {
        packed += gr.k * gr.n;
    }
    if gr.c_access.is_packed() {
        packed += 2 * gr.m * gr.n;
    }
    gr.packed_elems = packed;
    gr.predicted_s = model.gemm_s(gr.m, gr.n, gr.k) + model.pack_s(packed);
}
