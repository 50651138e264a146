//! The pairwise order when the user gives none: every binary tree over the operands priced on
//! the real block structure (dynamic programming over subsets, exhaustive up to
//! [`MAX_EXHAUSTIVE`] operands), greedy beyond; left to right unless another order is
//! predicted clearly faster, and never more flops than left to right.

use super::cost::CostModel;
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::hash::InlineKey;
use crate::scalar::{Conj, Scalar};
use crate::spec::Tree;
use crate::step::{by_contracted, enumerate, geometry, step_desc};

/// Up to this many operands every order is priced (3^n splits); greedy beyond.
pub const MAX_EXHAUSTIVE: usize = 7;

/// An order other than left to right is taken when predicted at least this fraction faster.
pub const MARGIN: f64 = 0.1;

/// One operand as the order search sees it.
pub(super) struct Leaf<'a, T> {
    pub(super) skel: &'a DynTensor<T>,
    pub(super) labels: &'a [usize],
    pub(super) conj: Conj,
}

/// The contraction of a set of operands by the best tree found for it.
#[derive(Clone)]
struct Sub<T> {
    skel: DynTensor<T>,
    labels: Vec<usize>,
    conj: Conj,
    /// Predicted seconds of all its steps.
    cost: f64,
    /// Useful flops of all its steps.
    flops: f64,
    tree: Tree,
}

/// Joins two partial results: the step's predicted time (every block pair priced as a GEMM
/// by the cost model: call, flops at the peak rate, operand and result traffic), its flops,
/// and the result's structure.
fn join<T: Scalar>(
    l: &Sub<T>,
    r: &Sub<T>,
    root_out: Option<&[usize]>,
    names: &[String],
    model: &CostModel,
) -> Result<Sub<T>> {
    // an intermediate step puts a much smaller operand on the left: its GEMMs then have few
    // rows and long contiguous ones (thin steps stream far better that way)
    let (l, r) = if root_out.is_none() && elems(&l.skel) > 4 * elems(&r.skel) {
        (r, l)
    } else {
        (l, r)
    };
    let (desc, labels) = step_desc(&l.labels, l.conj, &r.labels, r.conj, root_out, names);
    let g = geometry(&l.skel, &r.skel, &desc)?;
    let list = enumerate(&l.skel, &r.skel, &g);
    let live = list.pairs.iter().filter(|p| p.m > 0 && p.n > 0 && p.k > 0);
    let cost: f64 = live.clone().map(|p| model.gemm_s(p.m, p.n, p.k)).sum();
    let flops: f64 = live.map(|p| p.flops()).sum();
    let skel = DynTensor::skeleton_keys(g.out_legs, g.symmetry, g.out_charge, list.out_keys)?;
    Ok(Sub {
        skel,
        labels,
        conj: Conj::No,
        cost: l.cost + r.cost + cost,
        flops: l.flops + r.flops + flops,
        tree: Tree::Node(Box::new(l.tree.clone()), Box::new(r.tree.clone())),
    })
}

/// The step joining two partial results, priced without building its result: (predicted
/// seconds, flops), as [`join`] counts them.
fn price<T: Scalar>(
    l: &Sub<T>,
    r: &Sub<T>,
    root_out: Option<&[usize]>,
    names: &[String],
    model: &CostModel,
) -> Result<(f64, f64)> {
    let (desc, _) = step_desc(&l.labels, l.conj, &r.labels, r.conj, root_out, names);
    let g = geometry(&l.skel, &r.skel, &desc)?;
    let by = by_contracted(&r.skel, &g.b_contr);
    let (mut cost, mut flops) = (0.0, 0.0);
    for ab in l.skel.blocks() {
        let Some(bs) = by.get(&InlineKey::pick(&ab.key, &g.a_contr)) else {
            continue;
        };
        let m: usize = g.a_free.iter().map(|&x| ab.layout.dims[x]).product();
        let k: usize = g.a_contr.iter().map(|&x| ab.layout.dims[x]).product();
        for &j in bs {
            let bb = &r.skel.blocks()[j as usize];
            let n: usize = g.b_free.iter().map(|&x| bb.layout.dims[x]).product();
            if m > 0 && n > 0 && k > 0 {
                cost += model.gemm_s(m, n, k);
                flops += 2.0 * m as f64 * n as f64 * k as f64;
            }
        }
    }
    Ok((cost, flops))
}

fn leaf_sub<T: Scalar>(i: usize, l: &Leaf<'_, T>) -> Sub<T> {
    Sub {
        skel: l.skel.clone(),
        labels: l.labels.to_vec(),
        conj: l.conj,
        cost: 0.0,
        flops: 0.0,
        tree: Tree::Leaf(i),
    }
}

fn elems<T: Scalar>(t: &DynTensor<T>) -> usize {
    t.blocks().iter().map(|b| b.layout.len()).sum()
}

