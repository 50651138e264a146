//! blockcontract: block-sparse (symmetry-sector) tensor contractions written as
//! index notation, checked at compile time, planned into few large GEMMs.
#![warn(missing_docs)]

pub use blockcontract_runtime::*;
