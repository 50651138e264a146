//! Runtime of `blockcontract`: symmetric block-sparse tensors on strided views,
//! workload files, the per-pair reference contraction, the coalescing planner
//! and its executors.
//!
//! The modules are layers, in the order a contraction passes through them; each uses only
//! those before it: `error`, `scalar`, `hash`, `threads` -> `symmetry` -> `view` -> `kernel` ->
//! `block` -> `spec` -> `step` -> `plan` -> `exec` -> `macro_support`, `workload`, `linalg`,
//! `dist` (distributed execution over MPI, feature `mpi`).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod block;
pub mod dist;
pub mod error;
pub mod exec;
#[doc(hidden)]
pub mod hash;
#[doc(hidden)]
pub mod kernel;
pub mod linalg;
#[doc(hidden)]
pub mod macro_support;
pub mod plan;
pub mod scalar;
pub mod spec;
pub mod step;
pub mod symmetry;
mod threads;
pub mod view;
pub mod workload;

pub use block::{Block, BlockKey, DynTensor, Tensor};
pub use error::{CudaError, Error, Result};

pub use exec::{contract_dyn, execute, release_buffers, Executor, RunStats};
/// The array crate the dense conversions take and return (`to_dense`, `from_dense`).
pub use ndarray;
/// The complex numbers the complex element type is made of.
pub use num_complex;
pub use num_complex::Complex64;
pub use plan::{build_plan, CostModel, GroupKind, Plan, PlanCache, PlanOptions};
pub use scalar::{Conj, DType, Scalar};
pub use spec::{Assign, ContractionSpec, IndexSpec, OperandSpec, Tree};
pub use symmetry::{Charge, ChargeKind, Flow, Leg, Sector, Space, SpaceKind, Symmetry};
pub use workload::Workload;

pub use macro_support::{
    clear_plan_caches, plan_cache_sites, plan_caches, set_coefficient_form, set_plan_cache_capacity,
};
pub use plan::CacheStats;
