//! Finite DMRG, two-site or single-site with subspace expansion ([`Sites`]): every
//! contraction written with `contract!`, the local ground state from Lanczos, truncation by
//! the block-sparse truncated split, cached left and right environments. The two-site sweep
//! schedule is TeNPy's: bonds 0..L-3 moving right, then L-2..1 moving left, so that a sweep
//! ends with the orthogonality centre at site 1 and every site right of it right-canonical;
//! a single-site sweep ends with it at site 0.

mod single;

use super::mpo::Mpo;
use super::state::Mps;
use crate::linalg::{lanczos, truncated_split, Keep, LanczosOptions, Truncation};
use crate::{contract, CacheStats, DynTensor, Error, Leg, PlanCache, Scalar, Tensor};
use std::time::Instant;

/// Seconds spent per phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    /// Lanczos: effective-Hamiltonian applications and vector operations.
    pub heff: f64,
    /// Building the two-site tensor, SVD and truncation, absorbing the singular values.
    pub factorize: f64,
    /// Environment updates.
    pub environments: f64,
}

/// One sweep's report, TeNPy's line.
#[derive(Debug, Clone, Copy)]
pub struct SweepReport {
    /// The sweep's number, from 1.
    pub sweep: usize,
    /// The largest bond dimension allowed.
    pub chi: usize,
    /// The energy of the last local update.
    pub energy: f64,
    /// The largest discarded weight of the sweep's truncations.
    pub max_trunc_err: f64,
    /// Its wall time.
    pub seconds: f64,
    /// Lanczos applications in this sweep.
    pub applications: usize,
}

/// How many sites a local update optimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sites {
    /// Two sites: the bond between them grows by the truncated split of the two-site tensor.
    Two,
    /// One site, the bond it moves across enlarged by `expansion` times the Hamiltonian's
    /// image of the site before the truncation (subspace expansion; 0 for none). Cheaper per
    /// update (the local problem is `d` times smaller); typical values 1e-4 to 1e-2, lowered
    /// as the energy converges.
    One {
        /// The expansion's weight, `alpha`.
        expansion: f64,
    },
}

/// The state of a DMRG run on the Hamiltonian `mpo`.
pub struct Dmrg<'m, T: Scalar = f64> {
    mpo: &'m Mpo<T>,
    /// The state, updated in place.
    pub mps: Mps<T>,
    /// `left[i]`: the environment of sites `< i` (`[ket Out, mpo Out, bra In]`).
    left: Vec<Option<Tensor<T, 3>>>,
    /// `right[i]`: the environment of sites `> i` (`[ket In, mpo In, bra Out]`).
    right: Vec<Option<Tensor<T, 3>>>,
    /// Seconds per phase so far.
    pub phases: Phases,
    /// The local eigensolver's settings.
    pub lanczos: LanczosOptions,
    /// Relative singular-value cutoff.
    pub cutoff: f64,
    /// Sweeps done.
    pub sweeps_done: usize,
    /// The effective Hamiltonian's plans (its own cache, so that its reuse can be reported).
    heff_plans: PlanCache,
    /// Local updates done.
    pub updates: usize,
    /// Lanczos applications over the run.
    pub lanczos_steps: usize,
    /// Of those, the ones followed by a pass against the whole Krylov basis.
    pub lanczos_full_passes: usize,
    /// Threads for the effective Hamiltonian and the environment updates (the
    /// factorizations' are set with `linalg::set_threads`).
    pub threads: usize,
    /// Every local update so far.
    pub update_log: Vec<UpdateRecord>,
    /// Called after every local update (a progress display, a log).
    progress: Option<Progress>,
    /// Two-site or single-site updates (two by default); may change between sweeps.
    pub sites: Sites,
    /// The orthogonality centre's site between sweeps.
    centre: usize,
}

/// What [`Dmrg::on_update`] calls.
type Progress = Box<dyn FnMut(&UpdateRecord)>;

/// When [`Dmrg::run`] stops before its schedule ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stop {
    /// A sweep that moves the energy by less than this (absolute) ...
    pub energy: f64,
    /// ... and discards less weight than this at every truncation ends the run.
    pub discarded_weight: f64,
}

