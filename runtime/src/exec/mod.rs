//! Executors of plans: the CPU one here; the CUDA one behind the `cuda` feature.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
pub mod cuda;
pub mod lower;
pub mod tiny;

pub use cpu::{run_step, KernelCounts};
