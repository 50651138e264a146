#![doc = include_str!("../docs/guide.md")]
#![warn(missing_docs)]

// `contract!` expands to `::blockcontract::...` paths; this lets the crate's own modules use it
extern crate self as blockcontract;

pub mod mps;

#[doc = include_str!("../docs/contract.md")]
#[doc(inline)]
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
