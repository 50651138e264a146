//! Identity slices: a rank-3 tensor whose slice at one index of one leg is an identity
//! matrix over its other two legs (a DMRG environment at the MPO's first or last state, in a
//! canonical MPS) can say so, and a plan then skips the GEMMs with it
//! (the planner's coefficient form, `plan/coefficient.rs`). The mark is checked when made and forgotten when the
//! values change.

use super::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::Scalar;

/// How far a marked slice's elements may be from the identity's (it is then set exactly).
pub const IDENTITY_TOL: f64 = 1e-11;

impl<T: Scalar> DynTensor<T> {
    /// Declares that the slice at dense `index` of `leg`, a matrix over the other two legs
    /// (in order), is the identity: refused with `NotIdentity`, naming the sector and element,
    /// unless the tensor has rank 3, the two legs the same space, every diagonal block stored
    /// and every element within [`IDENTITY_TOL`] of the identity's; then the slice is set to
    /// the identity exactly. The mark lasts until the values are next changed.
    pub fn mark_identity(&mut self, leg: usize, index: usize) -> Result<()> {
        let refuse = |reason: String| Error::NotIdentity { leg, index, reason };
        if self.rank() != 3 || leg >= 3 {
            return Err(refuse(format!(
                "an identity slice needs a tensor of rank 3 and a leg below 3 (rank {})",
                self.rank()
            )));
        }
        let (p, q) = match leg {
            0 => (1, 2),
            1 => (0, 2),
            _ => (0, 1),
        };
        let (sp, sq) = (&self.legs[p].space, &self.legs[q].space);
        if sp != sq {
            return Err(refuse(format!("legs {p} and {q} have different spaces")));
        }
        let (sector, at) = self.legs[leg]
            .space
            .locate(index)
            .ok_or_else(|| refuse(format!("index past leg {leg}'s dimension")))?;
        for i in 0..sp.num_sectors() {
            let mut key = [0u32; 3];
            (key[leg], key[p], key[q]) = (sector as u32, i as u32, i as u32);
            if sp.dim_of(i) > 0 && self.find_block(&key).is_none() {
                return Err(refuse(format!(
                    "the diagonal block of sector {i} (legs {p}, {q}) is not stored"
                )));
            }
        }
        let mut writes = Vec::new();
        for b in self
            .st
            .blocks
            .iter()
            .filter(|b| b.key[leg] as usize == sector)
        {
            let l = &b.layout;
            let diag = b.key[p] == b.key[q];
            for x in 0..l.dims[p] {
                for y in 0..l.dims[q] {
                    let addr = l.offset as isize
                        + at as isize * l.strides[leg]
                        + x as isize * l.strides[p]
                        + y as isize * l.strides[q];
                    let want = if diag && x == y { T::one() } else { T::zero() };
                    let got = self.data[addr as usize];
                    if (got - want).abs2() > IDENTITY_TOL * IDENTITY_TOL {
                        return Err(refuse(format!(
                            "block of sectors ({}, {}) element ({x}, {y}) is {:e}, not {}",
                            b.key[p],
                            b.key[q],
                            got.re(),
                            want.re()
                        )));
                    }
                    writes.push((addr as usize, want));
                }
            }
        }
        for (a, v) in writes {
            self.data[a] = v;
        }
        let mark = (leg as u32, index as u32);
        if let Err(pos) = self.identity.binary_search(&mark) {
            self.identity.insert(pos, mark);
        }
        self.fp = Default::default();
        Ok(())
    }

    /// The identity slices marked, as `(leg, dense index)`.
    pub fn identity_marks(&self) -> Vec<(usize, usize)> {
        self.identity
            .iter()
            .map(|&(l, i)| (l as usize, i as usize))
            .collect()
    }

    /// Whether the slice at `index` of `leg` is marked an identity.
    pub fn is_identity_slice(&self, leg: usize, index: usize) -> bool {
        self.identity
            .binary_search(&(leg as u32, index as u32))
            .is_ok()
    }

    /// Drops the marks (the values are about to change), and the fingerprint that holds them.
    pub(super) fn forget_identity(&mut self) {
        if !self.identity.is_empty() {
            self.identity.clear();
            self.fp = Default::default();
        }
    }
}
