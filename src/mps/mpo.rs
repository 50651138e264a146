//! A matrix-product operator from a sum of terms, built as a finite-state machine.
//!
//! `H = sum_k c_k O1_(i1) O2_(i2) ...`: each term is a coupling and operators on sites, any
//! number, any range, in any order. A term is brought to ascending site order (the sign of
//! every exchange of two fermionic operators counted), fermionic operators get Jordan-Wigner
//! strings (`c_i = JW_0 ... JW_(i-1) a_i`, so a site between two fermionic operators carries
//! `JW`, and a site's own operator is followed by `JW` when an odd number of fermionic
//! operators lie to its right), and its operators on one site are multiplied in the order
//! written. Then the term is a path through the MPO's bond states: `start` (nothing placed
//! yet), one state per distinct prefix (the local operators placed so far, shared by every
//! term that begins the same way), `done` (the term is complete); its coupling multiplies its
//! last operator. Each state's charge is the charge its prefix adds; the bonds are block spaces
//! with one sector per charge.
//!
//! Conventions: `w[i]` has legs `[left bond In, right bond Out, physical In, physical Out]`
//! and charge zero, element `w[wl, wr, p, q] = <p| O |q>` of the operator on channel
//! `(wl, wr)`; the left boundary bond (before site 0) holds `start` alone, the right boundary
//! bond (after the last site) `done` alone.

use super::site::{Operator, Site};
use crate::{Error, Leg, Result, Scalar, Space, Tensor};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One term: `coupling * ops[0] * ops[1] * ...`, each operator named and placed on a site.
#[derive(Debug, Clone, PartialEq)]
pub struct Term<T> {
    /// Its coefficient.
    pub coupling: T,
    /// `(operator name, site)` in the order of the operator product.
    pub ops: Vec<(String, usize)>,
}

/// A Hamiltonian as a list of terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Terms<T> {
    list: Vec<Term<T>>,
}

impl<T: Scalar> Terms<T> {
    /// No terms.
    pub fn new() -> Self {
        Terms { list: Vec::new() }
    }
    /// Adds `coupling * ops[0] * ops[1] * ...`, each `(operator name, site)`.
    pub fn add(&mut self, coupling: T, ops: &[(&str, usize)]) -> &mut Self {
        self.list.push(Term {
            coupling,
            ops: ops.iter().map(|&(o, i)| (o.to_string(), i)).collect(),
        });
        self
    }
    /// The terms, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &Term<T>> {
        self.list.iter()
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// A matrix-product operator: one tensor per site and the bond spaces between them.
#[derive(Debug, Clone)]
pub struct Mpo<T> {
    /// `w[i]`: `[left bond In, right bond Out, physical In, physical Out]`, charge zero.
    pub w: Vec<Tensor<T, 4>>,
    /// `bonds[i]`: the bond left of site `i`; `bonds[L]` the right boundary (each boundary has
    /// one state).
    pub bonds: Vec<Arc<Space>>,
}

impl<T: Scalar> Mpo<T> {
    /// The MPO of `terms` on the chain `sites`. Errors ([`Error::InvalidTerm`], naming the
    /// term): an empty term, a site outside the chain, an operator the site lacks, an odd
    /// number of fermionic operators, a fermionic string through a site without `JW`, a term
    /// that changes the conserved charges. Sites of different symmetries are an
    /// [`Error::InvalidSite`].
    pub fn from_terms(sites: &[Site], terms: &Terms<T>) -> Result<Mpo<T>> {
        check_sites(sites)?;
        let mut fsm = Machine::new(sites.len());
        for (k, term) in terms.iter().enumerate() {
            let local = local_ops(sites, k, term)?;
            if local.ops.iter().any(|(_, o)| o.is_zero()) {
                continue; // a product that vanishes on a site (c c): no contribution
            }
            check_charge(sites, k, term, &local)?;
            fsm.add(&local, term.coupling);
        }
        fsm.build(sites)
    }

