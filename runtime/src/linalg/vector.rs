//! Vector-space operations on block-sparse tensors: axpy, add, inner product, seeded random
//! tensors. Two tensors combine when they have the same legs and charge; blocks one lacks
//! count as zero (and `axpy` grows the blocks the target lacks).

use crate::block::DynTensor;
use crate::error::Result;
use crate::hash::generate;
use crate::kernel::{dot_conj, project_out};
use crate::scalar::{monomorphic, Scalar};
use crate::symmetry::{Charge, Leg};
use crate::view::{for_each_pair, strided_copy, CopyMode, Layout, MAX_RANK};

/// Names for the legs of a tensor in errors: `leg 0`, `leg 1`, ...
fn leg_names(rank: usize) -> Vec<String> {
    (0..rank).map(|i| format!("leg {i}")).collect()
}

/// Calls `f(a_offset, b_offset, len, a_stride, b_stride)` for every row of two same-shape
/// blocks.
fn rows_of(a: &Layout, b: &Layout, f: impl FnMut(isize, isize, usize, isize, isize)) {
    debug_assert!(a.dims.len() <= MAX_RANK);
    for_each_pair(&a.dims, &a.strides, &b.strides, f);
}

impl<T: Scalar> DynTensor<T> {
    /// `self += alpha * x`. `x` must have this tensor's legs and charge; blocks of `x` that
    /// `self` lacks are added (the buffer grows).
    pub fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        (entry::<T>()?.axpy)(self, alpha, x)
    }

    /// [`Self::axpy`], instantiated per element type.
    fn axpy_here(&mut self, alpha: T, x: &Self) -> Result<()> {
        self.check_same_legs(x, &leg_names(self.rank()))?;
        if self.same_layout(x) {
            for (y, &v) in self.data_mut().iter_mut().zip(x.data()) {
                *y += alpha * v;
            }
            return Ok(());
        }
        self.cover(x);
        for b in x.blocks() {
            let Some(i) = self.find_block(&b.key) else {
                continue;
            };
            let dst = self.blocks()[i].layout.clone();
            if dst.is_empty() {
                continue;
            }
            // SAFETY: both layouts lie inside their buffers, with equal dims (same key and
            // legs); the buffers are distinct tensors.
            unsafe {
                strided_copy(
                    &dst.dims,
                    x.data().as_ptr().add(b.layout.offset),
                    &b.layout.strides,
                    self.data_mut().as_mut_ptr().add(dst.offset),
                    &dst.strides,
                    CopyMode::AddScaled(alpha),
                )
            };
        }
        Ok(())
    }

    /// `self + x` (see [`Self::axpy`]).
    pub fn add(&self, x: &Self) -> Result<Self> {
        let mut y = self.clone();
        y.axpy(T::one(), x)?;
        Ok(y)
    }

    /// The inner product `<self|x> = sum conj(self) * x` over the blocks both store.
    pub fn inner(&self, x: &Self) -> Result<T> {
        (entry::<T>()?.inner)(self, x)
    }

    /// [`Self::inner`], instantiated per element type.
    fn inner_here(&self, x: &Self) -> Result<T> {
        self.check_same_legs(x, &leg_names(self.rank()))?;
        if self.same_layout(x) {
            return Ok(dot_conj(self.data(), x.data()));
        }
        let mut s = T::zero();
        for b in self.blocks() {
            let Some(j) = x.find_block(&b.key) else {
                continue;
            };
            let (la, lb) = (&b.layout, &x.blocks()[j].layout);
            let (da, db) = (self.data(), x.data());
            rows_of(la, lb, |oa, ob, n, sa, sb| {
                for i in 0..n as isize {
                    let a = da[(la.offset as isize + oa + i * sa) as usize];
                    let v = db[(lb.offset as isize + ob + i * sb) as usize];
                    s += a.conj() * v;
                }
            });
        }
        Ok(s)
    }

    /// Orthogonalises this tensor against `basis` by one classical Gram-Schmidt pass:
    /// `self -= sum_i <b_i|self> b_i`, the coefficients taken from `self` as given (a
    /// projection when `basis` is orthonormal). Each tensor must have this tensor's legs and
    /// charge. When all share this tensor's layout, one cache-blocked pass per half
    /// ([`crate::kernel::project_out`]) instead of a pass per inner product and per axpy.
    pub fn project_out(&mut self, basis: &[&Self]) -> Result<Projection<T>> {
        (entry::<T>()?.project_out)(self, basis)
    }

    /// [`Self::project_out`], instantiated per element type.
    fn project_out_here(&mut self, basis: &[&Self]) -> Result<Projection<T>> {
        if basis.iter().all(|b| self.same_layout(b)) {
            for b in basis {
                self.check_same_legs(b, &leg_names(self.rank()))?;
            }
            let mut coefs = vec![T::zero(); basis.len()];
            let slices: Vec<&[T]> = basis.iter().map(|b| b.data()).collect();
            let (before, after) = project_out(self.data_mut(), &slices, &mut coefs);
            return Ok(Projection {
                coefs,
                norm_before: before.sqrt(),
                norm_after: after.sqrt(),
            });
        }
        super::lanczos::project_out_by_parts(self, basis)
    }

    /// A tensor with every block the selection rule allows, values uniform in `[-1, 1)` from
    /// `seed` (the workload generator at each element's dense index; complex values get an
    /// imaginary part too): the same seed gives the same tensor.
    pub fn random(legs: Vec<Leg>, charge: Charge, seed: u64) -> Result<Self> {
        let shape: Vec<u64> = legs.iter().map(|l| l.space.dim() as u64).collect();
        let mut strides = vec![1u64; shape.len()];
        for k in (0..shape.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1].wrapping_mul(shape[k + 1]);
        }
        DynTensor::from_fn(legs, charge, None, |idx| {
            let i = idx.iter().zip(&strides).fold(0u64, |acc, (&x, &s)| {
                acc.wrapping_add((x as u64).wrapping_mul(s))
            });
            T::from_parts(generate(seed, i), generate(seed, i ^ (1 << 63)))
        })
    }
}

/// What [`DynTensor::project_out`] found: the coefficients `<b_i|v>` it removed and the
/// norm of the vector before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection<T> {
    /// `<b_i|v>` per basis vector, `v` as given.
    pub coefs: Vec<T>,
    /// `|v|` before the pass.
    pub norm_before: f64,
    /// `|v|` after it.
    pub norm_after: f64,
}

/// The vector operations Lanczos runs every iteration, instantiated in this crate per element
/// type (see [`monomorphic!`](crate::scalar::monomorphic)).
// a table of function pointers spells out each signature
#[allow(clippy::type_complexity)]
struct Entry<T: Scalar> {
    axpy: fn(&mut DynTensor<T>, T, &DynTensor<T>) -> Result<()>,
    inner: fn(&DynTensor<T>, &DynTensor<T>) -> Result<T>,
    project_out: fn(&mut DynTensor<T>, &[&DynTensor<T>]) -> Result<Projection<T>>,
}

impl<T: Scalar> Entry<T> {
    const NEW: Self = Entry {
        axpy: DynTensor::<T>::axpy_here,
        inner: DynTensor::<T>::inner_here,
        project_out: DynTensor::<T>::project_out_here,
    };
}

fn entry<T: Scalar>() -> Result<&'static Entry<T>> {
    monomorphic!(T, Entry)
}
