//! One pairwise step: which legs meet, the output's legs, and the matching block pairs.

use crate::block::{block_charge, BlockKey, DynTensor};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::symmetry::{same_space, Charge, Leg, Symmetry};
use std::collections::HashMap;

/// Where an output leg comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Src {
    /// Leg `i` of the left operand.
    A(usize),
    /// Leg `i` of the right operand.
    B(usize),
}

/// Whether an operand is used as stored or complex-conjugated (flows reversed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conj {
    /// As stored.
    No,
    /// Conjugated: values conjugated, every leg's flow reversed, charge negated.
    Yes,
}

impl Conj {
    /// `Yes` when `b`.
    pub fn from_bool(b: bool) -> Self {
        if b {
            Conj::Yes
        } else {
            Conj::No
        }
    }
    pub(crate) fn faer(self) -> faer::Conj {
        match self {
            Conj::No => faer::Conj::No,
            Conj::Yes => faer::Conj::Yes,
        }
    }
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

fn eff_legs(legs: &[Leg], c: Conj) -> Vec<Leg> {
    match c {
        Conj::No => legs.to_vec(),
        Conj::Yes => legs.iter().map(Leg::dual).collect(),
    }
}

fn eff_charge(t_charge: &Charge, sym: &Symmetry, c: Conj) -> Charge {
    match c {
        Conj::No => t_charge.clone(),
        Conj::Yes => sym.neg(t_charge),
    }
}

/// Validates a step against its operands and resolves its geometry.
pub fn geometry<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>, d: &StepDesc) -> Result<Geometry> {
    let la = eff_legs(a.legs(), d.conj_a);
    let lb = eff_legs(b.legs(), d.conj_b);
    if a.symmetry() != b.symmetry() {
        return Err(Error::SymmetryMismatch {
            what: "pairwise step".into(),
            left: a.symmetry().to_string(),
            right: b.symmetry().to_string(),
        });
    }
    let sym = a.symmetry().clone();
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
            return Err(Error::InvalidContraction(format!(
                "index `{}` names leg {x} of a rank-{} operand and leg {y} of a rank-{} operand",
                name(i),
                la.len(),
                lb.len()
            )));
        }
        if std::mem::replace(&mut used_a[x], true) || std::mem::replace(&mut used_b[y], true) {
            return Err(Error::InvalidContraction(format!(
                "index `{}`: leg used twice",
                name(i)
            )));
        }
        if !same_space(&la[x].space, &lb[y].space) {
            return Err(Error::SpaceMismatch {
                what: format!("contracted index `{}`", name(i)),
                left: la[x].space.describe(),
                right: lb[y].space.describe(),
            });
        }
        if la[x].flow == lb[y].flow {
            return Err(Error::FlowMismatch {
                what: format!("contracted index `{}`", name(i)),
                left: la[x].flow,
                right: lb[y].flow,
                hint: "; a contracted pair needs opposite flows (hint: conj() one side)".into(),
            });
        }
    }
    let mut a_free = Vec::new();
    let mut b_free = Vec::new();
    let mut c_rows = Vec::new();
    let mut c_cols = Vec::new();
    let mut out_legs = Vec::new();
    let mut seen_a = used_a.clone();
    let mut seen_b = used_b.clone();
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
                return Err(Error::InvalidContraction(format!(
                    "output leg {p} names {s:?}, which is out of range, contracted or used twice"
                )))
            }
        }
    }
    crate::block::check_rank(out_legs.len())?;
    if seen_a.iter().chain(&seen_b).any(|x| !x) {
        return Err(Error::InvalidContraction(
            "a free leg of an operand is missing from the output".into(),
        ));
    }
    let qa = eff_charge(a.charge(), &sym, d.conj_a);
    let qb = eff_charge(b.charge(), &sym, d.conj_b);
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

/// One block-pair GEMM: `C[c] += A[a] * B[b]` with shape `m x k` times `k x n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PairGemm {
    /// Block position in A.
    pub a: u32,
    /// Block position in B.
    pub b: u32,
    /// Block position in the output.
    pub c: u32,
    /// Rows (product of A's free dims).
    pub m: usize,
    /// Columns (product of B's free dims).
    pub n: usize,
    /// Inner dimension (product of contracted dims).
    pub k: usize,
}

impl PairGemm {
    /// Useful flops (2mnk; complex counts 4x the real multiply-adds).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// The output's block keys and the pair GEMMs, sorted by (output, A, B) block.
#[derive(Debug, Clone)]
pub struct PairList {
    /// Output block keys, sorted; `PairGemm::c` indexes this.
    pub out_keys: Vec<BlockKey>,
    /// The GEMMs.
    pub pairs: Vec<PairGemm>,
}

/// Enumerates every matching block pair.
pub fn enumerate<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>, g: &Geometry) -> PairList {
    let mut by_contr: HashMap<Vec<u32>, Vec<u32>> = HashMap::new();
    for (j, blk) in b.blocks().iter().enumerate() {
        let key: Vec<u32> = g.b_contr.iter().map(|&l| blk.key[l]).collect();
        by_contr.entry(key).or_default().push(j as u32);
    }
    let mut out_index: HashMap<BlockKey, u32> = HashMap::new();
    let mut out_keys: Vec<BlockKey> = Vec::new();
    let mut pairs = Vec::new();
    let rank_out = g.c_rows.len() + g.c_cols.len();
    for (i, ablk) in a.blocks().iter().enumerate() {
        let key: Vec<u32> = g.a_contr.iter().map(|&l| ablk.key[l]).collect();
        let Some(bs) = by_contr.get(&key) else {
            continue;
        };
        let m: usize = g.a_free.iter().map(|&l| ablk.layout.dims[l]).product();
        let k: usize = g.a_contr.iter().map(|&l| ablk.layout.dims[l]).product();
        for &j in bs {
            let bblk = &b.blocks()[j as usize];
            let mut ok = vec![0u32; rank_out];
            for (&p, &l) in g.c_rows.iter().zip(&g.a_free) {
                ok[p] = ablk.key[l];
            }
            for (&p, &l) in g.c_cols.iter().zip(&g.b_free) {
                ok[p] = bblk.key[l];
            }
            let ok: BlockKey = ok.into_boxed_slice();
            let c = *out_index.entry(ok.clone()).or_insert_with(|| {
                out_keys.push(ok);
                (out_keys.len() - 1) as u32
            });
            let n: usize = g.b_free.iter().map(|&l| bblk.layout.dims[l]).product();
            pairs.push(PairGemm {
                a: i as u32,
                b: j,
                c,
                m,
                n,
                k,
            });
        }
    }
    // renumber output blocks in key order
    let mut order: Vec<u32> = (0..out_keys.len() as u32).collect();
    order.sort_by(|&x, &y| out_keys[x as usize].cmp(&out_keys[y as usize]));
    let mut rank = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        rank[old as usize] = new as u32;
    }
    for p in &mut pairs {
        p.c = rank[p.c as usize];
    }
    let mut sorted_keys: Vec<BlockKey> = order
        .iter()
        .map(|&o| out_keys[o as usize].clone())
        .collect();
    std::mem::swap(&mut out_keys, &mut sorted_keys);
    pairs.sort_by_key(|p| (p.c, p.a, p.b));
    debug_assert!(out_keys
        .iter()
        .all(|k| { block_charge(&g.out_legs, &g.symmetry, k) == g.out_charge }));
    PairList { out_keys, pairs }
}
