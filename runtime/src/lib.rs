//! Runtime of `blockcontract`: symmetric block-sparse tensors on strided views,
//! workload files, the per-pair reference contraction, the coalescing planner
//! and its executors.
#![warn(missing_docs)]

pub mod block;
pub mod contract;
pub mod error;
pub mod exec;
#[doc(hidden)]
pub mod macro_support;
pub mod plan;
pub mod scalar;
pub mod spec;
pub mod symmetry;
pub mod view;
pub mod workload;

pub use block::{Block, BlockKey, DynTensor, Tensor};
pub use contract::{contract_dyn, Conj, Executor, RunStats};
pub use error::{Error, Result};
pub use plan::{CostModel, GroupKind, Plan, PlanCache, PlanOptions};
pub use scalar::{DType, Scalar};
pub use spec::{Assign, ContractionSpec, IndexSpec, OperandSpec, Tree};
pub use symmetry::{Charge, ChargeKind, Flow, Leg, Sector, Space, SpaceKind, Symmetry};
