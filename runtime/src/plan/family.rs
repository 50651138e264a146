//! Coupled sectors: a sector's pairs as one rectangle, free-axis groups (one per contracted
//! block), contraction-axis groups (one per output block), or singles, by predicted time.

use super::cost::CostModel;
use super::group::{Access, Group, GroupKind, Place};
use super::options::{PlanOptions, Policy, TIE};
use super::price::single_cost;
use super::step::{Keys, StepPlan};
use crate::hash::FxMap;

pub(super) fn family_kind(ks: &Keys, ps: &[u32]) -> GroupKind {
    let distinct = |v: &Vec<u32>| {
        let mut x: Vec<u32> = ps.iter().map(|&p| v[p as usize]).collect();
        x.sort();
        x.dedup();
        x.len()
    };
    let (nr, nk, nn) = (distinct(&ks.r), distinct(&ks.kk), distinct(&ks.nn));
    if nk == 1 {
        GroupKind::FreeAxis
    } else if nr == 1 && nn == 1 {
        GroupKind::ContractionAxis
    } else {
        GroupKind::Rectangle
    }
}

/// Splits a coupled sector's pairs into groups: one rectangle, per-contracted-key
/// free-axis groups, per-output-block contraction-axis groups, or singles, by predicted time.
pub(super) fn choose_family(
    sp: &StepPlan,
    ks: &Keys,
    ps: &[u32],
    opts: &PlanOptions,
) -> Vec<Vec<u32>> {
    let model = &opts.model;
    let singles: Vec<Vec<u32>> = ps.iter().map(|&p| vec![p]).collect();
    // singles may later be batched: price them as batch members where that is cheaper
    let sep: f64 = ps
        .iter()
        .map(|&p| {
            let one = single_cost(sp, p, model);
            let pr = &sp.pairs[p as usize];
            if opts.batched {
                one.min(
                    one - model.gemm_s(pr.m, pr.n, pr.k) + model.batched_member_s(pr.m, pr.n, pr.k),
                )
            } else {
                one
            }
        })
        .sum();
    let by = |f: &dyn Fn(u32) -> u64| -> Vec<Vec<u32>> {
        let mut m: FxMap<u64, Vec<u32>> = FxMap::default();
        for &p in ps {
            m.entry(f(p)).or_default().push(p);
        }
        let mut v: Vec<Vec<u32>> = m.into_values().collect();
        v.sort();
        v
    };
    let mut cands: Vec<Candidate> = vec![(sep, 0, singles)];
    // a class with one contracted key is the only writer of its output blocks, so its
    // free-axis groups get their output laid out in place; otherwise they scatter
    let sole = distinct(ps, &ks.kk) == 1;
    let family_cost = |fam: &[Vec<u32>]| -> f64 {
        fam.iter()
            .map(|grp| {
                if grp.len() == 1 {
                    single_cost(sp, grp[0], model)
                } else {
                    concat_cost(sp, ks, grp, model, sole)
                }
            })
            .sum()
    };
    if opts.rectangle {
        let r = distinct(ps, &ks.r);
        let k = distinct(ps, &ks.kk);
        let n = distinct(ps, &ks.nn);
        if ps.len() == r * k * n && k > 1 && (r > 1 || n > 1) {
            let fam = vec![ps.to_vec()];
            cands.push((family_cost(&fam), 3, fam));
        }
    }
    if opts.free_axis {
        let fam = by(&|p| ks.kk[p as usize] as u64);
        if fam.iter().any(|g| g.len() > 1) {
            cands.push((family_cost(&fam), 2, fam));
        }
    }
    if opts.contraction_axis {
        let fam = by(&|p| sp.pairs[p as usize].c as u64);
        if fam.iter().any(|g| g.len() > 1) {
            cands.push((family_cost(&fam), 1, fam));
        }
    }
    pick(cands, opts.policy)
}

/// A candidate split of a sector: predicted time, preference when forced, the groups.
type Candidate = (f64, u8, Vec<Vec<u32>>);

/// The fastest candidate (among those within TIE of it, the one with the fewest calls), or
/// with `Policy::Always` the most coalescing one.
fn pick(cands: Vec<Candidate>, policy: Policy) -> Vec<Vec<u32>> {
    let fastest = cands.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
    let best = match policy {
        Policy::CostModel => cands
            .into_iter()
            .filter(|c| c.0 <= fastest * (1.0 + TIE))
            .min_by_key(|c| c.2.len()),
        Policy::Always => cands.into_iter().max_by_key(|c| c.1),
    };
    best.map(|c| c.2).unwrap_or_default()
}

fn distinct(ps: &[u32], ids: &[u32]) -> usize {
    let mut x: Vec<u32> = ps.iter().map(|&p| ids[p as usize]).collect();
    x.sort();
    x.dedup();
    x.len()
}

