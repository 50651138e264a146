//! Whether a contraction has the coefficient form's shape: one small operand (the
//! coefficients) and a chain `M1 · M2 · M3` of the other three, and where each one's legs
//! sit.

use crate::block::DynTensor;
use crate::hash::FxMap;
use crate::scalar::Scalar;
use crate::spec::ContractionSpec;

/// The longest leg an operand applied as coefficients may have.
pub const COEF_MAX_LEG: usize = 64;

/// The most elements an operand applied as coefficients may store.
pub const COEF_MAX_ELEMS: usize = 1 << 16;

/// The output's labels and the blocks the contraction writes.
pub(super) struct Output<'a> {
    pub(super) labels: Vec<usize>,
    pub(super) blocks: &'a [crate::block::Block],
}

/// The output's blocks by key.
pub(super) fn out_key_index<'a>(out: &Output<'a>) -> FxMap<&'a [u32], usize> {
    let mut m: FxMap<&[u32], usize> = FxMap::default();
    for (i, b) in out.blocks.iter().enumerate() {
        m.insert(&b.key, i);
    }
    m
}

/// A chain `M1 · M2 · M3` and the operand applied as coefficients: per chain operand its
/// row and column labels (`cols[k] == rows[k + 1]`), the output's row and column labels.
#[derive(Debug, Clone)]
pub(super) struct Chain {
    pub(super) coef: usize,
    pub(super) ops: [usize; 3],
    pub(super) rows: [usize; 3],
    pub(super) cols: [usize; 3],
    pub(super) out_row: usize,
    pub(super) out_col: usize,
}

impl Chain {
    /// The transposed chain `M3ᵀ · M2ᵀ · M1ᵀ` of the transposed output.
    pub(super) fn reversed(&self) -> Chain {
        let r = |a: [usize; 3]| [a[2], a[1], a[0]];
        Chain {
            coef: self.coef,
            ops: r(self.ops),
            rows: r(self.cols),
            cols: r(self.rows),
            out_row: self.out_col,
            out_col: self.out_row,
        }
    }
}

/// Whether operand `t` may be applied as coefficients: every leg at most [`COEF_MAX_LEG`]
/// long and at most [`COEF_MAX_ELEMS`] stored.
pub(super) fn small<T: Scalar>(t: &DynTensor<T>) -> bool {
    t.legs().iter().all(|l| l.space.dim() <= COEF_MAX_LEG) && t.data().len() <= COEF_MAX_ELEMS
}

/// The chain and the coefficient operand of a four-operand contraction, if it has that form:
/// one small operand, and three more each with exactly two legs not shared with it, linked
/// end to end from the output's first such leg to its second.
pub(super) fn find_chain<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
) -> Option<Chain> {
    if spec.operands.len() != 4 {
        return None;
    }
    (0..4)
        .filter(|&f| small(ops[f]))
        .find_map(|f| chain_around(spec, f))
}

/// The chain of the operands other than `coef`, if they form one.
pub(super) fn chain_around(spec: &ContractionSpec, coef: usize) -> Option<Chain> {
    let fl = spec.operand_labels(coef);
    let free = |labels: Vec<usize>| -> Vec<usize> {
        labels.into_iter().filter(|l| !fl.contains(l)).collect()
    };
    let ends = free(spec.output_labels());
    if ends.len() != 2 {
        return None;
    }
    let mut rest: Vec<(usize, Vec<usize>)> = (0..4)
        .filter(|&i| i != coef)
        .map(|i| (i, free(spec.operand_labels(i))))
        .collect();
    if rest.iter().any(|(_, m)| m.len() != 2 || m[0] == m[1]) {
        return None;
    }
    let (mut ops, mut rows, mut cols) = ([0; 3], [0; 3], [0; 3]);
    let mut at = ends[0];
    for k in 0..3 {
        let p = rest.iter().position(|(_, m)| m.contains(&at))?;
        let (op, m) = rest.swap_remove(p);
        let other = if m[0] == at { m[1] } else { m[0] };
        (ops[k], rows[k], cols[k]) = (op, at, other);
        at = other;
    }
    (at == ends[1]).then_some(Chain {
        coef,
        ops,
        rows,
        cols,
        out_row: ends[0],
        out_col: ends[1],
    })
}

/// Where a tensor's legs sit for the form: the row and column legs, and each fixed leg with
/// the coefficient operand's leg it is shared with.
pub(super) struct Legs {
    pub(super) row: usize,
    pub(super) col: usize,
    pub(super) fixed: Vec<(usize, usize)>,
}

pub(super) fn legs_of(
    labels: &[usize],
    row: usize,
    col: usize,
    coef_labels: &[usize],
) -> Option<Legs> {
    let pos = |l: usize| labels.iter().position(|&x| x == l);
    let fixed = labels
        .iter()
        .enumerate()
        .filter(|(_, l)| **l != row && **l != col)
        .map(|(i, l)| Some((i, coef_labels.iter().position(|x| x == l)?)))
        .collect::<Option<Vec<_>>>()?;
    Some(Legs {
        row: pos(row)?,
        col: pos(col)?,
        fixed,
    })
}

/// The blocks of a chain operand by their fixed legs' sectors, and their row sector when
/// `with_row`.
pub(super) fn by_fixed<T: Scalar>(
    t: &DynTensor<T>,
    legs: &Legs,
    with_row: bool,
) -> FxMap<Vec<u32>, Vec<usize>> {
    let mut m: FxMap<Vec<u32>, Vec<usize>> = FxMap::default();
    for (i, b) in t.blocks().iter().enumerate() {
        let mut k: Vec<u32> = legs.fixed.iter().map(|&(a, _)| b.key[a]).collect();
        if with_row {
            k.push(b.key[legs.row]);
        }
        m.entry(k).or_default().push(i);
    }
    m
}
