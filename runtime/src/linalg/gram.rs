//! The truncated split a sweep needs, `t ≈ left * right` with one factor an isometry, by the
//! Gram matrix: per sector the eigendecomposition of `M M^H` (the left factor kept an
//! isometry) or `M^H M` (the right one), on the smaller side, then one GEMM for the other
//! factor (`U^H M`, or `M V`). About twice as fast as a full SVD, and as exact where a sweep
//! needs it: the isometry is orthonormal to machine precision whatever the singular values
//! (an eigensolver's vectors are), the other factor is `t` projected on it, and the squared
//! singular values (the eigenvalues) are accurate to about `1e-16` of the largest square, so
//! the discarded weight is too. What the route cannot give, a small singular value to full
//! relative precision (it has about `1e-16 (s_max / s)^2`: 1e-8 at `s = 1e-4 s_max`), a sweep
//! does not use. A sector whose isometry side is the longer one runs faer's SVD.

use super::factor::{bond, failed, per_sector, split_factors, Kept, Truncation};
use super::matrix::{check_groups, dense, sectors, Sector};
use crate::block::DynTensor;
use crate::error::Result;
use crate::scalar::Scalar;
use faer::{Mat, MatRef};

/// Which factor of a [`truncated_split`] is the isometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// `left` (the row legs and the bond): orthonormal columns; `right = left^H t`.
    Left,
    /// `right` (the bond and the column legs): orthonormal rows; `left = t right^H`.
    Right,
}

/// A truncated split `t ≈ left * right` over a new bond (`left`: row legs then the bond,
/// `Out`, charge 0; `right`: the bond, `In`, then the column legs, charge `t`'s).
#[derive(Debug, Clone)]
pub struct Split<T> {
    /// The left factor.
    pub left: DynTensor<T>,
    /// The right factor.
    pub right: DynTensor<T>,
    /// The kept singular values, largest first.
    pub singular_values: Vec<f64>,
    /// The sum of the discarded singular values squared over the sum of all squared.
    pub discarded_weight: f64,
}

/// One sector's factors before truncation: the isometry's vectors (columns for `Left`, as
/// rows of its adjoint for `Right`), largest singular value first, and the values.
struct Part<T> {
    m: Mat<T>,
    iso: Mat<T>,
    values: Vec<f64>,
    /// Whether the sector ran the SVD (then `other` holds `S V^H` or `U S`).
    other: Option<Mat<T>>,
}

/// `t ≈ left * right` truncated by `trunc`, the factor `keep` an isometry; see the module's
/// text. Errors as [`super::svd`]'s.
pub fn truncated_split<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    trunc: &Truncation,
    keep: Keep,
) -> Result<Split<T>> {
    check_groups(t.rank(), rows, cols)?;
    trunc.check()?;
    let secs = sectors(t, rows, cols, false);
    let parts: Vec<Part<T>> = per_sector(&secs, |s| sector_part(t, rows, cols, s, keep))?;
    let k = Kept::new(parts.iter().map(|p| p.values.as_slice()), trunc);
    let (kept, live) = (&k.kept, &k.live);
    let lsecs: Vec<&Sector> = live.iter().map(|&i| &secs[i]).collect();
    let lkept = k.live_kept();
    let sym = t.symmetry();
    let b = bond(sym, &lsecs, &lkept, |q| sym.neg(q))?;
    // the other factor of each live sector, from the kept vectors only
    let others: Vec<Mat<T>> = live
        .iter()
        .map(|&i| other_factor(&parts[i], kept[i], keep))
        .collect();
    let (lm, rm): (Vec<MatRef<'_, T>>, Vec<MatRef<'_, T>>) = live
        .iter()
        .zip(&others)
        .map(|(&i, o)| match keep {
            Keep::Left => (parts[i].iso.as_ref(), o.as_ref()),
            Keep::Right => (o.as_ref(), parts[i].iso.as_ref()),
        })
        .unzip();
    let (left, right) = split_factors(
        t,
        (rows, cols),
        (&lsecs, &lkept),
        &b,
        (&lm, &rm),
        (sym.zero(), t.charge().clone()),
    )?;
    Ok(Split {
        left,
        right,
        singular_values: k.values(|i| &parts[i].values),
        discarded_weight: k.discarded_weight,
    })
}

/// One sector: the Gram matrix's eigendecomposition on the isometry's side when that side is
/// the shorter one, else faer's thin SVD.
fn sector_part<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    s: &Sector,
    keep: Keep,
) -> Result<Part<T>> {
    let m = dense(t, rows, cols, s);
    let (r, c) = (m.nrows(), m.ncols());
    if r == 0 || c == 0 {
        let z = Mat::zeros(0, 0);
        return Ok(Part {
            m,
            iso: z.clone(),
            values: Vec::new(),
            other: Some(z),
        });
    }
    let gram_side = match keep {
        Keep::Left => r <= c,
        Keep::Right => c <= r,
    };
    if !gram_side {
        let f = m.as_ref().thin_svd().map_err(|e| failed("svd", e))?;
        let values: Vec<f64> = (0..f.S().dim())
            .map(|i| f.S().column_vector()[i].re())
            .collect();
        let (u, v) = (f.U().to_owned(), f.V().to_owned());
        let scaled = |x: MatRef<'_, T>| {
            Mat::from_fn(x.nrows(), x.ncols(), |i, j| {
                *x.get(i, j) * T::from_f64(values[j])
            })
        };
        let (iso, other) = match keep {
            // U S, then (V^H) as rows
            Keep::Right => (v.adjoint().to_owned(), scaled(u.as_ref())),
            // S V^H: rows of V^H scaled
            Keep::Left => (u, scaled(v.as_ref()).adjoint().to_owned()),
        };
        return Ok(Part {
            m,
            iso,
            values,
            other: Some(other),
        });
    }
    let g = match keep {
        Keep::Left => m.as_ref() * m.as_ref().adjoint(),
        Keep::Right => m.as_ref().adjoint() * m.as_ref(),
    };
    let f = g
        .as_ref()
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(|e| failed("eigh of the Gram matrix", e))?;
    let n = f.S().dim();
    // ascending eigenvalues: reversed, largest first, as singular values
    let values: Vec<f64> = (0..n)
        .rev()
        .map(|i| f.S().column_vector()[i].re().max(0.0).sqrt())
        .collect();
    let u = f.U();
    let iso = match keep {
        Keep::Left => Mat::from_fn(n, n, |i, j| *u.get(i, n - 1 - j)),
        Keep::Right => Mat::from_fn(n, n, |i, j| (*u.get(j, n - 1 - i)).conj()),
    };
    Ok(Part {
        m,
        iso,
        values,
        other: None,
    })
}

/// The factor beside the isometry, for the `k` kept vectors: `U_k^H M` or `M V_k`.
fn other_factor<T: Scalar>(p: &Part<T>, k: usize, keep: Keep) -> Mat<T> {
    if let Some(o) = &p.other {
        return o.clone();
    }
    match keep {
        Keep::Left => p.iso.as_ref().subcols(0, k).adjoint() * p.m.as_ref(),
        Keep::Right => p.m.as_ref() * p.iso.as_ref().subrows(0, k).adjoint(),
    }
}
