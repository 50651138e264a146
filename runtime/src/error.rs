//! The one error type of the runtime. Every variant names what is at fault: the index, leg,
//! operand, sector, rank, executor or file.

use crate::scalar::DType;
use crate::symmetry::{Charge, Flow};
use std::fmt;

/// Everything that can go wrong when building, loading or contracting tensors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- legs, charges and blocks
    /// Two legs that must share a space (a contracted pair, an assignment target) do not.
    #[error("space mismatch at {what}: left has sectors {left}, right has sectors {right}")]
    SpaceMismatch {
        /// Which index or leg is at fault.
        what: String,
        /// Description of the left space.
        left: String,
        /// Description of the right space.
        right: String,
    },
    /// A contracted pair has equal flows, or a leg's flow contradicts an annotation or target.
    #[error("flow mismatch at {what}: {left:?} vs {right:?}{}", hint_suffix(.hint))]
    FlowMismatch {
        /// Which index or leg is at fault.
        what: String,
        /// The first flow.
        left: Flow,
        /// The second flow.
        right: Flow,
        /// What to do about it (may be empty).
        hint: String,
    },
    /// A charge does not fit the symmetry or does not match.
    #[error("charge mismatch at {what}: expected {expected}, found {found}")]
    ChargeMismatch {
        /// What carries the charge.
        what: String,
        /// Expected charge.
        expected: Charge,
        /// Found charge.
        found: Charge,
    },
    /// Symmetries of two objects differ.
    #[error("symmetry mismatch at {what}: {left} vs {right}")]
    SymmetryMismatch {
        /// What is at fault.
        what: String,
        /// Left symmetry.
        left: String,
        /// Right symmetry.
        right: String,
    },
    /// A symmetry that does not exist (`Z0`).
    #[error("invalid symmetry: {reason}")]
    InvalidSymmetry {
        /// Why.
        reason: String,
    },
    /// Two sectors of one space carry the same charge.
    #[error("duplicate charge in {what}: sectors {first} and {second} both have charge {charge}")]
    DuplicateCharge {
        /// The space at fault.
        what: String,
        /// The first sector.
        first: usize,
        /// The second sector.
        second: usize,
        /// Their charge.
        charge: Charge,
    },
    /// A tensor has a different rank than required.
    #[error("rank mismatch at {what}: expected {expected} legs, found {found}")]
    RankMismatch {
        /// What is at fault.
        what: String,
        /// Expected rank.
        expected: usize,
        /// Found rank.
        found: usize,
    },
    /// A sector index or sector charge that the space does not have.
    #[error("unknown sector at {what}: {detail}")]
    UnknownSector {
        /// Which leg or space.
        what: String,
        /// Which sector.
        detail: String,
    },
    /// A block that the selection rule forbids, a duplicate block, or a bad block shape.
    #[error("invalid block {key:?}: {reason}")]
    InvalidBlock {
        /// Sector positions of the block, one per leg.
        key: Vec<usize>,
        /// Why it is invalid.
        reason: String,
    },
    /// A dense array holds a nonzero element outside every allowed block.
    #[error("dense element {index:?} = {value} breaks the symmetry: it lies in block {key:?}, which the selection rule forbids")]
    SymmetryBroken {
        /// Dense index of the element.
        index: Vec<usize>,
        /// Its value, formatted.
        value: String,
        /// Sector positions of the block it lies in.
        key: Vec<usize>,
    },
    /// A dense array has the wrong shape.
    #[error("shape mismatch at {what}: expected {expected:?}, found {found:?}")]
    ShapeMismatch {
        /// What is at fault.
        what: String,
        /// Expected shape.
        expected: Vec<usize>,
        /// Found shape.
        found: Vec<usize>,
    },
    /// An axis order that is not a permutation of `0..rank`.
    #[error("{order:?} is not a permutation of 0..{rank}")]
    NotAPermutation {
        /// The order given.
        order: Vec<usize>,
        /// The rank it should permute.
        rank: usize,
    },

    /// A factorization's split of the legs into rows and columns is not a partition of the
    /// tensor's legs (a leg in both groups, in neither, or out of range), or does not fit it.
    #[error("invalid legs: {reason}")]
    InvalidLegs {
        /// What is wrong, naming the leg.
        reason: String,
    },
    /// An argument out of its domain (a negative cutoff, a zero dimension).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument.
        name: String,
        /// Why.
        reason: String,
    },
    /// A term of a Hamiltonian (an MPO built from terms) is malformed: an unknown operator, a
    /// site outside the chain, a change of the conserved charges, an odd fermion parity.
    #[error("term {term} (`{text}`): {reason}")]
    InvalidTerm {
        /// The term's position in its list, from 0.
        term: usize,
        /// The term as written (`J * Sp_3 Sm_4`).
        text: String,
        /// What is wrong, naming the operator or site.
        reason: String,
    },
    /// A lattice site or its operators are malformed (a repeated state, an operator of the
    /// wrong size or of no definite charge).
    #[error("site `{site}`: {reason}")]
    InvalidSite {
        /// The site's name.
        site: String,
        /// What is wrong, naming the state or operator.
        reason: String,
    },
    /// A dense factorization did not converge.
    #[error("{what} failed: {reason}")]
    Factorization {
        /// Which factorization.
        what: String,
        /// The library's report.
        reason: String,
    },

    // ---- contractions and plans
    /// A contraction's index structure is inconsistent (an index too often, an output index
    /// missing on the right, an order that misses an operand, ...).
    #[error("invalid contraction: {reason}")]
    InvalidSpec {
        /// What is wrong, naming the index or operand.
        reason: String,
    },
    /// A contraction got a different number of operands than it has factors.
    #[error("{found} operands given for a contraction of {expected}")]
    OperandCount {
        /// Factors of the contraction.
        expected: usize,
        /// Operands given.
        found: usize,
    },
    /// A plan was run on an operand of another block structure than it was made for.
    #[error("operand {operand} does not have the block structure this plan was made for")]
    PlanMismatch {
        /// Position of the operand.
        operand: usize,
    },
    /// A plan with no pairwise step (a single operand) was given to an executor that needs one.
    #[error("the plan has no pairwise step (a single operand): nothing for the {executor} executor to run")]
    EmptyPlan {
        /// The executor.
        executor: String,
    },

    // ---- executors
    /// An executor name that does not exist.
    #[error("unknown executor `{name}`; expected {expected}")]
    UnknownExecutor {
        /// The name given.
        name: String,
        /// The names that exist.
        expected: String,
    },
    /// An element type an executor does not run.
    #[error("the {executor} executor does not support {dtype} tensors")]
    UnsupportedDtype {
        /// The element type.
        dtype: DType,
        /// The executor.
        executor: String,
    },
    /// A problem is too large (for an executor, or to allocate).
    #[error("too large: {what}: {reason}")]
    TooLarge {
        /// What is too large.
        what: String,
        /// Why.
        reason: String,
    },
    /// A distributed operation failed: every rank returns this, naming the first rank that
    /// failed and why.
    #[error("rank {rank} of {ranks} failed: {reason}")]
    Distributed {
        /// The lowest rank that failed.
        rank: usize,
        /// The number of ranks.
        ranks: usize,
        /// That rank's error.
        reason: String,
    },
    /// The CUDA executor cannot run: not compiled in, no driver, no device.
    #[error("CUDA unavailable: {0}")]
    CudaUnavailable(String),
    /// A CUDA call failed.
    #[error("CUDA error in {op}: {source}")]
    Cuda {
        /// The operation that failed.
        op: String,
        /// The library's error.
        source: CudaError,
    },

    // ---- files
    /// A workload file is malformed.
    #[error("workload {file}: field `{field}`: {reason}")]
    Workload {
        /// The file (or name) at fault.
        file: String,
        /// The JSON path of the field at fault.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A stored calibration that cannot be used (corrupt, another format, another machine).
    #[error("calibration file {path}: {reason}")]
    Calibration {
        /// The file.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A slice declared an identity matrix ([`crate::DynTensor::mark_identity`]) is not one.
    #[error("leg {leg} at index {index} is not an identity slice: {reason}")]
    NotIdentity {
        /// The leg the slice is taken on.
        leg: usize,
        /// Its dense index on that leg.
        index: usize,
        /// What differs, naming the sector and element.
        reason: String,
    },
    /// A saved matrix-product state that cannot be read: another format, truncated, corrupted.
    #[error("state file {path}: {reason}")]
    StateFile {
        /// The file (empty when read from bytes).
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// An I/O error, with the path.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The element type does not match what a file or tensor holds.
    #[error("dtype mismatch at {what}: expected {expected}, found {found}")]
    DtypeMismatch {
        /// What is at fault.
        what: String,
        /// Expected dtype.
        expected: String,
        /// Found dtype.
        found: String,
    },
}

/// A failure reported by one of the CUDA libraries, kept by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CudaError {
    /// The driver API (`CUresult`).
    Driver(String),
    /// cuBLAS (`cublasStatus_t`).
    Blas(String),
    /// NVRTC (compile log).
    Nvrtc(String),
    /// A lowered op that does not fit its buffers (a broken invariant of the lowering).
    Lowering(String),
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::Driver(s) => write!(f, "driver: {s}"),
            CudaError::Blas(s) => write!(f, "cuBLAS: {s}"),
            CudaError::Nvrtc(s) => write!(f, "NVRTC: {s}"),
            CudaError::Lowering(s) => write!(f, "lowering: {s}"),
        }
    }
}

impl std::error::Error for CudaError {}

fn hint_suffix(hint: &str) -> String {
    if hint.is_empty() {
        String::new()
    } else {
        format!("; hint: {hint}")
    }
}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
