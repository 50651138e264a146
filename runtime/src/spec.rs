//! `ContractionSpec`: the description of a contraction that `contract!` emits and
//! workload files parse into; the contract between the macro and the runtime.

use crate::error::{Error, Result};
use crate::scalar::Conj;
use crate::symmetry::Flow;

/// One index occurrence: its label and the annotations written on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSpec {
    /// Position of the label in [`ContractionSpec::labels`].
    pub label: usize,
    /// Flow annotation (`: out` / `: in`), if written.
    pub flow: Option<Flow>,
    /// Whether `local` was written.
    pub local: bool,
}

/// One operand: a display name, whether it is conjugated, its indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperandSpec {
    /// The operand as written (for error messages).
    pub name: String,
    /// `conj(x)[..]`: values conjugated, flows reversed.
    pub conj: Conj,
    /// Its indices, one per leg.
    pub indices: Vec<IndexSpec>,
}

/// A pairwise contraction order: leaves are operand positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// Operand `i`.
    Leaf(usize),
    /// Contract the two sub-results.
    Node(Box<Tree>, Box<Tree>),
}

impl Tree {
    /// Left-to-right order over `n` operands: `((0*1)*2)*...`.
    pub fn left_to_right(n: usize) -> Option<Tree> {
        let mut t = Tree::Leaf(0);
        if n == 0 {
            return None;
        }
        for i in 1..n {
            t = Tree::Node(Box::new(t), Box::new(Tree::Leaf(i)));
        }
        Some(t)
    }
    /// Operand positions under this node.
    pub fn leaves(&self) -> Vec<usize> {
        match self {
            Tree::Leaf(i) => vec![*i],
            Tree::Node(a, b) => {
                let mut v = a.leaves();
                v.extend(b.leaves());
                v
            }
        }
    }
    /// Folds the tree bottom-up, the one walker of a pairwise order: `leaf(i)` for each
    /// operand, `node(left, right, is_root)` for each pairwise step, left subtree first (the
    /// order steps execute in).
    pub fn fold<X>(
        &self,
        leaf: &mut impl FnMut(usize) -> Result<X>,
        node: &mut impl FnMut(X, X, bool) -> Result<X>,
    ) -> Result<X> {
        fn go<X>(
            t: &Tree,
            root: bool,
            leaf: &mut impl FnMut(usize) -> Result<X>,
            node: &mut impl FnMut(X, X, bool) -> Result<X>,
        ) -> Result<X> {
            match t {
                Tree::Leaf(i) => leaf(*i),
                Tree::Node(a, b) => {
                    let x = go(a, false, leaf, node)?;
                    let y = go(b, false, leaf, node)?;
                    node(x, y, root)
                }
            }
        }
        go(self, true, leaf, node)
    }
    /// `(a*(b*c))`-style text with operand names.
    pub fn describe(&self, names: &[String]) -> String {
        match self {
            Tree::Leaf(i) => names[*i].clone(),
            Tree::Node(a, b) => format!("({}*{})", a.describe(names), b.describe(names)),
        }
    }
}

/// How the result is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assign {
    /// `:=` a new tensor.
    New,
    /// `=` overwrite an existing tensor.
    Overwrite,
    /// `+=` accumulate into an existing tensor.
    Accumulate,
}

/// A whole contraction: `out[..] (:=|=|+=) [alpha *] op0[..] * op1[..] * ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractionSpec {
    /// Label names; [`IndexSpec::label`] indexes this.
    pub labels: Vec<String>,
    /// Output name (for messages).
    pub output_name: String,
    /// Output indices in order.
    pub output: Vec<IndexSpec>,
    /// The operands.
    pub operands: Vec<OperandSpec>,
    /// The pairwise order if the user fixed it (parentheses, a workload's `order`).
    pub tree: Option<Tree>,
    /// `:=`, `=` or `+=`.
    pub assign: Assign,
}