    /// The number of sites.
    pub fn len(&self) -> usize {
        self.w.len()
    }
    /// Whether it has no sites.
    pub fn is_empty(&self) -> bool {
        self.w.is_empty()
    }
    /// The dimension of every bond, boundaries included (1 each).
    pub fn bond_dims(&self) -> Vec<usize> {
        self.bonds.iter().map(|b| b.dim()).collect()
    }
}

/// Every site on one symmetry, and at least one site.
fn check_sites(sites: &[Site]) -> Result<()> {
    let first = sites.first().ok_or_else(|| Error::InvalidArgument {
        name: "sites".into(),
        reason: "an MPO needs at least one site".into(),
    })?;
    for (i, s) in sites.iter().enumerate() {
        if s.space().symmetry() != first.space().symmetry() {
            return Err(Error::InvalidSite {
                site: format!("{} (site {i})", s.name()),
                reason: format!(
                    "its symmetry differs from site 0's ({:?} against {:?})",
                    s.space().symmetry().kinds(),
                    first.space().symmetry().kinds()
                ),
            });
        }
    }
    Ok(())
}

/// A term as written, for messages: `0.5 * Sp_0 Sm_1`.
fn text<T: Scalar>(term: &Term<T>) -> String {
    let ops: Vec<String> = term.ops.iter().map(|(o, i)| format!("{o}_{i}")).collect();
    format!("{:?} * {}", term.coupling, ops.join(" "))
}

/// A term's local operators from its first to its last site (strings included), each with a
/// label that identifies it (`Cdu*JW`, `JW`, `Id`), and the sign of its reordering.
pub(crate) struct Local {
    pub(crate) first: usize,
    pub(crate) ops: Vec<(String, Operator)>,
    pub(crate) sign: f64,
}

fn term_error<T: Scalar>(k: usize, term: &Term<T>, reason: String) -> Error {
    Error::InvalidTerm {
        term: k,
        text: text(term),
        reason,
    }
}

/// The term `k` in ascending site order with its Jordan-Wigner strings.
pub(crate) fn local_ops<T: Scalar>(sites: &[Site], k: usize, term: &Term<T>) -> Result<Local> {
    let bad = |reason: String| term_error(k, term, reason);
    if term.ops.is_empty() {
        return Err(bad("a term needs at least one operator".into()));
    }
    let mut ops: Vec<(usize, &str, &Operator)> = Vec::with_capacity(term.ops.len());
    for (name, i) in &term.ops {
        let site = sites.get(*i).ok_or_else(|| {
            bad(format!(
                "operator `{name}` on site {i}, outside the chain of {} sites",
                sites.len()
            ))
        })?;
        let op = site.op(name).map_err(|e| bad(format!("site {i}: {e}")))?;
        ops.push((*i, name.as_str(), op));
    }
    // stable insertion sort by site; each exchange of two fermionic operators flips the sign
    let mut sign = 1.0;
    for a in 1..ops.len() {
        let mut b = a;
        while b > 0 && ops[b - 1].0 > ops[b].0 {
            if ops[b - 1].2.fermionic && ops[b].2.fermionic {
                sign = -sign;
            }
            ops.swap(b - 1, b);
            b -= 1;
        }
    }
    let odd = ops.iter().filter(|o| o.2.fermionic).count();
    if odd % 2 == 1 {
        return Err(bad(format!(
            "{odd} fermionic operators: a term needs an even number (it would change the fermion parity)"
        )));
    }
    let (first, last) = (ops[0].0, ops[ops.len() - 1].0);
    let mut out = Vec::with_capacity(last - first + 1);
    for (j, site) in sites.iter().enumerate().take(last + 1).skip(first) {
        let here: Vec<&(usize, &str, &Operator)> = ops.iter().filter(|o| o.0 == j).collect();
        let right = ops.iter().filter(|o| o.0 > j && o.2.fermionic).count();
        let (mut label, mut op) = ("Id".to_string(), site.op("Id")?.clone());
        if !here.is_empty() {
            label = here.iter().map(|o| o.1).collect::<Vec<_>>().join("*");
            op = here[1..]
                .iter()
                .fold(here[0].2.clone(), |acc, o| acc.mul(o.2));
        }
        if right % 2 == 1 {
            let jw = site.op("JW").map_err(|_| {
                bad(format!(
                    "a Jordan-Wigner string passes site {j} (`{}`), which has no `JW` operator",
                    site.name()
                ))
            })?;
            op = if here.is_empty() {
                jw.clone()
            } else {
                op.mul(jw)
            };
            label = if here.is_empty() {
                "JW".into()
            } else {
                format!("{label}*JW")
            };
        }
        out.push((label, op));
    }
    Ok(Local {
        first,
        ops: out,
        sign,
    })
}

/// The term changes no conserved charge, and each local operator has a definite charge.
fn check_charge<T: Scalar>(sites: &[Site], k: usize, term: &Term<T>, local: &Local) -> Result<()> {
    let sym = sites[0].space().symmetry();
    let mut total = sym.zero();
    for (j, (label, op)) in local.ops.iter().enumerate() {
        let site = &sites[local.first + j];
        let q = site
            .charge_of(label, op)
            .map_err(|e| term_error(k, term, e.to_string()))?;
        total = sym.add(&total, &sym.charge(&q)?);
    }
    if total != sym.zero() {
        return Err(term_error(
            k,
            term,
            format!(
                "it changes the conserved charges by {:?}: the Hamiltonian must conserve them",
                total.values()
            ),
        ));
    }
    Ok(())
}

/// The bond states and the channels of every site.
struct Machine<T> {
    /// `states[b]`: the states of the bond left of site `b` (`b = 0..=L`), keys in order.
    states: Vec<Vec<Vec<String>>>,
    index: Vec<HashMap<Vec<String>, usize>>,
    /// `entries[i]`: `(wl, wr, coefficient, operator)` of site `i`, summed into `w[i]`.
    entries: Vec<Vec<(usize, usize, T, Operator)>>,
    /// Prefix transitions already made, per site.
    made: Vec<HashSet<(usize, usize)>>,
}

const START: &str = "<start>";
const DONE: &str = "<done>";

impl<T: Scalar> Machine<T> {
    fn new(l: usize) -> Self {
        let mut m = Machine {
            states: vec![Vec::new(); l + 1],
            index: vec![HashMap::new(); l + 1],
            entries: vec![Vec::new(); l],
            made: vec![HashSet::new(); l],
        };
        for b in 0..l {
            m.state(b, vec![START.into()]);
        }
        for b in 1..=l {
            m.state(b, vec![DONE.into()]);
        }
        m
    }

