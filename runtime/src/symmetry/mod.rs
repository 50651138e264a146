//! Charges (U(1), Z_n and their products), sectors, flows, spaces and legs.

use crate::error::{Error, Result};
use crate::hash::FxMap;
use crate::scalar::Conj;
use std::fmt;
use std::sync::Arc;

/// One component of a symmetry group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChargeKind {
    /// U(1): any integer, added.
    U1,
    /// Z_n: integers compared mod n (n >= 1).
    Zn(u32),
}

impl fmt::Display for ChargeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChargeKind::U1 => f.write_str("U1"),
            ChargeKind::Zn(n) => write!(f, "Z{n}"),
        }
    }
}

/// A symmetry group: the product of its components (empty = no symmetry).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Symmetry(Vec<ChargeKind>);

impl Symmetry {
    /// The product of the given components.
    pub fn new(kinds: Vec<ChargeKind>) -> Result<Self> {
        if let Some(i) = kinds.iter().position(|k| matches!(k, ChargeKind::Zn(0))) {
            return Err(Error::InvalidSymmetry {
                reason: format!("component {i} is Z0; Z<n> needs n >= 1"),
            });
        }
        Ok(Symmetry(kinds))
    }
    /// U(1).
    pub fn u1() -> Self {
        Symmetry(vec![ChargeKind::U1])
    }
    /// Z_n; `n = 0` is an error (`InvalidSymmetry`), never silently Z1.
    pub fn zn(n: u32) -> Result<Self> {
        Self::new(vec![ChargeKind::Zn(n)])
    }
    /// No symmetry: one sector per space, charge `[]`.
    pub fn none() -> Self {
        Symmetry(Vec::new())
    }
    /// The components.
    pub fn kinds(&self) -> &[ChargeKind] {
        &self.0
    }
    /// Number of charge components.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether this is the trivial (no) symmetry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// A charge of this symmetry from raw integers, reduced mod n for Z_n components.
    pub fn charge(&self, values: &[i64]) -> Result<Charge> {
        if values.len() != self.0.len() {
            return Err(Error::ChargeMismatch {
                what: format!("charge for symmetry {self}"),
                expected: Charge(vec![0; self.0.len()]),
                found: Charge(values.to_vec()),
            });
        }
        Ok(Charge(
            values
                .iter()
                .zip(&self.0)
                .map(|(&v, k)| reduce(*k, v))
                .collect(),
        ))
    }
    /// The neutral charge.
    pub fn zero(&self) -> Charge {
        Charge(vec![0; self.0.len()])
    }
    /// `a + b`.
    pub fn add(&self, a: &Charge, b: &Charge) -> Charge {
        Charge(
            a.0.iter()
                .zip(&b.0)
                .zip(&self.0)
                .map(|((&x, &y), k)| reduce(*k, x + y))
                .collect(),
        )
    }
    /// `a + sign * b` in place.
    pub fn add_signed(&self, acc: &mut Charge, sign: i64, b: &Charge) {
        for ((x, &y), k) in acc.0.iter_mut().zip(&b.0).zip(&self.0) {
            *x = reduce(*k, *x + sign * y);
        }
    }
    /// A tensor's charge as used: negated under `conj`.
    pub fn charge_as_used(&self, q: &Charge, conj: Conj) -> Charge {
        match conj {
            Conj::No => q.clone(),
            Conj::Yes => self.neg(q),
        }
    }
    /// `-a`.
    pub fn neg(&self, a: &Charge) -> Charge {
        Charge(
            a.0.iter()
                .zip(&self.0)
                .map(|(&x, k)| reduce(*k, -x))
                .collect(),
        )
    }
}

fn reduce(kind: ChargeKind, v: i64) -> i64 {
    match kind {
        ChargeKind::U1 => v,
        ChargeKind::Zn(n) => v.rem_euclid(n as i64),
    }
}

impl fmt::Display for Symmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("trivial");
        }
        for (i, k) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("x")?;
            }
            write!(f, "{k}")?;
        }
        Ok(())
    }
}

/// A charge: one integer per symmetry component (Z_n components reduced to 0..n).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Charge(pub(crate) Vec<i64>);

impl Charge {
    /// The raw components.
    pub fn values(&self) -> &[i64] {
        &self.0
    }
}

impl fmt::Display for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// Direction of a leg: `Out` counts its charge +1, `In` counts it -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flow {
    /// Outgoing (TeNPy qconj +1).
    Out,
    /// Incoming (TeNPy qconj -1).
    In,
}

impl Flow {
    /// +1 for `Out`, -1 for `In`.
    pub fn sign(self) -> i64 {
        match self {
            Flow::Out => 1,
            Flow::In => -1,
        }
    }
    /// The opposite flow.
    pub fn dual(self) -> Flow {
        match self {
            Flow::Out => Flow::In,
            Flow::In => Flow::Out,
        }
    }
    /// The flow as used: conjugation reverses every flow (the one place that says so).
    pub fn as_used(self, conj: Conj) -> Flow {
        match conj {
            Conj::No => self,
            Conj::Yes => self.dual(),
        }
    }
}

