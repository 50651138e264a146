//! A matrix-product state and what is measured on it: norm, overlap, local expectation
//! values, correlators of any product of operators (Jordan-Wigner strings inserted for
//! fermionic pairs), the energy and its variance for an MPO, and the entanglement entropy at
//! every bond.
//!
//! Conventions: site `i` is `[left bond In, physical In, right bond Out]` with charge zero, so
//! a bond's charge is the charge accumulated from the left; the boundary bonds have one state.

use super::mpo::{local_ops, Mpo, Term};
use super::site::{Operator, Site};
use crate::linalg::{lq, svd, Truncation};
use crate::{contract, DynTensor, Error, Leg, Result, Scalar, Space, Symmetry, Tensor};
use std::sync::Arc;

/// A finite matrix-product state of element type `T` (`f64` or `Complex64`).
#[derive(Debug, Clone)]
pub struct Mps<T = f64> {
    /// The site tensors.
    pub tensors: Vec<Tensor<T, 3>>,
}

/// A one-state block space of charge `q`.
fn trivial(sym: &Symmetry, q: &[i64]) -> Result<Arc<Space>> {
    Ok(Arc::new(Space::block(sym, &[(q.to_vec(), 1)])?))
}

/// A one-site operator as a tensor `[bra In, ket Out]` (its charge the negated charge it adds),
/// holding only its nonzero blocks.
fn op_tensor<T: Scalar>(site: &Site, label: &str, op: &Operator) -> Result<Tensor<T, 2>> {
    let sym = site.space().symmetry();
    let q = sym.charge(&site.charge_of(label, op)?)?;
    let space = site.space();
    let mut keys = std::collections::BTreeSet::new();
    for p in 0..op.dim {
        for s in 0..op.dim {
            if op.at(p, s) != 0.0 {
                let (a, _) = space.locate(p).unwrap_or((0, 0));
                let (b, _) = space.locate(s).unwrap_or((0, 0));
                keys.insert(vec![a, b]);
            }
        }
    }
    let keys: Vec<Vec<usize>> = keys.into_iter().collect();
    let legs = vec![Leg::inc(space), Leg::out(space)];
    let t = DynTensor::from_fn(legs, sym.neg(&q), Some(&keys), |i| {
        T::from_f64(op.at(i[0], i[1]))
    })?;
    Tensor::try_from(t)
}

/// The sum of a tensor's entries (a one-entry tensor's value).
fn total<T: Scalar, const N: usize>(t: &Tensor<T, N>) -> T {
    t.data().iter().fold(T::zero(), |a, &x| a + x)
}

impl<T: Scalar> Mps<T> {
    /// The product state with site `i` in the state `labels[i]` of `sites[i]`.
    pub fn product(sites: &[Site], labels: &[&str]) -> Result<Mps<T>> {
        if sites.is_empty() || sites.len() != labels.len() {
            return Err(Error::InvalidArgument {
                name: "labels".into(),
                reason: format!(
                    "{} labels for {} sites (at least one)",
                    labels.len(),
                    sites.len()
                ),
            });
        }
        let sym = sites[0].space().symmetry().clone();
        let mut q = sym.zero();
        let mut left = trivial(&sym, q.values())?;
        let mut tensors = Vec::with_capacity(sites.len());
        for (site, label) in sites.iter().zip(labels) {
            let s = site.state(label)?;
            let phys = site.space();
            let (sector, _) = phys.locate(s).unwrap_or((0, 0));
            q = sym.add(&q, &phys.sectors()[sector].charge);
            let right = trivial(&sym, q.values())?;
            let legs = vec![Leg::inc(&left), Leg::inc(phys), Leg::out(&right)];
            let key = [vec![0, sector, 0]];
            let t = DynTensor::from_fn(legs, sym.zero(), Some(&key), |i| {
                if i[1] == s {
                    T::one()
                } else {
                    T::zero()
                }
            })?;
            tensors.push(Tensor::try_from(t)?);
            left = right;
        }
        Ok(Mps { tensors })
    }

