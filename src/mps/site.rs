//! Lattice sites: a local space with its conserved charges and named operators (dense real
//! matrices in the space's dense order), the fermionic ones marked, and `JW`, the parity
//! operator Jordan-Wigner strings are made of, on sites that host fermions.

use crate::{Error, Result, Space, Symmetry};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A square operator on one site: `data[p * dim + q] = <p|O|q>`, `p`, `q` in the site's dense
/// order.
#[derive(Debug, Clone, PartialEq)]
pub struct Operator {
    /// The local dimension.
    pub dim: usize,
    /// Row-major entries.
    pub data: Vec<f64>,
    /// Whether it is odd under fermion parity (creates or annihilates one fermion).
    pub fermionic: bool,
}

impl Operator {
    /// `<p|O|q>`.
    pub fn at(&self, p: usize, q: usize) -> f64 {
        self.data[p * self.dim + q]
    }
    /// The operator product `self * other` (`other` acts first).
    pub fn mul(&self, other: &Operator) -> Operator {
        let d = self.dim;
        let data = (0..d * d)
            .map(|i| (0..d).map(|k| self.at(i / d, k) * other.at(k, i % d)).sum())
            .collect();
        Operator {
            dim: d,
            data,
            fermionic: self.fermionic != other.fermionic,
        }
    }
    /// Whether every entry is zero.
    pub fn is_zero(&self) -> bool {
        self.data.iter().all(|&x| x == 0.0)
    }
}

/// A lattice site: its states (a local space), their labels and its operators.
#[derive(Debug, Clone)]
pub struct Site {
    name: String,
    space: Arc<Space>,
    labels: Vec<String>,
    /// The charge of each state, in dense order.
    charges: Vec<Vec<i64>>,
    /// The position in the given order (of [`Site::new`]) of each dense state.
    order: Vec<usize>,
    ops: BTreeMap<String, Operator>,
}

/// What a spin site conserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpinConserve {
    /// U(1) on 2 Sz.
    Sz,
    /// Nothing (then `Sx` is defined too).
    None,
}

/// What a site of particles conserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParticleConserve {
    /// U(1) on the particle number N (spinful fermions: U(1) x U(1) on N and 2 Sz).
    N,
    /// Z2 on the parity of N.
    Parity,
    /// Nothing.
    None,
}

fn diag(v: &[f64]) -> Vec<f64> {
    let d = v.len();
    (0..d * d)
        .map(|i| if i / d == i % d { v[i / d] } else { 0.0 })
        .collect()
}

fn identity(d: usize) -> Vec<f64> {
    diag(&vec![1.0; d])
}

impl Site {
    /// A site from its states `(label, charge)` in any order; the charges' symmetry is
    /// `symmetry`. States of equal charge are grouped into one sector, in their given order;
    /// the dense order is sector by sector, sectors in order of first appearance. The site
    /// starts with the identity `Id`; add operators with [`Site::add_operator`].
    pub fn new(name: &str, symmetry: &Symmetry, states: &[(&str, Vec<i64>)]) -> Result<Site> {
        let bad = |reason: String| Error::InvalidSite {
            site: name.to_string(),
            reason,
        };
        if states.is_empty() {
            return Err(bad("a site needs at least one state".into()));
        }
        let mut sectors: Vec<(Vec<i64>, Vec<usize>)> = Vec::new();
        for (i, (label, q)) in states.iter().enumerate() {
            if states[..i].iter().any(|(l, _)| l == label) {
                return Err(bad(format!("the state label `{label}` appears twice")));
            }
            symmetry
                .charge(q)
                .map_err(|e| bad(format!("state `{label}`: {e}")))?;
            match sectors.iter_mut().find(|(c, _)| c == q) {
                Some((_, members)) => members.push(i),
                None => sectors.push((q.clone(), vec![i])),
            }
        }
        let order: Vec<usize> = sectors.iter().flat_map(|(_, m)| m.clone()).collect();
        let dims: Vec<(Vec<i64>, usize)> =
            sectors.iter().map(|(q, m)| (q.clone(), m.len())).collect();
        let space = Space::local(symmetry, &dims).map_err(|e| bad(e.to_string()))?;
        let d = order.len();
        let mut site = Site {
            name: name.to_string(),
            space: Arc::new(space),
            labels: order.iter().map(|&i| states[i].0.to_string()).collect(),
            charges: order.iter().map(|&i| states[i].1.clone()).collect(),
            order,
            ops: BTreeMap::new(),
        };
        site.insert("Id", identity(d), false)?;
        Ok(site)
    }

