//! Conversion between block-sparse tensors and dense `ndarray` arrays.

use super::{common_symmetry, DynTensor};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::symmetry::{Charge, Leg, Symmetry};
use ndarray::{ArrayD, Dimension, IxDyn};

impl<T: Scalar> DynTensor<T> {
    /// The dense embedding: every stored block copied to its place, zeros elsewhere.
    /// `TooLarge` when the dense array cannot be addressed or allocated.
    pub fn to_dense(&self) -> Result<ArrayD<T>> {
        let shape = self.dense_shape();
        let too_large = |reason: String| Error::TooLarge {
            what: format!("the dense form of {}", super::describe(self.legs())),
            reason,
        };
        // ndarray's rule: the product of the non-zero axis lengths fits an isize
        let nonzero: Vec<usize> = shape.iter().copied().filter(|&d| d > 0).collect();
        if super::checked_len(&nonzero).is_none_or(|n| n > super::max_elements::<T>()) {
            return Err(too_large("its element count overflows".into()));
        }
        let n = super::checked_len(&shape).unwrap_or(0);
        let buf = super::zeroed_buffer::<T>(n, || {
            format!("the dense form of {}", super::describe(self.legs()))
        })?;
        let mut out =
            ArrayD::from_shape_vec(IxDyn(&shape), buf).map_err(|e| too_large(e.to_string()))?;
        let dstrides = crate::view::row_major_strides(&shape);
        for b in self.blocks() {
            if b.layout.is_empty() {
                continue;
            }
            let start: isize = b
                .key
                .iter()
                .zip(self.legs())
                .zip(&dstrides)
                .map(|((&s, l), &st)| l.space.offset_of(s as usize) as isize * st)
                .sum();
            // SAFETY: the block lies in `data`; its dense image lies in `out` (row-major, same shape).
            unsafe {
                crate::view::strided_copy(
                    &b.layout.dims,
                    self.data().as_ptr().add(b.layout.offset),
                    &b.layout.strides,
                    out.as_mut_ptr().offset(start),
                    &dstrides,
                    crate::view::CopyMode::Set,
                );
            }
        }
        Ok(out)
    }

    /// From a dense array: stores every allowed block; a nonzero element outside them is an error naming its block.
    pub fn from_dense(legs: Vec<Leg>, charge: Charge, dense: &ArrayD<T>) -> Result<Self> {
        let symmetry = common_symmetry(&legs)?;
        Self::from_dense_in(&symmetry, legs, charge, dense)
    }

    /// Like [`Self::from_dense`] with the symmetry given (needed for rank 0).
    pub fn from_dense_in(
        symmetry: &Symmetry,
        legs: Vec<Leg>,
        charge: Charge,
        dense: &ArrayD<T>,
    ) -> Result<Self> {
        let shape: Vec<usize> = legs.iter().map(|l| l.space.dim()).collect();
        if dense.shape() != shape.as_slice() {
            return Err(Error::ShapeMismatch {
                what: "dense array for from_dense".into(),
                expected: shape,
                found: dense.shape().to_vec(),
            });
        }
        let mut t = Self::zeros_in(symmetry, legs, charge)?;
        // reject a nonzero element outside the allowed blocks
        for (idx, v) in dense.indexed_iter() {
            if *v == T::zero() {
                continue;
            }
            let mut key = Vec::with_capacity(idx.ndim());
            for (k, l) in t.legs().iter().enumerate() {
                // in range by the shape check above
                let (s, _) = l.space.locate(idx[k]).ok_or_else(|| Error::ShapeMismatch {
                    what: format!("leg {k}"),
                    expected: shape.clone(),
                    found: idx.as_array_view().to_vec(),
                })?;
                key.push(s as u32);
            }
            if t.find_block(&key).is_none() {
                return Err(Error::SymmetryBroken {
                    index: idx.as_array_view().to_vec(),
                    value: format!("{v}"),
                    key: key.iter().map(|&x| x as usize).collect(),
                });
            }
        }
        t.fill_with(|i| dense[IxDyn(i)]);
        Ok(t)
    }
}
