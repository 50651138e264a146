//! Planning one pairwise step: block pairs -> groups, by the cost model; the output's layout.
//! The driver; the policy lives in `family` (coupled sectors), `members` (batched and
//! grouped calls), `layout` (output layout, operand access) and `price` (cost and reason).

use super::family::{choose_family, concat_group, family_kind, Placer};
use super::group::{Group, GroupKind};
use super::keys::{keys, Keys};
use super::layout::{
    assign_output_layout, assign_packs, assign_thin, components, first_writes, scratch_of,
};
use super::members::{batch_singles, member_group};
use super::options::PlanOptions;
use super::price::{finalize, member_splits, Draft};
use super::reach::{member_records, transpose_cache};
pub use super::step_plan::{Components, OperandPlan, StepPlan};
use crate::block::{describe, max_elements, Block, BlockIndex, BlockKey, DynTensor};
use crate::error::{Error, Result};
use crate::hash::FxMap;
use crate::scalar::Scalar;
use crate::step::{enumerate, geometry, Geometry, PairGemm, PairList, Side, StepDesc};
use crate::view::mat_shape;
use std::sync::Arc;

/// Plans one step on the operands' structure (values are not read); the planner lays out the
/// output.
pub fn plan_step<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    desc: &StepDesc,
    opts: &PlanOptions,
) -> Result<StepPlan> {
    let sp = plan_step_with(a, b, desc, opts, None)?;
    sp.ok_or_else(|| Error::InvalidSpec {
        reason: "a step planned without a fixed output has no output".into(),
    })
}

/// Plans one step whose output is `fixed`'s blocks and layouts (the target of `=` or `+=`,
/// written in place): None when `fixed` lacks a block the step produces.
pub fn plan_step_with<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    desc: &StepDesc,
    opts: &PlanOptions,
    fixed: Option<&DynTensor<T>>,
) -> Result<Option<StepPlan>> {
    plan_step_like(a, b, desc, opts, fixed, None)
}

/// [`plan_step_with`], given `template`: this step's plan for operands (and target) with the
/// same sectors and blocks, only sector dimensions differing. Its pairs and its decisions
/// (which pairs are concatenated, and how) are kept; sizes, batches, layouts, access and
/// prices are recomputed. A template that does not fit is ignored.
pub(crate) fn plan_step_like<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    desc: &StepDesc,
    opts: &PlanOptions,
    fixed: Option<&DynTensor<T>>,
    template: Option<&StepPlan>,
) -> Result<Option<StepPlan>> {
    let g = geometry(a, b, desc)?;
    let template = template.filter(|t| {
        t.desc == *desc
            && t.operands[0].mats.len() == a.num_blocks()
            && t.operands[1].mats.len() == b.num_blocks()
            && fixed.is_none_or(|f| f.num_blocks() == t.out_keys.len())
    });
    let Some((pairs, out_keys)) = pair_list(a, b, &g, fixed, template) else {
        return Ok(None);
    };
    check_output_size::<T>(&g, &out_keys, desc)?;
    let operands = [
        OperandPlan::new(a, &g, Side::A),
        OperandPlan::new(b, &g, Side::B),
    ];
    let ks = match template {
        Some(t) => t.keys.clone(),
        None => Arc::new(keys(a, b, &g, &pairs)),
    };
    let mut sp = StepPlan::undecided(desc.clone(), g, (pairs, out_keys), operands, ks.clone());
    let model = opts.model;
    // what only planning reads: dropped when this function returns
    let draft = Draft::new(&sp, &model);
    let groups = match template.and_then(|t| regroup(&sp, &draft, &ks, t, opts)) {
        Some(groups) => groups,
        None => group_pairs(&sp, &draft, &ks, opts),
    };
    let out_blocks = match fixed {
        None => assign_output_layout(&mut sp, &groups),
        Some(t) => fixed_output(&mut sp, t),
    };
    finish(
        &mut sp,
        &draft,
        (groups, out_blocks),
        &model,
        [a, b],
        template,
    );
    Ok(Some(sp))
}

/// The output blocks of a step that writes into `t` (its blocks and layouts, as they are).
fn fixed_output<T: Scalar>(sp: &mut StepPlan, t: &DynTensor<T>) -> Vec<Block> {
    sp.out_len = t.data().len();
    let (rows, cols) = (&sp.geometry.c_rows, &sp.geometry.c_cols);
    sp.c_mats = t
        .blocks()
        .iter()
        .map(|b| mat_shape(&b.layout, rows, cols))
        .collect();
    t.blocks().to_vec()
}

