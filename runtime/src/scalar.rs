//! Element types: f64, f32 and complex f64.

use crate::error::{Error, Result};
use faer::traits::ComplexField;
use num_complex::Complex64;
use std::any::Any;
use std::fmt::{Debug, Display};

/// The element types a workload file can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 64-bit float.
    F64,
    /// 32-bit float.
    F32,
    /// Complex with f64 parts (numpy's complex128), `c64` in files.
    C64,
}

impl DType {
    /// The name used in workload files.
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::C64 => "c64",
        }
    }
}

/// Whether an operand is used as stored or complex-conjugated (flows reversed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conj {
    /// As stored.
    No,
    /// Conjugated: values conjugated, every leg's flow reversed, charge negated.
    Yes,
}

impl Conj {
    /// `Yes` when `b`.
    pub fn from_bool(b: bool) -> Self {
        if b {
            Conj::Yes
        } else {
            Conj::No
        }
    }
    pub(crate) fn faer(self) -> faer::Conj {
        match self {
            Conj::No => faer::Conj::No,
            Conj::Yes => faer::Conj::Yes,
        }
    }
}

impl Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    /// Only this crate's element types are `Scalar`: every generic entry point reaches code
    /// instantiated here for each of them (see [`monomorphic!`](crate::scalar::monomorphic)).
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
    impl Sealed for num_complex::Complex64 {}
}

/// An element type of a tensor: `f64`, `f32` or `Complex64` (sealed).
pub trait Scalar:
    sealed::Sealed
    + ComplexField
    + Copy
    + Send
    + Sync
    + Debug
    + Display
    + PartialEq
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + 'static
{
    /// The dtype tag.
    const DTYPE: DType;
    /// Whether the type is complex.
    const IS_COMPLEX: bool;
    /// Zero.
    fn zero() -> Self;
    /// One.
    fn one() -> Self;
    /// From a real number.
    fn from_f64(x: f64) -> Self;
    /// From real and imaginary parts (the imaginary part is dropped for real types).
    fn from_parts(re: f64, im: f64) -> Self;
    /// Complex conjugate (identity for real types).
    fn conj(self) -> Self;
    /// Squared modulus, in f64.
    fn abs2(self) -> f64;
    /// Real part, in f64.
    fn re(self) -> f64;
    /// Imaginary part, in f64 (0 for real types).
    fn im(self) -> f64;
    /// Bytes per element.
    fn size_bytes() -> usize {
        std::mem::size_of::<Self>()
    }
}

impl Scalar for f64 {
    const DTYPE: DType = DType::F64;
    const IS_COMPLEX: bool = false;
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn from_parts(re: f64, _im: f64) -> Self {
        re
    }
    fn conj(self) -> Self {
        self
    }
    fn abs2(self) -> f64 {
        self * self
    }
    fn re(self) -> f64 {
        self
    }
    fn im(self) -> f64 {
        0.0
    }
}

impl Scalar for f32 {
    const DTYPE: DType = DType::F32;
    const IS_COMPLEX: bool = false;
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn from_parts(re: f64, _im: f64) -> Self {
        re as f32
    }
    fn conj(self) -> Self {
        self
    }
    fn abs2(self) -> f64 {
        (self as f64) * (self as f64)
    }
    fn re(self) -> f64 {
        self as f64
    }
    fn im(self) -> f64 {
        0.0
    }
}

impl Scalar for Complex64 {
    const DTYPE: DType = DType::C64;
    const IS_COMPLEX: bool = true;
    fn zero() -> Self {
        Complex64::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex64::new(1.0, 0.0)
    }
    fn from_f64(x: f64) -> Self {
        Complex64::new(x, 0.0)
    }
    fn from_parts(re: f64, im: f64) -> Self {
        Complex64::new(re, im)
    }
    fn conj(self) -> Self {
        Complex64::conj(&self)
    }
    fn abs2(self) -> f64 {
        self.norm_sqr()
    }
    fn re(self) -> f64 {
        self.re
    }
    fn im(self) -> f64 {
        self.im
    }
}

/// The table of `T`'s entry points among the three instantiated in this crate (one per element
/// type), by `T::DTYPE`. Not reachable for a sealed `Scalar`, the error is the fallback.
pub(crate) fn pick<T: Scalar, K: 'static>(
    f64: &'static dyn Any,
    f32: &'static dyn Any,
    c64: &'static dyn Any,
) -> Result<&'static K> {
    let table = match T::DTYPE {
        DType::F64 => f64,
        DType::F32 => f32,
        DType::C64 => c64,
    };
    table
        .downcast_ref::<K>()
        .ok_or_else(|| Error::UnsupportedDtype {
            dtype: T::DTYPE,
            executor: "this build (no instance of the entry points)".into(),
        })
}

/// `monomorphic!(T, Table)`: the `Table<T>` of function pointers (`Table::<X>::NEW` for each
/// element type X) whose statics live in this crate, so the generic code they point to is
/// instantiated and optimised here, at the runtime's optimisation level, whatever the opt-level
/// of the crate calling the generic entry point (a user's debug build runs the kernels at
/// release speed when the dependencies are optimised). `Result<&'static Table<T>>`.
macro_rules! monomorphic {
    ($t:ty, $table:ident) => {{
        static F64: $table<f64> = $table::<f64>::NEW;
        static F32: $table<f32> = $table::<f32>::NEW;
        static C64: $table<::num_complex::Complex64> = $table::<::num_complex::Complex64>::NEW;
        $crate::scalar::pick::<$t, $table<$t>>(&F64, &F32, &C64)
    }};
}
pub(crate) use monomorphic;