impl Stop {
    /// Never stop early: the whole schedule runs.
    pub fn never() -> Stop {
        Stop {
            energy: 0.0,
            discarded_weight: 0.0,
        }
    }
}

/// One local update: where, how large, and how many Lanczos applications it took.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRecord {
    /// The sweep, from 1.
    pub sweep: usize,
    /// The bond's left site.
    pub bond: usize,
    /// Entries of the two-site tensor (the local problem's dimension).
    pub dim: usize,
    /// Lanczos applications.
    pub applications: usize,
    /// The local ground-state energy.
    pub energy: f64,
}

impl<'m, T: Scalar> Dmrg<'m, T> {
    /// DMRG of `mpo` from the state `mps` (at least 3 sites, as many as the MPO's), its
    /// environments built from the right: `mps` is taken as right-canonical from site 1 on
    /// (a product state is).
    pub fn new(mpo: &'m Mpo<T>, mps: Mps<T>) -> Result<Self, Error> {
        let l = mps.len();
        if l < 3 || mpo.len() != l {
            return Err(Error::InvalidArgument {
                name: "mps".into(),
                reason: format!(
                    "{l} sites for an MPO of {}; two-site DMRG needs at least 3",
                    mpo.len()
                ),
            });
        }
        let first = mps.tensors[0].legs()[0].space.clone();
        let last = mps.tensors[l - 1].legs()[2].space.clone();
        let mut left = vec![None; l];
        let mut right = vec![None; l];
        let (mut l0, mut r0) = (boundary(mpo, &first, true)?, boundary(mpo, &last, false)?);
        mark_identities(&mut l0);
        mark_identities(&mut r0);
        left[0] = Some(l0);
        right[l - 1] = Some(r0);
        let mut d = Dmrg {
            mpo,
            mps,
            left,
            right,
            phases: Phases::default(),
            lanczos: LanczosOptions::default(),
            cutoff: 1e-14,
            sweeps_done: 0,
            heff_plans: PlanCache::new(),
            updates: 0,
            lanczos_steps: 0,
            lanczos_full_passes: 0,
            threads: 1,
            update_log: Vec::new(),
            progress: None,
            sites: Sites::Two,
            centre: 0,
        };
        for i in (1..l).rev() {
            d.update_right(i)?;
        }
        Ok(d)
    }

