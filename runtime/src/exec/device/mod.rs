//! The device op list: a plan lowered to plain data in cuBLAS's conventions (GEMM,
//! strided-batched and grouped-batched GEMM, gather/scatter kernels), the one row-major to
//! column-major adapter, the lowering, and a CPU interpreter of the list, so that what the
//! CUDA executor consumes is tested on machines without a GPU.
//!
//! cuBLAS is column-major; our blocks are row-major-strided views. [`cublas_form`] is the one
//! place where a row-major product `C = A B` becomes cuBLAS's `C^T = B^T A^T` (or stays
//! `C = A B` for column-major outputs). Operands whose strides no cuBLAS leading dimension
//! can express, or that must be conjugated, are gathered into scratch first.

mod cublas;
mod interpret;
mod lower;
mod members;

pub use cublas::cublas_form;
pub use interpret::interpret;
pub use lower::{lower, lower_with};

pub use crate::kernel::Accum;

use crate::plan::Input;
use crate::scalar::Conj;

/// A buffer of the lowered program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buf {
    /// An input of the step: its left operand.
    Left,
    /// Its right operand.
    Right,
    /// The step's output.
    Out,
    /// Scratch for packed A operands.
    ScratchA,
    /// Scratch for packed B operands.
    ScratchB,
    /// Scratch for GEMM results that are scattered.
    ScratchC,
}

/// An element offset in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ptr {
    /// The buffer.
    pub buf: Buf,
    /// Offset in elements.
    pub offset: usize,
}

/// One strided copy: `dims` elements from `src` (strides `src_strides`) to `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Offset in the source buffer.
    pub src: usize,
    /// Offset in the destination buffer.
    pub dst: usize,
    /// Extents.
    pub dims: Vec<usize>,
    /// Source strides.
    pub src_strides: Vec<isize>,
    /// Destination strides.
    pub dst_strides: Vec<isize>,
}

/// cuBLAS operation of an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trans {
    /// `CUBLAS_OP_N`.
    N,
    /// `CUBLAS_OP_T`.
    T,
}

/// A cuBLAS GEMM, column-major: `C = alpha op(A) op(B) + beta C` (`beta` is 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmOp {
    /// Operation on A.
    pub transa: Trans,
    /// Operation on B.
    pub transb: Trans,
    /// Rows of C (column-major).
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// Inner dimension.
    pub k: usize,
    /// First operand.
    pub a: Ptr,
    /// Its leading dimension.
    pub lda: usize,
    /// Second operand.
    pub b: Ptr,
    /// Its leading dimension.
    pub ldb: usize,
    /// Output.
    pub c: Ptr,
    /// Its leading dimension.
    pub ldc: usize,
    /// `beta = 1` (`Add`) or `beta = 0` (`Replace`).
    pub accum: Accum,
}

/// One device operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// One kernel: copy (or add) every segment from `src` to `dst`, conjugating if asked.
    Gather {
        /// Source buffer.
        src: Buf,
        /// Destination buffer.
        dst: Buf,
        /// The copies.
        segments: Vec<Segment>,
        /// `dst = src` (`Replace`) or `dst += src` (`Add`).
        accum: Accum,
        /// Conjugate while copying.
        conj: Conj,
    },
    /// `cublas<t>gemm`.
    Gemm(GemmOp),
    /// `cublas<t>gemmGroupedBatched` (CUDA >= 12.5): GEMMs of different shapes in one
    /// launch. Their outputs are disjoint (one group per hazard-free set), so they may run
    /// concurrently.
    GemmGrouped {
        /// The GEMMs.
        gemms: Vec<GemmOp>,
    },
    /// `cublas<t>gemmStridedBatched`: `batch` GEMMs, pointers advanced by the strides.
    GemmStridedBatched {
        /// The first GEMM.
        gemm: GemmOp,
        /// Number of GEMMs.
        batch: usize,
        /// Element stride between A matrices.
        stride_a: usize,
        /// Between B matrices.
        stride_b: usize,
        /// Between C matrices.
        stride_c: usize,
    },
}

/// The ops of one pairwise step, and the scratch they need.
#[derive(Debug, Clone)]
pub struct StepOps {
    /// In order, on one stream.
    pub ops: Vec<Op>,
    /// Output length (elements, zero-initialised).
    pub out_len: usize,
    /// Scratch lengths for A, B and C.
    pub scratch: [usize; 3],
    /// Where the step's operands come from.
    pub inputs: (Input, Input),
    /// Whether the contraction's alpha applies (the last step).
    pub scaled: bool,
}

/// A lowered plan.
#[derive(Debug, Clone)]
pub struct Lowered {
    /// Per step.
    pub steps: Vec<StepOps>,
}

impl Lowered {
    /// Kernel launches of one contraction (GEMMs and gather/scatter kernels).
    pub fn launches(&self) -> usize {
        self.steps.iter().map(|s| s.ops.len()).sum()
    }
    /// GEMM launches (single, batched) of one contraction.
    pub fn gemm_launches(&self) -> usize {
        self.steps
            .iter()
            .map(|s| {
                s.ops
                    .iter()
                    .filter(|o| !matches!(o, Op::Gather { .. }))
                    .count()
            })
            .sum()
    }
}

/// How to lower.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LowerOptions {
    /// Merge the single GEMMs of independent groups into grouped-batched launches
    /// (cuBLAS >= 12.5).
    pub grouped: bool,
}
