//! A step validated against its operands: the GEMM role of every leg, the output's legs and
//! charge.

use super::{Side, Src, StepDesc};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::{Conj, Scalar};
use crate::symmetry::{check_contractible, Charge, Leg, Symmetry};

/// A validated step, with the GEMM role of every leg.
#[derive(Debug, Clone)]
pub struct Geometry {
    /// A's free legs, in the order they appear in the output (GEMM rows).
    pub a_free: Vec<usize>,
    /// A's contracted legs (GEMM inner dimension), aligned with `b_contr`.
    pub a_contr: Vec<usize>,
    /// B's contracted legs, aligned with `a_contr`.
    pub b_contr: Vec<usize>,
    /// B's free legs, in output order (GEMM columns).
    pub b_free: Vec<usize>,
    /// Output positions of `a_free`.
    pub c_rows: Vec<usize>,
    /// Output positions of `b_free`.
    pub c_cols: Vec<usize>,
    /// Legs of the output.
    pub out_legs: Vec<Leg>,
    /// The symmetry.
    pub symmetry: Symmetry,
    /// Charge of the output.
    pub out_charge: Charge,
    /// Conjugation of A and B.
    pub conj: (Conj, Conj),
}

impl Geometry {
    /// The axes of `side`'s blocks that become the GEMM operand's rows and columns: A is
    /// free x contracted, B is contracted x free.
    pub fn mat_axes(&self, side: Side) -> (&[usize], &[usize]) {
        match side {
            Side::A => (&self.a_free, &self.a_contr),
            Side::B => (&self.b_contr, &self.b_free),
        }
    }
    /// How `side` is read.
    pub fn conj_of(&self, side: Side) -> Conj {
        match side {
            Side::A => self.conj.0,
            Side::B => self.conj.1,
        }
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidSpec { reason }
}

/// Validates a step against its operands and resolves its geometry.
pub fn geometry<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>, d: &StepDesc) -> Result<Geometry> {
    let la: Vec<Leg> = a.legs().iter().map(|l| l.as_used(d.conj_a)).collect();
    let lb: Vec<Leg> = b.legs().iter().map(|l| l.as_used(d.conj_b)).collect();
    if a.symmetry() != b.symmetry() {
        return Err(Error::SymmetryMismatch {
            what: "pairwise step".into(),
            left: a.symmetry().to_string(),
            right: b.symmetry().to_string(),
        });
    }
    let sym = a.symmetry().clone();
    let (used_a, used_b) = check_contracted(&la, &lb, d)?;
    let mut a_free = Vec::new();
    let mut b_free = Vec::new();
    let mut c_rows = Vec::new();
    let mut c_cols = Vec::new();
    let mut out_legs = Vec::new();
    let mut seen_a = used_a;
    let mut seen_b = used_b;
    for (p, s) in d.out.iter().enumerate() {
        match *s {
            Src::A(i) if i < la.len() && !std::mem::replace(&mut seen_a[i], true) => {
                a_free.push(i);
                c_rows.push(p);
                out_legs.push(la[i].clone());
            }
            Src::B(i) if i < lb.len() && !std::mem::replace(&mut seen_b[i], true) => {
                b_free.push(i);
                c_cols.push(p);
                out_legs.push(lb[i].clone());
            }
            _ => {
                return Err(bad(format!(
                    "output leg {p} names {s:?}, which is out of range, contracted or used twice"
                )))
            }
        }
    }
    crate::block::check_rank(out_legs.len())?;
    if seen_a.iter().chain(&seen_b).any(|x| !x) {
        return Err(bad(
            "a free leg of an operand is missing from the output".into()
        ));
    }
    let qa = sym.charge_as_used(a.charge(), d.conj_a);
    let qb = sym.charge_as_used(b.charge(), d.conj_b);
    Ok(Geometry {
        a_contr: d.contracted.iter().map(|p| p.0).collect(),
        b_contr: d.contracted.iter().map(|p| p.1).collect(),
        a_free,
        b_free,
        c_rows,
        c_cols,
        out_legs,
        out_charge: sym.add(&qa, &qb),
        symmetry: sym,
        conj: (d.conj_a, d.conj_b),
    })
}

/// Every contracted pair in range, used once, and contractible; returns the legs used.
fn check_contracted(la: &[Leg], lb: &[Leg], d: &StepDesc) -> Result<(Vec<bool>, Vec<bool>)> {
    let name = |i: usize| {
        d.names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("pair {i}"))
    };
    let mut used_a = vec![false; la.len()];
    let mut used_b = vec![false; lb.len()];
    for (i, &(x, y)) in d.contracted.iter().enumerate() {
        if x >= la.len() || y >= lb.len() {
            return Err(bad(format!(
                "index `{}` names leg {x} of a rank-{} operand and leg {y} of a rank-{} operand",
                name(i),
                la.len(),
                lb.len()
            )));
        }
        if std::mem::replace(&mut used_a[x], true) || std::mem::replace(&mut used_b[y], true) {
            return Err(bad(format!("index `{}`: leg used twice", name(i))));
        }
        check_contractible(
            &la[x],
            &lb[y],
            || format!("contracted index `{}`", name(i)),
            || "a contracted pair joins an `Out` leg with an `In` leg".into(),
        )?;
    }
    Ok((used_a, used_b))
}
