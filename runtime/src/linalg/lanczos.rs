//! A Lanczos ground-state solver over any linear map given as a closure, with full
//! reorthogonalisation of its Krylov basis (kept small: DMRG uses up to ~20 vectors).

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::linalg::Projection;
use crate::scalar::Scalar;
use faer::Mat;

/// What the solver needs of a vector.
pub trait Vector: Clone {
    /// Its scalars.
    type Elem: Scalar;
    /// `<self|x>`, conjugating `self`.
    fn inner(&self, x: &Self) -> Result<Self::Elem>;
    /// `self += alpha * x`.
    fn axpy(&mut self, alpha: Self::Elem, x: &Self) -> Result<()>;
    /// `self *= alpha`.
    fn scale(&mut self, alpha: Self::Elem);
    /// The Euclidean norm.
    fn norm(&self) -> f64;
    /// One classical Gram-Schmidt pass against `basis`: `self -= sum_i <b_i|self> b_i`, the
    /// coefficients taken from `self` as given. The default runs the inner products, then
    /// the axpys; block-sparse tensors do it in two cache-blocked passes over memory.
    fn project_out(&mut self, basis: &[Self]) -> Result<Projection<Self::Elem>> {
        let refs: Vec<&Self> = basis.iter().collect();
        project_out_by_parts(self, &refs)
    }
}

/// [`Vector::project_out`] by its parts: every inner product (with `v` as given), then every
/// axpy. Nothing is changed when an inner product fails.
pub(crate) fn project_out_by_parts<V: Vector>(
    v: &mut V,
    basis: &[&V],
) -> Result<Projection<V::Elem>> {
    let norm_before = v.norm();
    let coefs = basis
        .iter()
        .map(|b| b.inner(v))
        .collect::<Result<Vec<_>>>()?;
    for (&c, b) in coefs.iter().zip(basis) {
        v.axpy(-c, b)?;
    }
    Ok(Projection {
        coefs,
        norm_before,
        norm_after: v.norm(),
    })
}

impl<T: Scalar> Vector for DynTensor<T> {
    type Elem = T;
    fn inner(&self, x: &Self) -> Result<T> {
        DynTensor::inner(self, x)
    }
    fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        DynTensor::axpy(self, alpha, x)
    }
    fn scale(&mut self, alpha: T) {
        DynTensor::scale(self, alpha)
    }
    fn norm(&self) -> f64 {
        DynTensor::norm(self)
    }
    fn project_out(&mut self, basis: &[Self]) -> Result<Projection<T>> {
        let refs: Vec<&Self> = basis.iter().collect();
        DynTensor::project_out(self, &refs)
    }
}

/// When the solver stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LanczosOptions {
    /// The most Krylov vectors (applications of the map).
    pub max_iter: usize,
    /// The fewest.
    pub min_iter: usize,
    /// Stop when the lowest Ritz value moves less than this between iterations.
    pub tol: f64,
}

impl Default for LanczosOptions {
    /// TeNPy's DMRG settings: at most 20 vectors, at least 2, energy tolerance 1e-14.
    fn default() -> Self {
        LanczosOptions {
            max_iter: 20,
            min_iter: 2,
            tol: 1e-14,
        }
    }
}

/// The solver's answer.
#[derive(Debug, Clone)]
pub struct LanczosResult<V> {
    /// The lowest eigenvalue found.
    pub value: f64,
    /// Its eigenvector, normalised.
    pub vector: V,
    /// Applications of the map (the Krylov dimension).
    pub applications: usize,
    /// Whether the tolerance was met (or the Krylov space became invariant) before
    /// `max_iter`.
    pub converged: bool,
}

/// The lowest eigenpair of the symmetric tridiagonal matrix with `alpha` on the diagonal and
/// `beta` beside it.
fn tridiagonal_ground(alpha: &[f64], beta: &[f64]) -> Result<(f64, Vec<f64>)> {
    let n = alpha.len();
    let t = Mat::<f64>::from_fn(n, n, |i, j| {
        if i == j {
            alpha[i]
        } else if i + 1 == j {
            beta[i]
        } else if j + 1 == i {
            beta[j]
        } else {
            0.0
        }
    });
    let e = t
        .as_ref()
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(|e| Error::Factorization {
            what: "Lanczos tridiagonal eigenproblem".into(),
            reason: format!("{e:?}"),
        })?;
    let v: Vec<f64> = (0..n).map(|i| *e.U().get(i, 0)).collect();
    Ok((*e.S().column_vector().get(0), v))
}

/// The lowest eigenpair of the Hermitian map `apply`, from the start vector `v0` (nonzero).
pub fn lanczos<V: Vector>(
    mut apply: impl FnMut(&V) -> Result<V>,
    v0: &V,
    opts: &LanczosOptions,
) -> Result<LanczosResult<V>> {
    let n0 = v0.norm();
    if !(n0.is_finite() && n0 > 0.0) {
        return Err(Error::InvalidArgument {
            name: "v0".into(),
            reason: format!("the start vector has norm {n0}"),
        });
    }
    if opts.max_iter == 0 {
        return Err(Error::InvalidArgument {
            name: "max_iter".into(),
            reason: "0 applications find nothing; at least 1".into(),
        });
    }
    let one = |x: f64| V::Elem::from_f64(x);
    let mut v = v0.clone();
    v.scale(one(1.0 / n0));
    let mut basis = vec![v];
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let (mut e, mut coef);
    let mut e_prev = f64::INFINITY;
    let mut converged = false;
    loop {
        let k = basis.len() - 1;
        let mut w = apply(&basis[k])?;
        // full reorthogonalisation against the whole basis, classical Gram-Schmidt twice
        // when needed ("twice is enough"): one pass loses orthogonality when w is nearly in
        // the span (a small new beta), and a non-orthogonal basis gives Ritz values below the
        // spectrum. The first pass's last coefficient is <v_k|A v_k>, the new alpha.
        let first = w.project_out(&basis)?;
        alpha.push(first.coefs[k].re());
        let before = first.norm_before;
        let mut b = first.norm_after;
        if b <= 0.5 * before {
            b = w.project_out(&basis)?.norm_after;
        }
        (e, coef) = tridiagonal_ground(&alpha, &beta)?;
        let scale = alpha.iter().fold(1.0f64, |m, a| m.max(a.abs()));
        if basis.len() >= opts.min_iter && (e_prev - e).abs() < opts.tol * scale.max(e.abs()) {
            converged = true;
            break;
        }
        // the Krylov space is invariant (to rounding): the Ritz pair is exact
        if b <= 1e-10 * scale.max(before) {
            converged = true;
            break;
        }
        if basis.len() >= opts.max_iter {
            break;
        }
        e_prev = e;
        beta.push(b);
        w.scale(one(1.0 / b));
        basis.push(w);
    }
    let mut vector = basis[0].clone();
    vector.scale(one(coef[0]));
    for (c, b) in coef.iter().zip(&basis).skip(1) {
        vector.axpy(one(*c), b)?;
    }
    let n = vector.norm();
    vector.scale(one(1.0 / n));
    Ok(LanczosResult {
        value: e,
        vector,
        applications: alpha.len(),
        converged,
    })
}
