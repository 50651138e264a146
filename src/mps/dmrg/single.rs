//! Single-site DMRG with subspace expansion (Hubig, McCulloch, Schollwöck and Wolf, 2015):
//! each local update optimises one site with the one-site effective Hamiltonian, then, before
//! the orthogonality centre moves, enlarges the bond it moves across by `alpha` times the
//! Hamiltonian's image of the site (`P = L W psi`, its range), truncates the enlarged bond
//! and multiplies the next site by the state's part on it (zero on the new states). The
//! enlarged bond is the state's range plus a few sketched directions of `P`'s range beyond
//! it, truncated by the Ritz values of `[psi, alpha P]` there
//! ([`expanded_split`](crate::linalg::expanded_split)): an eigenproblem the size of the bond
//! rather than `d` times it. The expansion lets the bond grow and its charges change, which
//! single-site updates alone cannot; with `alpha = 0` the update is plain single-site DMRG.

use super::{missing, Dmrg, UpdateRecord};
use crate::linalg::{expanded_split, lanczos, truncated_split, Expansion, Keep, Truncation};
use crate::{contract, DynTensor, Error, Scalar, Tensor};
use std::time::Instant;

/// The fraction of its states a sector of the bond may gain per expansion once the bond has
/// its full dimension (new states compete with the kept ones in the truncation).
pub const GROWTH: f64 = 0.25;

/// How many new directions (a fraction of its states) each sector of a bond of dimension
/// `now` may gain: [`GROWTH`] at `trunc`'s dimension, up to doubling below it, so that a
/// stage of one sweep reaches its dimension. Measured on Hubbard L = 16, chi 256, 512, 1024
/// (sweeps 1, 1, 2): as many as the bond lacks, uncapped, 2.05 s; up to doubling 1.42 s;
/// `GROWTH` only 1.06 s; the energies equal within 3e-12.
fn growth(now: usize, trunc: &Truncation) -> f64 {
    let target = trunc.max_dim.unwrap_or(usize::MAX) as f64;
    GROWTH.max((target / now.max(1) as f64 - 1.0).min(1.0))
}