/// Completes a step once its groups and output blocks are fixed: prices and accesses, first
/// writes, hazard-free components, scratch, the transpose cache, the precomputed copies and
/// the shared output index (sharing the key lookup of the template's, whose output has the
/// same keys in the same order, when given).
fn finish<T: Scalar>(
    sp: &mut StepPlan,
    draft: &Draft,
    (mut groups, out_blocks): (Vec<Group>, Vec<Block>),
    model: &super::cost::CostModel,
    [a, b]: [&DynTensor<T>; 2],
    template: Option<&StepPlan>,
) {
    sp.c_offsets = out_blocks.iter().map(|b| b.layout.offset).collect();
    sp.flops = sp.pairs.iter().map(|p| p.flops()).sum();
    for gr in &mut groups {
        finalize(sp, draft, gr, model);
    }
    sp.zero_blocks = first_writes(&mut groups, sp.out_keys.len());
    sp.components = components(&groups, sp.out_keys.len());
    sp.scratch_elems = groups.iter().map(scratch_of).max().unwrap_or(0);
    let split = member_splits(sp, &groups, model);
    for (side, t) in [(Side::A, a), (Side::B, b)] {
        transpose_cache(&groups, &split, &mut sp.operands[side.index()], t, side);
    }
    assign_thin(sp, &mut groups, [a.blocks(), b.blocks()], model);
    let blocks = [a.blocks(), b.blocks(), &out_blocks];
    assign_packs(sp, &mut groups, blocks, template.map(|t| &t.packs));
    member_records(sp, &mut groups, &split);
    sp.groups = groups;
    sp.out_index = Arc::new(match template {
        Some(t) => t.out_index.sharing_keys(out_blocks),
        None => BlockIndex::new(out_blocks),
    });
}

/// Points the pairs at the target's blocks (writing in place into `t`); false when `t` lacks
/// a block the step produces.
fn onto_target<T: Scalar>(list: &mut PairList, t: &DynTensor<T>) -> bool {
    let Some(remap) = list
        .out_keys
        .iter()
        .map(|k| t.find_block(k).map(|i| i as u32))
        .collect::<Option<Vec<u32>>>()
    else {
        return false;
    };
    for p in &mut list.pairs {
        p.c = remap[p.c as usize];
    }
    list.out_keys = t.blocks().iter().map(|b| b.key.clone()).collect();
    true
}

