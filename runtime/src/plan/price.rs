//! Pricing a group once layouts are known.

use super::cost::CostModel;
use super::group::{Access, Group, GroupKind, Place};
use super::layout::matrix_access;
use super::step::StepPlan;
use crate::step::{PairGemm, Side};
use crate::view::MatShape;

/// Elements one member GEMM packs: its operand blocks that need a transpose, and its output
/// block when that must be scattered (written to scratch, then added: twice).
fn member_packed(sp: &StepPlan, pr: &PairGemm, (a, b, c): (u32, u32, u32)) -> usize {
    let mut packed = 0;
    if sp.operand(Side::A).mats[a as usize].is_none() {
        packed += pr.m * pr.k;
    }
    if sp.operand(Side::B).mats[b as usize].is_none() {
        packed += pr.k * pr.n;
    }
    if sp.c_mats[c as usize].is_none() {
        packed += 2 * pr.m * pr.n;
    }
    packed
}

/// Predicted time of one pair as its own GEMM (its operands packed where they must be).
pub(super) fn single_cost(sp: &StepPlan, p: u32, model: &CostModel) -> f64 {
    let pr = &sp.pairs[p as usize];
    let mut extra = 0;
    if sp.operand(Side::A).mats[pr.a as usize].is_none() {
        extra += pr.m * pr.k;
    }
    if sp.operand(Side::B).mats[pr.b as usize].is_none() {
        extra += pr.k * pr.n;
    }
    model.gemm_s(pr.m, pr.n, pr.k) + model.pack_s(extra)
}

/// Decides each operand's access from the final layouts; prices the group; writes its reason.
pub(super) fn finalize(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    gr.uncoalesced_s = gr.pairs.iter().map(|&p| single_cost(sp, p, model)).sum();
    match gr.kind {
        GroupKind::Grouped => price_grouped(sp, gr, model),
        GroupKind::Single | GroupKind::Batched => price_members(sp, gr, model),
        _ => price_concat(sp, gr, model),
    }
}

/// A grouped call: each member its own shape, one call's overhead.
fn price_grouped(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let mut packed = 0;
    let mut member = 0.0;
    for &p in &gr.pairs {
        let pr = sp.pairs[p as usize];
        packed += member_packed(sp, &pr, (pr.a, pr.b, pr.c));
        member += model.gemm_s(pr.m, pr.n, pr.k) - model.call_s + model.member_s;
    }
    gr.packed_elems = packed;
    gr.predicted_s = model.call_s + member + model.pack_s(packed);
}

/// The uniform access of member blocks: direct when every member's block is addressable.
fn member_access(mats: &[Option<MatShape>], places: &[Place]) -> Access {
    let all = places.iter().all(|p| mats[p.block as usize].is_some());
    match places.first().and_then(|p| mats[p.block as usize]) {
        Some(s) if all => Access::Direct(s, 0),
        _ => Access::Packed,
    }
}

/// Single and batched groups: members of one shape.
fn price_members(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let shape = PairGemm {
        m: gr.m,
        n: gr.n,
        k: gr.k,
        ..sp.pairs[gr.pairs[0] as usize]
    };
    let packed: usize = (0..gr.pairs.len())
        .map(|i| {
            member_packed(
                sp,
                &shape,
                (gr.a()[i].block, gr.b()[i].block, gr.c()[i].block),
            )
        })
        .sum();
    gr.a_access = member_access(&sp.operand(Side::A).mats, gr.a());
    gr.b_access = member_access(&sp.operand(Side::B).mats, gr.b());
    gr.c_access = member_access(&sp.c_mats, gr.c());
    gr.packed_elems = packed;
    let n = gr.pairs.len();
    gr.predicted_s = if gr.kind == GroupKind::Single {
        model.gemm_s(gr.m, gr.n, gr.k) + model.pack_s(packed)
    } else {
        model.call_s + n as f64 * model.batched_member_s(gr.m, gr.n, gr.k) + model.pack_s(packed)
    };
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
