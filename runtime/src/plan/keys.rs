//! The planning draft's block keys: per block pair, dense ids of its row, contracted and
//! column keys, and each contracted key's coupled sector.

use crate::block::DynTensor;
use crate::hash::{FxMap, InlineKey};
use crate::scalar::{Conj, Scalar};
use crate::step::{Geometry, PairGemm};

/// Per-pair ids of the row key, the contracted key and the column key (dense, from 0), and
/// per contracted key its coupled sector.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    pub(super) r: Vec<u32>,
    pub(super) kk: Vec<u32>,
    pub(super) nn: Vec<u32>,
    pub(super) kk_class: Vec<u32>,
    /// How many distinct row, contracted and column keys.
    pub(super) counts: [usize; 3],
}

impl Keys {
    /// Approximate bytes held.
    pub(super) fn approx_bytes(&self) -> usize {
        4 * (self.r.len() + self.kk.len() + self.nn.len() + self.kk_class.len())
    }
}

/// The dense id of `key`, new keys numbered in order of first appearance.
fn intern(map: &mut FxMap<InlineKey, u32>, key: InlineKey) -> u32 {
    let n = map.len() as u32;
    *map.entry(key).or_insert(n)
}

/// The keys of `pairs` of operands `a` and `b`.
pub(super) fn keys<T: Scalar>(
    a: &DynTensor<T>,
    b: &DynTensor<T>,
    g: &Geometry,
    pairs: &[PairGemm],
) -> Keys {
    let (mut rm, mut km, mut nm) = (FxMap::default(), FxMap::default(), FxMap::default());
    let mut cm: FxMap<Vec<i64>, u32> = FxMap::default();
    let mut a_row = Vec::new();
    let mut a_kk = Vec::new();
    let mut kk_charge: Vec<Vec<i64>> = Vec::new();
    let sign = if g.conj.0 == Conj::Yes { -1 } else { 1 };
    for blk in a.blocks() {
        a_row.push(intern(&mut rm, InlineKey::pick(&blk.key, &g.a_free)));
        let id = intern(&mut km, InlineKey::pick(&blk.key, &g.a_contr));
        if id as usize == kk_charge.len() {
            let mut q = g.symmetry.zero();
            for &l in &g.a_contr {
                let s = blk.key[l];
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
        .map(|blk| intern(&mut nm, InlineKey::pick(&blk.key, &g.b_free)))
        .collect();
    let kk_class: Vec<u32> = kk_charge
        .into_iter()
        .map(|q| {
            let n = cm.len() as u32;
            *cm.entry(q).or_insert(n)
        })
        .collect();
    Keys {
        r: pairs.iter().map(|p| a_row[p.a as usize]).collect(),
        kk: pairs.iter().map(|p| a_kk[p.a as usize]).collect(),
        nn: pairs.iter().map(|p| b_nn[p.b as usize]).collect(),
        kk_class,
        counts: [rm.len(), km.len(), nm.len()],
    }
}