    /// A random state of total charge `charge` (seeded: the same seed, the same state),
    /// normalised and right-canonical: each bond holds every charge that both its left part
    /// can make and its right part can complete to `charge`, each sector of dimension at most
    /// `chi / (the bond's number of sectors)` (at least 1) and at most what either side spans.
    /// Errors: a charge no state of the chain has, `chi` 0.
    pub fn random(sites: &[Site], charge: &[i64], chi: usize, seed: u64) -> Result<Mps<T>> {
        let bad = |reason: String| Error::InvalidArgument {
            name: "charge".into(),
            reason,
        };
        if sites.is_empty() || chi == 0 {
            return Err(Error::InvalidArgument {
                name: "chi".into(),
                reason: format!(
                    "{} sites, chi {chi}: at least one site and chi 1",
                    sites.len()
                ),
            });
        }
        let sym = sites[0].space().symmetry().clone();
        let target = sym.charge(charge)?;
        let l = sites.len();
        // how many states of sites k.. complete each charge to the target, capped at chi
        let mut right: Vec<std::collections::HashMap<crate::Charge, usize>> =
            vec![Default::default(); l + 1];
        right[l].insert(target.clone(), 1);
        for k in (0..l).rev() {
            let mut m = std::collections::HashMap::new();
            for (c, &n) in &right[k + 1] {
                for sec in sites[k].space().sectors() {
                    let before = sym.add(c, &sym.neg(&sec.charge));
                    let e = m.entry(before).or_insert(0usize);
                    *e = (*e + n * sec.dim).min(chi);
                }
            }
            right[k] = m;
        }
        if !right[0].contains_key(&sym.zero()) {
            return Err(bad(format!(
                "no state of these {l} sites has charge {charge:?}"
            )));
        }
        let mut left = trivial(&sym, sym.zero().values())?;
        let mut tensors = Vec::with_capacity(l);
        for (k, site) in sites.iter().enumerate() {
            // the charges the left part reaches, with how many states, kept where the right
            // part completes them
            let mut reach: Vec<(crate::Charge, usize)> = Vec::new();
            for a in left.sectors() {
                for p in site.space().sectors() {
                    let q = sym.add(&a.charge, &p.charge);
                    let n = a.dim * p.dim;
                    match reach.iter_mut().find(|(c, _)| *c == q) {
                        Some((_, d)) => *d += n,
                        None => reach.push((q, n)),
                    }
                }
            }
            reach.retain(|(q, _)| right[k + 1].contains_key(q));
            let cap = (chi / reach.len().max(1)).max(1);
            let sectors: Vec<(Vec<i64>, usize)> = reach
                .iter()
                .map(|(q, n)| (q.values().to_vec(), (*n).min(right[k + 1][q]).min(cap)))
                .collect();
            let next = Arc::new(Space::block(&sym, &sectors)?);
            let legs = [Leg::inc(&left), Leg::inc(site.space()), Leg::out(&next)];
            let salt = seed ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            tensors.push(Tensor::<T, 3>::random(legs, sym.zero(), salt)?);
            left = next;
        }
        let mut mps = Mps { tensors };
        mps.right_canonicalize()?;
        let n = mps.norm_squared()?.sqrt();
        mps.tensors[0].scale(T::from_f64(1.0 / n));
        Ok(mps)
    }

    /// Brings the state to right-canonical form (every site but the first an isometry from
    /// the right), the state unchanged.
    pub fn right_canonicalize(&mut self) -> Result<()> {
        for i in (1..self.len()).rev() {
            let t: DynTensor<T> = self.tensors[i].clone().into();
            let (r, q) = lq(&t, &[0], &[1, 2])?;
            self.tensors[i] = Tensor::try_from(q)?;
            let a = &self.tensors[i - 1];
            let r = Tensor::<T, 2>::try_from(r)?;
            self.tensors[i - 1] = contract!(n[x, s, k] := a[x, s, y] * r[y, k])?;
        }
        Ok(())
    }

