//! Factorizations of block-sparse tensors, sector by sector: SVD with truncation, QR, LQ and
//! the Hermitian eigendecomposition. Each result is block-sparse, joined by a new bond leg
//! whose sectors are the kept ones.
//!
//! Conventions (a tensor `t` with row legs `R`, column legs `C`, charge `Q`; a sector's row
//! charge `q` is the sum over `R` of `sign(flow) * charge`): the left factor has legs
//! `R..., bond` with the bond flowing `Out`; the right factor `bond, C...` with the bond `In`.
//! - SVD: `u` (charge 0, bond charge `-q`), `s` diagonal (`In`, `Out`, charge 0), `vh`
//!   (charge `Q`): `u * s * vh == t` up to the truncation.
//! - QR: `q` (charge 0), `r` (charge `Q`); LQ: `l` (charge `Q`), `q` (charge 0).
//! - eigh: `t` square (`C` the duals of `R`, charge 0): `v` (charge 0), `d` diagonal, with
//!   `t == v * d * conj(v)` over the bond.

use super::matrix::{check_groups, dense, factor, sectors, BondAt, Sector};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::{monomorphic, Scalar};
use crate::symmetry::{Charge, Leg, Space, Symmetry};
use faer::{Mat, MatRef};
use std::sync::Arc;
use std::sync::Mutex;

/// How an SVD is truncated: at most `max_dim` singular values over all sectors together, and
/// none below `cutoff` times the largest (TeNPy's `chi_max` and `svd_min` on a normalised
/// state). At least one value is always kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truncation {
    /// The largest bond dimension kept, summed over sectors (`None`: no limit).
    pub max_dim: Option<usize>,
    /// Relative cutoff: values below `cutoff * s_max` are discarded.
    pub cutoff: f64,
}

impl Truncation {
    /// Keep everything (zero singular values are still dropped).
    pub fn none() -> Self {
        Truncation {
            max_dim: None,
            cutoff: 0.0,
        }
    }
    /// At most `max_dim` values, none below `cutoff` times the largest.
    pub fn new(max_dim: usize, cutoff: f64) -> Self {
        Truncation {
            max_dim: Some(max_dim),
            cutoff,
        }
    }
    pub(super) fn check(&self) -> Result<()> {
        if !(self.cutoff.is_finite() && self.cutoff >= 0.0) {
            return Err(Error::InvalidArgument {
                name: "cutoff".into(),
                reason: format!("{} is not a finite number >= 0", self.cutoff),
            });
        }
        if self.max_dim == Some(0) {
            return Err(Error::InvalidArgument {
                name: "max_dim".into(),
                reason: "0 keeps nothing; at least 1".into(),
            });
        }
        Ok(())
    }
}

/// A truncated SVD.
#[derive(Debug, Clone)]
pub struct Svd<T> {
    /// Left singular vectors: the row legs and the bond (`Out`).
    pub u: DynTensor<T>,
    /// The kept singular values on the diagonal: bond (`In`), bond (`Out`).
    pub s: DynTensor<T>,
    /// Right singular vectors: the bond (`In`) and the column legs.
    pub vh: DynTensor<T>,
    /// The kept singular values, largest first.
    pub singular_values: Vec<f64>,
    /// Discarded weight: the sum of the discarded values squared over the sum of all squared.
    pub discarded_weight: f64,
}

/// A Hermitian eigendecomposition.
#[derive(Debug, Clone)]
pub struct Eigh<T> {
    /// Eigenvectors: the row legs and the bond (`Out`).
    pub v: DynTensor<T>,
    /// The eigenvalues on the diagonal: bond (`In`), bond (`Out`).
    pub d: DynTensor<T>,
    /// The eigenvalues, ascending.
    pub values: Vec<f64>,
}

pub(super) fn failed(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Factorization {
        what: what.into(),
        reason: format!("{e:?}"),
    }
}

