//! Singles of one shape as batched calls; the singles left as grouped calls.

use super::group::{Group, GroupKind, Place};
use super::options::{PlanOptions, Policy, TIE};
use super::price::{member_base, member_cost, Draft};
use super::step_plan::StepPlan;
use crate::step::PairGemm;

/// Singles of equal shape become batched groups where that pays (or always, when forced).
pub(super) fn batch_singles(
    sp: &StepPlan,
    draft: &Draft,
    mut singles: Vec<u32>,
    opts: &PlanOptions,
) -> Vec<Group> {
    let shape = |p: &u32| {
        let pr = &sp.pairs[*p as usize];
        (pr.m, pr.n, pr.k)
    };
    // buckets of one shape, shapes ascending, each in the order given
    singles.sort_by_key(shape);
    let mut out = Vec::new();
    let mut lone = Vec::new();
    for ps in singles.chunk_by(|x, y| shape(x) == shape(y)) {
        let sep: f64 = ps.iter().map(|&p| draft.single_cost(p)).sum();
        // the members' GEMMs (or sub-GEMMs, where they split), copies aside
        let base = member_base(&opts.model, GroupKind::Batched, shape(&ps[0]));
        let bat: f64 = opts.model.call_s
            + ps.iter()
                .map(|&p| {
                    let pr = &sp.pairs[p as usize];
                    let (t, packed, _) =
                        member_cost(sp, shape(&p), (pr.a, pr.b, None), base, &opts.model);
                    t - opts.model.pack_s(packed)
                })
                .sum::<f64>();
        let take = opts.batched
            && ps.len() > 1
            && match opts.policy {
                Policy::Always => true,
                Policy::CostModel => bat <= sep * (1.0 + TIE),
            };
        if take {
            out.push(member_group(sp, ps, GroupKind::Batched));
        } else if opts.grouped {
            lone.extend_from_slice(ps);
        } else {
            out.extend(
                ps.iter()
                    .map(|&p| member_group(sp, &[p], GroupKind::Single)),
            );
        }
    }
    if opts.grouped {
        group_singles(sp, draft, &lone, opts, &mut out);
    }
    out
}

/// Singles left after batching become grouped calls: members of different shapes, each
/// output block at most once per call (so a GPU may run them concurrently), taken where the
/// cost model says so (on a CPU a grouped call is a loop of GEMMs: a tie, broken towards
/// fewer calls).
fn group_singles(
    sp: &StepPlan,
    draft: &Draft,
    singles: &[u32],
    opts: &PlanOptions,
    out: &mut Vec<Group>,
) {
    // first fit: a single goes into the first call that does not write its output block
    // yet, which is call number (times that block was placed before)
    let mut placed = vec![0u32; sp.out_keys.len()];
    let mut calls: Vec<Vec<u32>> = Vec::new();
    for &p in singles {
        let slot = &mut placed[sp.pairs[p as usize].c as usize];
        let j = *slot as usize;
        *slot += 1;
        if j == calls.len() {
            calls.push(Vec::new());
        }
        calls[j].push(p);
    }
    let m = &opts.model;
    for ps in calls {
        let sep: f64 = ps.iter().map(|&p| draft.single_cost(p)).sum();
        let grouped = m.grouped_call_s() + sep - ps.len() as f64 * (m.call_s - m.member_s);
        let take = ps.len() > 1
            && match opts.policy {
                Policy::Always => true,
                Policy::CostModel => grouped <= sep * (1.0 + TIE),
            };
        if take {
            out.push(member_group(sp, &ps, GroupKind::Grouped));
        } else {
            out.extend(
                ps.iter()
                    .map(|&p| member_group(sp, &[p], GroupKind::Single)),
            );
        }
    }
}

/// A member group (single, batched or grouped) of these pairs, its extents the largest member's.
pub(super) fn member_group(sp: &StepPlan, ps: &[u32], kind: GroupKind) -> Group {
    // the largest member's extents (all equal for single and batched groups)
    let max = |f: fn(&PairGemm) -> usize| {
        ps.iter()
            .map(|&p| f(&sp.pairs[p as usize]))
            .max()
            .unwrap_or(0)
    };
    let pr0 = PairGemm {
        m: max(|p| p.m),
        n: max(|p| p.n),
        k: max(|p| p.k),
        ..sp.pairs[ps[0] as usize]
    };
    let place = |block| Place {
        block,
        first: false,
        row: 0,
        col: 0,
    };
    let mut place_list = Vec::with_capacity(3 * ps.len());
    for side in [|p: &PairGemm| p.a, |p: &PairGemm| p.b, |p: &PairGemm| p.c] {
        place_list.extend(ps.iter().map(|&p| place(side(&sp.pairs[p as usize]))));
    }
    let n = ps.len() as u32;
    let flops = ps.iter().map(|&p| sp.pairs[p as usize].flops()).sum();
    let mut g = Group::new(kind, ps.to_vec(), [pr0.m, pr0.n, pr0.k], flops);
    g.place_list = place_list;
    g.ends = [n, 2 * n];
    g
}
