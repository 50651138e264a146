//! The truncated split of a subspace expansion (single-site DMRG, Hubig et al. 2015), at the
//! cost of a basis of `t`'s range and a few new directions rather than of the enlarged
//! matrix. Per sector, with `M` the matrix of `t` and `P` that of the expansion term (both
//! with the isometry's legs as rows):
//! 1. `A`, an orthonormal basis of `M`'s columns (rank-revealing);
//! 2. `B`, `k` new directions: `P Omega` for a seeded random `Omega`, made orthogonal to
//!    `A` and orthonormal: the part of `P`'s range that `A` misses, sketched;
//! 3. the Ritz step in `Q = [A B]`: the eigendecomposition of `C C^H + alpha^2 D D^H` with
//!    `C = Q^H M`, `D = Q^H P`, whose eigenvalues stand for the squared singular values of
//!    `[M, alpha P]` and whose vectors `V` give the isometry `Q V`.
//!
//! Then one truncation over all sectors, as [`truncated_split`](super::truncated_split)'s.
//! For an MPS site (`M` of `d m` rows and `m` columns, `P` of `w m` columns, `w` the MPO's
//! bond dimension) the enlarged matrix's Gram matrix is `d m` wide; here the eigenproblem
//! is `A`'s dimension plus `k`. Where `k` covers the rank of `P` beyond `A`, the values are
//! those of the enlarged matrix (down to `1e-7` of a sector's largest).

use super::factor::{bond, failed, per_sector, Kept, Truncation};
use super::gram::{Keep, Split};
use super::matrix::{check_groups, dense, factor, joint_sectors, sectors, BondAt, Sector};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::hash::generate;
use crate::scalar::Scalar;
use crate::symmetry::{check_same_leg, Leg};
use faer::{Mat, MatRef};

/// The expansion term of an [`expanded_split`]: the tensor `p`, its legs `shared` (the same
/// spaces and flows as the split's isometry legs, in their order) and `rest`, its weight
/// `alpha`, and how many new directions a sector may gain: `ratio` times the states it has,
/// plus [`MIN_NEW`], at most what its rows leave room for. `seed` seeds the sketch.
#[derive(Debug, Clone, Copy)]
pub struct Expansion<'a, T> {
    /// The expansion term (`L W psi` of single-site DMRG).
    pub p: &'a DynTensor<T>,
    /// `p`'s legs that match the isometry's legs of the split tensor, in order.
    pub shared: &'a [usize],
    /// `p`'s other legs.
    pub rest: &'a [usize],
    /// The weight of the term.
    pub alpha: f64,
    /// New directions per sector, as a fraction of the sector's states.
    pub ratio: f64,
    /// The seed of the random sketch (the same seed, the same split).
    pub seed: u64,
}

/// New directions every sector may gain beyond `ratio` times its states (so that a sector
/// the state does not hold yet can enter it).
pub const MIN_NEW: usize = 4;

/// One sector's result before truncation: the basis `Q = [A B]`, the Ritz vectors `V`
/// (largest value first), the values, and `C = Q^H M`.
struct Part<T> {
    basis: Mat<T>,
    vectors: Mat<T>,
    values: Vec<f64>,
    coef: Mat<T>,
}

