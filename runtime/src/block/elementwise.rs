//! Elementwise passes over a tensor's values: norm, conjugation, scaling.

use super::{Block, DynTensor};
use crate::error::Result;
use crate::kernel::sum_abs2;
use crate::scalar::{monomorphic, Scalar};
use crate::view::{for_each_pair, MAX_RANK};

impl<T: Scalar> DynTensor<T> {
    /// Frobenius norm over stored elements.
    pub fn norm(&self) -> f64 {
        match entry::<T>() {
            Ok(e) => (e.norm)(self),
            Err(_) => self.norm_here(),
        }
    }

    /// [`Self::norm`], instantiated per element type.
    fn norm_here(&self) -> f64 {
        self.st
            .blocks
            .iter()
            .map(|b| {
                let mut s = 0.0;
                self.for_each_row_of(b, |row, step| s += sum_abs2(row, step));
                s
            })
            .sum::<f64>()
            .sqrt()
    }

    /// Calls `f` on each row of block `b` (a slice, and its stride in it).
    fn for_each_row_of(&self, b: &Block, mut f: impl FnMut(&[T], usize)) {
        let zero = [0isize; MAX_RANK];
        let base = b.layout.offset as isize;
        for_each_pair(
            &b.layout.dims,
            &b.layout.strides,
            &zero[..b.layout.dims.len()],
            |so, _, n, ss, _| {
                // a row of a block lies in the buffer (the layout's contract); a negative
                // stride walks it from its far end
                let (start, step) = if ss >= 0 {
                    (base + so, ss as usize)
                } else {
                    (base + so + (n as isize - 1) * ss, ss.unsigned_abs())
                };
                let len = (n - 1) * step + 1;
                if let Some(row) = self.data.get(start as usize..start as usize + len) {
                    f(row, step.max(1));
                }
            },
        );
    }

    /// The complex conjugate: values conjugated, every flow reversed, charge negated.
    pub fn conj(&self) -> Self {
        let mut t = self.clone();
        for l in &mut t.legs {
            *l = l.dual();
        }
        t.charge = self.symmetry.neg(&self.charge);
        t.fp = Default::default();
        if T::IS_COMPLEX {
            t.data.iter_mut().for_each(|x| *x = x.conj());
        }
        t
    }

    /// Multiplies every element by `alpha`.
    pub fn scale(&mut self, alpha: T) {
        match entry::<T>() {
            Ok(e) => (e.scale)(self, alpha),
            Err(_) => self.scale_here(alpha),
        }
    }

    /// [`Self::scale`], instantiated per element type.
    fn scale_here(&mut self, alpha: T) {
        self.forget_identity();
        self.data.iter_mut().for_each(|x| *x = alpha * *x);
    }
}

/// The elementwise passes user code calls in loops (norms, scaling), instantiated in this crate
/// per element type (see [`monomorphic!`](crate::scalar::monomorphic)).
// a table of function pointers spells out each signature
#[allow(clippy::type_complexity)]
struct Entry<T: Scalar> {
    norm: fn(&DynTensor<T>) -> f64,
    scale: fn(&mut DynTensor<T>, T),
}

impl<T: Scalar> Entry<T> {
    const NEW: Self = Entry {
        norm: DynTensor::<T>::norm_here,
        scale: DynTensor::<T>::scale_here,
    };
}

fn entry<T: Scalar>() -> Result<&'static Entry<T>> {
    monomorphic!(T, Entry)
}