/// Whether a space is a block space (sectors of varying size) or a local one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpaceKind {
    /// Virtual bond: sectors of varying dimension.
    Block,
    /// Physical site: small and regular, each state usually its own sector; a layout hint.
    Local,
}

/// A sector of a space: a charge and a dimension.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sector {
    /// Its charge.
    pub charge: Charge,
    /// Its dimension (0 allowed).
    pub dim: usize,
}

/// A graded vector space: ordered sectors of distinct charges.
#[derive(Debug, Clone)]
pub struct Space {
    symmetry: Symmetry,
    sectors: Vec<Sector>,
    kind: SpaceKind,
    offsets: Vec<usize>,
    lookup: FxMap<Charge, usize>,
    fp: u64,
}

impl PartialEq for Space {
    /// Equal when symmetry and sectors (charges, dims, order) agree; the kind is a hint.
    fn eq(&self, other: &Self) -> bool {
        self.symmetry == other.symmetry && self.sectors == other.sectors
    }
}
impl Eq for Space {}

impl Space {
    /// A block space from `(charge, dim)` pairs; charges must be distinct (mod n for Z_n).
    pub fn new(
        symmetry: &Symmetry,
        sectors: &[(Vec<i64>, usize)],
        kind: SpaceKind,
    ) -> Result<Self> {
        let mut out = Vec::with_capacity(sectors.len());
        let mut lookup = FxMap::default();
        for (i, (q, d)) in sectors.iter().enumerate() {
            let charge = symmetry.charge(q)?;
            if let Some(j) = lookup.insert(charge.clone(), i) {
                return Err(Error::DuplicateCharge {
                    what: "space".into(),
                    first: j,
                    second: i,
                    charge,
                });
            }
            out.push(Sector { charge, dim: *d });
        }
        if symmetry.is_empty() && out.len() > 1 {
            return Err(Error::UnknownSector {
                what: "space".into(),
                detail: "a space without symmetry has exactly one sector".into(),
            });
        }
        let mut offsets = Vec::with_capacity(out.len());
        let mut acc = 0usize;
        for (i, s) in out.iter().enumerate() {
            offsets.push(acc);
            acc = acc.checked_add(s.dim).ok_or_else(|| Error::TooLarge {
                what: format!("a space of {} sectors", out.len()),
                reason: format!("its dimension overflows at sector {i}"),
            })?;
        }
        let mut h = crate::hash::Fx::default();
        for k in symmetry.kinds() {
            h.write(match k {
                ChargeKind::U1 => u64::MAX,
                ChargeKind::Zn(n) => *n as u64,
            });
        }
        h.write(kind as u64);
        for s in &out {
            h.write(s.dim as u64);
            for &q in s.charge.values() {
                h.write(q as u64);
            }
        }
        Ok(Space {
            symmetry: symmetry.clone(),
            sectors: out,
            kind,
            offsets,
            lookup,
            fp: h.finish(),
        })
    }
    /// A block space.
    pub fn block(symmetry: &Symmetry, sectors: &[(Vec<i64>, usize)]) -> Result<Self> {
        Self::new(symmetry, sectors, SpaceKind::Block)
    }
    /// A local space.
    pub fn local(symmetry: &Symmetry, sectors: &[(Vec<i64>, usize)]) -> Result<Self> {
        Self::new(symmetry, sectors, SpaceKind::Local)
    }
    /// A fingerprint of symmetry, sectors and kind.
    pub fn fingerprint(&self) -> u64 {
        self.fp
    }
    /// The symmetry.
    pub fn symmetry(&self) -> &Symmetry {
        &self.symmetry
    }
    /// The sectors in order.
    pub fn sectors(&self) -> &[Sector] {
        &self.sectors
    }
    /// Block or local.
    pub fn kind(&self) -> SpaceKind {
        self.kind
    }
    /// Number of sectors.
    pub fn num_sectors(&self) -> usize {
        self.sectors.len()
    }
    /// Dimension of sector `i`.
    pub fn dim_of(&self, i: usize) -> usize {
        self.sectors[i].dim
    }
    /// Total (dense) dimension.
    pub fn dim(&self) -> usize {
        self.offsets
            .last()
            .zip(self.sectors.last())
            .map_or(0, |(o, s)| o + s.dim)
    }
    /// Dense offset of sector `i`.
    pub fn offset_of(&self, i: usize) -> usize {
        self.offsets[i]
    }
    /// Position of the sector with this charge.
    pub fn find(&self, charge: &Charge) -> Option<usize> {
        self.lookup.get(charge).copied()
    }
    /// Sector position and in-sector position of a dense index.
    pub fn locate(&self, dense: usize) -> Option<(usize, usize)> {
        // the last sector starting at or before `dense`: empty sectors before it share its offset
        let i = self
            .offsets
            .partition_point(|&o| o <= dense)
            .checked_sub(1)?;
        let pos = dense - self.offsets[i];
        (pos < self.sectors[i].dim).then_some((i, pos))
    }
    /// A short human description: `[q:d, ...]`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .sectors
            .iter()
            .map(|s| format!("{}:{}", s.charge, s.dim))
            .collect();
        format!("[{}]", parts.join(", "))
    }
}