/// `t ≈ left * right` over the range of `t` enlarged by `alpha p`, truncated by `trunc`, the
/// factor `keep` an isometry (on `rows` for `Keep::Left`, on `cols` for `Keep::Right`) and the
/// other `t` projected on it; see the module's text. Factor charges and bond as
/// [`truncated_split`](super::truncated_split)'s; the discarded weight is that of the Ritz
/// values. Errors: legs as `truncated_split`'s; `p`'s shared legs not those of `t`; `alpha`
/// or `ratio` negative or not finite.
pub fn expanded_split<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    keep: Keep,
    e: &Expansion<'_, T>,
    trunc: &Truncation,
) -> Result<Split<T>> {
    check_groups(t.rank(), rows, cols)?;
    check_groups(e.p.rank(), e.shared, e.rest)?;
    trunc.check()?;
    for (name, v) in [("alpha", e.alpha), ("ratio", e.ratio)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::InvalidArgument {
                name: name.into(),
                reason: format!("{v} is not a finite number >= 0"),
            });
        }
    }
    let (iso, other) = match keep {
        Keep::Left => (rows, cols),
        Keep::Right => (cols, rows),
    };
    check_shared(t.legs(), iso, e.p.legs(), e.shared)?;
    let pairs = joint_sectors(
        sectors(t, iso, other, false),
        sectors(e.p, e.shared, e.rest, false),
    );
    let secs: Vec<&Sector> = pairs.iter().map(|(s, _)| s).collect();
    let parts: Vec<Part<T>> = per_sector(&secs, |s| {
        let i = pairs
            .binary_search_by(|(x, _)| x.q.cmp(&s.q))
            .map_err(|_| failed("expanded split", "a sector without its pair"))?;
        sector_part(t, (iso, other), e, &pairs[i])
    })?;
    let k = Kept::new(parts.iter().map(|p| p.values.as_slice()), trunc);
    let lsecs: Vec<&Sector> = k.live.iter().map(|&i| secs[i]).collect();
    let lkept = k.live_kept();
    let (left, right) = factors(t, (rows, cols), keep, (&lsecs, &lkept), &k.live, &parts)?;
    Ok(Split {
        left,
        right,
        singular_values: k.values(|i| &parts[i].values),
        discarded_weight: k.discarded_weight,
    })
}

/// The two factors over the kept vectors of the live sectors (`secs`, keeping `kept`, their
/// parts `parts[live[i]]`): the isometry `Q V_k` and the other factor `V_k^H C`, transposed
/// where the isometry is on the columns.
fn factors<T: Scalar>(
    t: &DynTensor<T>,
    (rows, cols): (&[usize], &[usize]),
    keep: Keep,
    (lsecs, lkept): (&[&Sector], &[usize]),
    live: &[usize],
    parts: &[Part<T>],
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    let sym = t.symmetry();
    // the bond's charge from the isometry side's: `-q` on the rows, `q - Q` on the columns
    let b = match keep {
        Keep::Left => bond(sym, lsecs, lkept, |q| sym.neg(q))?,
        Keep::Right => bond(sym, lsecs, lkept, |q| sym.add(q, &sym.neg(t.charge())))?,
    };
    // the kept isometry `Q V_k` and the other factor `V_k^H C`, shared legs as rows
    let (isos, others): (Vec<Mat<T>>, Vec<Mat<T>>) = live
        .iter()
        .zip(lkept)
        .map(|(&i, &k)| {
            let p = &parts[i];
            let v = p.vectors.as_ref().subcols(0, k);
            (p.basis.as_ref() * v, v.adjoint() * p.coef.as_ref())
        })
        .unzip();
    let ib: Vec<_> = lsecs.iter().map(|s| &s.rows).collect();
    let ob: Vec<_> = lsecs.iter().map(|s| &s.cols).collect();
    let im: Vec<MatRef<'_, T>> = isos.iter().map(|m| m.as_ref()).collect();
    let om: Vec<MatRef<'_, T>> = others.iter().map(|m| m.as_ref()).collect();
    let (out, inc) = (Leg::out(&b), Leg::inc(&b));
    let (zero, q) = (sym.zero(), t.charge().clone());
    Ok(match keep {
        Keep::Left => (
            factor(t.legs(), rows, &ib, &im, lkept, &out, BondAt::Last, zero)?,
            factor(t.legs(), cols, &ob, &om, lkept, &inc, BondAt::First, q)?,
        ),
        Keep::Right => {
            // the shared legs are the columns: the factors are the transposes
            let it: Vec<MatRef<'_, T>> = im.iter().map(|m| m.transpose()).collect();
            let ot: Vec<MatRef<'_, T>> = om.iter().map(|m| m.transpose()).collect();
            (
                factor(t.legs(), rows, &ob, &ot, lkept, &out, BondAt::Last, zero)?,
                factor(t.legs(), cols, &ib, &it, lkept, &inc, BondAt::First, q)?,
            )
        }
    })
}

