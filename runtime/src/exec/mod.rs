//! Executors of plans: the CPU one here; the CUDA one behind the `cuda` feature.

pub mod cpu;
pub mod lower;
pub mod tiny;

pub use cpu::{run_step, KernelCounts};
