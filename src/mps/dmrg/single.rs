//! Single-site DMRG with subspace expansion (Hubig, McCulloch, Schollwöck and Wolf, 2015):
//! each local update optimises one site with the one-site effective Hamiltonian, then, before
//! the orthogonality centre moves, enlarges the bond it moves across by `alpha` times the
//! Hamiltonian's image of the site (its range, `P = alpha (L W psi)`), pads the next site
//! with zeros over the new states and truncates the enlarged bond by its singular values. The
//! expansion lets the bond grow and its charges change, which single-site updates alone
//! cannot; with `alpha = 0` the update is plain single-site DMRG.

use super::{missing, Dmrg, UpdateRecord};
use crate::linalg::{lanczos, lq, qr, truncated_split, Keep, Truncation};
use crate::{contract, DynTensor, Error, Scalar, Tensor};
use std::time::Instant;

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
        let next = self.mps.tensors[i + 1].as_dyn();
        let (grown, next) = if alpha != 0.0 {
            let l = self.left[i].as_ref().ok_or_else(|| missing("left", i))?;
            let w = &self.mpo.w[i];
            let p =
                contract!(p[xp, t, v, y0] := w[w0, v, t, s] * (l[x0, w0, xp] * psi[x0, s, y0]))?;
            // P = L Q with Q's rows orthonormal: [psi, alpha L] has the Gram matrix (and so
            // the left singular vectors and values) of [psi, alpha P], with fewer columns
            let mut us = lq(p.as_dyn(), &[0, 1], &[2, 3])?.0;
            us.scale(T::from_f64(alpha));
            let pad_legs = vec![
                us.legs()[2].dual(),
                next.legs()[1].clone(),
                next.legs()[2].clone(),
            ];
            let pad = DynTensor::zeros_with_blocks(pad_legs, next.charge().clone(), &[])?;
            (psi.direct_sum(&us, 2)?, next.direct_sum(&pad, 0)?)
        } else {
            (psi.clone(), next.clone())
        };
        let f = truncated_split(&grown, &[0, 1], &[2], trunc, Keep::Left)?;
        let sv = f.right;
        // the padding drops the expansion's part: the state is the centre's, normalised
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
        let prev = self.mps.tensors[i - 1].as_dyn();
        let (grown, prev) = if alpha != 0.0 {
            let r = self.right[i].as_ref().ok_or_else(|| missing("right", i))?;
            let w = &self.mpo.w[i];
            let p =
                contract!(p[x0, w0, t, yp] := w[w0, v, t, s] * (psi[x0, s, y0] * r[y0, v, yp]))?;
            let mut sv = qr(p.as_dyn(), &[0, 1], &[2, 3])?.1;
            sv.scale(T::from_f64(alpha));
            let pad_legs = vec![
                prev.legs()[0].clone(),
                prev.legs()[1].clone(),
                sv.legs()[0].dual(),
            ];
            let pad = DynTensor::zeros_with_blocks(pad_legs, prev.charge().clone(), &[])?;
            (psi.direct_sum(&sv, 0)?, prev.direct_sum(&pad, 2)?)
        } else {
            (psi.clone(), prev.clone())
        };
        let f = truncated_split(&grown, &[0], &[1, 2], trunc, Keep::Right)?;
        let us = f.left;
        let mut centre = contract!(c[x, s, b] := prev[x, s, y] * us[y, b])?;
        normalise(&mut centre)?;
        self.mps.tensors[i] = Tensor::<T, 3>::try_from(f.right)?;
        self.mps.tensors[i - 1] = centre;
        Ok(f.discarded_weight)
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
