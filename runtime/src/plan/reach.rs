//! How each member GEMM of a step reaches its blocks: the transpose cache (blocks copied once
//! per call for several members) and the member records (in place, cached, copied, or read
//! as strided sub-matrices), once the groups, the output and the copies are fixed.

use super::group::{Group, Member, Reach, SplitAt};
use super::step_plan::{OperandPlan, StepPlan};
use crate::block::DynTensor;
use crate::scalar::Scalar;
use crate::step::Side;
use crate::view::SplitShape;

/// Blocks that need a transpose and are used by two or more member GEMMs (that do not read
/// them as sub-GEMMs, `split`, empty when none does) get a slot in a per-step cache (transposed once instead of
/// once per use).
pub(super) fn transpose_cache<T: Scalar>(
    groups: &[Group],
    split: &[Option<(Side, SplitShape)>],
    op: &mut OperandPlan,
    t: &DynTensor<T>,
    side: Side,
) {
    let mut uses = vec![0u32; op.mats.len()];
    let mut i = 0;
    for g in groups.iter().filter(|g| g.is_members()) {
        for p in g.places(side) {
            let splits = split.get(i).is_some_and(|x| x.is_some_and(|x| x.0 == side));
            if op.mats[p.block as usize].is_none() && !splits {
                uses[p.block as usize] += 1;
            }
            i += 1;
        }
    }
    let mut off = 0;
    op.cache = uses
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
    op.cache_len = off;
}

/// The member groups' records (see [`Member`]), once accesses, first writes, the transpose
/// cache and the copies are fixed; `split`: per member, the side it reads as sub-GEMMs
/// (empty: none).
pub(super) fn member_records(
    sp: &mut StepPlan,
    groups: &mut [Group],
    split: &[Option<(Side, SplitShape)>],
) {
    let reach = |op: &OperandPlan, i: usize| match op.mats[i] {
        Some(s) => Reach::Direct {
            at: op.offsets[i],
            rs: s.rs,
            cs: s.cs,
        },
        None => match op.cache[i] {
            Some(o) => Reach::Cached(o),
            None => Reach::Packed(op.block_pack[i]),
        },
    };
    let n = groups
        .iter()
        .filter(|g| g.is_members())
        .map(|g| g.pairs.len())
        .sum();
    let mut members = Vec::with_capacity(n);
    let mut splits = Vec::new();
    for gr in groups.iter_mut().filter(|g| g.is_members()) {
        gr.members = members.len() as u32;
        let [a, b] = &sp.operands;
        for ((pa, pb), pc) in gr.a().iter().zip(gr.b()).zip(gr.c()) {
            let c = pc.block as usize;
            let (mut ra, mut rb) = (reach(a, pa.block as usize), reach(b, pb.block as usize));
            if let Some(&Some((side, s))) = split.get(members.len()) {
                let (r, op, blk) = match side {
                    Side::A => (&mut ra, a, pa.block),
                    Side::B => (&mut rb, b, pb.block),
                };
                *r = Reach::Split(splits.len() as u32);
                splits.push(SplitAt {
                    at: op.offsets[blk as usize],
                    split: s,
                });
            }
            members.push(Member {
                a: ra,
                b: rb,
                c: match sp.c_mats[c] {
                    Some(s) => Reach::Direct {
                        at: sp.c_offsets[c],
                        rs: s.rs,
                        cs: s.cs,
                    },
                    None => Reach::Packed(sp.c_pack[c]),
                },
                first: pc.first,
            });
        }
    }
    sp.members = members;
    sp.splits = splits;
}