fn shares(a: &[usize], b: &[usize]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// The cheapest tree by predicted time; never more flops than contracting left to right.
pub(super) fn choose_order<T: Scalar>(
    leaves: &[Leaf<'_, T>],
    out_labels: &[usize],
    names: &[String],
    model: &CostModel,
) -> Result<Tree> {
    let n = leaves.len();
    if n == 0 {
        return Err(Error::InvalidSpec {
            reason: "no operand".into(),
        });
    }
    let best = if n <= MAX_EXHAUSTIVE {
        exhaustive(leaves, out_labels, names, model)?
    } else {
        greedy(leaves, out_labels, names, model)?
    };
    let mut l2r = leaf_sub(0, &leaves[0]);
    for (i, l) in leaves.iter().enumerate().skip(1) {
        let root = (i == n - 1).then_some(out_labels);
        l2r = join(&l2r, &leaf_sub(i, l), root, names, model)?;
    }
    // the cost model ranks orders of similar predicted time less reliably than it ranks
    // large differences (packing and thin-GEMM orientation are priced roughly): another order
    // than left to right must be predicted clearly faster, and never cost more flops
    let clearly = best.cost < (1.0 - MARGIN) * l2r.cost;
    Ok(if clearly && best.flops <= l2r.flops * (1.0 + 1e-12) {
        best.tree
    } else {
        l2r.tree
    })
}

/// Whether the operands in `mask` form one connected piece (joined by shared indices).
fn connected(mask: usize, adj: &[usize]) -> bool {
    let start = mask & mask.wrapping_neg();
    let (mut seen, mut frontier) = (start, start);
    while frontier != 0 {
        let i = frontier.trailing_zeros() as usize;
        frontier &= frontier - 1;
        let next = adj[i] & mask & !seen;
        seen |= next;
        frontier |= next;
    }
    seen == mask
}

/// Dynamic programming over the connected subsets: the best tree of each from the best trees
/// of its two connected parts that share an index, over every such split (outer products
/// never); a network in disconnected pieces goes to the greedy search.
fn exhaustive<T: Scalar>(
    leaves: &[Leaf<'_, T>],
    out_labels: &[usize],
    names: &[String],
    model: &CostModel,
) -> Result<Sub<T>> {
    let n = leaves.len();
    let full = (1usize << n) - 1;
    let adj: Vec<usize> = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| j != i && shares(leaves[i].labels, leaves[j].labels))
                .fold(0, |m, j| m | 1 << j)
        })
        .collect();
    if !connected(full, &adj) {
        return greedy(leaves, out_labels, names, model);
    }
    let mut best: Vec<Option<Sub<T>>> = vec![None; full + 1];
    for (i, l) in leaves.iter().enumerate() {
        best[1 << i] = Some(leaf_sub(i, l));
    }
    let mut masks: Vec<usize> = (1..=full)
        .filter(|&m| m.count_ones() > 1 && connected(m, &adj))
        .collect();
    masks.sort_by_key(|m| m.count_ones());
    for m in masks {
        let low = m & m.wrapping_neg();
        let root = (m == full).then_some(out_labels);
        // splits m = s | (m ^ s) with the lowest operand in s: each split once, priced
        // without building its result; the winner is then built
        let mut found: Option<(f64, usize)> = None;
        let mut s = (m - 1) & m;
        while s > 0 {
            if s & low != 0 {
                if let (Some(l), Some(r)) = (&best[s], &best[m ^ s]) {
                    if shares(&l.labels, &r.labels) {
                        let cost = l.cost + r.cost + price(l, r, root, names, model)?.0;
                        if found.is_none_or(|b| cost < b.0) {
                            found = Some((cost, s));
                        }
                    }
                }
            }
            s = (s - 1) & m;
        }
        best[m] = match found {
            Some((_, s)) => match (&best[s], &best[m ^ s]) {
                (Some(l), Some(r)) => Some(join(l, r, root, names, model)?),
                _ => None,
            },
            None => None,
        };
    }
    best[full].take().ok_or_else(|| Error::InvalidSpec {
        reason: "no pairwise order covers every operand".into(),
    })
}

/// Repeatedly joins the pair sharing an index (any pair if none does) with the lowest
/// predicted time.
fn greedy<T: Scalar>(
    leaves: &[Leaf<'_, T>],
    out_labels: &[usize],
    names: &[String],
    model: &CostModel,
) -> Result<Sub<T>> {
    let mut live: Vec<Sub<T>> = leaves
        .iter()
        .enumerate()
        .map(|(i, l)| leaf_sub(i, l))
        .collect();
    while live.len() > 1 {
        let any_shared = (0..live.len())
            .any(|i| (i + 1..live.len()).any(|j| shares(&live[i].labels, &live[j].labels)));
        let root = (live.len() == 2).then_some(out_labels);
        let mut best: Option<(usize, usize, Sub<T>)> = None;
        for i in 0..live.len() {
            for j in i + 1..live.len() {
                if any_shared && !shares(&live[i].labels, &live[j].labels) {
                    continue;
                }
                let c = join(&live[i], &live[j], root, names, model)?;
                let step = |x: &Sub<T>| x.cost - live[i].cost - live[j].cost;
                if best.as_ref().is_none_or(|b| step(&c) < step(&b.2)) {
                    best = Some((i, j, c));
                }
            }
        }
        let Some((i, j, c)) = best else { break };
        live.remove(j);
        live.remove(i);
        live.push(c);
    }
    live.pop().ok_or_else(|| Error::InvalidSpec {
        reason: "no operand".into(),
    })
}
