//! A small, fast, non-cryptographic hasher for structure fingerprints.

use crate::scalar::{DType, Scalar};

/// A small, fast, non-cryptographic hasher over u64 words (FxHash's mixing).
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Fx {
    /// Mixes in one word.
    #[inline]
    pub fn write(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    /// The hash.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// A tag per element type.
pub fn type_tag<T: Scalar>() -> u64 {
    match T::DTYPE {
        DType::F64 => 1,
        DType::F32 => 2,
        DType::C64 => 3,
    }
}
