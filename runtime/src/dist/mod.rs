//! Distributed execution over MPI: block-sparse tensors whose blocks are owned by ranks, and
//! an executor that runs each step of an ordinary [`Plan`](crate::plan::Plan) where the cost
//! model places its work, moving what a rank needs in one message per (step, operand, sender,
//! receiver) instead of one per block.
//!
//! - `owner`: which rank owns each block ([`OwnerMap`]: by sector, one rank, or the user's).
//! - `place`: each step's placement and the messages it implies ([`place_step`]); pure, the
//!   same on every rank, tested without MPI.
//! - `comm` (feature `mpi`): `Dist` (a communicator with its measured message cost),
//!   `DistTensor` (create, fill, scatter, gather) and the distributed contraction;
//!   `transfer`: packing blocks into messages and one step's exchange.
//!
//! Each rank holds a distributed tensor's whole block structure and the values of the blocks
//! it owns (and, during a step, of the blocks it receives): the ranks divide the work and the
//! traffic, not yet the memory.

mod owner;
mod place;

#[cfg(feature = "mpi")]
mod comm;
#[cfg(feature = "mpi")]
mod transfer;

/// The MPI bindings (rsmpi) the distributed executor runs on: `mpi::initialize()` starts MPI.
#[cfg(feature = "mpi")]
pub use ::mpi;

pub use owner::{OwnerFn, OwnerMap};
pub use place::{place_step, Message, MessageCost, StepPlacement};

#[cfg(feature = "mpi")]
pub use comm::{Dist, DistScalar, DistStats, DistTensor};
