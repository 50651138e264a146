//! Which rank owns each block of a distributed tensor.

use crate::block::Block;
use crate::error::{Error, Result};
use crate::hash::splitmix64;
use std::fmt;
use std::sync::Arc;

/// A user's owner rule: `f(sector positions, ranks) -> rank`.
pub type OwnerFn = Arc<dyn Fn(&[u32], usize) -> usize + Send + Sync>;

/// The rule that gives each block of a tensor its owning rank. Every rank must use the same
/// rule for the same tensor (checked when a distributed contraction starts: a mismatch is an
/// error on every rank).
#[derive(Clone)]
pub enum OwnerMap {
    /// The default, by sector: the block's sector positions (one per leg) hashed,
    /// `h = splitmix64(h ^ position)` from `h = 0` over the legs in order, modulo the number
    /// of ranks. Deterministic, and spreads the sectors of a leg over the ranks.
    BySector,
    /// Every block on one rank.
    On(usize),
    /// The user's rule: `f(sector positions, ranks) -> rank`.
    Custom(OwnerFn),
}

impl fmt::Debug for OwnerMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnerMap::BySector => f.write_str("BySector"),
            OwnerMap::On(r) => write!(f, "On({r})"),
            OwnerMap::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl OwnerMap {
    /// The owner of each block, or an error naming a block whose rank is out of range.
    pub fn owners(&self, blocks: &[Block], ranks: usize) -> Result<Vec<u32>> {
        let ranks = ranks.max(1);
        blocks
            .iter()
            .map(|b| {
                let r = match self {
                    OwnerMap::BySector => {
                        let h = b.key.iter().fold(0u64, |h, &s| splitmix64(h ^ s as u64));
                        (h % ranks as u64) as usize
                    }
                    OwnerMap::On(r) => *r,
                    OwnerMap::Custom(f) => f(&b.key, ranks),
                };
                if r >= ranks {
                    return Err(Error::InvalidArgument {
                        name: "owner map".into(),
                        reason: format!(
                            "block {:?} goes to rank {r}, but there are {ranks} ranks",
                            b.key
                        ),
                    });
                }
                Ok(r as u32)
            })
            .collect()
    }
}
