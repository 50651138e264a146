//! Partial traces: pairs of legs of one tensor joined and summed over, block by block (only
//! blocks whose traced legs sit in the same sector contribute: their diagonals).

use super::{BlockKey, DynTensor};
use crate::error::{Error, Result};
use crate::hash::FxMap;
use crate::scalar::Scalar;
use crate::symmetry::{check_contractible, Leg};
use crate::view::MAX_RANK;

impl<T: Scalar> DynTensor<T> {
    /// Sums over each pair of legs `(a, b)` (same space, opposite flows: checked, the error
    /// naming `names[k]` for pair `k`), removing them; the other legs keep their order.
    pub fn partial_trace(&self, pairs: &[(usize, usize)], names: &[String]) -> Result<Self> {
        let r = self.rank();
        let mut gone = vec![false; r];
        for (k, &(a, b)) in pairs.iter().enumerate() {
            let name = || names.get(k).cloned().unwrap_or_else(|| format!("pair {k}"));
            if a >= r || b >= r || a == b || gone[a] || gone[b] {
                return Err(Error::InvalidLegs {
                    reason: format!(
                        "traced index `{}` names legs {a} and {b} of a rank-{r} tensor",
                        name()
                    ),
                });
            }
            gone[a] = true;
            gone[b] = true;
            check_contractible(
                &self.legs()[a],
                &self.legs()[b],
                || format!("traced index `{}` (legs {a} and {b})", name()),
                || "a traced pair joins an `Out` leg with an `In` leg of the same space".into(),
            )?;
        }
        let keep: Vec<usize> = (0..r).filter(|&i| !gone[i]).collect();
        let legs: Vec<Leg> = keep.iter().map(|&i| self.legs()[i].clone()).collect();
        // the blocks on the diagonal of every traced pair, by their remaining key
        let mut by_key: FxMap<BlockKey, Vec<usize>> = FxMap::default();
        for (bi, b) in self.blocks().iter().enumerate() {
            if pairs.iter().all(|&(a, c)| b.key[a] == b.key[c]) {
                let k: BlockKey = keep.iter().map(|&i| b.key[i]).collect();
                by_key.entry(k).or_default().push(bi);
            }
        }
        let mut keys: Vec<Vec<usize>> = by_key
            .keys()
            .map(|k| k.iter().map(|&x| x as usize).collect())
            .collect();
        keys.sort();
        let mut out =
            DynTensor::zeros_with_blocks_in(self.symmetry(), legs, self.charge().clone(), &keys)?;
        for (key, blocks) in &by_key {
            let Some(oi) = out.find_block(key) else {
                continue;
            };
            let ol = out.blocks()[oi].layout.clone();
            for &bi in blocks {
                let l = &self.blocks()[bi].layout;
                // walk the kept axes; sum the diagonal of the traced ones
                let n: usize = keep.iter().map(|&i| l.dims[i]).product();
                let diag: usize = pairs.iter().map(|&(a, _)| l.dims[a]).product();
                let mut idx = [0usize; MAX_RANK];
                for _ in 0..n {
                    let (mut src, mut dst) = (l.offset as isize, ol.offset as isize);
                    for (j, &i) in keep.iter().enumerate() {
                        src += idx[j] as isize * l.strides[i];
                        dst += idx[j] as isize * ol.strides[j];
                    }
                    let mut s = T::zero();
                    let mut d = [0usize; MAX_RANK];
                    for _ in 0..diag {
                        let mut at = src;
                        for (p, &(a, b)) in pairs.iter().enumerate() {
                            at += d[p] as isize * (l.strides[a] + l.strides[b]);
                        }
                        s += self.data()[at as usize];
                        bump(&mut d, pairs.iter().map(|&(a, _)| l.dims[a]));
                    }
                    out.data_mut()[dst as usize] += s;
                    bump(&mut idx, keep.iter().map(|&i| l.dims[i]));
                }
            }
        }
        Ok(out)
    }
}

/// Advances a row-major multi-index over `dims` (the last fastest).
fn bump(
    idx: &mut [usize; MAX_RANK],
    dims: impl DoubleEndedIterator<Item = usize> + ExactSizeIterator,
) {
    let n = dims.len();
    for (k, d) in dims.rev().enumerate() {
        let j = n - 1 - k;
        idx[j] += 1;
        if idx[j] < d {
            return;
        }
        idx[j] = 0;
    }
}