impl<T: Scalar> Dmrg<'_, T> {
    /// Optimises site `i` and moves the orthogonality centre to `i + 1` (`right`) or `i - 1`,
    /// expanding the bond between by `alpha`: (energy, discarded weight, Lanczos applications).
    pub(super) fn update_site(
        &mut self,
        i: usize,
        chi: usize,
        right: bool,
        alpha: f64,
    ) -> Result<(f64, f64, usize), Error> {
        let t0 = Instant::now();
        let site = &self.mps.tensors[i];
        // every block the selection rule allows, so that Heff's image fits in place
        let mut psi = DynTensor::<T>::zeros(site.legs().to_vec(), site.charge().clone())?;
        psi.axpy(T::one(), site.as_dyn())?;
        self.phases.factorize += t0.elapsed().as_secs_f64();

        let t0 = Instant::now();
        let l = self.left[i].as_ref().ok_or_else(|| missing("left", i))?;
        let r = self.right[i].as_ref().ok_or_else(|| missing("right", i))?;
        let w = &self.mpo.w[i];
        let heff = |x: &DynTensor<T>| -> Result<DynTensor<T>, Error> {
            let mut y = x.zeros_like();
            contract!(y[xp, t, yp] = (w[w0, v, t, s] * (l[x0, w0, xp] * x[x0, s, y0])) * r[y0, v, yp]; cache = self.heff_plans, threads = self.threads)?;
            Ok(y)
        };
        let gs = lanczos(heff, &psi, &self.lanczos)?;
        self.record(UpdateRecord {
            sweep: self.sweeps_done + 1,
            bond: if right { i } else { i - 1 },
            dim: psi.data().len(),
            applications: gs.applications,
            energy: gs.value,
        });
        self.lanczos_full_passes += gs.full_passes;
        self.phases.heff += t0.elapsed().as_secs_f64();

        let t0 = Instant::now();
        let trunc = Truncation::new(chi, self.cutoff);
        let discarded = if right {
            self.expand_right(i, &gs.vector, alpha, &trunc)?
        } else {
            self.expand_left(i, &gs.vector, alpha, &trunc)?
        };
        self.phases.factorize += t0.elapsed().as_secs_f64();
        if right {
            self.update_left(i)?;
        } else {
            self.update_right(i)?;
        }
        self.centre = if right { i + 1 } else { i - 1 };
        Ok((gs.value, discarded, gs.applications))
    }

    /// Site `i` becomes left-canonical over the bond to `i + 1` enlarged by `alpha P`, and site
    /// `i + 1` the centre; returns the discarded weight.
    fn expand_right(
        &mut self,
        i: usize,
        psi: &DynTensor<T>,
        alpha: f64,
        trunc: &Truncation,
    ) -> Result<f64, Error> {
        let f = if alpha != 0.0 {
            let l = self.left[i].as_ref().ok_or_else(|| missing("left", i))?;
            let w = &self.mpo.w[i];
            let p =
                contract!(p[xp, t, v, y0] := w[w0, v, t, s] * (l[x0, w0, xp] * psi[x0, s, y0]))?;
            let e = Expansion {
                p: p.as_dyn(),
                shared: &[0, 1],
                rest: &[2, 3],
                alpha,
                ratio: growth(psi.legs()[2].space.dim(), trunc),
                seed: self.expansion_seed(i),
            };
            expanded_split(psi, &[0, 1], &[2], Keep::Left, &e, trunc)?
        } else {
            truncated_split(psi, &[0, 1], &[2], trunc, Keep::Left)?
        };
        let (sv, next) = (f.right, &self.mps.tensors[i + 1]);
        let mut centre = contract!(c[b, t, z] := sv[b, y] * next[y, t, z])?;
        normalise(&mut centre)?;
        self.mps.tensors[i] = Tensor::<T, 3>::try_from(f.left)?;
        self.mps.tensors[i + 1] = centre;
        Ok(f.discarded_weight)
    }

    /// Site `i` becomes right-canonical over the bond to `i - 1` enlarged by `alpha P`, and
    /// site `i - 1` the centre; returns the discarded weight.
    fn expand_left(
        &mut self,
        i: usize,
        psi: &DynTensor<T>,
        alpha: f64,
        trunc: &Truncation,
    ) -> Result<f64, Error> {
        let f = if alpha != 0.0 {
            let r = self.right[i].as_ref().ok_or_else(|| missing("right", i))?;
            let w = &self.mpo.w[i];
            let p =
                contract!(p[x0, w0, t, yp] := w[w0, v, t, s] * (psi[x0, s, y0] * r[y0, v, yp]))?;
            let e = Expansion {
                p: p.as_dyn(),
                shared: &[2, 3],
                rest: &[0, 1],
                alpha,
                ratio: growth(psi.legs()[0].space.dim(), trunc),
                seed: self.expansion_seed(i),
            };
            expanded_split(psi, &[0], &[1, 2], Keep::Right, &e, trunc)?
        } else {
            truncated_split(psi, &[0], &[1, 2], trunc, Keep::Right)?
        };
        let (us, prev) = (f.left, &self.mps.tensors[i - 1]);
        let mut centre = contract!(c[x, s, b] := prev[x, s, y] * us[y, b])?;
        normalise(&mut centre)?;
        self.mps.tensors[i] = Tensor::<T, 3>::try_from(f.right)?;
        self.mps.tensors[i - 1] = centre;
        Ok(f.discarded_weight)
    }

    /// The seed of the expansion's sketch at site `i` in this sweep.
    fn expansion_seed(&self, i: usize) -> u64 {
        (i as u64) ^ ((self.sweeps_done as u64) << 32)
    }

    /// One single-site sweep with bond dimension `chi` and expansion `alpha`: sites from the
    /// centre to `L - 2` moving right, then `L - 1` to 1 moving left (the centre ends at 0).
    pub(super) fn sweep_single(
        &mut self,
        chi: usize,
        alpha: f64,
    ) -> Result<(f64, f64, usize), Error> {
        let l = self.mps.len();
        let (mut energy, mut err, mut apps) = (f64::NAN, 0.0f64, 0);
        for i in self.centre..l - 1 {
            let (e, d, n) = self.update_site(i, chi, true, alpha)?;
            (energy, err, apps) = (e, err.max(d), apps + n);
        }
        for i in (1..l).rev() {
            let (e, d, n) = self.update_site(i, chi, false, alpha)?;
            (energy, err, apps) = (e, err.max(d), apps + n);
        }
        Ok((energy, err, apps))
    }
}

/// Scales the orthogonality centre to norm 1 (the state's norm: every other site is an
/// isometry); a zero centre is an error.
fn normalise<T: Scalar>(c: &mut Tensor<T, 3>) -> Result<(), Error> {
    let n = c.as_dyn().norm();
    if !(n > 0.0 && n.is_finite()) {
        return Err(Error::InvalidArgument {
            name: "mps".into(),
            reason: format!("the orthogonality centre's norm is {n} after the expansion"),
        });
    }
    c.scale(T::from_f64(1.0 / n));
    Ok(())
}