/// A leg of a tensor: a shared space and a flow.
#[derive(Debug, Clone)]
pub struct Leg {
    /// The space.
    pub space: Arc<Space>,
    /// The flow.
    pub flow: Flow,
}

impl PartialEq for Leg {
    fn eq(&self, other: &Self) -> bool {
        self.flow == other.flow && same_space(&self.space, &other.space)
    }
}

impl Leg {
    /// A leg on `space` with `flow`.
    pub fn new(space: &Arc<Space>, flow: Flow) -> Self {
        Leg {
            space: space.clone(),
            flow,
        }
    }
    /// Outgoing leg.
    pub fn out(space: &Arc<Space>) -> Self {
        Self::new(space, Flow::Out)
    }
    /// Incoming leg.
    pub fn inc(space: &Arc<Space>) -> Self {
        Self::new(space, Flow::In)
    }
    /// The same space with the opposite flow.
    pub fn dual(&self) -> Self {
        Leg {
            space: self.space.clone(),
            flow: self.flow.dual(),
        }
    }
    /// The leg as used in a contraction: its flow reversed under `conj`.
    pub fn as_used(&self, conj: Conj) -> Self {
        Leg {
            space: self.space.clone(),
            flow: self.flow.as_used(conj),
        }
    }
}

/// Whether two spaces are the same (pointer-equal fast path, then structurally).
pub fn same_space(a: &Arc<Space>, b: &Arc<Space>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// The rule for a contracted pair, written once: the two legs, as used (after any `conj`),
/// join the same space with opposite flows. `what` names the index for the error; `hint`
/// says what to do when the flows agree.
pub fn check_contractible(
    a: &Leg,
    b: &Leg,
    what: impl FnOnce() -> String,
    hint: impl FnOnce() -> String,
) -> Result<()> {
    if !same_space(&a.space, &b.space) {
        return Err(Error::SpaceMismatch {
            what: what(),
            left: a.space.describe(),
            right: b.space.describe(),
        });
    }
    if a.flow == b.flow {
        return Err(Error::FlowMismatch {
            what: what(),
            left: a.flow,
            right: b.flow,
            hint: hint(),
        });
    }
    Ok(())
}

/// The rule for writing into an existing leg (an assignment target): same space, same flow.
pub fn check_same_leg(target: &Leg, src: &Leg, what: impl FnOnce() -> String) -> Result<()> {
    if !same_space(&target.space, &src.space) {
        return Err(Error::SpaceMismatch {
            what: what(),
            left: target.space.describe(),
            right: src.space.describe(),
        });
    }
    if target.flow != src.flow {
        return Err(Error::FlowMismatch {
            what: what(),
            left: target.flow,
            right: src.flow,
            hint: "the target's leg and the result's leg flow differently (target vs result)"
                .into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zn_reduces_and_rejects_duplicates_mod_n() {
        let z3 = Symmetry::zn(3).unwrap();
        assert_eq!(z3.charge(&[4]).unwrap().values(), &[1]);
        assert_eq!(z3.charge(&[-1]).unwrap().values(), &[2]);
        assert!(matches!(
            Space::block(&z3, &[(vec![1], 2), (vec![4], 1)]),
            Err(Error::DuplicateCharge {
                first: 0,
                second: 1,
                ..
            })
        ));
    }

    #[test]
    fn locate_skips_empty_sectors() {
        let u1 = Symmetry::u1();
        let s = Space::block(&u1, &[(vec![0], 2), (vec![1], 0), (vec![2], 3)]).unwrap();
        assert_eq!(s.dim(), 5);
        assert_eq!(s.locate(1), Some((0, 1)));
        assert_eq!(s.locate(2), Some((2, 0)));
        assert_eq!(s.locate(4), Some((2, 2)));
        assert_eq!(s.locate(5), None);
    }

    #[test]
    fn product_charges_add_componentwise() {
        let s = Symmetry::new(vec![ChargeKind::U1, ChargeKind::Zn(2)]).unwrap();
        let a = s.charge(&[3, 1]).unwrap();
        let b = s.charge(&[-1, 1]).unwrap();
        assert_eq!(s.add(&a, &b).values(), &[2, 0]);
        assert_eq!(s.neg(&a).values(), &[-3, 1]);
    }
}
