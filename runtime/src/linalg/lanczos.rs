//! A Lanczos ground-state solver over any linear map given as a closure. Its Krylov basis
//! (kept small: DMRG uses up to ~20 vectors) is kept orthogonal to working precision by
//! partial reorthogonalisation (Simon's estimate of the basis's loss of orthogonality; a full
//! pass only when it nears the square root of the machine epsilon) or, on request, by a full
//! pass at every step.

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

/// How the Krylov basis is kept orthogonal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorthogonalization {
    /// Each new vector against its two predecessors; against the whole basis only when the
    /// estimated loss of orthogonality (Simon's recurrence) passes the square root of the
    /// machine epsilon, then at the next step too.
    Partial,
    /// Each new vector against the whole basis at every step.
    Full,
}

/// When the solver stops, and how it keeps its basis orthogonal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LanczosOptions {
    /// The most Krylov vectors (applications of the map).
    pub max_iter: usize,
    /// The fewest.
    pub min_iter: usize,
    /// Stop when the lowest Ritz value moves less than this between iterations.
    pub tol: f64,
    /// Partial (the default) or full reorthogonalisation.
    pub reorthogonalization: Reorthogonalization,
}

impl Default for LanczosOptions {
    /// TeNPy's DMRG settings: at most 20 vectors, at least 2, energy tolerance 1e-14; partial
    /// reorthogonalisation.
    fn default() -> Self {
        LanczosOptions {
            max_iter: 20,
            min_iter: 2,
            tol: 1e-14,
            reorthogonalization: Reorthogonalization::Partial,
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
    /// Steps that projected their new vector out of the whole basis (every step but the
    /// first under [`Reorthogonalization::Full`]).
    pub full_passes: usize,
}

/// The symmetric tridiagonal matrix with `alpha` on the diagonal and `beta` beside it.
fn tridiagonal(alpha: &[f64], beta: &[f64]) -> Mat<f64> {
    Mat::<f64>::from_fn(alpha.len(), alpha.len(), |i, j| {
        if i == j {
            alpha[i]
        } else if i + 1 == j {
            beta[i]
        } else if j + 1 == i {
            beta[j]
        } else {
            0.0
        }
    })
}

/// The tridiagonal eigenproblem's failure, typed.
fn tridiagonal_error(e: faer::linalg::evd::EvdError) -> Error {
    Error::Factorization {
        what: "Lanczos tridiagonal eigenproblem".into(),
        reason: format!("{e:?}"),
    }
}

/// The lowest eigenvalue of the symmetric tridiagonal matrix (`alpha`, `beta`): eigenvalues
/// only, as every step needs (its eigenvector is needed once, at the end).
fn tridiagonal_lowest(alpha: &[f64], beta: &[f64]) -> Result<f64> {
    let values = tridiagonal(alpha, beta)
        .as_ref()
        .self_adjoint_eigenvalues(faer::Side::Lower)
        .map_err(tridiagonal_error)?;
    Ok(values[0])
}

/// The lowest eigenpair of the symmetric tridiagonal matrix (`alpha`, `beta`).
fn tridiagonal_ground(alpha: &[f64], beta: &[f64]) -> Result<(f64, Vec<f64>)> {
    let t = tridiagonal(alpha, beta);
    let e = t
        .as_ref()
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(tridiagonal_error)?;
    let v: Vec<f64> = (0..alpha.len()).map(|i| *e.U().get(i, 0)).collect();
    Ok((*e.S().column_vector().get(0), v))
}

/// The working precision of `E`'s real part.
fn epsilon<E: Scalar>() -> f64 {
    let real_bytes = E::size_bytes() / if E::IS_COMPLEX { 2 } else { 1 };
    if real_bytes <= 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// Simon's estimate of the new vector's overlaps with the basis: `cur` holds `<v_i|v_k>` for
/// `i <= k` (estimated; 1 at `k`), `prev` those of `v_(k-1)`; `alpha`, `beta` the
/// tridiagonal so far (`beta[i]` joins `v_i` and `v_(i+1)`), `b` the new vector's norm before
/// it is scaled. Returns the estimates for `v_(k+1)` (length `k + 2`).
fn overlap_estimate(
    cur: &[f64],
    prev: &[f64],
    alpha: &[f64],
    beta: &[f64],
    b: f64,
    eps: f64,
) -> Vec<f64> {
    let k = cur.len() - 1;
    let mut next = vec![0.0; k + 2];
    for i in 0..k {
        let mut t = beta[i] * cur[i + 1] + (alpha[i] - alpha[k]) * cur[i] - beta[k - 1] * prev[i];
        if i > 0 {
            t += beta[i - 1] * cur[i - 1];
        }
        // rounding in this step (about eps |A v_k|), of the sign that grows the estimate
        t += (eps * (alpha[k].abs() + beta[k - 1] + b)).copysign(t);
        next[i] = t / b;
    }
    next[k] = eps;
    next[k + 1] = 1.0;
    next
}

/// Keeps a Krylov basis orthogonal: the estimate of the newest vectors' overlaps with the
/// basis (partial reorthogonalisation) and the passes made against the whole basis.
struct Orthogonalizer {
    full: bool,
    eps: f64,
    /// Estimated overlaps of `v_(k-1)` and `v_k` with the basis.
    prev: Vec<f64>,
    cur: Vec<f64>,
    /// Those of the vector being made, until it joins the basis.
    next: Vec<f64>,
    /// The next step makes a pass (the one after an estimate-triggered pass).
    again: bool,
    full_passes: usize,
}

impl Orthogonalizer {
    fn new(mode: Reorthogonalization, eps: f64) -> Self {
        Orthogonalizer {
            full: mode == Reorthogonalization::Full,
            eps,
            prev: Vec::new(),
            cur: vec![1.0],
            next: Vec::new(),
            again: false,
            full_passes: 0,
        }
    }

    /// Makes `w = A v_k` orthogonal to the basis `v_0..=v_k`; pushes `alpha_k`; returns `w`'s
    /// norm before and after.
    fn step<V: Vector>(
        &mut self,
        w: &mut V,
        basis: &[V],
        alpha: &mut Vec<f64>,
        beta: &[f64],
    ) -> Result<(f64, f64)> {
        let (k, eps) = (basis.len() - 1, self.eps);
        // against the last two vectors (classical Gram-Schmidt: the last coefficient is
        // <v_k|A v_k>, the new alpha), or the whole basis under full reorthogonalisation
        let from = if self.full { 0 } else { k.saturating_sub(1) };
        let first = w.project_out(&basis[from..])?;
        alpha.push(first.coefs[first.coefs.len() - 1].re());
        let (before, mut b) = (first.norm_before, first.norm_after);
        self.next = if k > 0 {
            overlap_estimate(
                &self.cur,
                &self.prev,
                alpha,
                beta,
                b.max(f64::MIN_POSITIVE),
                eps,
            )
        } else {
            vec![eps, 1.0]
        };
        // a pass against the whole basis when the estimate nears sqrt(eps) (a nearly
        // invariant Krylov space, where one step cancels most of the vector, gets there at
        // once), at the step after such a pass, or at every step under full
        // reorthogonalisation; twice when a pass cancels most of the vector ("twice is
        // enough")
        let lost = self.next[..k].iter().any(|x| x.abs() > eps.sqrt());
        if k > 0 && (self.full || lost || self.again) {
            let mut pass_before = before;
            if !self.full {
                pass_before = b;
                b = w.project_out(basis)?.norm_after;
            }
            if b <= 0.5 * pass_before {
                b = w.project_out(basis)?.norm_after;
            }
            self.full_passes += 1;
            // the new vector is orthogonal to working precision; v_k is not, so a pass
            // triggered by the estimate is repeated at the next step (after which both rows
            // of the estimate are at rounding level)
            self.again = !self.full && lost && !self.again;
            self.next[..=k].iter_mut().for_each(|x| *x = eps);
        } else {
            self.again = false;
        }
        Ok((before, b))
    }

    /// The vector just made joins the basis.
    fn advance(&mut self) {
        let next = std::mem::take(&mut self.next);
        self.prev = std::mem::replace(&mut self.cur, next);
    }
}

/// A start vector of finite nonzero norm and at least one application, or a typed error.
fn check_start(n0: f64, opts: &LanczosOptions) -> Result<()> {
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
    Ok(())
}

/// The lowest eigenpair of the Hermitian map `apply`, from the start vector `v0` (nonzero).
pub fn lanczos<V: Vector>(
    mut apply: impl FnMut(&V) -> Result<V>,
    v0: &V,
    opts: &LanczosOptions,
) -> Result<LanczosResult<V>> {
    let n0 = v0.norm();
    check_start(n0, opts)?;
    let one = |x: f64| V::Elem::from_f64(x);
    let mut v = v0.clone();
    v.scale(one(1.0 / n0));
    let mut basis = vec![v];
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let mut e;
    let mut e_prev = f64::INFINITY;
    let mut converged = false;
    let mut orth = Orthogonalizer::new(opts.reorthogonalization, epsilon::<V::Elem>());
    loop {
        let mut w = apply(&basis[basis.len() - 1])?;
        let (before, b) = orth.step(&mut w, &basis, &mut alpha, &beta)?;
        e = tridiagonal_lowest(&alpha, &beta)?;
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
        orth.advance();
    }
    // the Ritz vector's coefficients, once (each step needed the value only)
    let (value, coef) = tridiagonal_ground(&alpha, &beta)?;
    let mut vector = basis[0].clone();
    vector.scale(one(coef[0]));
    for (c, b) in coef.iter().zip(&basis).skip(1) {
        vector.axpy(one(*c), b)?;
    }
    let n = vector.norm();
    vector.scale(one(1.0 / n));
    Ok(LanczosResult {
        value,
        vector,
        applications: alpha.len(),
        converged,
        full_passes: orth.full_passes,
    })
}
