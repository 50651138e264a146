//! The one error type of the runtime.

use crate::symmetry::{Charge, Flow};

/// Everything that can go wrong when building, loading or contracting tensors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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
    #[error("flow mismatch at {what}: {left:?} vs {right:?}{hint}")]
    FlowMismatch {
        /// Which index or leg is at fault.
        what: String,
        /// The first flow.
        left: Flow,
        /// The second flow.
        right: Flow,
        /// Extra explanation (may be empty).
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
    /// A contraction description is inconsistent (indices, orders, legs).
    #[error("invalid contraction: {0}")]
    InvalidContraction(String),
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
    /// An I/O error, with the path.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// A problem is too large for the chosen executor.
    #[error("too large for {executor}: {reason}")]
    TooLarge {
        /// The executor.
        executor: String,
        /// Why.
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
    /// The CUDA executor cannot run: not compiled in, no driver, no device.
    #[error("CUDA unavailable: {0}")]
    CudaUnavailable(String),
    /// A CUDA call failed.
    #[error("CUDA error: {0}")]
    Cuda(String),
}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