/// `f` on every sector, the results in sector order (the first error in that order is
/// returned): side by side on [`set_threads`](super::set_threads)'s threads, largest first,
/// when it gave several.
pub(super) fn per_sector<S: std::borrow::Borrow<Sector> + Sync, R: Send>(
    secs: &[S],
    f: impl Fn(&Sector) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = super::threads();
    if threads < 2 || secs.len() < 2 {
        return secs.iter().map(|s| f(s.borrow())).collect();
    }
    let cost = |s: &Sector| {
        let (m, n) = (s.rows.dim as f64, s.cols.dim as f64);
        m * n * m.min(n)
    };
    let mut order: Vec<usize> = (0..secs.len()).collect();
    order.sort_by(|&x, &y| cost(secs[y].borrow()).total_cmp(&cost(secs[x].borrow())));
    let slots: Vec<Mutex<Option<Result<R>>>> = secs.iter().map(|_| Mutex::new(None)).collect();
    crate::threads::for_each(threads, secs.len(), &|i| {
        let j = order[i];
        let r = f(secs[j].borrow());
        *slots[j].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                // every index runs once (a panic would have reached us instead)
                .unwrap_or_else(|| Err(failed("factorization", "a sector did not run")))
        })
        .collect()
}

/// The new bond: one sector per sector of `t` that keeps something, charge `charge(q)`.
pub(super) fn bond(
    sym: &Symmetry,
    secs: &[&Sector],
    kept: &[usize],
    charge: impl Fn(&Charge) -> Charge,
) -> Result<Arc<Space>> {
    let list: Vec<(Vec<i64>, usize)> = secs
        .iter()
        .zip(kept)
        .map(|(s, &k)| (charge(&s.q).values().to_vec(), k))
        .collect();
    Ok(Arc::new(Space::block(sym, &list)?))
}

/// The two factors of `t = left * right` joined by the new bond `b`: `left` on the row legs
/// then `b` (out), `right` on `b` (in) then the column legs, sector `i` of `b` holding
/// `kept[i]` columns of `lm[i]` and rows of `rm[i]` (the matrices of `t`'s sector `secs[i]`);
/// `(lq, rq)` the factors' total charges. The one place SVD, QR and LQ build their results.
pub(super) fn split_factors<T: Scalar>(
    t: &DynTensor<T>,
    (rows, cols): (&[usize], &[usize]),
    (secs, kept): (&[&Sector], &[usize]),
    b: &Arc<Space>,
    (lm, rm): (&[MatRef<'_, T>], &[MatRef<'_, T>]),
    (lq, rq): (Charge, Charge),
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    let rb: Vec<_> = secs.iter().map(|s| &s.rows).collect();
    let cb: Vec<_> = secs.iter().map(|s| &s.cols).collect();
    let (out, inc) = (Leg::out(b), Leg::inc(b));
    let left = factor(t.legs(), rows, &rb, lm, kept, &out, BondAt::Last, lq)?;
    let right = factor(t.legs(), cols, &cb, rm, kept, &inc, BondAt::First, rq)?;
    Ok((left, right))
}

/// A diagonal `In`/`Out` tensor on `bond` with `values[i]` in sector `i`.
fn diagonal<T: Scalar>(bond: &Arc<Space>, values: &[Vec<f64>]) -> Result<DynTensor<T>> {
    let sym = bond.symmetry().clone();
    let keys: Vec<Vec<usize>> = (0..values.len()).map(|i| vec![i, i]).collect();
    let mut d =
        DynTensor::<T>::zeros_with_blocks(vec![Leg::inc(bond), Leg::out(bond)], sym.zero(), &keys)?;
    for (i, vals) in values.iter().enumerate() {
        if let Some(bi) = d.find_block(&[i as u32, i as u32]) {
            let l = d.blocks()[bi].layout.clone();
            for (j, &v) in vals.iter().enumerate() {
                let at = l.offset as isize + j as isize * (l.strides[0] + l.strides[1]);
                d.data_mut()[at as usize] = T::from_f64(v);
            }
        }
    }
    Ok(d)
}

/// The Frobenius norms of `m` and of `m - m^H`.
fn hermitian_defect<T: Scalar>(m: MatRef<'_, T>) -> (f64, f64) {
    let (mut n, mut d) = (0.0, 0.0);
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            let x = *m.get(i, j);
            n += x.abs2();
            d += (x - (*m.get(j, i)).conj()).abs2();
        }
    }
    (n.sqrt(), d.sqrt())
}

