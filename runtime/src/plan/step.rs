//! Planning one pairwise step: block pairs -> groups, by the cost model; the output's layout.

use super::cost::CostModel;
use super::group::{Access, Group, GroupKind, Place};
use crate::block::{Block, BlockIndex, BlockKey, DynTensor};
use crate::contract::pairs::{enumerate, geometry, Conj, Geometry, PairGemm, StepDesc};
use crate::contract::pairwise::{mat_shape, MatShape};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::view::Layout;
use std::collections::HashMap;
use std::sync::Arc;

/// Predicted times within this fraction count as a tie, broken towards fewer kernel calls
/// (a launch is cheap on a CPU but costs microseconds on a GPU).
pub const TIE: f64 = 0.02;

/// Whether a group kind is chosen by the cost model, always when possible, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Coalesce where the cost model predicts a gain.
    CostModel,
    /// Coalesce wherever the kind applies (tests, comparisons).
    Always,
}

/// What the planner may do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanOptions {
    /// Batched groups allowed.
    pub batched: bool,
    /// Free-axis groups allowed.
    pub free_axis: bool,
    /// Contraction-axis groups allowed.
    pub contraction_axis: bool,
    /// Fully populated rectangles allowed.
    pub rectangle: bool,
    /// Grouped calls (pairs of different shapes, different outputs) allowed.
    pub grouped: bool,
    /// How kinds are chosen.
    pub policy: Policy,
    /// The cost model's constants.
    pub model: CostModel,
}

impl Default for PlanOptions {
    /// Every kind allowed, chosen by this machine's calibrated cost model.
    fn default() -> Self {
        PlanOptions {
            batched: true,
            free_axis: true,
            contraction_axis: true,
            rectangle: true,
            grouped: true,
            policy: Policy::CostModel,
            model: CostModel::calibrated(),
        }
    }
}

impl PlanOptions {
    /// Only single GEMMs: the per-pair plan.
    pub fn uncoalesced() -> Self {
        PlanOptions {
            batched: false,
            free_axis: false,
            contraction_axis: false,
            rectangle: false,
            grouped: false,
            ..Self::default()
        }
    }
    /// Exactly one kind forced on wherever it applies (plus singles), with default constants.
    pub fn only(kind: GroupKind) -> Self {
        PlanOptions {
            batched: kind == GroupKind::Batched,
            free_axis: kind == GroupKind::FreeAxis,
            contraction_axis: kind == GroupKind::ContractionAxis,
            rectangle: kind == GroupKind::Rectangle,
            grouped: kind == GroupKind::Grouped,
            policy: Policy::Always,
            model: CostModel::default(),
        }
    }
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = 0u64;
        for (i, b) in [
            self.batched,
            self.free_axis,
            self.contraction_axis,
            self.rectangle,
            self.grouped,
        ]
        .iter()
        .enumerate()
        {
            h |= (*b as u64) << i;
        }
        let mut f = crate::plan::cache::Fx::default();
        f.write(h | ((self.policy == Policy::Always) as u64) << 8);
        let m = &self.model;
        for x in [
            m.call_s,
            m.tiny_call_s,
            m.tiny_rate,
            m.peak_rate,
            m.elem_s,
            m.pack_elem_s,
            m.member_s,
        ] {
            f.write(x.to_bits());
        }
        f.finish()
    }
}

/// The plan of one pairwise step.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// The step as written.
    pub desc: StepDesc,
    /// Its geometry.
    pub geometry: Geometry,
    /// Every block pair.
    pub pairs: Vec<PairGemm>,
    /// Output block keys (sorted) ...
    pub out_keys: Vec<BlockKey>,
    /// ... and their layouts in the output buffer.
    pub out_layouts: Vec<Layout>,
    /// Output buffer length.
    pub out_len: usize,
    /// Matrix view of each A block (None: its strides need a transpose).
    pub a_mats: Vec<Option<MatShape>>,
    /// Matrix view of each B block.
    pub b_mats: Vec<Option<MatShape>>,
    /// Buffer offset of each A block.
    pub a_offsets: Vec<usize>,
    /// Buffer offset of each B block.
    pub b_offsets: Vec<usize>,
    /// Matrix view of each output block.
    pub c_mats: Vec<Option<MatShape>>,
    /// The groups (plan nodes).
    pub groups: Vec<Group>,
    /// Hazard-free sets: groups in different sets write disjoint output blocks.
    pub components: Vec<Vec<u32>>,
    /// Scratch elements the largest group needs.
    pub scratch_elems: usize,
    /// The output's blocks and layouts, shared by every output this plan makes.
    pub out_index: Arc<BlockIndex>,
    /// Operand blocks that need a transpose and feed several single/batched GEMMs are
    /// transposed once per step into a cache: per A block, its offset there.
    pub a_cache: Vec<Option<usize>>,
    /// Likewise for B.
    pub b_cache: Vec<Option<usize>>,
    /// Cache lengths (A, B).
    pub cache_len: (usize, usize),
}

