//! Writing a contraction's result into an existing tensor (`=` and `+=`).

use super::{Block, BlockKey, DynTensor};
use crate::error::{Error, Result};
use crate::kernel::Accum;
use crate::scalar::Scalar;
use crate::symmetry::check_same_leg;
use crate::view::{strided_copy, CopyMode, Layout};

impl<T: Scalar> DynTensor<T> {
    /// Checks that `src` has this tensor's legs (space and flow) and charge; `names` names the legs.
    pub fn check_same_legs(&self, src: &Self, names: &[String]) -> Result<()> {
        let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("leg {i}"));
        if self.rank() != src.rank() {
            return Err(Error::RankMismatch {
                what: "assignment target".into(),
                expected: src.rank(),
                found: self.rank(),
            });
        }
        for (i, (t, s)) in self.legs().iter().zip(src.legs()).enumerate() {
            check_same_leg(t, s, || {
                format!("output index `{}` (target leg {i})", name(i))
            })?;
        }
        if self.charge() != src.charge() {
            return Err(Error::ChargeMismatch {
                what: "assignment target".into(),
                expected: src.charge().clone(),
                found: self.charge().clone(),
            });
        }
        Ok(())
    }

    /// `self = src` (`Accum::Replace`) or `self += src` (`Accum::Add`), after
    /// [`Self::check_same_legs`]. Blocks of `src` that `self` lacks are added (the buffer
    /// grows); none is lost.
    pub fn write_from(&mut self, src: &Self, accum: Accum, names: &[String]) -> Result<()> {
        self.check_same_legs(src, names)?;
        self.cover(src);
        if accum == Accum::Replace {
            self.data_mut().iter_mut().for_each(|x| *x = T::zero());
        }
        for b in src.blocks() {
            let dst = self.blocks()[self.find_block(&b.key).expect("grown above")]
                .layout
                .clone();
            copy_block(src.data(), &b.layout, self.data_mut(), &dst);
        }
        Ok(())
    }

    /// Adds a zero block for each block of `src` this tensor lacks (the buffer grows), keeping
    /// every existing value and layout: afterwards every block of `src` has a place here.
    pub(crate) fn cover(&mut self, src: &Self) {
        let missing: Vec<BlockKey> = src
            .blocks()
            .iter()
            .filter(|b| self.find_block(&b.key).is_none())
            .map(|b| b.key.clone())
            .collect();
        if !missing.is_empty() {
            self.grow(missing);
        }
    }

    /// Adds zero blocks for `keys`, keeping every existing value and layout.
    fn grow(&mut self, keys: Vec<BlockKey>) {
        let (legs, sym, charge, blocks, data) = self.parts();
        let mut data = data.to_vec();
        let mut all: Vec<Block> = blocks.to_vec();
        for key in keys {
            let dims: Vec<usize> = key
                .iter()
                .zip(legs)
                .map(|(&s, l)| l.space.dim_of(s as usize))
                .collect();
            let layout = Layout::row_major(&dims, data.len());
            data.resize(data.len() + layout.len(), T::zero());
            all.push(Block { key, layout });
        }
        all.sort_by(|a, b| a.key.cmp(&b.key));
        *self = Self::from_parts(legs.to_vec(), sym.clone(), charge.clone(), all, data);
    }
}

fn copy_block<T: Scalar>(src: &[T], sl: &Layout, dst: &mut [T], dl: &Layout) {
    if sl.is_empty() {
        return;
    }
    // SAFETY: both layouts lie inside their buffers, have equal dims, and the buffers are distinct.
    unsafe {
        strided_copy(
            &sl.dims,
            src.as_ptr().add(sl.offset),
            &sl.strides,
            dst.as_mut_ptr().add(dl.offset),
            &dl.strides,
            CopyMode::AddScaled(T::one()),
        );
    }
}