/// The adjoint of `m`, materialised.
pub(super) fn adjoint<T: Scalar>(m: MatRef<'_, T>) -> Mat<T> {
    Mat::from_fn(m.ncols(), m.nrows(), |i, j| (*m.get(j, i)).conj())
}

/// The SVD of `t` with `rows` and `cols` legs, truncated by `trunc`. Errors: a leg in both
/// groups, in neither, or out of range; a negative or non-finite cutoff; `max_dim` 0.
pub fn svd<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    trunc: &Truncation,
) -> Result<Svd<T>> {
    (entry::<T>()?.svd)(t, rows, cols, trunc)
}

/// [`svd`], instantiated per element type.
fn svd_here<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    trunc: &Truncation,
) -> Result<Svd<T>> {
    check_groups(t.rank(), rows, cols)?;
    trunc.check()?;
    let secs = sectors(t, rows, cols, false);
    let parts: Vec<(Mat<T>, Vec<f64>, Mat<T>)> = per_sector(&secs, |s| {
        if s.rows.dim == 0 || s.cols.dim == 0 {
            return Ok((Mat::zeros(0, 0), Vec::new(), Mat::zeros(0, 0)));
        }
        let m = dense(t, rows, cols, s);
        let f = m.as_ref().thin_svd().map_err(|e| failed("svd", e))?;
        let vals: Vec<f64> = (0..f.S().dim())
            .map(|i| f.S().column_vector()[i].re())
            .collect();
        Ok((f.U().to_owned(), vals, f.V().to_owned()))
    })?;
    let mut all: Vec<(f64, usize)> = Vec::new();
    for (si, p) in parts.iter().enumerate() {
        all.extend(p.1.iter().map(|&v| (v, si)));
    }
    let (kept, discarded_weight) = truncate(&mut all, secs.len(), trunc);
    let live: Vec<usize> = (0..secs.len()).filter(|&i| kept[i] > 0).collect();
    let lsecs: Vec<&Sector> = live.iter().map(|&i| &secs[i]).collect();
    let lkept: Vec<usize> = live.iter().map(|&i| kept[i]).collect();
    let sym = t.symmetry();
    let b = bond(sym, &lsecs, &lkept, |q| sym.neg(q))?;
    let us: Vec<MatRef<'_, T>> = live.iter().map(|&i| parts[i].0.as_ref()).collect();
    let vhs: Vec<Mat<T>> = live.iter().map(|&i| adjoint(parts[i].2.as_ref())).collect();
    let vhr: Vec<MatRef<'_, T>> = vhs.iter().map(|m| m.as_ref()).collect();
    let (u, vh) = split_factors(
        t,
        (rows, cols),
        (&lsecs, &lkept),
        &b,
        (&us, &vhr),
        (sym.zero(), t.charge().clone()),
    )?;
    let vals: Vec<Vec<f64>> = live
        .iter()
        .map(|&i| parts[i].1[..kept[i]].to_vec())
        .collect();
    let s = diagonal(&b, &vals)?;
    let mut singular_values: Vec<f64> = vals.concat();
    singular_values.sort_by(|a, b| b.total_cmp(a));
    Ok(Svd {
        u,
        s,
        vh,
        singular_values,
        discarded_weight,
    })
}

/// How many singular values each sector keeps (the largest over all sectors, at most
/// `max_dim`, none below `cutoff` times the largest, at least one) and the discarded weight;
/// `all` holds (value, sector) and comes back sorted, largest first.
pub(super) fn truncate(
    all: &mut [(f64, usize)],
    sectors: usize,
    trunc: &Truncation,
) -> (Vec<usize>, f64) {
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let smax = all.first().map_or(0.0, |x| x.0);
    let total: f64 = all.iter().map(|x| x.0 * x.0).sum();
    let limit = trunc.max_dim.unwrap_or(usize::MAX);
    let mut kept = vec![0usize; sectors];
    let mut n = 0;
    for &(v, si) in all.iter() {
        let keep = n == 0 || (n < limit && v > 0.0 && v >= trunc.cutoff * smax);
        if !keep {
            break;
        }
        kept[si] += 1;
        n += 1;
    }
    let discarded: f64 = all[n.min(all.len())..].iter().map(|x| x.0 * x.0).sum();
    (kept, if total > 0.0 { discarded / total } else { 0.0 })
}

