//! Linear algebra on symmetric block-sparse tensors, sector by sector (faer underneath):
//! factorizations with the legs split into a row group and a column group (SVD with
//! truncation, QR, LQ, Hermitian eigendecomposition), vector-space operations, and a Lanczos
//! ground-state solver over any linear map.
//!
//! ```
//! use blockcontract::linalg::{svd, Truncation};
//! use blockcontract::{contract, DynTensor, Leg, Space, Symmetry, Tensor};
//! use std::sync::Arc;
//!
//! let u1 = Symmetry::u1();
//! let v = Arc::new(Space::block(&u1, &[(vec![-1], 3), (vec![0], 4), (vec![1], 3)])?);
//! let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)])?);
//! let t = DynTensor::<f64>::random(vec![Leg::inc(&v), Leg::inc(&p), Leg::out(&v)], u1.zero(), 7)?;
//! let f = svd(&t, &[0, 1], &[2], &Truncation::none())?;
//! let (u, s, vh) = (Tensor::<f64, 3>::try_from(f.u)?, Tensor::<f64, 2>::try_from(f.s)?, Tensor::<f64, 2>::try_from(f.vh)?);
//! let back = contract!(b[a, p, c] := u[a, p, k] * s[k, l] * vh[l, c])?;
//! assert!(back.as_dyn().add(&t.conj().conj())?.norm() > 0.0);
//! # Ok::<(), blockcontract::Error>(())
//! ```

mod factor;
mod lanczos;
mod matrix;
mod vector;

pub use factor::{eigh, lq, qr, svd, Eigh, Svd, Truncation};
pub use lanczos::{lanczos, LanczosOptions, LanczosResult, Vector};

/// Sets the threads faer's dense factorizations (and its other global-parallelism routines)
/// use: 1 for sequential.
pub fn set_threads(n: usize) {
    faer::set_global_parallelism(if n <= 1 {
        faer::Par::Seq
    } else {
        faer::Par::rayon(n)
    });
}