impl StepPlan {
    /// Kernel calls of this step.
    pub fn kernel_calls(&self) -> usize {
        self.groups.iter().map(Group::kernel_calls).sum()
    }
    /// Predicted time of this step, seconds.
    pub fn predicted_s(&self) -> f64 {
        self.groups.iter().map(|g| g.predicted_s).sum()
    }
}

/// Per-pair ids of the row key, the contracted key and the column key.
struct Keys {
    r: Vec<u32>,
    kk: Vec<u32>,
    nn: Vec<u32>,
    kk_class: Vec<u32>,
}

fn intern(map: &mut HashMap<Vec<u32>, u32>, key: Vec<u32>) -> u32 {
    let n = map.len() as u32;
    *map.entry(key).or_insert(n)
}

fn keys<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>, g: &Geometry, pairs: &[PairGemm]) -> Keys {
    let (mut rm, mut km, mut nm, mut cm) = (
        HashMap::new(),
        HashMap::new(),
        HashMap::new(),
        HashMap::new(),
    );
    let mut a_row = Vec::new();
    let mut a_kk = Vec::new();
    let mut kk_charge: Vec<Vec<i64>> = Vec::new();
    let sign = if g.conj.0 == Conj::Yes { -1 } else { 1 };
    for blk in a.blocks() {
        a_row.push(intern(
            &mut rm,
            g.a_free.iter().map(|&l| blk.key[l]).collect(),
        ));
        let kkey: Vec<u32> = g.a_contr.iter().map(|&l| blk.key[l]).collect();
        let id = intern(&mut km, kkey.clone());
        if id as usize == kk_charge.len() {
            let mut q = g.symmetry.zero();
            for (&l, &s) in g.a_contr.iter().zip(&kkey) {
                let leg = &a.legs()[l];
                g.symmetry.add_signed(
                    &mut q,
                    sign * leg.flow.sign(),
                    &leg.space.sectors()[s as usize].charge,
                );
            }
            kk_charge.push(q.values().to_vec());
        }
        a_kk.push(id);
    }
    let b_nn: Vec<u32> = b
        .blocks()
        .iter()
        .map(|blk| intern(&mut nm, g.b_free.iter().map(|&l| blk.key[l]).collect()))
        .collect();
    let kk_class: Vec<u32> = kk_charge
        .into_iter()
        .map(|q| intern(&mut cm, q.iter().map(|&x| x as u32).collect()))
        .collect();
    Keys {
        r: pairs.iter().map(|p| a_row[p.a as usize]).collect(),
        kk: pairs.iter().map(|p| a_kk[p.a as usize]).collect(),
        nn: pairs.iter().map(|p| b_nn[p.b as usize]).collect(),
        kk_class,
    }
}