    /// Adds (or replaces) the operator `name` with entries `matrix[p][q] = <p|O|q>`, `p`, `q`
    /// in the order the states were given to [`Site::new`]; `fermionic` marks an operator odd
    /// under fermion parity. Errors: a matrix of the wrong size, or one that does not change
    /// the charges by one definite amount.
    pub fn add_operator(&mut self, name: &str, matrix: &[Vec<f64>], fermionic: bool) -> Result<()> {
        let d = self.dim();
        if matrix.len() != d || matrix.iter().any(|r| r.len() != d) {
            return Err(self.bad(format!("operator `{name}` is not a {d} x {d} matrix")));
        }
        // rows and columns from the given order to the dense order
        let given = &self.order;
        let data = (0..d * d)
            .map(|i| matrix[given[i / d]][given[i % d]])
            .collect();
        self.insert(name, data, fermionic)
    }

    fn bad(&self, reason: String) -> Error {
        Error::InvalidSite {
            site: self.name.clone(),
            reason,
        }
    }

    /// Adds an operator given in dense order, after checking its charge.
    fn insert(&mut self, name: &str, data: Vec<f64>, fermionic: bool) -> Result<()> {
        let op = Operator {
            dim: self.dim(),
            data,
            fermionic,
        };
        self.charge_of(name, &op)?;
        self.ops.insert(name.to_string(), op);
        Ok(())
    }

    /// The charge `O` adds to a state (`q(p) - q(q)` for every nonzero `<p|O|q>`), or an error
    /// naming the operator when two entries disagree. A zero operator adds the zero charge.
    pub fn charge_of(&self, name: &str, op: &Operator) -> Result<Vec<i64>> {
        let sym = self.space.symmetry();
        let mut found: Option<(crate::Charge, usize, usize)> = None;
        for p in 0..op.dim {
            for q in 0..op.dim {
                if op.at(p, q) == 0.0 {
                    continue;
                }
                let dq = sym.add(
                    &sym.charge(&self.charges[p])?,
                    &sym.neg(&sym.charge(&self.charges[q])?),
                );
                match &found {
                    None => found = Some((dq, p, q)),
                    Some((c, p0, q0)) if *c != dq => {
                        return Err(self.bad(format!(
                            "operator `{name}` has no definite charge: <{}|{name}|{}> changes it by {:?}, <{}|{name}|{}> by {:?}",
                            self.labels[*p0], self.labels[*q0], c.values(),
                            self.labels[p], self.labels[q], dq.values()
                        )))
                    }
                    _ => {}
                }
            }
        }
        Ok(found.map_or_else(
            || sym.zero().values().to_vec(),
            |(c, _, _)| c.values().to_vec(),
        ))
    }

    /// The site's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its local space.
    pub fn space(&self) -> &Arc<Space> {
        &self.space
    }
    /// The local dimension.
    pub fn dim(&self) -> usize {
        self.labels.len()
    }
    /// The state labels in dense order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
    /// The dense index of the state `label`.
    pub fn state(&self, label: &str) -> Result<usize> {
        self.labels
            .iter()
            .position(|l| l == label)
            .ok_or_else(|| self.bad(format!("no state `{label}`; states {:?}", self.labels)))
    }
    /// The charge of the state at dense index `p`.
    pub fn state_charge(&self, p: usize) -> &[i64] {
        &self.charges[p]
    }
    /// The operator `name`.
    pub fn op(&self, name: &str) -> Result<&Operator> {
        self.ops.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.ops.keys().map(|s| s.as_str()).collect();
            self.bad(format!("no operator `{name}`; operators {known:?}"))
        })
    }
    /// The names of its operators.
    pub fn operators(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(|s| s.as_str())
    }
}