    /// `right[i - 1]` from `right[i]` and site `i` (a right-canonical tensor).
    fn update_right(&mut self, i: usize) -> Result<(), Error> {
        let t0 = Instant::now();
        let r = self.right[i].as_ref().ok_or_else(|| missing("right", i))?;
        let b = &self.mps.tensors[i];
        let w = &self.mpo.w[i];
        let threads = self.threads;
        let mut rn = contract!(rn[a, w0, ap] := ((b[a, s, x] * r[x, w1, xp]) * w[w0, w1, sp, s]) * conj(b)[ap, sp, xp]; threads = threads)?;
        mark_identities(&mut rn);
        self.right[i - 1] = Some(rn);
        self.phases.environments += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// `left[i + 1]` from `left[i]` and site `i` (a left-canonical tensor).
    fn update_left(&mut self, i: usize) -> Result<(), Error> {
        let t0 = Instant::now();
        let l = self.left[i].as_ref().ok_or_else(|| missing("left", i))?;
        let a = &self.mps.tensors[i];
        let w = &self.mpo.w[i];
        let threads = self.threads;
        let mut ln = contract!(ln[x, w1, xp] := ((l[y, w0, yp] * a[y, s, x]) * w[w0, w1, sp, s]) * conj(a)[yp, sp, xp]; threads = threads)?;
        mark_identities(&mut ln);
        self.left[i + 1] = Some(ln);
        self.phases.environments += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// Optimizes sites `i, i + 1` and moves the orthogonality centre right or left:
    /// (energy, discarded weight, Lanczos applications).
    fn update_bond(
        &mut self,
        i: usize,
        chi: usize,
        right: bool,
    ) -> Result<(f64, f64, usize), Error> {
        let t0 = Instant::now();
        let (a, b) = (&self.mps.tensors[i], &self.mps.tensors[i + 1]);
        let two = contract!(th[x, s, t, y] := a[x, s, z] * b[z, t, y])?;
        // every block the selection rule allows, so that Heff's image fits in place
        let mut theta = DynTensor::<T>::zeros(two.legs().to_vec(), two.charge().clone())?;
        theta.axpy(T::one(), &two)?;
        self.phases.factorize += t0.elapsed().as_secs_f64();

        let t0 = Instant::now();
        let l = self.left[i].as_ref().ok_or_else(|| missing("left", i))?;
        let r = self.right[i + 1]
            .as_ref()
            .ok_or_else(|| missing("right", i + 1))?;
        let (w1, w2) = (&self.mpo.w[i], &self.mpo.w[i + 1]);
        let w12 = contract!(w12[w0, u, t1, t2, s1, s2] := w1[w0, v, t1, s1] * w2[v, u, t2, s2])?;
        let heff = |x: &DynTensor<T>| -> Result<DynTensor<T>, Error> {
            let mut y = x.zeros_like();
            contract!(y[xp, t1, t2, yp] = (w12[w0, u, t1, t2, s1, s2] * (l[x0, w0, xp] * x[x0, s1, s2, y0])) * r[y0, u, yp]; cache = self.heff_plans, threads = self.threads)?;
            Ok(y)
        };
        let gs = lanczos(heff, &theta, &self.lanczos)?;
        self.record(UpdateRecord {
            sweep: self.sweeps_done + 1,
            bond: i,
            dim: theta.data().len(),
            applications: gs.applications,
            energy: gs.value,
        });
        self.lanczos_full_passes += gs.full_passes;
        self.phases.heff += t0.elapsed().as_secs_f64();

        let t0 = Instant::now();
        // the factor that stays behind the orthogonality centre is the isometry
        let keep = if right { Keep::Left } else { Keep::Right };
        let f = truncated_split(
            &gs.vector,
            &[0, 1],
            &[2, 3],
            &Truncation::new(chi, self.cutoff),
            keep,
        )?;
        let norm = f.singular_values.iter().map(|s| s * s).sum::<f64>().sqrt();
        let (mut left, mut right_t) = (f.left, f.right);
        match keep {
            Keep::Left => right_t.scale(T::from_f64(1.0 / norm)),
            Keep::Right => left.scale(T::from_f64(1.0 / norm)),
        }
        let t = &mut self.mps.tensors;
        t[i] = Tensor::<T, 3>::try_from(left)?;
        t[i + 1] = Tensor::<T, 3>::try_from(right_t)?;
        self.phases.factorize += t0.elapsed().as_secs_f64();
        if right {
            self.update_left(i)?;
        } else {
            self.update_right(i + 1)?;
        }
        Ok((gs.value, f.discarded_weight, gs.applications))
    }

    /// Counts a local update, logs it and shows it to the progress callback.
    fn record(&mut self, record: UpdateRecord) {
        self.updates += 1;
        if let Some(f) = self.progress.as_mut() {
            f(&record);
        }
        self.lanczos_steps += record.applications;
        self.update_log.push(record);
    }

    /// Calls `f` after every local update from now on (replacing an earlier one): a progress
    /// display on a terminal, or a log.
    pub fn on_update(&mut self, f: impl FnMut(&UpdateRecord) + 'static) {
        self.progress = Some(Box::new(f));
    }

    /// Sweeps by `schedule`, `(chi, sweeps)` stages in order, calling `report` after each
    /// sweep; stops early, after at least one sweep of the last stage, once a sweep moves the
    /// energy by less than `stop.energy` and truncates less than `stop.discarded_weight`.
    /// Returns the reports of the sweeps made.
    pub fn run(
        &mut self,
        schedule: &[(usize, usize)],
        stop: &Stop,
        mut report: impl FnMut(&SweepReport),
    ) -> Result<Vec<SweepReport>, Error> {
        let mut out: Vec<SweepReport> = Vec::new();
        for (stage, &(chi, sweeps)) in schedule.iter().enumerate() {
            for k in 0..sweeps {
                let r = self.sweep(chi)?;
                report(&r);
                let moved = out
                    .last()
                    .map_or(f64::INFINITY, |p| (p.energy - r.energy).abs());
                out.push(r);
                let last_stage = stage + 1 == schedule.len();
                if last_stage
                    && k > 0
                    && moved < stop.energy
                    && r.max_trunc_err < stop.discarded_weight
                {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// One sweep with bond dimension `chi`, of two-site or single-site updates ([`Self::sites`]).
    pub fn sweep(&mut self, chi: usize) -> Result<SweepReport, Error> {
        if chi == 0 {
            return Err(Error::InvalidArgument {
                name: "chi".into(),
                reason: "a bond dimension of 0 keeps nothing; at least 1".into(),
            });
        }
        let t0 = Instant::now();
        let (energy, err, apps) = match self.sites {
            Sites::Two => self.sweep_two(chi)?,
            Sites::One { expansion } => self.sweep_single(chi, expansion)?,
        };
        self.sweeps_done += 1;
        Ok(SweepReport {
            sweep: self.sweeps_done,
            chi,
            energy,
            max_trunc_err: err,
            seconds: t0.elapsed().as_secs_f64(),
            applications: apps,
        })
    }

    /// One two-site sweep (TeNPy's schedule; from a centre at site 0 or 1, ending at 1).
    fn sweep_two(&mut self, chi: usize) -> Result<(f64, f64, usize), Error> {
        let l = self.mps.len();
        let (mut energy, mut err, mut apps) = (f64::NAN, 0.0f64, 0);
        for i in 0..l - 2 {
            let (e, d, n) = self.update_bond(i, chi, true)?;
            (energy, err, apps) = (e, err.max(d), apps + n);
        }
        for i in (1..=l - 2).rev() {
            let (e, d, n) = self.update_bond(i, chi, false)?;
            (energy, err, apps) = (e, err.max(d), apps + n);
        }
        self.centre = 1;
        Ok((energy, err, apps))
    }

    /// The effective Hamiltonian's plan cache: one lookup per Lanczos application.
    pub fn heff_plans(&self) -> CacheStats {
        self.heff_plans.stats()
    }

    /// Bounds the effective Hamiltonian's plan cache (bytes of plans).
    pub fn set_heff_plan_capacity(&self, bytes: usize) {
        self.heff_plans.set_capacity(bytes);
    }

    /// The largest bond dimension of the state.
    pub fn max_bond(&self) -> usize {
        self.mps.bond_dims().into_iter().max().unwrap_or(1)
    }
}

/// A boundary environment `[mps bond Out, mpo bond Out, mps bond In]` (left) or
/// `[In, In, Out]` (right) on the one-dimensional bond `b`: the MPO's boundary bond has one
/// state (`start` on the left, `done` on the right).
fn boundary<T: Scalar>(
    mpo: &Mpo<T>,
    b: &std::sync::Arc<crate::Space>,
    left: bool,
) -> Result<Tensor<T, 3>, Error> {
    let w = if left {
        &mpo.bonds[0]
    } else {
        &mpo.bonds[mpo.bonds.len() - 1]
    };
    let legs = if left {
        [Leg::out(b), Leg::out(w), Leg::inc(b)]
    } else {
        [Leg::inc(b), Leg::inc(w), Leg::out(b)]
    };
    Tensor::from_fn(legs, b.symmetry().zero(), None, |_| T::one())
}

/// Marks every slice of an environment's MPO leg that is an identity matrix (in a canonical
/// MPS, the left environment at the MPO's first state and the right one at its last), so that
/// the contractions with it skip those GEMMs; a slice that is not one is left unmarked (the
/// check stops at its first differing element).
fn mark_identities<T: Scalar>(env: &mut Tensor<T, 3>) {
    for i in 0..env.legs()[1].space.dim() {
        let _ = env.mark_identity(1, i);
    }
}

fn missing(which: &str, i: usize) -> Error {
    Error::InvalidArgument {
        name: "environment".into(),
        reason: format!("the {which} environment at site {i} has not been built"),
    }
}