/// Plans one step on the operands' structure (values are not read).
pub fn plan_step<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    desc: &StepDesc,
    opts: &PlanOptions,
) -> Result<StepPlan> {
    let g = geometry(a, b, desc)?;
    let list = enumerate(a, b, &g);
    let a_mats: Vec<_> = a
        .blocks()
        .iter()
        .map(|x| mat_shape(&x.layout, &g.a_free, &g.a_contr))
        .collect();
    let b_mats: Vec<_> = b
        .blocks()
        .iter()
        .map(|x| mat_shape(&x.layout, &g.b_contr, &g.b_free))
        .collect();
    let ks = keys(a, b, &g, &list.pairs);
    let mut sp = StepPlan {
        desc: desc.clone(),
        geometry: g,
        pairs: list.pairs,
        out_keys: list.out_keys,
        out_layouts: Vec::new(),
        out_len: 0,
        a_mats,
        b_mats,
        a_offsets: a.blocks().iter().map(|x| x.layout.offset).collect(),
        b_offsets: b.blocks().iter().map(|x| x.layout.offset).collect(),
        c_mats: Vec::new(),
        groups: Vec::new(),
        components: Vec::new(),
        scratch_elems: 0,
        out_index: Arc::new(BlockIndex::new(Vec::new())),
        a_cache: Vec::new(),
        b_cache: Vec::new(),
        cache_len: (0, 0),
    };
    let model = opts.model;
    // pairs by coupled sector (the charge carried across the contracted legs)
    let mut classes: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, p) in sp.pairs.iter().enumerate() {
        if p.m * p.n * p.k > 0 {
            classes
                .entry(ks.kk_class[ks.kk[i] as usize])
                .or_default()
                .push(i as u32);
        }
    }
    let mut class_ids: Vec<u32> = classes.keys().copied().collect();
    class_ids.sort();
    let mut groups: Vec<Group> = Vec::new();
    let mut singles: Vec<u32> = Vec::new();
    for cid in class_ids {
        let ps = &classes[&cid];
        for fam in choose_family(&sp, &ks, ps, opts) {
            if fam.len() == 1 {
                singles.push(fam[0]);
            } else {
                groups.push(concat_group(&sp, &ks, &fam, family_kind(&ks, &fam)));
            }
        }
    }
    groups.extend(batch_singles(&sp, singles, opts));
    assign_output_layout(&mut sp, &groups);
    for gr in &mut groups {
        finalize(&sp, gr, &model);
    }
    sp.components = components(&groups, sp.out_keys.len());
    sp.scratch_elems = groups.iter().map(scratch_of).max().unwrap_or(0);
    let (ac, al) = transpose_cache(&groups, &sp.a_mats, a, |g| &g.a);
    let (bc, bl) = transpose_cache(&groups, &sp.b_mats, b, |g| &g.b);
    (sp.a_cache, sp.b_cache, sp.cache_len) = (ac, bc, (al, bl));
    sp.groups = groups;
    sp.out_index = Arc::new(BlockIndex::new(
        sp.out_keys
            .iter()
            .zip(&sp.out_layouts)
            .map(|(k, l)| Block {
                key: k.clone(),
                layout: l.clone(),
            })
            .collect(),
    ));
    Ok(sp)
}

/// Blocks that need a transpose and are used by two or more member GEMMs get a slot in a
/// per-step cache (transposed once instead of once per use).
fn transpose_cache<T: Scalar>(
    groups: &[Group],
    mats: &[Option<MatShape>],
    t: &DynTensor<T>,
    places: impl Fn(&Group) -> &Vec<Place>,
) -> (Vec<Option<usize>>, usize) {
    let mut uses = vec![0u32; mats.len()];
    for g in groups.iter().filter(|g| g.is_members()) {
        for p in places(g) {
            if mats[p.block as usize].is_none() {
                uses[p.block as usize] += 1;
            }
        }
    }
    let mut off = 0;
    let slots = uses
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            (u >= 2).then(|| {
                let o = off;
                off += t.blocks()[i].layout.len();
                o
            })
        })
        .collect();
    (slots, off)
}

