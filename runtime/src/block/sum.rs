//! The direct sum of two tensors along one leg: what a subspace expansion appends to a bond.

use super::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::symmetry::{check_same_leg, Leg, Space};
use crate::view::Layout;
use std::sync::Arc;

impl<T: Scalar> DynTensor<T> {
    /// The direct sum of `self` and `other` along leg `leg`: that leg's space holds, per
    /// charge, `self`'s states first, then `other`'s (a charge in only one of them keeps its
    /// dimension; sectors in `self`'s order, then `other`'s new ones); every other leg, the
    /// flows and the total charge must be the same. `other` may be a tensor without blocks
    /// (zeros: a padding). A leg out of range, or a leg, flow or charge that differs, is an
    /// error naming it.
    pub fn direct_sum(&self, other: &Self, leg: usize) -> Result<Self> {
        let rank = self.rank();
        if leg >= rank || other.rank() != rank {
            return Err(Error::InvalidArgument {
                name: "leg".into(),
                reason: format!(
                    "leg {leg} of tensors of rank {rank} and {}: expected a leg below both",
                    other.rank()
                ),
            });
        }
        for (i, (a, b)) in self.legs().iter().zip(other.legs()).enumerate() {
            if i != leg {
                check_same_leg(a, b, || format!("direct sum along leg {leg}: leg {i}"))?;
            }
        }
        let (la, lb) = (&self.legs()[leg], &other.legs()[leg]);
        if la.flow != lb.flow
            || la.space.kind() != lb.space.kind()
            || self.charge() != other.charge()
        {
            return Err(Error::InvalidArgument {
                name: format!("leg {leg}"),
                reason: format!(
                    "a direct sum needs one flow, one kind of space and one total charge: \
                     flows {:?} and {:?}, charges {:?} and {:?}",
                    la.flow,
                    lb.flow,
                    self.charge().values(),
                    other.charge().values()
                ),
            });
        }
        let (space, from_a, from_b) = summed_space(&la.space, &lb.space)?;
        let mut legs = self.legs().to_vec();
        legs[leg] = Leg::new(&Arc::new(space), la.flow);
        let remap = |key: &[u32], map: &[usize]| -> Vec<usize> {
            let mut k: Vec<usize> = key.iter().map(|&s| s as usize).collect();
            k[leg] = map[k[leg]];
            k
        };
        let mut keys: Vec<Vec<usize>> = self
            .blocks()
            .iter()
            .map(|b| remap(&b.key, &from_a))
            .collect();
        keys.extend(other.blocks().iter().map(|b| remap(&b.key, &from_b)));
        keys.sort();
        keys.dedup();
        let mut out = DynTensor::zeros_with_blocks(legs, self.charge().clone(), &keys)?;
        for (src, map, second) in [(self, &from_a, false), (other, &from_b, true)] {
            for b in src.blocks() {
                let key = remap(&b.key, map);
                let key: Vec<u32> = key.iter().map(|&x| x as u32).collect();
                let Some(at) = out.find_block(&key) else {
                    return Err(Error::InvalidSpec {
                        reason: format!("direct sum: block {key:?} missing from the sum"),
                    });
                };
                let dst = out.blocks()[at].clone();
                // `other`'s states follow `self`'s in the summed sector
                let shift = if second {
                    let q = &lb.space.sectors()[b.key[leg] as usize].charge;
                    la.space.find(q).map_or(0, |i| la.space.dim_of(i))
                } else {
                    0
                };
                let mut to = dst.layout.clone();
                to.offset =
                    (to.offset as isize + shift as isize * dst.layout.strides[leg]) as usize;
                to.dims = b.layout.dims.clone();
                copy_strided(out.data_mut_raw(), &to, src.data(), &b.layout);
            }
        }
        Ok(out)
    }

    /// The buffer, for writers that keep the structure (no identity marks to forget: a new
    /// tensor has none).
    fn data_mut_raw(&mut self) -> &mut [T] {
        &mut self.data
    }
}

/// The summed space and, per sector of each summand, its sector in the sum.
fn summed_space(a: &Space, b: &Space) -> Result<(Space, Vec<usize>, Vec<usize>)> {
    let mut sectors: Vec<(Vec<i64>, usize)> = a
        .sectors()
        .iter()
        .map(|s| (s.charge.values().to_vec(), s.dim))
        .collect();
    let from_a: Vec<usize> = (0..sectors.len()).collect();
    let mut from_b = Vec::with_capacity(b.num_sectors());
    for s in b.sectors() {
        match a.find(&s.charge) {
            Some(i) => {
                sectors[i].1 += s.dim;
                from_b.push(i);
            }
            None => {
                from_b.push(sectors.len());
                sectors.push((s.charge.values().to_vec(), s.dim));
            }
        }
    }
    let space = Space::new(a.symmetry(), &sectors, a.kind())?;
    Ok((space, from_a, from_b))
}

/// Copies the view `from` of `src` into the view `to` of `dst` (the same dims).
fn copy_strided<T: Scalar>(dst: &mut [T], to: &Layout, src: &[T], from: &Layout) {
    let dims = &from.dims;
    let n: usize = dims.iter().product();
    if n == 0 {
        return;
    }
    let r = dims.len();
    let mut idx = vec![0usize; r];
    let (mut s, mut d) = (from.offset as isize, to.offset as isize);
    for _ in 0..n {
        dst[d as usize] = src[s as usize];
        // the odometer, last axis fastest
        let mut ax = r;
        while ax > 0 {
            ax -= 1;
            idx[ax] += 1;
            s += from.strides[ax];
            d += to.strides[ax];
            if idx[ax] < dims[ax] {
                break;
            }
            s -= from.strides[ax] * dims[ax] as isize;
            d -= to.strides[ax] * dims[ax] as isize;
            idx[ax] = 0;
        }
    }
}