/// `p`'s legs `shared` are `t`'s legs `iso`, one for one.
fn check_shared(t: &[Leg], iso: &[usize], p: &[Leg], shared: &[usize]) -> Result<()> {
    if iso.len() != shared.len() {
        return Err(Error::InvalidLegs {
            reason: format!(
                "the expansion term shares legs {shared:?}, the isometry has legs {iso:?}: \
                 one for one"
            ),
        });
    }
    for (&a, &b) in iso.iter().zip(shared) {
        check_same_leg(&t[a], &p[b], || {
            format!("leg {b} of the expansion term against leg {a} of the split tensor")
        })?;
    }
    Ok(())
}

/// One sector: the basis, the new directions and the Ritz step of the module's text.
fn sector_part<T: Scalar>(
    t: &DynTensor<T>,
    (iso, other): (&[usize], &[usize]),
    e: &Expansion<'_, T>,
    (st, sp): &(Sector, Sector),
) -> Result<Part<T>> {
    let m = dense(t, iso, other, st);
    let p = dense(e.p, e.shared, e.rest, sp);
    let r = m.nrows();
    let a = orthonormal_range(m.clone(), None);
    let room = r.saturating_sub(a.ncols());
    let want = ((e.ratio * a.ncols() as f64).ceil() as usize + MIN_NEW)
        .min(room)
        .min(p.ncols());
    let seed = e.seed ^ charge_hash(st);
    let b = if e.alpha > 0.0 && want > 0 {
        new_directions(a.as_ref(), p.as_ref(), want, seed)
    } else {
        Mat::zeros(r, 0)
    };
    let n = a.ncols() + b.ncols();
    if n == 0 {
        // nothing in range: no rows, or `M` and the sketch both zero
        return Ok(Part {
            basis: Mat::zeros(r, 0),
            vectors: Mat::zeros(0, 0),
            values: Vec::new(),
            coef: Mat::zeros(0, m.ncols()),
        });
    }
    let basis = Mat::from_fn(r, n, |i, j| {
        if j < a.ncols() {
            *a.get(i, j)
        } else {
            *b.get(i, j - a.ncols())
        }
    });
    let coef = basis.as_ref().adjoint() * m.as_ref();
    let mut g = coef.as_ref() * coef.as_ref().adjoint();
    if e.alpha > 0.0 && p.ncols() > 0 {
        let d0 = basis.as_ref().adjoint() * p.as_ref();
        let alpha = T::from_f64(e.alpha);
        let d = Mat::from_fn(n, d0.ncols(), |i, j| *d0.get(i, j) * alpha);
        g += d.as_ref() * d.as_ref().adjoint();
    }
    let f = g
        .as_ref()
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(|e| failed("eigh of the expansion's Ritz matrix", e))?;
    let u = f.U();
    let values: Vec<f64> = (0..n)
        .rev()
        .map(|i| f.S().column_vector()[i].re().max(0.0).sqrt())
        .collect();
    let vectors = Mat::from_fn(n, n, |i, j| *u.get(i, n - 1 - j));
    Ok(Part {
        basis,
        vectors,
        values,
        coef,
    })
}

/// Up to `k` orthonormal directions of `p`'s range orthogonal to `a`'s columns: the sketch
/// `p Omega`, orthonormalised against `a`; none where the sketch lies in `a`'s range.
fn new_directions<T: Scalar>(a: MatRef<'_, T>, p: MatRef<'_, T>, k: usize, seed: u64) -> Mat<T> {
    let omega = Mat::from_fn(p.ncols(), k, |i, j| {
        let at = (i * k + j) as u64;
        T::from_parts(generate(seed, at), generate(seed, at ^ (1 << 63)))
    });
    orthonormal_range(p * omega.as_ref(), Some(a))
}