    /// The number of sites.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }
    /// Whether it has no sites.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }
    /// The dimension of every bond between sites.
    pub fn bond_dims(&self) -> Vec<usize> {
        self.tensors[..self.len().saturating_sub(1)]
            .iter()
            .map(|t| t.legs()[2].space.dim())
            .collect()
    }

    /// `E[i]`: the sites before `i` contracted with their conjugates, `[ket Out, bra In]`,
    /// optionally with an operator (`ops[i - first]`) on each site from `first`.
    fn left_env(&self, upto: usize, ops: &[(usize, Tensor<T, 2>)]) -> Result<Tensor<T, 2>> {
        let first = &self.tensors[0];
        let b = first.legs()[0].space.clone();
        let sym = b.symmetry().clone();
        let mut e =
            Tensor::<T, 2>::from_fn([Leg::out(&b), Leg::inc(&b)], sym.zero(), None, |_| T::one())?;
        for (i, a) in self.tensors[..upto].iter().enumerate() {
            e = match ops.iter().find(|(j, _)| *j == i) {
                Some((_, o)) => {
                    contract!(n[y, yp] := ((e[x, xp] * a[x, s, y]) * o[t, s]) * conj(a)[xp, t, yp])?
                }
                None => contract!(n[y, yp] := (e[x, xp] * a[x, s, y]) * conj(a)[xp, s, yp])?,
            };
        }
        Ok(e)
    }

    /// `<self|self>`.
    pub fn norm_squared(&self) -> Result<f64> {
        let e = self.left_env(self.len(), &[])?;
        Ok(total(&e).re())
    }

    /// `<self|other>` (the same sites, charges and boundary bonds).
    pub fn overlap(&self, other: &Mps<T>) -> Result<T> {
        if self.len() != other.len() {
            return Err(Error::InvalidArgument {
                name: "other".into(),
                reason: format!("{} sites against {}", other.len(), self.len()),
            });
        }
        let b = self.tensors[0].legs()[0].space.clone();
        let sym = b.symmetry().clone();
        let mut e =
            Tensor::<T, 2>::from_fn([Leg::out(&b), Leg::inc(&b)], sym.zero(), None, |_| T::one())?;
        for (a, c) in other.tensors.iter().zip(&self.tensors) {
            e = contract!(n[y, yp] := (e[x, xp] * a[x, s, y]) * conj(c)[xp, s, yp])?;
        }
        Ok(total(&e))
    }

    /// `<O>` of the product of operators `ops` (`(name, site)`, in the order of the product;
    /// fermionic operators get their Jordan-Wigner strings), over `<self|self>`.
    pub fn correlation(&self, sites: &[Site], ops: &[(&str, usize)]) -> Result<T> {
        self.check_sites(sites)?;
        let term = Term {
            coupling: 1.0,
            ops: ops.iter().map(|&(o, i)| (o.to_string(), i)).collect(),
        };
        let local = local_ops(sites, 0, &term)?;
        if local.ops.iter().any(|(_, o)| o.is_zero()) {
            return Ok(T::zero());
        }
        let tensors: Vec<(usize, Tensor<T, 2>)> = local
            .ops
            .iter()
            .enumerate()
            .filter(|(_, (label, _))| label != "Id")
            .map(|(j, (label, op))| {
                let i = local.first + j;
                Ok((i, op_tensor(&sites[i], label, op)?))
            })
            .collect::<Result<_>>()?;
        let e = self.left_env(self.len(), &tensors)?;
        let value = total(&e);
        Ok(value * T::from_f64(local.sign / self.norm_squared()?))
    }

    /// `<O_i>` on every site, over `<self|self>`.
    pub fn expectation(&self, sites: &[Site], name: &str) -> Result<Vec<T>> {
        (0..self.len())
            .map(|i| self.correlation(sites, &[(name, i)]))
            .collect()
    }

