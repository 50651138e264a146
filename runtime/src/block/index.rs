//! The block index (blocks and their lookup by key) and the selection rule: which keys a
//! tensor's legs and charge allow.

use super::{Block, BlockKey};
use crate::error::{Error, Result};
use crate::hash::FxMap;
use crate::symmetry::{Charge, Leg, Symmetry};
use std::sync::{Arc, OnceLock};

/// The blocks of a tensor and their lookup by key; shared between tensors of one structure.
#[derive(Debug)]
pub struct BlockIndex {
    pub(super) blocks: Vec<Block>,
    /// The lookup by key, built on first use (a plan's intermediates never look a key up).
    index: Arc<OnceLock<FxMap<BlockKey, usize>>>,
    /// Fingerprint of keys and layouts, computed on first use (a plan's intermediates never
    /// ask for it).
    fp: OnceLock<u64>,
}

impl BlockIndex {
    /// Indexes blocks (sorted by key, non-overlapping layouts).
    pub fn new(blocks: Vec<Block>) -> Self {
        Self::with_index(blocks, Arc::new(OnceLock::new()))
    }
    /// The position of the block with this key.
    pub(super) fn find(&self, key: &[u32]) -> Option<usize> {
        let index = self.index.get_or_init(|| {
            self.blocks
                .iter()
                .enumerate()
                .map(|(i, b)| (b.key.clone(), i))
                .collect()
        });
        index.get(key).copied()
    }
    /// Indexes `blocks`, which have this index's keys in the same order (other layouts),
    /// sharing its key lookup.
    pub(crate) fn sharing_keys(&self, blocks: Vec<Block>) -> Self {
        debug_assert!(
            blocks.len() == self.blocks.len()
                && blocks.iter().zip(&self.blocks).all(|(x, y)| x.key == y.key),
            "the same keys in the same order"
        );
        Self::with_index(blocks, self.index.clone())
    }
    fn with_index(blocks: Vec<Block>, index: Arc<OnceLock<FxMap<BlockKey, usize>>>) -> Self {
        BlockIndex {
            blocks,
            index,
            fp: OnceLock::new(),
        }
    }
    /// The blocks.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }
    /// Fingerprint of keys and layouts.
    pub fn fingerprint(&self) -> u64 {
        *self.fp.get_or_init(|| {
            let mut h = crate::hash::Fx::default();
            for b in &self.blocks {
                for &k in b.key.iter() {
                    h.write(k as u64);
                }
                for &st in &b.layout.strides {
                    h.write(st as u64);
                }
                h.write(b.layout.offset as u64);
            }
            h.finish()
        })
    }
}

/// Calls `f(dense index, buffer address)` for every element of every block.
pub(super) fn visit_elements(legs: &[Leg], blocks: &[Block], mut f: impl FnMut(&[usize], usize)) {
    let rank = legs.len();
    let mut idx = vec![0usize; rank];
    let mut pos = vec![0usize; rank];
    for b in blocks {
        let base: Vec<usize> = b
            .key
            .iter()
            .zip(legs)
            .map(|(&s, l)| l.space.offset_of(s as usize))
            .collect();
        let l = &b.layout;
        pos.iter_mut().for_each(|p| *p = 0);
        for _ in 0..l.len() {
            let mut addr = l.offset as isize;
            for k in 0..rank {
                idx[k] = base[k] + pos[k];
                addr += pos[k] as isize * l.strides[k];
            }
            f(&idx, addr as usize);
            for k in (0..rank).rev() {
                pos[k] += 1;
                if pos[k] < l.dims[k] {
                    break;
                }
                pos[k] = 0;
            }
        }
    }
}

/// The symmetry every leg shares.
pub(crate) fn common_symmetry(legs: &[Leg]) -> Result<Symmetry> {
    let Some(first) = legs.first() else {
        return Ok(Symmetry::none());
    };
    let s = first.space.symmetry();
    for (i, l) in legs.iter().enumerate().skip(1) {
        if l.space.symmetry() != s {
            return Err(Error::SymmetryMismatch {
                what: format!("leg {i}"),
                left: s.to_string(),
                right: l.space.symmetry().to_string(),
            });
        }
    }
    Ok(s.clone())
}

/// Tensors have at most [`crate::view::MAX_RANK`] legs.
pub(crate) fn check_rank(rank: usize) -> Result<()> {
    if rank > crate::view::MAX_RANK {
        return Err(Error::RankMismatch {
            what: format!(
                "a tensor (at most {} legs are supported)",
                crate::view::MAX_RANK
            ),
            expected: crate::view::MAX_RANK,
            found: rank,
        });
    }
    Ok(())
}

pub(super) fn check_charge(symmetry: &Symmetry, charge: &Charge) -> Result<()> {
    let ok =
        charge.0.len() == symmetry.len() && symmetry.charge(&charge.0).is_ok_and(|c| &c == charge);
    if ok {
        Ok(())
    } else {
        Err(Error::ChargeMismatch {
            what: format!("tensor charge (symmetry {symmetry})"),
            expected: symmetry.zero(),
            found: charge.clone(),
        })
    }
}

