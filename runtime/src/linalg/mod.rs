//! Linear algebra on symmetric block-sparse tensors, sector by sector (faer underneath):
//! factorizations with the legs split into a row group and a column group (SVD with
//! truncation, QR, LQ, Hermitian eigendecomposition), vector-space operations, and a Lanczos
//! ground-state solver over any linear map.
//!
//! ```
//! use blockcontract_runtime::linalg::{svd, Truncation};
//! use blockcontract_runtime::{contract_dyn, ContractionSpec, DynTensor, Executor, Leg, Space, Symmetry};
//! use std::sync::Arc;
//!
//! let u1 = Symmetry::u1();
//! let v = Arc::new(Space::block(&u1, &[(vec![-1], 3), (vec![0], 4), (vec![1], 3)])?);
//! let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)])?);
//! // an MPS tensor (left bond in, physical in, right bond out), split left | right
//! let t = DynTensor::<f64>::random(vec![Leg::inc(&v), Leg::inc(&p), Leg::out(&v)], u1.zero(), 7)?;
//! let f = svd(&t, &[0, 1], &[2], &Truncation::new(8, 1e-14))?;
//! assert_eq!(f.singular_values.len(), 8);
//! // u * s * vh is the best rank-8 approximation of t
//! let spec = ContractionSpec::parse("T[a,p,c] = U[a,p,k] * S[k,l] * V[l,c]")?;
//! let (back, _) = contract_dyn(&spec, &[&f.u, &f.s, &f.vh], 1.0, Executor::Pairwise)?;
//! let mut err = back.clone();
//! err.axpy(-1.0, &t)?;
//! assert!((err.norm().powi(2) / t.norm().powi(2) - f.discarded_weight).abs() < 1e-12);
//! # Ok::<(), blockcontract_runtime::Error>(())
//! ```

mod factor;
mod lanczos;
mod matrix;
mod vector;

pub use factor::{eigh, lq, qr, svd, Eigh, Svd, Truncation};
pub use lanczos::{lanczos, LanczosOptions, LanczosResult, Reorthogonalization, Vector};
pub use vector::Projection;

/// Sets the threads faer's dense factorizations (and its other global-parallelism routines)
/// use: 1 for sequential.
pub fn set_threads(n: usize) {
    faer::set_global_parallelism(if n <= 1 {
        faer::Par::Seq
    } else {
        faer::Par::rayon(n)
    });
}
