//! Tensor networks on the contraction layer: lattice sites with their operators and
//! charges, matrix-product operators built from a sum of terms (real or complex couplings),
//! matrix-product states (`f64` or `Complex64`) with
//! their measurements and a file format ([`Mps::save`], [`Mps::load`]), and DMRG (two-site,
//! or single-site with subspace expansion).
//! Every contraction in it is a `contract!`.
//!
//! ```
//! use blockcontract::mps::{Mpo, Site, SpinConserve, Terms};
//!
//! // the S = 1/2 Heisenberg chain on 8 sites, U(1) on 2 Sz
//! let site = Site::spin(1, SpinConserve::Sz)?;
//! let sites = vec![site; 8];
//! let mut h = Terms::new();
//! for i in 0..7 {
//!     h.add(0.5, &[("Sp", i), ("Sm", i + 1)]);
//!     h.add(0.5, &[("Sm", i), ("Sp", i + 1)]);
//!     h.add(1.0, &[("Sz", i), ("Sz", i + 1)]);
//! }
//! let mpo = Mpo::<f64>::from_terms(&sites, &h)?;
//! assert_eq!(mpo.bond_dims(), [1, 5, 5, 5, 5, 5, 5, 5, 1]);
//! # Ok::<(), blockcontract::Error>(())
//! ```

mod dmrg;
mod file;
mod mpo;
mod site;
mod sites;
mod state;

pub use dmrg::{Dmrg, Phases, Sites, Stop, SweepReport, UpdateRecord};
pub use mpo::{Mpo, Term, Terms};
pub use site::{Operator, ParticleConserve, Site, SpinConserve};
pub use state::Mps;