impl ContractionSpec {
    /// Checks the label structure: every label twice on the right (contracted between two
    /// operands, or traced: twice on one operand) or once on the right and once on the left
    /// (open); a traced label appears nowhere else; the tree covers the operands once.
    pub fn validate(&self) -> Result<()> {
        let n = self.labels.len();
        let mut rhs = vec![0usize; n];
        let mut lhs = vec![0usize; n];
        let mut traced = vec![false; n];
        for op in &self.operands {
            let mut seen = vec![0u8; n];
            for ix in &op.indices {
                self.label(ix.label)?;
                seen[ix.label] += 1;
                rhs[ix.label] += 1;
                if seen[ix.label] == 2 {
                    traced[ix.label] = true;
                }
            }
        }
        if let Some(l) = (0..n).find(|&l| traced[l] && rhs[l] > 2) {
            return Err(invalid(format!(
                "index `{}` is traced on one operand and also appears elsewhere",
                self.labels[l]
            )));
        }
        for ix in &self.output {
            let l = self.label(ix.label)?;
            lhs[ix.label] += 1;
            if lhs[ix.label] > 1 {
                return Err(invalid(format!("output index `{l}` is repeated")));
            }
        }
        for (i, name) in self.labels.iter().enumerate() {
            match (rhs[i], lhs[i]) {
                (1, 1) | (2, 0) | (0, 0) => {}
                (2, 1) => {
                    return Err(invalid(format!(
                        "index `{name}` is contracted on the right but also appears in the output"
                    )))
                }
                (0, 1) => {
                    return Err(invalid(format!(
                        "output index `{name}` does not appear on the right"
                    )))
                }
                (1, 0) => {
                    return Err(invalid(format!(
                        "index `{name}` appears once on the right but not in the output"
                    )))
                }
                (r, _) => {
                    return Err(invalid(format!(
                        "index `{name}` appears {r} times on the right; an index appears once (open) or twice (contracted)"
                    )))
                }
            }
        }
        if let Some(t) = &self.tree {
            let mut leaves = t.leaves();
            leaves.sort();
            if leaves != (0..self.operands.len()).collect::<Vec<_>>() {
                return Err(Error::InvalidSpec {
                    reason: "the order does not name every operand exactly once".into(),
                });
            }
        }
        if self.operands.is_empty() {
            return Err(Error::InvalidSpec {
                reason: "no operand".into(),
            });
        }
        Ok(())
    }

    /// The traced index pairs of each operand (legs with the same label): empty when none.
    pub fn traces(&self) -> Vec<Vec<(usize, usize)>> {
        self.operands
            .iter()
            .map(|o| {
                let mut pairs = Vec::new();
                for (i, a) in o.indices.iter().enumerate() {
                    if let Some(j) = o.indices[i + 1..].iter().position(|b| b.label == a.label) {
                        pairs.push((i, i + 1 + j));
                    }
                }
                pairs
            })
            .collect()
    }

    /// The spec once every partial trace is done: each traced operand loses its traced legs
    /// (its tensor is traced first, see `DynTensor::partial_trace`). None without traces.
    pub fn without_traces(&self) -> Option<ContractionSpec> {
        let traces = self.traces();
        if traces.iter().all(Vec::is_empty) {
            return None;
        }
        let mut s = self.clone();
        for (o, pairs) in s.operands.iter_mut().zip(&traces) {
            let gone: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
            o.indices = o
                .indices
                .iter()
                .enumerate()
                .filter(|(i, _)| !gone.contains(i))
                .map(|(_, ix)| ix.clone())
                .collect();
        }
        Some(s)
    }

    /// The pairwise order: the one given, else left to right.
    pub fn tree_or_default(&self) -> Result<Tree> {
        match &self.tree {
            Some(t) => Ok(t.clone()),
            None => {
                Tree::left_to_right(self.operands.len()).ok_or_else(|| invalid("no operand".into()))
            }
        }
    }
    /// The output's labels, in order.
    pub fn output_labels(&self) -> Vec<usize> {
        self.output.iter().map(|i| i.label).collect()
    }
    /// Operand `i`'s labels, one per leg.
    pub fn operand_labels(&self, i: usize) -> Vec<usize> {
        self.operands[i].indices.iter().map(|x| x.label).collect()
    }

    fn label(&self, i: usize) -> Result<&str> {
        self.labels
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| invalid(format!("label id {i} out of range")))
    }
}

/// The permutation that reorders labels `from` into `to`: `to[k] == from[perm[k]]`, the one
/// label-to-permutation helper. An error when `to` is not a reordering of `from`.
pub fn permutation(from: &[usize], to: &[usize]) -> Result<Vec<usize>> {
    let perm: Option<Vec<usize>> = to
        .iter()
        .map(|l| from.iter().position(|x| x == l))
        .collect();
    match perm {
        Some(p) if from.len() == to.len() => Ok(p),
        _ => Err(invalid(format!(
            "labels {to:?} are not a reordering of {from:?}"
        ))),
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidSpec { reason }
}
