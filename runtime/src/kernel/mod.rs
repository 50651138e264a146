//! GEMM kernels on raw strided views: faer for everything but tiny shapes, and a tiny-GEMM
//! kernel where a library call's fixed cost dominates. The leaf the executors and the cost
//! model's calibration call; the one place that talks to faer's GEMM.

mod faer_adapter;
mod reduce;
mod tiny;

pub use faer_adapter::{gemm, gemm_par};
pub use reduce::{dot_conj, project_out, sum_abs2};
pub use tiny::{thin_wins, tiny_gemm, tiny_wins, THIN_MAX_N, TINY_MNK};

use crate::scalar::Conj;
use crate::view::MatShape;

/// A GEMM operand: a strided matrix view at a raw pointer, read as stored or conjugated.
#[derive(Debug, Clone, Copy)]
pub struct RawMat<T> {
    /// Element `(0, 0)`.
    pub ptr: *const T,
    /// Extents and strides.
    pub shape: MatShape,
    /// Whether the kernel conjugates the values it reads.
    pub conj: Conj,
}

/// A GEMM output: a strided matrix view at a raw pointer.
#[derive(Debug, Clone, Copy)]
pub struct RawMatMut<T> {
    /// Element `(0, 0)`.
    pub ptr: *mut T,
    /// Extents and strides.
    pub shape: MatShape,
}

impl<T> RawMat<T> {
    /// A view read as stored.
    pub fn new(ptr: *const T, shape: MatShape) -> Self {
        RawMat {
            ptr,
            shape,
            conj: Conj::No,
        }
    }
    /// The same view read with `conj`.
    pub fn with_conj(self, conj: Conj) -> Self {
        RawMat { conj, ..self }
    }
    /// Rows `i0..i1` (within the view).
    pub fn rows(self, i0: usize, i1: usize) -> Self {
        RawMat {
            ptr: self.ptr.wrapping_offset(i0 as isize * self.shape.rs),
            shape: MatShape {
                m: i1 - i0,
                ..self.shape
            },
            ..self
        }
    }
    /// Columns `j0..j1` (within the view).
    pub fn cols(self, j0: usize, j1: usize) -> Self {
        RawMat {
            ptr: self.ptr.wrapping_offset(j0 as isize * self.shape.cs),
            shape: MatShape {
                n: j1 - j0,
                ..self.shape
            },
            ..self
        }
    }
}

impl<T> RawMatMut<T> {
    /// An output view.
    pub fn new(ptr: *mut T, shape: MatShape) -> Self {
        RawMatMut { ptr, shape }
    }
    /// Rows `i0..i1` (within the view).
    pub fn rows(self, i0: usize, i1: usize) -> Self {
        RawMatMut {
            ptr: self.ptr.wrapping_offset(i0 as isize * self.shape.rs),
            shape: MatShape {
                m: i1 - i0,
                ..self.shape
            },
        }
    }
    /// Columns `j0..j1` (within the view).
    pub fn cols(self, j0: usize, j1: usize) -> Self {
        RawMatMut {
            ptr: self.ptr.wrapping_offset(j0 as isize * self.shape.cs),
            shape: MatShape {
                n: j1 - j0,
                ..self.shape
            },
        }
    }
}

/// How many threads one GEMM may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Par {
    /// The calling thread only.
    Seq,
    /// Split over this many threads (faer's rayon split).
    Threads(usize),
}

/// What a GEMM does with its output's old values: BLAS `beta = 0` or `beta = 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Accum {
    /// `C = alpha A B` (beta = 0): the old values are never read, so need no zeroing.
    Replace,
    /// `C += alpha A B` (beta = 1).
    Add,
}
