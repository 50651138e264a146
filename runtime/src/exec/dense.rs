//! The dense executor: every operand embedded densely, contracted with faer. Small problems only.

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::kernel::{gemm, Accum, RawMat, RawMatMut};
use crate::scalar::{Conj, Scalar};
use crate::spec::{permutation, ContractionSpec};
use crate::symmetry::Leg;
use crate::view::MatShape;
use ndarray::{ArrayD, IxDyn};

/// Largest dense array (elements) the dense executor builds.
pub const DENSE_LIMIT: usize = 1 << 26;

fn check_size(what: &str, shape: &[usize]) -> Result<()> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match n {
        Some(n) if n <= DENSE_LIMIT => Ok(()),
        _ => Err(Error::TooLarge {
            what: format!("{what} for the dense executor"),
            reason: format!("dense shape {shape:?} is over the {DENSE_LIMIT}-element limit"),
        }),
    }
}

/// Contracts `spec` on dense embeddings; the result stores every block its selection rule allows.
pub fn contract_dense<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
) -> Result<DynTensor<T>> {
    let tree = spec.tree_or_default()?;
    let (arr, labels) = tree.fold(
        &mut |i| {
            let o = &spec.operands[i];
            check_size(&format!("operand `{}`", o.name), &ops[i].dense_shape())?;
            let mut d = ops[i].to_dense()?;
            if o.conj == Conj::Yes {
                d.mapv_inplace(|x| x.conj());
            }
            Ok((d, spec.operand_labels(i)))
        },
        &mut |(a, la), (b, lb), _| dense_step(a, &la, b, &lb),
    )?;
    let out_labels = spec.output_labels();
    let perm = permutation(&labels, &out_labels)?;
    let arr = arr
        .permuted_axes(IxDyn(&perm))
        .as_standard_layout()
        .mapv(|x| alpha * x);
    // output legs and charge from the operands
    let mut legs: Vec<Leg> = Vec::new();
    for l in &out_labels {
        let src = spec
            .operands
            .iter()
            .enumerate()
            .find_map(|(i, o)| o.indices.iter().position(|x| x.label == *l).map(|p| (i, p)));
        let (i, leg) = src.ok_or_else(|| Error::InvalidSpec {
            reason: format!("output index `{}` has no source", spec.labels[*l]),
        })?;
        legs.push(ops[i].legs()[leg].as_used(spec.operands[i].conj));
    }
    let sym = ops[0].symmetry().clone();
    let mut q = sym.zero();
    for (o, t) in spec.operands.iter().zip(ops) {
        q = sym.add(&q, &sym.charge_as_used(t.charge(), o.conj));
    }
    DynTensor::from_dense_in(&sym, legs, q, &arr)
}

fn dense_step<T: Scalar>(
    a: ArrayD<T>,
    la: &[usize],
    b: ArrayD<T>,
    lb: &[usize],
) -> Result<(ArrayD<T>, Vec<usize>)> {
    let contr: Vec<usize> = la.iter().filter(|x| lb.contains(x)).copied().collect();
    let afree: Vec<usize> = la.iter().filter(|x| !lb.contains(x)).copied().collect();
    let bfree: Vec<usize> = lb.iter().filter(|x| !la.contains(x)).copied().collect();
    // every label of `contr`, `afree` and `bfree` is in `la` or `lb` by construction
    let pos = |ls: &[usize], x: usize| ls.iter().position(|&y| y == x).unwrap_or(0);
    let pa: Vec<usize> = afree.iter().chain(&contr).map(|&x| pos(la, x)).collect();
    let pb: Vec<usize> = contr.iter().chain(&bfree).map(|&x| pos(lb, x)).collect();
    let mut shape: Vec<usize> = afree.iter().map(|&x| a.shape()[pos(la, x)]).collect();
    shape.extend(bfree.iter().map(|&x| b.shape()[pos(lb, x)]));
    check_size("an intermediate", &shape)?;
    let m: usize = afree.iter().map(|&x| a.shape()[pos(la, x)]).product();
    let k: usize = contr.iter().map(|&x| a.shape()[pos(la, x)]).product();
    let n: usize = bfree.iter().map(|&x| b.shape()[pos(lb, x)]).product();
    let a = a
        .permuted_axes(IxDyn(&pa))
        .as_standard_layout()
        .into_owned();
    let b = b
        .permuted_axes(IxDyn(&pb))
        .as_standard_layout()
        .into_owned();
    let mut c = ArrayD::from_elem(IxDyn(&shape), T::zero());
    if m > 0 && n > 0 && k > 0 {
        // SAFETY: all three arrays are standard (row-major contiguous) with these shapes.
        unsafe {
            gemm(
                RawMatMut::new(c.as_mut_ptr(), MatShape::row_major(m, n)),
                Accum::Replace,
                RawMat::new(a.as_ptr(), MatShape::row_major(m, k)),
                RawMat::new(b.as_ptr(), MatShape::row_major(k, n)),
                T::one(),
            );
        }
    }
    let mut labels = afree;
    labels.extend(bfree);
    Ok((c, labels))
}
