//! What the executors read of the coefficient form (`coefficient.rs` chooses it,
//! `coefficient_terms.rs` builds it): the two GEMM stages, the axpys between them, per
//! output block its share of both, and the cost model's numbers.

use crate::scalar::Conj;
use crate::view::MatShape;

/// One GEMM of the first stage: `T = A · B` into a row-major region of the workspace.
#[derive(Debug, Clone)]
pub struct FirstGemm {
    /// Offset of `A`'s origin in the chain's middle operand.
    pub a: usize,
    /// `A`'s extents and strides.
    pub a_shape: MatShape,
    /// Offset of `B`'s origin in the chain's last operand.
    pub b: usize,
    /// `B`'s extents and strides.
    pub b_shape: MatShape,
    /// Offset of the `a_shape.m x b_shape.n` row-major result in the workspace.
    pub t: usize,
}

/// One GEMM of the last stage: `Y += alpha · M1 · Q`, after `Q` (`K x N` row-major) is
/// zeroed and its axpys run.
#[derive(Debug, Clone)]
pub struct SecondGemm {
    /// Offset of the output view's origin in the output buffer.
    pub out: usize,
    /// The output view (`m x N`).
    pub out_shape: MatShape,
    /// Offset of `M1`'s origin in the chain's first operand.
    pub m1: usize,
    /// `M1`'s extents and strides (`m x K`).
    pub m1_shape: MatShape,
    /// Its axpys: `axpys[first..end]`.
    pub axpys: (u32, u32),
}

/// Where an axpy reads: the first stage's workspace, or an operand's slice where the
/// other factor of that stage is an identity (no GEMM ran for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The workspace.
    Workspace,
    /// The chain's middle operand (its last one is an identity there).
    Middle,
    /// The chain's last operand (its middle one is an identity there).
    Last,
}

/// `dst[d..] += f · src[s..]` over `rows x cols`, `f` the coefficient operand's element
/// `coef` (times the contraction's scalar when `dst` is the output).
#[derive(Debug, Clone, Copy)]
pub struct Axpy {
    /// Element offset in the coefficient operand's buffer.
    pub coef: usize,
    /// What it reads.
    pub src: Source,
    /// Offset, row and column stride in the source.
    pub s: usize,
    /// Row stride in the source.
    pub s_rs: isize,
    /// Column stride in the source.
    pub s_cs: isize,
    /// Offset in the destination (`Q`, or the output for a direct axpy).
    pub d: usize,
    /// Row stride in the destination.
    pub d_rs: isize,
    /// Column stride in the destination.
    pub d_cs: isize,
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
}

/// The work on one output block, one parallel unit: `seconds[s.0..s.1]` (each with its
/// `Q`), then `direct[d.0..d.1]` (terms whose `M1` is an identity: added to it directly).
#[derive(Debug, Clone, Copy)]
pub struct OutputWork {
    /// Its last-stage GEMMs.
    pub seconds: (u32, u32),
    /// Its direct axpys.
    pub direct: (u32, u32),
}

/// A contraction planned in the coefficient form; see the module's text.
#[derive(Debug, Clone)]
pub struct CoefficientPlan {
    /// The operand applied as coefficients.
    pub coef: usize,
    /// Whether its values are conjugated.
    pub coef_conj: Conj,
    /// The chain's operands in the order multiplied (`M1, M2, M3`).
    pub chain: [usize; 3],
    /// Their conjugations.
    pub conj: [Conj; 3],
    /// Whether the chain is the written one transposed (left-first: `T = M1 · M2` first).
    pub left_first: bool,
    /// The first stage.
    pub firsts: Vec<FirstGemm>,
    /// The first stage's workspace, elements.
    pub t_len: usize,
    /// The last stage, by output block.
    pub outputs: Vec<OutputWork>,
    /// The last stage's GEMMs.
    pub seconds: Vec<SecondGemm>,
    /// Every axpy into a `Q`.
    pub axpys: Vec<Axpy>,
    /// Every axpy into the output (an identity `M1`).
    pub direct: Vec<Axpy>,
    /// GEMMs skipped because a factor is a marked identity (terms routed around them).
    pub identity_terms: usize,
    /// The largest `Q`, elements.
    pub q_len: usize,
    /// Useful flops of both GEMM stages.
    pub flops: f64,
    /// Elements the axpys stream.
    pub axpy_elems: usize,
    /// Predicted seconds of this form.
    pub predicted_s: f64,
    /// Predicted seconds of the other direction (scaled by the two directions' flop proxy:
    /// only the direction taken is built).
    pub other_direction_s: f64,
    /// Predicted seconds of the pairwise steps it replaces.
    pub pairwise_s: f64,
}

impl CoefficientPlan {
    /// Kernel calls: both GEMM stages.
    pub fn kernel_calls(&self) -> usize {
        self.firsts.len() + self.seconds.len()
    }
    /// Approximate memory held, bytes.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Self>()
            + self.firsts.len() * size_of::<FirstGemm>()
            + self.seconds.len() * size_of::<SecondGemm>()
            + (self.axpys.len() + self.direct.len()) * size_of::<Axpy>()
            + self.outputs.len() * size_of::<OutputWork>()
    }
}