    /// The index of state `key` on bond `b`, made if new.
    fn state(&mut self, b: usize, key: Vec<String>) -> usize {
        if let Some(&i) = self.index[b].get(&key) {
            return i;
        }
        let i = self.states[b].len();
        self.index[b].insert(key.clone(), i);
        self.states[b].push(key);
        i
    }

    /// The term's path: `start` -> its prefixes -> `done`, its coupling on the last operator.
    fn add(&mut self, local: &Local, coupling: T) {
        let (first, n) = (local.first, local.ops.len());
        let coef = coupling * T::from_f64(local.sign);
        let mut from = self.state(first, vec![START.into()]);
        let mut key = Vec::with_capacity(n);
        for (j, (label, op)) in local.ops.iter().enumerate() {
            let site = first + j;
            key.push(label.clone());
            if j + 1 == n {
                let to = self.state(site + 1, vec![DONE.into()]);
                self.entries[site].push((from, to, coef, op.clone()));
            } else {
                let to = self.state(site + 1, key.clone());
                if self.made[site].insert((from, to)) {
                    self.entries[site].push((from, to, T::one(), op.clone()));
                }
                from = to;
            }
        }
    }

    /// The tensors: `start -> start` and `done -> done` carry the identity where both states
    /// exist; the bonds group states by charge.
    fn build(mut self, sites: &[Site]) -> Result<Mpo<T>> {
        let l = sites.len();
        for (i, site) in sites.iter().enumerate() {
            let id = site.op("Id")?.clone();
            if i + 1 < l {
                let (s0, s1) = (
                    self.index[i][&vec![START.to_string()]],
                    self.index[i + 1][&vec![START.to_string()]],
                );
                self.entries[i].push((s0, s1, T::one(), id.clone()));
            }
            if i > 0 {
                let (d0, d1) = (
                    self.index[i][&vec![DONE.to_string()]],
                    self.index[i + 1][&vec![DONE.to_string()]],
                );
                self.entries[i].push((d0, d1, T::one(), id));
            }
        }
        let bonds: Vec<Bond> = (0..=l)
            .map(|b| Bond::new(sites, b, &self.states[b]))
            .collect::<Result<_>>()?;
        let w = (0..l)
            .map(|i| site_tensor(&sites[i], &bonds[i], &bonds[i + 1], &self.entries[i]))
            .collect::<Result<_>>()?;
        Ok(Mpo {
            w,
            bonds: bonds.into_iter().map(|b| b.space).collect(),
        })
    }
}

/// A bond: its block space (one sector per charge) and each state's dense index in it.
struct Bond {
    space: Arc<Space>,
    dense: Vec<usize>,
}

impl Bond {
    /// The bond left of site `b` (`b = L` the right boundary): each state's charge is that of
    /// its prefix, the operators of the sites before `b`.
    fn new(sites: &[Site], b: usize, states: &[Vec<String>]) -> Result<Bond> {
        let sym = sites[0].space().symmetry();
        let mut charges = Vec::with_capacity(states.len());
        for key in states {
            let mut q = sym.zero();
            if key[0] != START && key[0] != DONE {
                let first = b - key.len();
                for (j, label) in key.iter().enumerate() {
                    let site = &sites[first + j];
                    let op = label_op(site, label)?;
                    q = sym.add(&q, &sym.charge(&site.charge_of(label, &op)?)?);
                }
            }
            charges.push(q.values().to_vec());
        }
        let mut sectors: Vec<(Vec<i64>, Vec<usize>)> = Vec::new();
        for (i, q) in charges.iter().enumerate() {
            match sectors.iter_mut().find(|(c, _)| c == q) {
                Some((_, m)) => m.push(i),
                None => sectors.push((q.clone(), vec![i])),
            }
        }
        let mut dense = vec![0; states.len()];
        let mut next = 0;
        for (_, members) in &sectors {
            for &m in members {
                dense[m] = next;
                next += 1;
            }
        }
        let dims: Vec<(Vec<i64>, usize)> =
            sectors.iter().map(|(q, m)| (q.clone(), m.len())).collect();
        Ok(Bond {
            space: Arc::new(Space::block(sym, &dims)?),
            dense,
        })
    }
}

/// The operator a label names on `site`: its factors (`A*B*JW`) multiplied in order.
fn label_op(site: &Site, label: &str) -> Result<Operator> {
    let mut parts = label.split('*');
    let first = site.op(parts.next().unwrap_or("Id"))?.clone();
    parts.try_fold(first, |acc, p| Ok(acc.mul(site.op(p)?)))
}

/// `w[i]` from its channels, with only the blocks that hold a nonzero entry.
fn site_tensor<T: Scalar>(
    site: &Site,
    left: &Bond,
    right: &Bond,
    entries: &[(usize, usize, T, Operator)],
) -> Result<Tensor<T, 4>> {
    let d = site.dim();
    let (dl, dr) = (left.space.dim(), right.space.dim());
    let mut dense = vec![T::zero(); dl * dr * d * d];
    for (wl, wr, c, op) in entries {
        let (a, b) = (left.dense[*wl], right.dense[*wr]);
        for p in 0..d {
            for q in 0..d {
                let x = op.at(p, q);
                if x != 0.0 {
                    dense[((a * dr + b) * d + p) * d + q] += *c * T::from_f64(x);
                }
            }
        }
    }
    let legs = [
        Leg::inc(&left.space),
        Leg::out(&right.space),
        Leg::inc(site.space()),
        Leg::out(site.space()),
    ];
    let spaces = [&left.space, &right.space, site.space(), site.space()];
    let mut keys = std::collections::BTreeSet::new();
    for (i, x) in dense.iter().enumerate() {
        if *x == T::zero() {
            continue;
        }
        let idx = [i / (dr * d * d), (i / (d * d)) % dr, (i / d) % d, i % d];
        let key: Vec<usize> = (0..4)
            .map(|k| spaces[k].locate(idx[k]).map_or(0, |(s, _)| s))
            .collect();
        keys.insert(key);
    }
    let keys: Vec<Vec<usize>> = keys.into_iter().collect();
    let sym = site.space().symmetry().clone();
    let t = crate::DynTensor::from_fn(legs.to_vec(), sym.zero(), Some(&keys), |idx| {
        dense[((idx[0] * dr + idx[1]) * d + idx[2]) * d + idx[3]]
    })?;
    Tensor::try_from(t)
}
