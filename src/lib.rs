//! blockcontract: block-sparse (symmetry-sector) tensor contractions written as
//! index notation, checked at compile time, planned into few large GEMMs.
//!
//! ```
//! use blockcontract::{contract, Leg, Space, Symmetry, Tensor};
//! use std::sync::Arc;
//!
//! let u1 = Symmetry::u1();
//! let v = Arc::new(Space::block(&u1, &[(vec![-1], 2), (vec![0], 3), (vec![1], 2)])?);
//! let a = Tensor::<f64, 2>::from_fn([Leg::out(&v), Leg::inc(&v)], u1.zero(), None, |[i, j]| (i + 2 * j) as f64)?;
//! let b = Tensor::<f64, 2>::from_fn([Leg::out(&v), Leg::inc(&v)], u1.zero(), None, |[i, j]| (3 * i) as f64 - j as f64)?;
//! let c = contract!(c[i, j] := a[i, k] * b[k, j])?;
//! assert_eq!(c.legs()[0].flow, blockcontract::Flow::Out);
//! # Ok::<(), blockcontract::Error>(())
//! ```
#![warn(missing_docs)]

pub use blockcontract_macros::contract;
pub use blockcontract_runtime::*;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[doc(hidden)]
pub mod __private {
    pub use blockcontract_runtime::macro_support::*;
}