/// Rough cost of a concatenating group before layouts are known: operands packed, the
/// output direct for rectangles and contraction-axis groups, scattered otherwise.
fn concat_cost(sp: &StepPlan, ks: &Keys, ps: &[u32], model: &CostModel, sole_writer: bool) -> f64 {
    // the concatenated extents: each distinct row, inner and column key counted once
    let extent = |ids: &[u32], dim: fn(&crate::step::PairGemm) -> usize| -> usize {
        let mut v: Vec<(u32, usize)> = ps
            .iter()
            .map(|&p| (ids[p as usize], dim(&sp.pairs[p as usize])))
            .collect();
        v.sort_unstable();
        v.dedup_by_key(|x| x.0);
        v.iter().map(|x| x.1).sum()
    };
    let (m, k, n) = (
        extent(&ks.r, |p| p.m),
        extent(&ks.kk, |p| p.k),
        extent(&ks.nn, |p| p.n),
    );
    let mut packed = m * k + k * n;
    if family_kind(ks, ps) == GroupKind::FreeAxis && !sole_writer {
        packed += 2 * m * n;
    }
    model.gemm_s(m, n, k) + model.pack_s(packed)
}

/// Per key id (row, contracted, column) and per block (A, B, output): the concatenated group
/// that last placed it and its offset there. One per step, reused by every group it places:
/// no hashing and nothing allocated per group.
pub(super) struct Placer {
    stamp: [Vec<u32>; 6],
    off: [Vec<usize>; 3],
    now: u32,
}

impl Placer {
    /// Room for this step's keys and blocks.
    pub(super) fn new(sp: &StepPlan, ks: &Keys) -> Self {
        let [nr, nk, nn] = ks.counts;
        let blocks = [
            sp.operands[0].mats.len(),
            sp.operands[1].mats.len(),
            sp.out_keys.len(),
        ];
        Placer {
            stamp: [nr, nk, nn, blocks[0], blocks[1], blocks[2]].map(|n| vec![0; n]),
            off: [nr, nk, nn].map(|n| vec![0; n]),
            now: 0,
        }
    }
    /// The offset of key `id` of kind `which` in the current group: given it (`*next`,
    /// advanced by `len`) when first seen.
    fn offset(&mut self, which: usize, id: u32, next: &mut usize, len: usize) -> usize {
        let i = id as usize;
        if self.stamp[which][i] != self.now {
            self.stamp[which][i] = self.now;
            self.off[which][i] = *next;
            *next += len;
        }
        self.off[which][i]
    }
    /// Whether block `id` of kind `which` (3: A, 4: B, 5: output) is new to the current group
    /// (it is marked seen).
    fn first(&mut self, which: usize, id: u32) -> bool {
        let s = &mut self.stamp[which][id as usize];
        std::mem::replace(s, self.now) != self.now
    }
}

/// Places a set of pairs in one `m x k` times `k x n` GEMM (rows: distinct row keys, inner:
/// distinct contracted keys, columns: distinct column keys, each in first-seen order); the
/// last argument is room to reserve for the A, B and output places.
pub(super) fn concat_group(
    sp: &StepPlan,
    ks: &Keys,
    ps: &[u32],
    kind: GroupKind,
    pl: &mut Placer,
    [na, nb, nc]: [usize; 3],
) -> Group {
    pl.now += 1;
    let (mut m, mut k, mut n) = (0, 0, 0);
    let (mut a, mut b, mut c) = (
        Vec::with_capacity(na),
        Vec::with_capacity(nb),
        Vec::with_capacity(nc),
    );
    let mut flops = 0.0;
    for &p in ps {
        let pr = &sp.pairs[p as usize];
        let i = p as usize;
        let ro = pl.offset(0, ks.r[i], &mut m, pr.m);
        let ko = pl.offset(1, ks.kk[i], &mut k, pr.k);
        let no = pl.offset(2, ks.nn[i], &mut n, pr.n);
        if pl.first(3, pr.a) {
            a.push(Place {
                block: pr.a,
                row: ro,
                col: ko,
            });
        }
        if pl.first(4, pr.b) {
            b.push(Place {
                block: pr.b,
                row: ko,
                col: no,
            });
        }
        if pl.first(5, pr.c) {
            c.push(Place {
                block: pr.c,
                row: ro,
                col: no,
            });
        }
        flops += pr.flops();
    }
    Group {
        kind,
        pairs: ps.to_vec(),
        m,
        n,
        k,
        a,
        b,
        c,
        a_access: Access::Packed,
        b_access: Access::Packed,
        c_access: Access::Packed,
        c_first: Vec::new(),
        flops,
        wasted_flops: 2.0 * m as f64 * n as f64 * k as f64 - flops,
        packed_elems: 0,
        predicted_s: 0.0,
        uncoalesced_s: 0.0,
        packs: [u32::MAX; 3],
    }
}