/// Sum over legs of `sign(flow) * charge` of a block.
pub(crate) fn block_charge(legs: &[Leg], symmetry: &Symmetry, key: &[u32]) -> Charge {
    let mut q = symmetry.zero();
    for (l, &s) in legs.iter().zip(key) {
        symmetry.add_signed(&mut q, l.flow.sign(), &l.space.sectors()[s as usize].charge);
    }
    q
}

pub(super) fn check_key(
    legs: &[Leg],
    symmetry: &Symmetry,
    charge: &Charge,
    key: &[usize],
) -> Result<BlockKey> {
    if key.len() != legs.len() {
        return Err(Error::InvalidBlock {
            key: key.to_vec(),
            reason: format!("has {} sector positions for {} legs", key.len(), legs.len()),
        });
    }
    for (i, (&s, l)) in key.iter().zip(legs).enumerate() {
        if s >= l.space.num_sectors() {
            return Err(Error::InvalidBlock {
                key: key.to_vec(),
                reason: format!(
                    "leg {i} has {} sectors, position {s} is out of range",
                    l.space.num_sectors()
                ),
            });
        }
    }
    let k: BlockKey = key.iter().map(|&x| x as u32).collect();
    let q = block_charge(legs, symmetry, &k);
    if &q != charge {
        return Err(Error::InvalidBlock {
            key: key.to_vec(),
            reason: format!(
                "its charge {q} differs from the tensor charge {charge} (selection rule)"
            ),
        });
    }
    Ok(k)
}

/// Every block key the selection rule allows, sorted.
pub(crate) fn allowed_keys(legs: &[Leg], symmetry: &Symmetry, charge: &Charge) -> Vec<BlockKey> {
    let r = legs.len();
    if r == 0 {
        return if *charge == symmetry.zero() {
            vec![BlockKey::from([])]
        } else {
            Vec::new()
        };
    }
    let mut out = Vec::new();
    let mut key = vec![0u32; r];
    let mut partial = vec![symmetry.zero(); r]; // partial[k] = charge of legs 0..k
    fn rec(
        k: usize,
        legs: &[Leg],
        sym: &Symmetry,
        charge: &Charge,
        key: &mut Vec<u32>,
        partial: &mut Vec<Charge>,
        out: &mut Vec<BlockKey>,
    ) {
        let r = legs.len();
        if k == r - 1 {
            // sign * q_last = charge - partial  =>  q_last = sign * (charge - partial)
            let mut need = charge.clone();
            sym.add_signed(&mut need, -1, &partial[k]);
            if legs[k].flow.sign() < 0 {
                need = sym.neg(&need);
            }
            if let Some(s) = legs[k].space.find(&need) {
                key[k] = s as u32;
                out.push(key.clone().into());
            }
            return;
        }
        for s in 0..legs[k].space.num_sectors() {
            key[k] = s as u32;
            let mut q = partial[k].clone();
            sym.add_signed(
                &mut q,
                legs[k].flow.sign(),
                &legs[k].space.sectors()[s].charge,
            );
            partial[k + 1] = q;
            rec(k + 1, legs, sym, charge, key, partial, out);
        }
    }
    rec(0, legs, symmetry, charge, &mut key, &mut partial, &mut out);
    out.sort();
    out
}

impl<T: crate::scalar::Scalar> super::DynTensor<T> {
    /// A hasher started on the element type and the symmetry (a rank-0 tensor has no leg to
    /// name its symmetry): what both structure fingerprints begin with.
    pub(super) fn type_hash(&self) -> crate::hash::Fx {
        let mut h = crate::hash::Fx::default();
        h.write(crate::hash::type_tag::<T>());
        for k in self.symmetry.kinds() {
            h.write(match k {
                crate::symmetry::ChargeKind::U1 => u64::MAX,
                crate::symmetry::ChargeKind::Zn(n) => *n as u64,
            });
        }
        h
    }

    /// A fingerprint of what a plan's decisions depend on but not its sizes: element type,
    /// symmetry, each leg's sector charges, kind and flow, the charge and the stored blocks'
    /// keys; sector dimensions and layouts are left out. Two tensors whose sector dimensions
    /// alone differ share it (a plan for one is a template for the other).
    pub fn sector_fingerprint(&self) -> u64 {
        let mut h = self.type_hash();
        h.write(self.legs.len() as u64);
        for l in &self.legs {
            h.write(l.flow.sign() as u64);
            h.write(l.space.kind() as u64);
            h.write(l.space.num_sectors() as u64);
            for s in l.space.sectors() {
                for &q in s.charge.values() {
                    h.write(q as u64);
                }
            }
        }
        for &q in self.charge.values() {
            h.write(q as u64);
        }
        h.write(self.st.blocks.len() as u64);
        for b in &self.st.blocks {
            for &s in b.key.iter() {
                h.write(s as u64);
            }
        }
        h.finish()
    }
}
