//! Permuting a tensor's legs (with conjugation and scaling): the one-operand contraction.

use super::{BlockKey, DynTensor};
use crate::error::{Error, Result};
use crate::scalar::{Conj, Scalar};
use crate::view::{strided_copy, CopyMode, Layout};

impl<T: Scalar> DynTensor<T> {
    /// `alpha * op(self)` with legs permuted: output leg `k` is leg `perm[k]` of `self`
    /// (`op` conjugates under `Conj::Yes`, reversing every flow). `perm` must be a
    /// permutation of `0..rank`.
    pub fn permuted(&self, perm: &[usize], conj: Conj, alpha: T) -> Result<DynTensor<T>> {
        let r = self.rank();
        let mut seen = vec![false; r];
        if perm.len() != r
            || perm
                .iter()
                .any(|&a| a >= r || std::mem::replace(&mut seen[a], true))
        {
            return Err(Error::NotAPermutation {
                order: perm.to_vec(),
                rank: r,
            });
        }
        let (legs, sym, charge, blocks, data) = self.parts();
        let legs: Vec<_> = perm.iter().map(|&p| legs[p].as_used(conj)).collect();
        let charge = sym.charge_as_used(charge, conj);
        let mut keys: Vec<BlockKey> = blocks
            .iter()
            .map(|b| perm.iter().map(|&p| b.key[p]).collect())
            .collect();
        keys.sort();
        let mut out = DynTensor::<T>::from_valid_keys(legs, sym.clone(), charge, keys)?;
        let out_blocks = out.st.clone();
        for b in blocks {
            let key: Vec<u32> = perm.iter().map(|&p| b.key[p]).collect();
            // every permuted key was inserted above
            if let Some(i) = out.find_block(&key) {
                let dst = &out_blocks.blocks()[i].layout;
                for_each_scaled(
                    data,
                    &b.layout.permuted(perm),
                    out.data_mut(),
                    dst,
                    conj,
                    alpha,
                );
            }
        }
        Ok(out)
    }
}

fn for_each_scaled<T: Scalar>(
    src: &[T],
    sl: &Layout,
    dst: &mut [T],
    dl: &Layout,
    conj: Conj,
    alpha: T,
) {
    if sl.is_empty() {
        return;
    }
    // SAFETY: both layouts lie inside their buffers and have the same dims.
    unsafe {
        let s = src.as_ptr().add(sl.offset);
        let d = dst.as_mut_ptr().add(dl.offset);
        let mode = if conj == Conj::Yes && T::IS_COMPLEX {
            CopyMode::Conj
        } else {
            CopyMode::Set
        };
        strided_copy(&sl.dims, s, &sl.strides, d, &dl.strides, mode);
    }
    if alpha != T::one() {
        let zero = vec![0isize; dl.dims.len()];
        crate::view::for_each_pair(&dl.dims, &dl.strides, &zero, |o, _, n, st, _| {
            for i in 0..n as isize {
                let x = &mut dst[(dl.offset as isize + o + i * st) as usize];
                *x = alpha * *x;
            }
        });
    }
}
