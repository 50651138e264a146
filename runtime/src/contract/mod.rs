//! Contractions: pairwise steps, the per-pair reference, the dense oracle, whole networks.

pub mod dense;
pub mod network;
pub mod pairs;
pub mod pairwise;

pub use network::{check_operands, contract_dyn, contract_planned, Executor, RunStats};
pub use pairs::{enumerate, geometry, Conj, Geometry, PairGemm, PairList, Src, StepDesc};
pub use pairwise::{permute, run_pairwise, StepStats};