/// An orthonormal basis of `y`'s columns, orthogonal to `a`'s (themselves orthonormal) when
/// given: `a` projected out, then one pass of scaling by the inverse square root of the Gram
/// matrix (SVQB, Stathopoulos and Wu 2002), which drops the directions below `RANGE_FLOOR`
/// times the largest (rank-revealing, where a QR keeps a column per column); then `a`
/// projected out again and a Cholesky QR of the nearly orthonormal result (a second SVQB
/// pass where the Cholesky factorization fails). GEMMs and small eigenproblems, where a
/// Householder QR of a tall, narrow matrix runs column by column.
fn orthonormal_range<T: Scalar>(mut y: Mat<T>, a: Option<MatRef<'_, T>>) -> Mat<T> {
    let away = |y: &mut Mat<T>| {
        if let Some(a) = a {
            let c = a.adjoint() * y.as_ref();
            *y -= a * c.as_ref();
        }
    };
    away(&mut y);
    let mut y = svqb(y);
    away(&mut y);
    match cholesky_qr(&y) {
        Some(z) => z,
        None => svqb(y),
    }
}

/// `y` times the inverse square root of its Gram matrix over the eigenvectors above
/// `RANGE_FLOOR` times the largest eigenvalue (largest first); no columns where `y` is zero.
fn svqb<T: Scalar>(y: Mat<T>) -> Mat<T> {
    let none = || Mat::zeros(y.nrows(), 0);
    if y.ncols() == 0 {
        return none();
    }
    let g = y.as_ref().adjoint() * y.as_ref();
    let Ok(f) = g.as_ref().self_adjoint_eigen(faer::Side::Lower) else {
        return none();
    };
    let n = g.nrows();
    let lam = |i: usize| f.S().column_vector()[i].re();
    let top = lam(n - 1);
    if !(top > 0.0 && top.is_finite()) {
        return none();
    }
    // ascending: the kept directions are the last ones, largest first
    // at most the rank `y` can have: its row count bounds it, whatever rounding leaves
    let kept: Vec<usize> = (0..n)
        .rev()
        .filter(|&i| lam(i) > RANGE_FLOOR * top)
        .take(y.nrows())
        .collect();
    let u = f.U();
    let scaled = Mat::from_fn(n, kept.len(), |i, j| {
        *u.get(i, kept[j]) * T::from_f64(1.0 / lam(kept[j]).sqrt())
    });
    y.as_ref() * scaled.as_ref()
}

/// `y R^-1` with `R^H R` the Cholesky factorization of `y^H y`: orthonormal columns when `y`'s
/// are nearly so; `None` where the factorization fails.
fn cholesky_qr<T: Scalar>(y: &Mat<T>) -> Option<Mat<T>> {
    if y.ncols() == 0 {
        return Some(y.clone());
    }
    let g = y.as_ref().adjoint() * y.as_ref();
    let llt = g.as_ref().llt(faer::Side::Lower).ok()?;
    // L Z^H = Y^H
    let mut zh = y.as_ref().adjoint().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(
        llt.L(),
        zh.as_mut(),
        faer::Par::Seq,
    );
    Some(zh.as_ref().adjoint().to_owned())
}

/// The Gram eigenvalues below this fraction of the largest are not part of a range (their
/// singular values are below `1e-7` of the largest): squared, a Gram matrix loses them.
const RANGE_FLOOR: f64 = 1e-14;

/// A seed offset per sector, from its charge (so that sectors draw different sketches).
fn charge_hash(s: &Sector) -> u64 {
    s.q.values().iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &v| {
        (h ^ v as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