fn family_kind(ks: &Keys, ps: &[u32]) -> GroupKind {
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

fn single_cost(sp: &StepPlan, p: u32, model: &CostModel) -> f64 {
    let pr = &sp.pairs[p as usize];
    let mut extra = 0;
    if sp.a_mats[pr.a as usize].is_none() {
        extra += pr.m * pr.k;
    }
    if sp.b_mats[pr.b as usize].is_none() {
        extra += pr.k * pr.n;
    }
    model.gemm_s(pr.m, pr.n, pr.k) + model.pack_s(extra)
}

/// Splits a coupled sector's pairs into groups: one rectangle, per-contracted-key
/// free-axis groups, per-output-block contraction-axis groups, or singles, by predicted time.
fn choose_family(sp: &StepPlan, ks: &Keys, ps: &[u32], opts: &PlanOptions) -> Vec<Vec<u32>> {
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
        let mut m: HashMap<u64, Vec<u32>> = HashMap::new();
        for &p in ps {
            m.entry(f(p)).or_default().push(p);
        }
        let mut v: Vec<Vec<u32>> = m.into_values().collect();
        v.sort();
        v
    };
    let mut cands: Vec<(f64, u8, Vec<Vec<u32>>)> = vec![(sep, 0, singles)];
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
    let best = match opts.policy {
        Policy::CostModel => {
            // the fastest, or among those within TIE of it, the one with the fewest calls
            let fastest = cands.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
            cands
                .into_iter()
                .filter(|c| c.0 <= fastest * (1.0 + TIE))
                .min_by_key(|c| c.2.len())
                .expect("the fastest is within TIE of itself")
        }
        Policy::Always => cands
            .into_iter()
            .max_by_key(|c| c.1)
            .expect("at least the singles"),
    };
    best.2
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
    let g = concat_group(sp, ks, ps, family_kind(ks, ps));
    let mut packed = g.m * g.k + g.k * g.n;
    if g.kind == GroupKind::FreeAxis && !sole_writer {
        packed += 2 * g.m * g.n;
    }
    model.gemm_s(g.m, g.n, g.k) + model.pack_s(packed)
}

