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

impl std::hash::Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            Fx::write(self, u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        Fx::write(self, x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        Fx::write(self, x);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        Fx::write(self, x as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Hash maps keyed by small integer keys (block keys, sector ids), hashed by [`Fx`].
pub type FxMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// Up to [`crate::view::MAX_RANK`] sector positions inline: a block key (or part of one)
/// without a heap allocation, for hashing. Ordered as its positions are (keys of one length
/// compare as their slices do: the unused positions are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct InlineKey {
    len: u8,
    ids: [u32; 16],
}

// only the used positions, two per word (a key is hashed for every block pair of a step)
impl std::hash::Hash for InlineKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u8(self.len);
        for w in self.ids[..self.len as usize].chunks(2) {
            h.write_u64(w[0] as u64 | (w.get(1).copied().unwrap_or(0) as u64) << 32);
        }
    }
}

impl InlineKey {
    /// The positions.
    pub fn ids(&self) -> &[u32] {
        &self.ids[..self.len as usize]
    }
    /// The positions of `key` at `legs` (at most 16 legs).
    #[inline]
    pub fn pick(key: &[u32], legs: &[usize]) -> Self {
        let mut ids = [0u32; 16];
        for (d, &l) in ids.iter_mut().zip(legs) {
            *d = key[l];
        }
        InlineKey {
            len: legs.len().min(16) as u8,
            ids,
        }
    }
}

/// The SplitMix64 step of FORMAT.md.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator value at dense linear index `i` for `seed`: uniform in [-1, 1).
pub fn generate(seed: u64, i: u64) -> f64 {
    let u = splitmix64(splitmix64(seed) ^ i);
    (u >> 11) as f64 * (2.0f64).powi(-53) * 2.0 - 1.0
}