/// One truncation over all sectors of per-sector values (each largest first): how many
/// values each sector keeps, the sectors that keep any (in order), the discarded weight.
pub(super) struct Kept {
    pub kept: Vec<usize>,
    pub live: Vec<usize>,
    pub discarded_weight: f64,
}

impl Kept {
    /// `values[i]` of sector `i`, truncated by `trunc` ([`truncate`]).
    pub(super) fn new<'a>(
        values: impl ExactSizeIterator<Item = &'a [f64]>,
        trunc: &Truncation,
    ) -> Kept {
        let n = values.len();
        let mut all: Vec<(f64, usize)> = Vec::new();
        for (si, v) in values.enumerate() {
            all.extend(v.iter().map(|&x| (x, si)));
        }
        let (kept, discarded_weight) = truncate(&mut all, n, trunc);
        let live = (0..n).filter(|&i| kept[i] > 0).collect();
        Kept {
            kept,
            live,
            discarded_weight,
        }
    }

    /// The live sectors' kept counts, in order.
    pub(super) fn live_kept(&self) -> Vec<usize> {
        self.live.iter().map(|&i| self.kept[i]).collect()
    }

    /// The kept values of every live sector (`values(i)` sector `i`'s), largest first.
    pub(super) fn values<'a>(&self, values: impl Fn(usize) -> &'a [f64]) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .live
            .iter()
            .flat_map(|&i| values(i)[..self.kept[i]].iter().copied())
            .collect();
        v.sort_by(|a, b| b.total_cmp(a));
        v
    }
}

/// `t = q * r` with `q` an isometry on the row legs (columns orthonormal per sector).
pub fn qr<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    (entry::<T>()?.qr)(t, rows, cols)
}

/// [`qr`], instantiated per element type.
fn qr_here<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    triangular_split(t, rows, cols, false)
}

/// `t = l * q` with `q` an isometry on the column legs (rows orthonormal per sector).
pub fn lq<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    (entry::<T>()?.lq)(t, rows, cols)
}

/// [`lq`], instantiated per element type.
fn lq_here<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    triangular_split(t, rows, cols, true)
}

/// QR (`lq` false: the isometry on the row legs, carrying no charge) or LQ (the isometry on
/// the column legs), per coupled sector, each sector keeping min(rows, columns) states.
fn triangular_split<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    lq: bool,
) -> Result<(DynTensor<T>, DynTensor<T>)> {
    check_groups(t.rank(), rows, cols)?;
    let secs = sectors(t, rows, cols, false);
    let live: Vec<&Sector> = secs
        .iter()
        .filter(|s| s.rows.dim.min(s.cols.dim) > 0)
        .collect();
    let (lefts, rights): (Vec<Mat<T>>, Vec<Mat<T>>) = per_sector(&live, |s| {
        let m = dense(t, rows, cols, s);
        Ok(if lq {
            // M^H = Q' R'  =>  M = R'^H Q'^H
            let f = adjoint(m.as_ref()).as_ref().qr();
            (adjoint(f.thin_R()), adjoint(f.compute_thin_Q().as_ref()))
        } else {
            let f = m.as_ref().qr();
            (f.compute_thin_Q(), f.thin_R().to_owned())
        })
    })?
    .into_iter()
    .unzip();
    let kept: Vec<usize> = live.iter().map(|s| s.rows.dim.min(s.cols.dim)).collect();
    let sym = t.symmetry();
    let tq = t.charge().clone();
    // the bond carries the charge of the factor on the columns' side
    let b = bond(sym, &live, &kept, |q| {
        if !lq {
            return sym.neg(q);
        }
        let mut c = tq.clone();
        sym.add_signed(&mut c, -1, q);
        c
    })?;
    let lm: Vec<MatRef<'_, T>> = lefts.iter().map(|m| m.as_ref()).collect();
    let rm: Vec<MatRef<'_, T>> = rights.iter().map(|m| m.as_ref()).collect();
    let charges = if lq {
        (tq, sym.zero())
    } else {
        (sym.zero(), tq)
    };
    split_factors(t, (rows, cols), (&live, &kept), &b, (&lm, &rm), charges)
}

