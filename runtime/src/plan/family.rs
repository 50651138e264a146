//! Coupled sectors: a sector's pairs as one rectangle, free-axis groups (one per contracted
//! block), contraction-axis groups (one per output block), or singles, by predicted time.

use super::cost::CostModel;
use super::group::{Group, GroupKind, Place};
use super::keys::Keys;
use super::options::{PlanOptions, Policy, TIE};
use super::price::{batch_member_cost, Draft};
use super::step_plan::StepPlan;
use std::ops::Range;

/// The concatenating kind of a family of pairs: one contracted key (free-axis), one row and
/// one column key (contraction-axis), or a rectangle.
pub(super) fn family_kind(sp: &StepPlan, ks: &Keys, ps: &[u32], pl: &mut Placer) -> GroupKind {
    kind_of(pl.extents(sp, ks, ps).1)
}

fn kind_of([nr, nk, nn]: [usize; 3]) -> GroupKind {
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
/// Returns the concatenated groups; the pairs left alone go to `singles`.
pub(super) fn choose_family(
    sp: &StepPlan,
    draft: &Draft,
    ks: &Keys,
    ps: &[u32],
    opts: &PlanOptions,
    pl: &mut Placer,
    singles: &mut Vec<u32>,
) -> Vec<Vec<u32>> {
    let model = &opts.model;
    let sep = separate_cost(sp, draft, ps, opts);
    let whole = vec![Range {
        start: 0,
        end: ps.len(),
    }];
    let mut cands: Vec<Candidate> = vec![(sep, 0, ps.len(), Split::Singles)];
    let [r, k, n] = pl.extents(sp, ks, ps).1;
    // a class with one contracted key is the only writer of its output blocks, so its
    // free-axis groups get their output laid out in place; otherwise they scatter
    let sole = k == 1;
    let mut cost = |v: &[u32], parts: &[Range<usize>]| -> f64 {
        parts
            .iter()
            .map(|x| match &v[x.clone()] {
                [p] => draft.single_cost(*p),
                grp => concat_cost(sp, ks, grp, model, sole, pl),
            })
            .sum()
    };
    if opts.rectangle && ps.len() == r * k * n && k > 1 && (r > 1 || n > 1) {
        cands.push((cost(ps, &whole), 3, 1, Split::Whole));
    }
    let by_kk = opts.free_axis.then(|| split_by(ps, |p| ks.kk[p as usize]));
    if let Some((v, parts)) = by_kk.as_ref().filter(|(_, x)| x.len() < ps.len()) {
        cands.push((cost(v, parts), 2, parts.len(), Split::Contracted));
    }
    let by_c = opts
        .contraction_axis
        .then(|| split_by(ps, |p| sp.pairs[p as usize].c));
    if let Some((v, parts)) = by_c.as_ref().filter(|(_, x)| x.len() < ps.len()) {
        cands.push((cost(v, parts), 1, parts.len(), Split::Output));
    }
    let (v, parts): (&[u32], &[Range<usize>]) = match pick(cands, opts.policy) {
        Split::Singles => {
            singles.extend_from_slice(ps);
            return Vec::new();
        }
        Split::Whole => (ps, &whole),
        Split::Contracted => by_kk
            .as_ref()
            .map(|(v, x)| (&v[..], &x[..]))
            .expect("priced"),
        Split::Output => by_c
            .as_ref()
            .map(|(v, x)| (&v[..], &x[..]))
            .expect("priced"),
    };
    concat_groups(v, parts, singles)
}

/// The pairs `ps` run on their own: each a single GEMM, or a batch member where batching is
/// allowed and cheaper (singles may later be batched).
fn separate_cost(sp: &StepPlan, draft: &Draft, ps: &[u32], opts: &PlanOptions) -> f64 {
    ps.iter()
        .map(|&p| {
            let one = draft.single_cost(p);
            if opts.batched {
                one.min(batch_member_cost(sp, p, &opts.model))
            } else {
                one
            }
        })
        .sum()
}

/// The chosen parts of `v`: each of two or more pairs a concatenating group, a part of one
/// pair a single (appended to `singles`).
fn concat_groups(v: &[u32], parts: &[Range<usize>], singles: &mut Vec<u32>) -> Vec<Vec<u32>> {
    let mut groups = Vec::new();
    for x in parts {
        match &v[x.clone()] {
            [p] => singles.push(*p),
            grp => groups.push(grp.to_vec()),
        }
    }
    groups
}

/// The pairs sorted by a key (each key's pairs in the order given) and the ranges of equal
/// keys, ordered by their first pair.
fn split_by(ps: &[u32], key: impl Fn(u32) -> u32) -> (Vec<u32>, Vec<Range<usize>>) {
    let mut v = ps.to_vec();
    v.sort_by_key(|&p| key(p));
    let mut parts = Vec::new();
    let mut start = 0;
    for part in v.chunk_by(|&x, &y| key(x) == key(y)) {
        parts.push(start..start + part.len());
        start += part.len();
    }
    parts.sort_unstable_by_key(|x| v[x.start]);
    (v, parts)
}

/// How a candidate splits a sector.
#[derive(Debug, Clone, Copy)]
enum Split {
    Singles,
    Whole,
    Contracted,
    Output,
}

/// A candidate split of a sector: predicted time, preference when forced, number of calls,
/// the split.
type Candidate = (f64, u8, usize, Split);

/// The fastest candidate (among those within TIE of it, the one with the fewest calls), or
/// with `Policy::Always` the most coalescing one.
fn pick(cands: Vec<Candidate>, policy: Policy) -> Split {
    let fastest = cands.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
    let best = match policy {
        Policy::CostModel => cands
            .into_iter()
            .filter(|c| c.0 <= fastest * (1.0 + TIE))
            .min_by_key(|c| c.2),
        Policy::Always => cands.into_iter().max_by_key(|c| c.1),
    };
    best.map_or(Split::Singles, |c| c.3)
}

/// Rough cost of a concatenating group before layouts are known: operands packed, the
/// output direct for rectangles and contraction-axis groups, scattered otherwise.
fn concat_cost(
    sp: &StepPlan,
    ks: &Keys,
    ps: &[u32],
    model: &CostModel,
    sole_writer: bool,
    pl: &mut Placer,
) -> f64 {
    let ([m, k, n], distinct) = pl.extents(sp, ks, ps);
    let mut packed = m * k + k * n;
    if kind_of(distinct) == GroupKind::FreeAxis && !sole_writer {
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
    /// The current group's A, B and output places, before they are copied into its list.
    places: [Vec<Place>; 3],
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
            places: Default::default(),
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
    /// The concatenated extents of a set of pairs (`m`, `k`, `n`: each distinct row, inner
    /// and column key counted once) and how many distinct keys of each.
    pub(super) fn extents(
        &mut self,
        sp: &StepPlan,
        ks: &Keys,
        ps: &[u32],
    ) -> ([usize; 3], [usize; 3]) {
        self.now += 1;
        let (mut ext, mut cnt) = ([0; 3], [0; 3]);
        for &p in ps {
            let (i, pr) = (p as usize, &sp.pairs[p as usize]);
            for (w, (id, len)) in [(ks.r[i], pr.m), (ks.kk[i], pr.k), (ks.nn[i], pr.n)]
                .into_iter()
                .enumerate()
            {
                if self.first(w, id) {
                    ext[w] += len;
                    cnt[w] += 1;
                }
            }
        }
        (ext, cnt)
    }
    /// Whether id `id` of kind `which` (0-2: row, contracted, column key; 3: A, 4: B, 5:
    /// output block) is new to the current group (it is marked seen).
    fn first(&mut self, which: usize, id: u32) -> bool {
        let s = &mut self.stamp[which][id as usize];
        std::mem::replace(s, self.now) != self.now
    }
}

/// Places a set of pairs in one `m x k` times `k x n` GEMM (rows: distinct row keys, inner:
/// distinct contracted keys, columns: distinct column keys, each in first-seen order).
pub(super) fn concat_group(
    sp: &StepPlan,
    ks: &Keys,
    ps: &[u32],
    kind: GroupKind,
    pl: &mut Placer,
) -> Group {
    pl.now += 1;
    let (mut m, mut k, mut n) = (0, 0, 0);
    let [mut a, mut b, mut c] = std::mem::take(&mut pl.places);
    for v in [&mut a, &mut b, &mut c] {
        v.clear();
    }
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
                first: false,
                row: ro,
                col: ko,
            });
        }
        if pl.first(4, pr.b) {
            b.push(Place {
                block: pr.b,
                first: false,
                row: ko,
                col: no,
            });
        }
        if pl.first(5, pr.c) {
            c.push(Place {
                block: pr.c,
                first: false,
                row: ro,
                col: no,
            });
        }
        flops += pr.flops();
    }
    let mut g = Group::new(kind, ps.to_vec(), [m, n, k], flops);
    g.wasted_flops = 2.0 * m as f64 * n as f64 * k as f64 - flops;
    g.set_places([&a, &b, &c]);
    pl.places = [a, b, c];
    g
}