    fn check_sites(&self, sites: &[Site]) -> Result<()> {
        if sites.len() != self.len() {
            return Err(Error::InvalidArgument {
                name: "sites".into(),
                reason: format!("{} sites for a state of {}", sites.len(), self.len()),
            });
        }
        Ok(())
    }

    /// `<H>` and `<H^2> - <H>^2` for the MPO `h`, over `<self|self>`.
    pub fn energy_and_variance(&self, h: &Mpo<T>) -> Result<(f64, f64)> {
        if h.len() != self.len() {
            return Err(Error::InvalidArgument {
                name: "mpo".into(),
                reason: format!("{} sites for a state of {}", h.len(), self.len()),
            });
        }
        let b = self.tensors[0].legs()[0].space.clone();
        let (w0, sym) = (h.bonds[0].clone(), b.symmetry().clone());
        let legs = [Leg::out(&b), Leg::out(&w0), Leg::inc(&b)];
        let mut e = Tensor::<T, 3>::from_fn(legs, sym.zero(), None, |_| T::one())?;
        let legs = [Leg::out(&b), Leg::out(&w0), Leg::out(&w0), Leg::inc(&b)];
        let mut e2 = Tensor::<T, 4>::from_fn(legs, sym.zero(), None, |_| T::one())?;
        for (a, w) in self.tensors.iter().zip(&h.w) {
            e = contract!(n[y, v, yp] := ((e[x, u, xp] * a[x, s, y]) * w[u, v, t, s]) * conj(a)[xp, t, yp])?;
            e2 = contract!(n[y, v1, v2, yp] := (((e2[x, u1, u2, xp] * a[x, s, y]) * w[u1, v1, t, s]) * w[u2, v2, r, t]) * conj(a)[xp, r, yp])?;
        }
        let n = self.norm_squared()?;
        let (h1, h2) = (total(&e).re() / n, total(&e2).re() / n);
        Ok((h1, h2 - h1 * h1))
    }

    /// The von Neumann entanglement entropy `-sum s^2 ln s^2` of the normalised Schmidt
    /// values at every bond between sites: the state is brought to right-canonical form, then
    /// the Schmidt values are read off from left to right.
    pub fn entanglement_entropies(&self) -> Result<Vec<f64>> {
        let l = self.len();
        let mut t: Vec<DynTensor<T>> = self.tensors.iter().map(|x| x.clone().into()).collect();
        // right-canonical from the right: t[i] = r * q, r pushed into t[i - 1]
        for i in (1..l).rev() {
            let (r, q) = lq(&t[i], &[0], &[1, 2])?;
            t[i] = q;
            let a = Tensor::<T, 3>::try_from(t[i - 1].clone())?;
            let r = Tensor::<T, 2>::try_from(r)?;
            t[i - 1] = contract!(n[x, s, k] := a[x, s, y] * r[y, k])?.into();
        }
        let mut out = Vec::with_capacity(l.saturating_sub(1));
        for i in 0..l.saturating_sub(1) {
            let f = svd(&t[i], &[0, 1], &[2], &Truncation::none())?;
            let total: f64 = f.singular_values.iter().map(|s| s * s).sum();
            out.push(
                -f.singular_values
                    .iter()
                    .map(|s| s * s / total)
                    .filter(|&p| p > 0.0)
                    .map(|p| p * p.ln())
                    .sum::<f64>(),
            );
            let (s, vh) = (
                Tensor::<T, 2>::try_from(f.s)?,
                Tensor::<T, 2>::try_from(f.vh)?,
            );
            let next = Tensor::<T, 3>::try_from(t[i + 1].clone())?;
            t[i + 1] = contract!(n[k, s2, y] := (s[k, l] * vh[l, x]) * next[x, s2, y])?.into();
        }
        Ok(out)
    }
}