/// The eigendecomposition of a Hermitian `t` (`cols` the duals of `rows`, in order; charge
/// zero). Errors name the leg pair that is not dual, or report a non-Hermitian sector.
pub fn eigh<T: Scalar>(t: &DynTensor<T>, rows: &[usize], cols: &[usize]) -> Result<Eigh<T>> {
    (entry::<T>()?.eigh)(t, rows, cols)
}

/// [`eigh`], instantiated per element type.
fn eigh_here<T: Scalar>(t: &DynTensor<T>, rows: &[usize], cols: &[usize]) -> Result<Eigh<T>> {
    check_groups(t.rank(), rows, cols)?;
    if rows.len() != cols.len() {
        return Err(Error::InvalidLegs {
            reason: format!("eigh needs as many column legs as row legs: {rows:?} vs {cols:?}"),
        });
    }
    for (&r, &c) in rows.iter().zip(cols) {
        let (lr, lc) = (&t.legs()[r], &t.legs()[c]);
        if lc != &lr.dual() {
            return Err(Error::InvalidLegs {
                reason: format!(
                    "eigh: leg {c} is not the dual of leg {r} (same space, opposite flow)"
                ),
            });
        }
    }
    let sym = t.symmetry();
    if t.charge() != &sym.zero() {
        return Err(Error::ChargeMismatch {
            what: "eigh (a Hermitian operator has charge zero)".into(),
            expected: sym.zero(),
            found: t.charge().clone(),
        });
    }
    let secs = sectors(t, rows, cols, true);
    let live: Vec<&Sector> = secs.iter().filter(|s| s.rows.dim > 0).collect();
    let (vs, vals): (Vec<Mat<T>>, Vec<Vec<f64>>) = per_sector(&live, |s| {
        let m = dense(t, rows, cols, s);
        let (scale, asym) = hermitian_defect(m.as_ref());
        if asym > 1e-10 * scale.max(f64::MIN_POSITIVE.sqrt()) {
            return Err(Error::InvalidArgument {
                name: "t".into(),
                reason: format!("not Hermitian in sector {}: |M - M^H| = {asym:.3e}", s.q),
            });
        }
        let f = m
            .as_ref()
            .self_adjoint_eigen(faer::Side::Lower)
            .map_err(|e| failed("eigh", e))?;
        let vals: Vec<f64> = (0..f.S().dim())
            .map(|i| f.S().column_vector()[i].re())
            .collect();
        Ok((f.U().to_owned(), vals))
    })?
    .into_iter()
    .unzip();
    let kept: Vec<usize> = live.iter().map(|s| s.rows.dim).collect();
    let b = bond(sym, &live, &kept, |q| sym.neg(q))?;
    let vr: Vec<MatRef<'_, T>> = vs.iter().map(|m| m.as_ref()).collect();
    let rb: Vec<_> = live.iter().map(|s| &s.rows).collect();
    let v = factor(
        t.legs(),
        rows,
        &rb,
        &vr,
        &kept,
        &Leg::out(&b),
        BondAt::Last,
        sym.zero(),
    )?;
    let d = diagonal(&b, &vals)?;
    let mut values: Vec<f64> = vals.concat();
    values.sort_by(f64::total_cmp);
    Ok(Eigh { v, d, values })
}

type Split<T> = fn(&DynTensor<T>, &[usize], &[usize]) -> Result<(DynTensor<T>, DynTensor<T>)>;

/// The factorizations, instantiated in this crate per element type (see
/// [`monomorphic!`](crate::scalar::monomorphic)).
// a table of function pointers spells out each signature
#[allow(clippy::type_complexity)]
struct Entry<T: Scalar> {
    svd: fn(&DynTensor<T>, &[usize], &[usize], &Truncation) -> Result<Svd<T>>,
    qr: Split<T>,
    lq: Split<T>,
    eigh: fn(&DynTensor<T>, &[usize], &[usize]) -> Result<Eigh<T>>,
}

impl<T: Scalar> Entry<T> {
    const NEW: Self = Entry {
        svd: svd_here::<T>,
        qr: qr_here::<T>,
        lq: lq_here::<T>,
        eigh: eigh_here::<T>,
    };
}

fn entry<T: Scalar>() -> Result<&'static Entry<T>> {
    monomorphic!(T, Entry)
}
