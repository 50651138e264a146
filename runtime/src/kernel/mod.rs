//! GEMM kernels on raw strided views: faer for everything but tiny shapes, and a tiny-GEMM
//! kernel where a library call's fixed cost dominates. The leaf the executors and the cost
//! model's calibration call.

mod faer_adapter;
mod tiny;

pub(crate) use faer_adapter::gemm;
pub use tiny::{tiny_gemm, tiny_wins, TINY_MNK};
