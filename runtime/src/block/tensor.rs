//! `Tensor<T, N>`: a block-sparse tensor whose rank is part of its type.

use super::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::symmetry::{Charge, Leg};
use std::ops::{Deref, DerefMut};

/// A symmetric block-sparse tensor of rank `N` (see [`DynTensor`] for the methods).
#[derive(Debug, Clone)]
pub struct Tensor<T, const N: usize>(DynTensor<T>);

impl<T: Scalar, const N: usize> Tensor<T, N> {
    /// Every block the selection rule allows, all zero.
    pub fn zeros(legs: [Leg; N], charge: Charge) -> Result<Self> {
        Ok(Tensor(DynTensor::zeros(legs.to_vec(), charge)?))
    }
    /// Exactly the listed blocks, all zero.
    pub fn zeros_with_blocks(
        legs: [Leg; N],
        charge: Charge,
        blocks: &[[usize; N]],
    ) -> Result<Self> {
        let b: Vec<Vec<usize>> = blocks.iter().map(|k| k.to_vec()).collect();
        Ok(Tensor(DynTensor::zeros_with_blocks(
            legs.to_vec(),
            charge,
            &b,
        )?))
    }
    /// Blocks listed (or all allowed), values from `f(dense index)`.
    pub fn from_fn(
        legs: [Leg; N],
        charge: Charge,
        blocks: Option<&[[usize; N]]>,
        mut f: impl FnMut([usize; N]) -> T,
    ) -> Result<Self> {
        let b: Option<Vec<Vec<usize>>> = blocks.map(|bs| bs.iter().map(|k| k.to_vec()).collect());
        let t = DynTensor::from_fn(legs.to_vec(), charge, b.as_deref(), |idx| {
            let mut a = [0usize; N];
            a.copy_from_slice(idx);
            f(a)
        })?;
        Ok(Tensor(t))
    }
    /// From a dense array (see [`DynTensor::from_dense`]).
    pub fn from_dense(legs: [Leg; N], charge: Charge, dense: &ndarray::ArrayD<T>) -> Result<Self> {
        Ok(Tensor(DynTensor::from_dense(legs.to_vec(), charge, dense)?))
    }
    /// The run-time-rank tensor.
    pub fn into_dyn(self) -> DynTensor<T> {
        self.0
    }
    /// Borrow as the run-time-rank tensor.
    pub fn as_dyn(&self) -> &DynTensor<T> {
        &self.0
    }
    /// The complex conjugate (values conjugated, flows reversed, charge negated).
    pub fn conj(&self) -> Self {
        Tensor(self.0.conj())
    }
    /// Same structure, all elements zero.
    pub fn zeros_like(&self) -> Self {
        Tensor(self.0.zeros_like())
    }
    /// The same tensor with its blocks re-stored in the axis order `axis_order`.
    pub fn relayout(&self, axis_order: &[usize; N]) -> Result<Self> {
        Ok(Tensor(self.0.relayout(axis_order)?))
    }
    /// `alpha * op(self)` with legs permuted (see [`DynTensor::permuted`]).
    pub fn permuted(&self, perm: &[usize; N], conj: crate::scalar::Conj, alpha: T) -> Result<Self> {
        Ok(Tensor(self.0.permuted(perm, conj, alpha)?))
    }
    /// `self + x`.
    pub fn add(&self, x: &Self) -> Result<Self> {
        Ok(Tensor(self.0.add(&x.0)?))
    }
    /// A random tensor with every allowed block (see [`DynTensor::random`]).
    pub fn random(legs: [Leg; N], charge: Charge, seed: u64) -> Result<Self> {
        Ok(Tensor(DynTensor::random(legs.to_vec(), charge, seed)?))
    }
}

impl<T: Scalar, const N: usize> TryFrom<DynTensor<T>> for Tensor<T, N> {
    type Error = Error;
    fn try_from(t: DynTensor<T>) -> Result<Self> {
        if t.rank() != N {
            return Err(Error::RankMismatch {
                what: "conversion DynTensor -> Tensor".into(),
                expected: N,
                found: t.rank(),
            });
        }
        Ok(Tensor(t))
    }
}

impl<T, const N: usize> From<Tensor<T, N>> for DynTensor<T> {
    fn from(t: Tensor<T, N>) -> Self {
        t.0
    }
}

impl<T, const N: usize> Deref for Tensor<T, N> {
    type Target = DynTensor<T>;
    fn deref(&self) -> &DynTensor<T> {
        &self.0
    }
}

impl<T, const N: usize> DerefMut for Tensor<T, N> {
    fn deref_mut(&mut self) -> &mut DynTensor<T> {
        &mut self.0
    }
}
