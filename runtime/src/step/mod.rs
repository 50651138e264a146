//! One pairwise step: what meets what. Which legs are contracted, where each output leg comes
//! from, the checks on the operands, the GEMM role of every leg, and the matching block pairs.
//! Below the planner and the executors, which both start from it.

mod check;
mod geometry;
mod pairs;

pub use check::check_operands;
pub use geometry::{geometry, Geometry};
pub use pairs::{by_contracted, enumerate, PairGemm, PairList};

use crate::scalar::Conj;

/// One of a step's two operands: the A side (GEMM rows) or the B side (GEMM columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The left operand.
    A,
    /// The right operand.
    B,
}

impl Side {
    /// Both sides, A first.
    pub const BOTH: [Side; 2] = [Side::A, Side::B];
    /// 0 for A, 1 for B (for per-side arrays).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Where an output leg comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Src {
    /// Leg `i` of the left operand.
    A(usize),
    /// Leg `i` of the right operand.
    B(usize),
}

/// A pairwise step as written: contracted leg pairs and the output's leg sources.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StepDesc {
    /// `(leg of A, leg of B)` pairs that are contracted.
    pub contracted: Vec<(usize, usize)>,
    /// Source of each output leg, in output order.
    pub out: Vec<Src>,
    /// Conjugation of A.
    pub conj_a: Conj,
    /// Conjugation of B.
    pub conj_b: Conj,
    /// Name of each contracted pair's index, for error messages.
    pub names: Vec<String>,
}

/// The step contracting two partial results by their labels: shared labels are contracted;
/// the output is `root_out` (the last step) or the left's free labels then the right's.
pub(crate) fn step_desc(
    ll: &[usize],
    lc: Conj,
    rl: &[usize],
    rc: Conj,
    root_out: Option<&[usize]>,
    names: &[String],
) -> (StepDesc, Vec<usize>) {
    let mut contracted = Vec::new();
    let mut cnames = Vec::new();
    for (i, la) in ll.iter().enumerate() {
        if let Some(j) = rl.iter().position(|x| x == la) {
            contracted.push((i, j));
            cnames.push(names.get(*la).cloned().unwrap_or_else(|| la.to_string()));
        }
    }
    let out_labels: Vec<usize> = match root_out {
        Some(o) => o.to_vec(),
        None => {
            let mut v: Vec<usize> = ll.iter().filter(|x| !rl.contains(x)).copied().collect();
            v.extend(rl.iter().filter(|x| !ll.contains(x)));
            v
        }
    };
    let src_of = |lab: usize| -> Src {
        match ll.iter().position(|&x| x == lab) {
            Some(i) => Src::A(i),
            None => Src::B(rl.iter().position(|&x| x == lab).expect("label present")),
        }
    };
    let desc = StepDesc {
        contracted,
        out: out_labels.iter().map(|&l| src_of(l)).collect(),
        conj_a: lc,
        conj_b: rc,
        names: cnames,
    };
    (desc, out_labels)
}