/// The step's groups: the pairs of each coupled sector (the charge carried across the
/// contracted legs) split into families, each concatenated into one GEMM, and the pairs left
/// alone batched or grouped.
fn group_pairs(sp: &StepPlan, draft: &Draft, ks: &Keys, opts: &PlanOptions) -> Vec<Group> {
    let mut classes: FxMap<u32, Vec<u32>> = FxMap::default();
    for (i, p) in sp.pairs.iter().enumerate() {
        if p.m > 0 && p.n > 0 && p.k > 0 {
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
    let mut placer = Placer::new(sp, ks);
    for cid in class_ids {
        let ps = &classes[&cid];
        for fam in choose_family(sp, draft, ks, ps, opts, &mut placer, &mut singles) {
            let kind = family_kind(sp, ks, &fam, &mut placer);
            groups.push(concat_group(sp, ks, &fam, kind, &mut placer));
        }
    }
    groups.extend(batch_singles(sp, draft, singles, opts));
    groups
}

/// Whether the pairs all have one shape.
fn one_shape(sp: &StepPlan, ps: &[u32]) -> bool {
    let shape = |p: u32| {
        let x = &sp.pairs[p as usize];
        (x.m, x.n, x.k)
    };
    ps.iter().all(|&p| shape(p) == shape(ps[0]))
}

/// The step's pairs and output keys: the template's (its keys shared), resized, or
/// enumerated (and pointed at the target's blocks); None when the target lacks a block the
/// step produces.
fn pair_list<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    g: &Geometry,
    fixed: Option<&DynTensor<T>>,
    template: Option<&StepPlan>,
) -> Option<(Vec<PairGemm>, Arc<[BlockKey]>)> {
    if let Some(t) = template {
        return Some((resized(&t.pairs, a, b, g), t.out_keys.clone()));
    }
    let mut list = enumerate(a, b, g);
    match fixed {
        Some(t) if !onto_target(&mut list, t) => None,
        _ => Some((list.pairs, list.out_keys.into())),
    }
}

/// A template's pairs with this step's sizes (the same blocks meet: only dimensions moved).
fn resized<T: Scalar>(
    pairs: &[PairGemm],
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    g: &Geometry,
) -> Vec<PairGemm> {
    let prod = |dims: &[usize], axes: &[usize]| axes.iter().map(|&l| dims[l]).product::<usize>();
    // per block its extents, read once (a block meets many pairs)
    let mk: Vec<(usize, usize)> = a
        .blocks()
        .iter()
        .map(|x| {
            (
                prod(&x.layout.dims, &g.a_free),
                prod(&x.layout.dims, &g.a_contr),
            )
        })
        .collect();
    let n: Vec<usize> = b
        .blocks()
        .iter()
        .map(|x| prod(&x.layout.dims, &g.b_free))
        .collect();
    pairs
        .iter()
        .map(|p| {
            let (m, k) = mk[p.a as usize];
            PairGemm {
                m,
                k,
                n: n[p.b as usize],
                ..*p
            }
        })
        .collect()
}

/// The template's groups rebuilt on this step's sizes: its concatenations kept (their
/// places recomputed), its single, batched and grouped calls kept (a batch whose members'
/// shapes now differ is batched anew). None when a pair became empty or non-empty, so the
/// decisions no longer cover the live pairs.
fn regroup(
    sp: &StepPlan,
    draft: &Draft,
    ks: &Keys,
    t: &StepPlan,
    opts: &PlanOptions,
) -> Option<Vec<Group>> {
    let live = |p: u32| {
        let x = &sp.pairs[p as usize];
        x.m > 0 && x.n > 0 && x.k > 0
    };
    let grouped: usize = t.groups.iter().map(|g| g.pairs.len()).sum();
    let nlive = (0..sp.pairs.len() as u32).filter(|&p| live(p)).count();
    if grouped != nlive {
        return None;
    }
    // a batch whose members no longer share a shape is batched anew: those batches first,
    // so that the list is allocated once at its final length
    let mut loose = Vec::new();
    let mut keep = Vec::with_capacity(t.groups.len());
    for g in &t.groups {
        if !g.pairs.iter().all(|&p| live(p)) {
            return None;
        }
        let diverged = g.kind == GroupKind::Batched && !one_shape(sp, &g.pairs);
        if diverged {
            loose.extend_from_slice(&g.pairs);
        }
        keep.push(!diverged);
    }
    let rebatched = batch_singles(sp, draft, loose, opts);
    let kept = keep.iter().filter(|&&k| k).count();
    let mut groups = Vec::with_capacity(kept + rebatched.len());
    let mut placer = Placer::new(sp, ks);
    for (g, _) in t.groups.iter().zip(&keep).filter(|(_, &k)| k) {
        if g.is_members() {
            groups.push(member_group(sp, &g.pairs, g.kind));
        } else {
            groups.push(concat_group(sp, ks, &g.pairs, g.kind, &mut placer));
        }
    }
    groups.extend(rebatched);
    Some(groups)
}

/// The step's result must fit in memory's address space: `TooLarge` (naming the contracted
/// indices and the size) before any size is computed from it.
fn check_output_size<T: Scalar>(g: &Geometry, keys: &[BlockKey], desc: &StepDesc) -> Result<()> {
    let limit = max_elements::<T>();
    let secs: Vec<&[crate::symmetry::Sector]> =
        g.out_legs.iter().map(|l| l.space.sectors()).collect();
    let mut total = 0usize;
    for key in keys {
        total = key
            .iter()
            .zip(&secs)
            .try_fold(1usize, |n, (&s, sec)| n.checked_mul(sec[s as usize].dim))
            .and_then(|n| total.checked_add(n))
            .filter(|&n| n <= limit)
            .ok_or_else(|| Error::TooLarge {
                what: format!(
                    "the result of the step contracting {:?} ({})",
                    desc.names,
                    describe(&g.out_legs)
                ),
                reason: format!("more than {limit} elements"),
            })?;
    }
    Ok(())
}
