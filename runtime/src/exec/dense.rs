//! The dense executor: every operand embedded densely, contracted with faer. Small problems only.

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::kernel::gemm;
use crate::scalar::{Conj, Scalar};
use crate::spec::{ContractionSpec, Tree};
use crate::symmetry::Leg;
use crate::view::MatShape;
use faer::Accum;
use ndarray::{ArrayD, IxDyn};

/// Largest dense array (elements) the dense executor builds.
pub const DENSE_LIMIT: usize = 1 << 26;

fn check_size(what: &str, shape: &[usize]) -> Result<()> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match n {
        Some(n) if n <= DENSE_LIMIT => Ok(()),
        _ => Err(Error::TooLarge {
            executor: "dense".into(),
            reason: format!(
                "{what} has dense shape {shape:?}, over the {DENSE_LIMIT}-element limit"
            ),
        }),
    }
}

/// Contracts `spec` on dense embeddings; the result stores every block its selection rule allows.
pub fn contract_dense<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
) -> Result<DynTensor<T>> {
    let tree = spec
        .tree
        .clone()
        .or_else(|| Tree::left_to_right(ops.len()))
        .ok_or_else(|| Error::InvalidContraction("no operand".into()))?;
    let (arr, labels) = eval(&tree, spec, ops)?;
    let out_labels: Vec<usize> = spec.output.iter().map(|i| i.label).collect();
    let perm: Vec<usize> = out_labels
        .iter()
        .map(|l| {
            labels
                .iter()
                .position(|x| x == l)
                .expect("validated labels")
        })
        .collect();
    let arr = arr
        .permuted_axes(IxDyn(&perm))
        .as_standard_layout()
        .mapv(|x| alpha * x);
    // output legs and charge from the operands
    let mut legs: Vec<Leg> = Vec::new();
    for l in &out_labels {
        let (i, leg) = spec
            .operands
            .iter()
            .enumerate()
            .find_map(|(i, o)| o.indices.iter().position(|x| x.label == *l).map(|p| (i, p)))
            .expect("validated labels");
        let lg = &ops[i].legs()[leg];
        legs.push(if spec.operands[i].conj {
            lg.dual()
        } else {
            lg.clone()
        });
    }
    let sym = ops[0].symmetry().clone();
    let mut q = sym.zero();
    for (o, t) in spec.operands.iter().zip(ops) {
        q = sym.add(
            &q,
            &if o.conj {
                sym.neg(t.charge())
            } else {
                t.charge().clone()
            },
        );
    }
    DynTensor::from_dense_in(&sym, legs, q, &arr)
}

fn eval<T: Scalar>(
    tree: &Tree,
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
) -> Result<(ArrayD<T>, Vec<usize>)> {
    match tree {
        Tree::Leaf(i) => {
            let o = &spec.operands[*i];
            check_size(&format!("operand `{}`", o.name), &ops[*i].dense_shape())?;
            let mut d = ops[*i].to_dense();
            if o.conj {
                d.mapv_inplace(|x| x.conj());
            }
            Ok((d, o.indices.iter().map(|x| x.label).collect()))
        }
        Tree::Node(l, r) => {
            let (a, la) = eval(l, spec, ops)?;
            let (b, lb) = eval(r, spec, ops)?;
            dense_step(a, &la, b, &lb)
        }
    }
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
    let pos = |ls: &[usize], x: usize| ls.iter().position(|&y| y == x).expect("label");
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
        let ash = MatShape {
            m,
            rs: k as isize,
            n: k,
            cs: 1,
        };
        let bsh = MatShape {
            m: k,
            rs: n as isize,
            n,
            cs: 1,
        };
        let csh = MatShape {
            m,
            rs: n as isize,
            n,
            cs: 1,
        };
        // SAFETY: all three arrays are standard (row-major contiguous) with the shapes above.
        unsafe {
            gemm(
                c.as_mut_ptr(),
                csh,
                Accum::Replace,
                a.as_ptr(),
                ash,
                Conj::No,
                b.as_ptr(),
                bsh,
                Conj::No,
                T::one(),
            );
        }
    }
    let mut labels = afree;
    labels.extend(bfree);
    Ok((c, labels))
}
