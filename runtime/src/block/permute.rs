//! Permuting a tensor's legs (with conjugation and scaling): the one-operand contraction.

use super::DynTensor;
use crate::scalar::{Conj, Scalar};
use crate::view::{strided_copy, CopyMode, Layout};

/// `alpha * op(t)` with legs permuted: output leg `k` is leg `perm[k]` of `t`.
pub fn permute<T: Scalar>(t: &DynTensor<T>, perm: &[usize], conj: Conj, alpha: T) -> DynTensor<T> {
    let (legs, sym, charge, blocks, data) = t.parts();
    let (legs, charge): (Vec<_>, _) = match conj {
        Conj::No => (
            perm.iter().map(|&p| legs[p].clone()).collect(),
            charge.clone(),
        ),
        Conj::Yes => (
            perm.iter().map(|&p| legs[p].dual()).collect(),
            sym.neg(charge),
        ),
    };
    let keys = {
        let mut k: Vec<_> = blocks
            .iter()
            .map(|b| perm.iter().map(|&p| b.key[p]).collect::<Box<[u32]>>())
            .collect();
        k.sort();
        k
    };
    let mut out = DynTensor::<T>::from_valid_keys(legs, sym.clone(), charge, keys);
    for b in blocks {
        let key: Vec<u32> = perm.iter().map(|&p| b.key[p]).collect();
        let dst = out.blocks()[out.find_block(&key).expect("permuted key present")]
            .layout
            .clone();
        let src = b.layout.permuted(perm);
        let odata = out.data_mut();
        for_each_scaled(data, &src, odata, &dst, conj, alpha);
    }
    out
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