/// Places a set of pairs in one `m x k` times `k x n` GEMM (rows: distinct row keys, inner:
/// distinct contracted keys, columns: distinct column keys, each in first-seen order).
fn concat_group(sp: &StepPlan, ks: &Keys, ps: &[u32], kind: GroupKind) -> Group {
    let mut roff: HashMap<u32, usize> = HashMap::new();
    let mut koff: HashMap<u32, usize> = HashMap::new();
    let mut noff: HashMap<u32, usize> = HashMap::new();
    let (mut m, mut k, mut n) = (0, 0, 0);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let (mut seen_a, mut seen_b, mut seen_c) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut flops = 0.0;
    for &p in ps {
        let pr = &sp.pairs[p as usize];
        let i = p as usize;
        let ro = *roff.entry(ks.r[i]).or_insert_with(|| {
            m += pr.m;
            m - pr.m
        });
        let ko = *koff.entry(ks.kk[i]).or_insert_with(|| {
            k += pr.k;
            k - pr.k
        });
        let no = *noff.entry(ks.nn[i]).or_insert_with(|| {
            n += pr.n;
            n - pr.n
        });
        if seen_a.insert(pr.a, ()).is_none() {
            a.push(Place {
                block: pr.a,
                row: ro,
                col: ko,
            });
        }
        if seen_b.insert(pr.b, ()).is_none() {
            b.push(Place {
                block: pr.b,
                row: ko,
                col: no,
            });
        }
        if seen_c.insert(pr.c, ()).is_none() {
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
        flops,
        wasted_flops: 2.0 * (m * n * k) as f64 - flops,
        packed_elems: 0,
        predicted_s: 0.0,
        uncoalesced_s: 0.0,
        reason: String::new(),
    }
}

/// Singles of equal shape become batched groups where that pays (or always, when forced).
fn batch_singles(sp: &StepPlan, singles: Vec<u32>, opts: &PlanOptions) -> Vec<Group> {
    let mut buckets: HashMap<(usize, usize, usize), Vec<u32>> = HashMap::new();
    for p in singles {
        let pr = &sp.pairs[p as usize];
        buckets.entry((pr.m, pr.n, pr.k)).or_default().push(p);
    }
    let mut shapes: Vec<_> = buckets.keys().copied().collect();
    shapes.sort();
    let mut out = Vec::new();
    for sh in shapes {
        let ps = &buckets[&sh];
        let sep: f64 = ps.iter().map(|&p| single_cost(sp, p, &opts.model)).sum();
        let bat =
            opts.model.call_s + ps.len() as f64 * opts.model.batched_member_s(sh.0, sh.1, sh.2);
        let take = opts.batched
            && ps.len() > 1
            && match opts.policy {
                Policy::Always => true,
                Policy::CostModel => bat <= sep * (1.0 + TIE),
            };
        if take {
            out.push(member_group(sp, ps, GroupKind::Batched));
        } else {
            out.extend(
                ps.iter()
                    .map(|&p| member_group(sp, &[p], GroupKind::Single)),
            );
        }
    }
    if opts.grouped {
        out = group_singles(sp, out, opts);
    }
    out
}

/// Singles left after batching become grouped calls: members of different shapes, each
/// output block at most once per call (so a GPU may run them concurrently), taken where the
/// cost model says so (on a CPU a grouped call is a loop of GEMMs: a tie, broken towards
/// fewer calls).
fn group_singles(sp: &StepPlan, groups: Vec<Group>, opts: &PlanOptions) -> Vec<Group> {
    let (singles, mut out): (Vec<Group>, Vec<Group>) = groups
        .into_iter()
        .partition(|g| g.kind == GroupKind::Single);
    let mut calls: Vec<(Vec<u32>, std::collections::HashSet<u32>)> = Vec::new();
    for g in &singles {
        let p = g.pairs[0];
        let c = sp.pairs[p as usize].c;
        match calls.iter_mut().find(|(_, cs)| !cs.contains(&c)) {
            Some((ps, cs)) => {
                ps.push(p);
                cs.insert(c);
            }
            None => calls.push((vec![p], [c].into_iter().collect())),
        }
    }
    let m = &opts.model;
    for (ps, _) in calls {
        let sep: f64 = ps.iter().map(|&p| single_cost(sp, p, m)).sum();
        let grouped = m.call_s + sep - ps.len() as f64 * (m.call_s - m.member_s);
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
    out
}

fn member_group(sp: &StepPlan, ps: &[u32], kind: GroupKind) -> Group {
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
        row: 0,
        col: 0,
    };
    Group {
        kind,
        pairs: ps.to_vec(),
        m: pr0.m,
        n: pr0.n,
        k: pr0.k,
        a: ps.iter().map(|&p| place(sp.pairs[p as usize].a)).collect(),
        b: ps.iter().map(|&p| place(sp.pairs[p as usize].b)).collect(),
        c: ps.iter().map(|&p| place(sp.pairs[p as usize].c)).collect(),
        a_access: Access::Packed,
        b_access: Access::Packed,
        c_access: Access::Packed,
        flops: ps.iter().map(|&p| sp.pairs[p as usize].flops()).sum(),
        wasted_flops: 0.0,
        packed_elems: 0,
        predicted_s: 0.0,
        uncoalesced_s: 0.0,
        reason: String::new(),
    }
}

/// Output layout: the blocks of each rectangle or free-axis group that is their only writer
/// tile one row-major `m x n` matrix, so its GEMM writes in place; every other block is
/// row-major, after them.
fn assign_output_layout(sp: &mut StepPlan, groups: &[Group]) {
    let g = &sp.geometry;
    let nout = sp.out_keys.len();
    let dims: Vec<Vec<usize>> = sp
        .out_keys
        .iter()
        .map(|key| {
            key.iter()
                .zip(&g.out_legs)
                .map(|(&s, l)| l.space.dim_of(s as usize))
                .collect()
        })
        .collect();
    let mut layouts: Vec<Option<Layout>> = vec![None; nout];
    let mut offset = 0usize;
    // output blocks written by exactly one group can be laid out for that group
    let mut writers = vec![0u32; nout];
    for gr in groups {
        for p in &gr.c {
            writers[p.block as usize] += 1;
        }
    }
    let mut order: Vec<&Group> = groups
        .iter()
        .filter(|x| matches!(x.kind, GroupKind::Rectangle | GroupKind::FreeAxis))
        .filter(|x| x.c.iter().all(|p| writers[p.block as usize] == 1))
        .collect();
    order.sort_by_key(|x| std::cmp::Reverse(x.m * x.n));
    for gr in order {
        if gr.c.iter().any(|p| layouts[p.block as usize].is_some()) {
            continue;
        }
        for p in &gr.c {
            let d = &dims[p.block as usize];
            let mut strides = vec![0isize; d.len()];
            let mut acc = gr.n as isize;
            for &ax in g.c_rows.iter().rev() {
                strides[ax] = acc;
                acc *= d[ax] as isize;
            }
            let mut acc = 1isize;
            for &ax in g.c_cols.iter().rev() {
                strides[ax] = acc;
                acc *= d[ax] as isize;
            }
            layouts[p.block as usize] = Some(Layout {
                dims: d.clone(),
                strides,
                offset: offset + p.row * gr.n + p.col,
            });
        }
        offset += gr.m * gr.n;
    }
    sp.out_layouts = layouts
        .into_iter()
        .zip(&dims)
        .map(|(l, d)| {
            l.unwrap_or_else(|| {
                let l = Layout::row_major(d, offset);
                offset += l.len();
                l
            })
        })
        .collect();
    sp.out_len = offset;
    sp.c_mats = sp
        .out_layouts
        .iter()
        .map(|l| mat_shape(l, &g.c_rows, &g.c_cols))
        .collect();
}

/// Zero-copy access when the placed blocks already form one strided matrix.
fn matrix_access(places: &[Place], mats: &[Option<MatShape>], offsets: &[usize]) -> Access {
    let mut rs: Option<isize> = None;
    let mut cs: Option<isize> = None;
    for p in places {
        let Some(m) = mats[p.block as usize] else {
            return Access::Packed;
        };
        if m.m > 1 {
            rs.get_or_insert(m.rs);
        }
        if m.n > 1 {
            cs.get_or_insert(m.cs);
        }
    }
    let cs = cs.unwrap_or(1);
    let p0 = places[0];
    let o0 = offsets[p0.block as usize] as isize;
    let rs = match rs {
        Some(r) => r,
        None => match places.iter().find(|p| p.row != p0.row) {
            Some(p) => {
                let d = offsets[p.block as usize] as isize
                    - o0
                    - (p.col as isize - p0.col as isize) * cs;
                d / (p.row as isize - p0.row as isize)
            }
            None => 1,
        },
    };
    let base = o0 - p0.row as isize * rs - p0.col as isize * cs;
    if base < 0 {
        return Access::Packed;
    }
    let (mut m, mut n) = (0, 0);
    for p in places {
        let mat = mats[p.block as usize].expect("checked");
        let ok = offsets[p.block as usize] as isize
            == base + p.row as isize * rs + p.col as isize * cs
            && (mat.m <= 1 || mat.rs == rs)
            && (mat.n <= 1 || mat.cs == cs);
        if !ok {
            return Access::Packed;
        }
        m = m.max(p.row + mat.m);
        n = n.max(p.col + mat.n);
    }
    Access::Direct(MatShape { m, rs, n, cs }, base as usize)
}

/// Decides each operand's access from the final layouts; prices the group; writes its reason.
fn finalize(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let uncoalesced: f64 = gr.pairs.iter().map(|&p| single_cost(sp, p, model)).sum();
    gr.uncoalesced_s = uncoalesced;
    match gr.kind {
        GroupKind::Grouped => {
            let mut packed = 0;
            let mut member = 0.0;
            for &p in &gr.pairs {
                let pr = sp.pairs[p as usize];
                packed += if sp.a_mats[pr.a as usize].is_none() {
                    pr.m * pr.k
                } else {
                    0
                };
                packed += if sp.b_mats[pr.b as usize].is_none() {
                    pr.k * pr.n
                } else {
                    0
                };
                packed += if sp.c_mats[pr.c as usize].is_none() {
                    2 * pr.m * pr.n
                } else {
                    0
                };
                member += model.gemm_s(pr.m, pr.n, pr.k) - model.call_s + model.member_s;
            }
            gr.packed_elems = packed;
            gr.predicted_s = model.call_s + member + model.pack_s(packed);
            gr.reason = format!(
                "{} pairs of different shapes, each output block once: one grouped call predicted {:.2} us vs {:.2} us as {} GEMMs",
                gr.pairs.len(),
                gr.predicted_s * 1e6,
                uncoalesced * 1e6,
                gr.pairs.len()
            );
        }
        GroupKind::Single | GroupKind::Batched => {
            let mut packed = 0;
            for ((pa, pb), pc) in gr.a.iter().zip(&gr.b).zip(&gr.c) {
                let pr = (gr.m, gr.n, gr.k);
                packed += if sp.a_mats[pa.block as usize].is_none() {
                    pr.0 * pr.2
                } else {
                    0
                };
                packed += if sp.b_mats[pb.block as usize].is_none() {
                    pr.2 * pr.1
                } else {
                    0
                };
                packed += if sp.c_mats[pc.block as usize].is_none() {
                    2 * pr.0 * pr.1
                } else {
                    0
                };
            }
            let all = |mats: &[Option<MatShape>], ps: &[Place]| {
                ps.iter().all(|p| mats[p.block as usize].is_some())
            };
            gr.a_access = if all(&sp.a_mats, &gr.a) {
                Access::Direct(sp.a_mats[gr.a[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.b_access = if all(&sp.b_mats, &gr.b) {
                Access::Direct(sp.b_mats[gr.b[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.c_access = if all(&sp.c_mats, &gr.c) {
                Access::Direct(sp.c_mats[gr.c[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.packed_elems = packed;
            let n = gr.pairs.len();
            gr.predicted_s = if gr.kind == GroupKind::Single {
                model.gemm_s(gr.m, gr.n, gr.k) + model.pack_s(packed)
            } else {
                model.call_s
                    + n as f64 * model.batched_member_s(gr.m, gr.n, gr.k)
                    + model.pack_s(packed)
            };
            gr.reason = if gr.kind == GroupKind::Single {
                "no coalescing candidate predicted faster than one GEMM".into()
            } else {
                format!(
                    "{n} pairs of shape {}x{}x{}: one batched call predicted {:.2} us vs {:.2} us as {n} GEMMs",
                    gr.m,
                    gr.n,
                    gr.k,
                    gr.predicted_s * 1e6,
                    uncoalesced * 1e6
                )
            };
        }
        _ => {
            gr.a_access = matrix_access(&gr.a, &sp.a_mats, &sp.a_offsets);
            gr.b_access = matrix_access(&gr.b, &sp.b_mats, &sp.b_offsets);
            let c_off: Vec<usize> = sp.out_layouts.iter().map(|l| l.offset).collect();
            gr.c_access = matrix_access(&gr.c, &sp.c_mats, &c_off);
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
            let what = match gr.kind {
                GroupKind::FreeAxis => format!("one contracted block shared: {} A blocks stacked as rows, {} B blocks as columns", gr.a.len(), gr.b.len()),
                GroupKind::ContractionAxis => format!("one output block: {} contributions concatenated along k", gr.pairs.len()),
                _ => format!(
                    "coupled sector fully populated ({} A x {} B blocks, every pair present)",
                    gr.a.len(),
                    gr.b.len()
                ),
            };
            gr.reason = format!(
                "{what}; one {}x{}x{} GEMM predicted {:.2} us vs {:.2} us as {} GEMMs; A {}, B {}, C {}",
                gr.m,
                gr.n,
                gr.k,
                gr.predicted_s * 1e6,
                uncoalesced * 1e6,
                gr.pairs.len(),
                access_word(&gr.a_access),
                access_word(&gr.b_access),
                access_word(&gr.c_access)
            );
        }
    }
}

fn access_word(a: &Access) -> &'static str {
    match a {
        Access::Direct(..) => "zero-copy",
        Access::Packed => "packed",
    }
}

fn scratch_of(g: &Group) -> usize {
    match g.kind {
        GroupKind::Single | GroupKind::Batched | GroupKind::Grouped => {
            g.m * g.k + g.k * g.n + g.m * g.n
        }
        _ => {
            let mut s = 0;
            if g.a_access.is_packed() {
                s += g.m * g.k;
            }
            if g.b_access.is_packed() {
                s += g.k * g.n;
            }
            if g.c_access.is_packed() {
                s += g.m * g.n;
            }
            s
        }
    }
}

/// Groups linked by a shared output block end up in one component; components are independent.
fn components(groups: &[Group], nout: usize) -> Vec<Vec<u32>> {
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            p[r] = p[p[r]];
            r = p[r];
        }
        r
    }
    let mut owner: Vec<Option<usize>> = vec![None; nout];
    for (gi, g) in groups.iter().enumerate() {
        for c in &g.c {
            match owner[c.block as usize] {
                None => owner[c.block as usize] = Some(gi),
                Some(o) => {
                    let (x, y) = (find(&mut parent, o), find(&mut parent, gi));
                    parent[x] = y;
                }
            }
        }
    }
    let mut comp: HashMap<usize, Vec<u32>> = HashMap::new();
    for gi in 0..groups.len() {
        let r = find(&mut parent, gi);
        comp.entry(r).or_default().push(gi as u32);
    }
    let mut v: Vec<Vec<u32>> = comp.into_values().collect();
    v.sort();
    v
}
