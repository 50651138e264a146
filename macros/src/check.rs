//! Semantic checks, one small function per rule, all errors collected and reported together.

use crate::ast::*;
use proc_macro2::{Span, TokenStream};

/// A flow as written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FlowIr {
    Out,
    In,
}

impl FlowIr {
    fn word(self) -> &'static str {
        match self {
            FlowIr::Out => "out",
            FlowIr::In => "in",
        }
    }
}

/// Annotations of one index occurrence.
#[derive(Clone, Default)]
pub struct Ann {
    pub flow: Option<(FlowIr, Span)>,
    pub local: Option<Span>,
    pub any: bool,
}

/// One index occurrence, resolved to a label id.
#[derive(Clone)]
pub struct IxIr {
    pub label: usize,
    pub span: Span,
    pub ann: Ann,
}

/// One operand (its position in the call's list of operands is its binding).
pub struct OpIr<'a> {
    pub expr: &'a OperandExpr,
    pub conj: bool,
    pub indices: Vec<IxIr>,
}

/// Pairwise order from parentheses; leaves index the term's operands.
pub enum TreeIr {
    Leaf(usize),
    Node(Box<TreeIr>, Box<TreeIr>),
}

/// One term: its operands (positions in `Checked::operands`), scalars, divisors, order.
pub struct TermIr {
    pub negative: bool,
    pub operands: Vec<usize>,
    pub scalars: Vec<TokenStream>,
    pub divisors: Vec<TokenStream>,
    pub tree: Option<TreeIr>,
    pub span: Span,
    /// The target itself, alone and in the output's order (`c = beta * c[i, j] + ...`).
    pub is_target: bool,
}

/// The checked contraction: what `lower` needs.
pub struct Checked<'a> {
    pub labels: Vec<String>,
    pub output_name: String,
    pub target: &'a OperandExpr,
    pub output: Vec<IxIr>,
    pub operands: Vec<OpIr<'a>>,
    pub terms: Vec<TermIr>,
    pub assign: AssignOp,
    pub options: &'a [Opt],
}

/// Collects errors; `finish` reports them all at once.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        let e = syn::Error::new(span, msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
    pub fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

pub fn check(c: &Contraction) -> syn::Result<Checked<'_>> {
    let mut errs = Errors::default();
    let mut labels: Vec<String> = Vec::new();
    let mut intern = |name: &str| -> usize {
        labels.iter().position(|l| l == name).unwrap_or_else(|| {
            labels.push(name.to_string());
            labels.len() - 1
        })
    };
    let output: Vec<IxIr> = c
        .output
        .indices
        .indices
        .iter()
        .map(|ix| resolve(ix, &mut intern, &mut errs))
        .collect();
    let mut operands = Vec::new();
    let terms = term_irs(c, &mut operands, &mut intern, &mut errs);
    let mut ck = Checked {
        labels,
        output_name: c.output.target.display(),
        target: &c.output.target,
        output,
        operands,
        terms,
        assign: c.assign,
        options: &c.options,
    };
    find_target_terms(&mut ck, &mut errs);
    check_new_target(&ck, &mut errs);
    check_output_repeats(&ck, &mut errs);
    for t in ck.terms.iter().filter(|t| !t.is_target) {
        check_counts(&ck, t, &mut errs);
        check_free_indices(&ck, t, &mut errs);
        check_contracted_flows(&ck, t, &mut errs);
        check_output_annotations(&ck, t, &mut errs);
    }
    check_options(&ck, &mut errs);
    errs.finish()?;
    Ok(ck)
}

/// Tree leaves numbered from 0 within the term.
fn shift(t: TreeIr, first: usize) -> TreeIr {
    match t {
        TreeIr::Leaf(i) => TreeIr::Leaf(i - first),
        TreeIr::Node(a, b) => TreeIr::Node(Box::new(shift(*a, first)), Box::new(shift(*b, first))),
    }
}

/// Walks a product depth-first: operands in source order, scalars and divisors collected, the
/// tree built (leaves are positions in `ops`).
/// Each term's operands (appended to `operands`), scalars, divisors and pairwise tree.
fn term_irs<'a>(
    c: &'a Contraction,
    operands: &mut Vec<OpIr<'a>>,
    intern: &mut impl FnMut(&str) -> usize,
    errs: &mut Errors,
) -> Vec<TermIr> {
    let mut terms = Vec::new();
    for t in &c.rhs.terms {
        let first = operands.len();
        let mut scalars = Vec::new();
        let mut divisors = Vec::new();
        let tree = collect(
            &t.product,
            operands,
            &mut scalars,
            &mut divisors,
            intern,
            errs,
        );
        let ops: Vec<usize> = (first..operands.len()).collect();
        let has_groups = t.product.items.iter().any(|i| matches!(i, Item::Group(_)));
        terms.push(TermIr {
            negative: t.negative,
            operands: ops,
            scalars,
            divisors,
            tree: has_groups.then(|| shift(tree, first)),
            span: t.span,
            is_target: false,
        });
    }
    terms
}

fn collect<'a>(
    p: &'a Product,
    ops: &mut Vec<OpIr<'a>>,
    scalars: &mut Vec<TokenStream>,
    divisors: &mut Vec<TokenStream>,
    intern: &mut impl FnMut(&str) -> usize,
    errs: &mut Errors,
) -> TreeIr {
    let mut tree: Option<TreeIr> = None;
    for item in &p.items {
        let sub = match item {
            Item::Scalar(ts) => {
                scalars.push(ts.clone());
                continue;
            }
            Item::Divisor(ts) => {
                divisors.push(ts.clone());
                continue;
            }
            Item::Factor(f) => {
                let indices = f
                    .indices
                    .indices
                    .iter()
                    .map(|ix| resolve(ix, intern, errs))
                    .collect();
                ops.push(OpIr {
                    expr: &f.operand,
                    conj: f.conj,
                    indices,
                });
                TreeIr::Leaf(ops.len() - 1)
            }
            Item::Group(g) => collect(g, ops, scalars, divisors, intern, errs),
        };
        tree = Some(match tree {
            None => sub,
            Some(t) => TreeIr::Node(Box::new(t), Box::new(sub)),
        });
    }
    tree.unwrap_or(TreeIr::Leaf(ops.len().saturating_sub(1)))
}

fn resolve(ix: &Index, intern: &mut impl FnMut(&str) -> usize, errs: &mut Errors) -> IxIr {
    let name = ix.name.to_string();
    IxIr {
        label: intern(&name),
        span: ix.name.span(),
        ann: annotations(ix, errs),
    }
}

fn annotations(ix: &Index, errs: &mut Errors) -> Ann {
    let mut ann = Ann {
        any: !ix.words.is_empty(),
        ..Ann::default()
    };
    for w in &ix.words {
        let flow = match w.to_string().as_str() {
            "out" => FlowIr::Out,
            "in" => FlowIr::In,
            "local" => {
                if ann.local.replace(w.span()).is_some() {
                    errs.push(
                        w.span(),
                        format!("`local` written twice on index `{}`", ix.name),
                    );
                }
                continue;
            }
            other => {
                errs.push(
                    w.span(),
                    format!("unknown annotation `{other}` on index `{}`; expected `out`, `in` or `local`", ix.name),
                );
                continue;
            }
        };
        match ann.flow {
            Some((f, _)) if f == flow => errs.push(
                w.span(),
                format!("`{}` written twice on index `{}`", flow.word(), ix.name),
            ),
            Some((f, s)) => {
                errs.push(
                    w.span(),
                    format!(
                        "conflicting annotations on index `{}`: `{}` and `{}`; a leg flows one way",
                        ix.name,
                        f.word(),
                        flow.word()
                    ),
                );
                errs.push(s, format!("`{}` written here", f.word()));
            }
            None => ann.flow = Some((flow, w.span())),
        }
    }
    ann
}

/// For `=`, `+=` and `-=`: a term that is the target alone, in the output's index order, is a
/// scale of the target; the target anywhere else on the right is an error (it is being
/// written).
fn find_target_terms(c: &mut Checked, errs: &mut Errors) {
    if c.assign == AssignOp::New {
        return;
    }
    let target = c.target.display();
    let out: Vec<usize> = c.output.iter().map(|x| x.label).collect();
    let mut seen = false;
    for t in &mut c.terms {
        let alone = t.operands.len() == 1 && {
            let op = &c.operands[t.operands[0]];
            op.expr.display() == target
                && !op.conj
                && op.indices.iter().map(|x| x.label).collect::<Vec<_>>() == out
        };
        if alone && !std::mem::replace(&mut seen, true) {
            t.is_target = true;
            continue;
        }
        for &o in &t.operands {
            let op = &c.operands[o];
            if op.expr.display() == target {
                errs.push(
                    op.expr.span(),
                    format!(
                        "the target `{target}` is written by this contraction, so on the right it can only be a term of its own with the output's indices: `beta * {target}[{}]`",
                        out.iter().map(|&l| c.labels[l].as_str()).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
}

fn check_new_target(c: &Checked, errs: &mut Errors) {
    if let (AssignOp::New, OperandExpr::Paren { span, .. }) = (c.assign, c.target) {
        errs.push(*span, "`:=` makes a new tensor, so its output must be a plain name; hint: use `=` or `+=` to write into an existing tensor");
    }
}

fn check_output_repeats(c: &Checked, errs: &mut Errors) {
    for (i, ix) in c.output.iter().enumerate() {
        if let Some(first) = c.output[..i].iter().find(|x| x.label == ix.label) {
            errs.push(
                ix.span,
                format!("output index `{}` is repeated", c.labels[ix.label]),
            );
            errs.push(first.span, "first used here");
        }
    }
}

/// Occurrences of each label in a term: (operand, occurrence).
fn occurrences<'c>(c: &'c Checked, t: &TermIr) -> Vec<Vec<(usize, &'c IxIr)>> {
    let mut occ: Vec<Vec<(usize, &IxIr)>> = vec![Vec::new(); c.labels.len()];
    for &o in &t.operands {
        for ix in &c.operands[o].indices {
            occ[ix.label].push((o, ix));
        }
    }
    occ
}

/// An index appears once (open), or twice: on two factors (contracted) or on one (traced);
/// a traced index appears nowhere else.
fn check_counts(c: &Checked, t: &TermIr, errs: &mut Errors) {
    for (l, occ) in occurrences(c, t).iter().enumerate() {
        let name = &c.labels[l];
        let mut per_op: Vec<usize> = occ.iter().map(|x| x.0).collect();
        per_op.sort_unstable();
        let traced_on = per_op.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        match (occ.len(), traced_on) {
            (0..=2, _) => {}
            (n, Some(o)) => {
                let third = occ
                    .iter()
                    .find(|x| x.0 != o)
                    .map_or(occ[2].1.span, |x| x.1.span);
                errs.push(
                    third,
                    format!(
                        "index `{name}` is traced on `{}` and also appears elsewhere ({n} times in all); a traced pair joins two legs of one factor only",
                        c.operands[o].expr.display()
                    ),
                );
            }
            (n, None) => {
                for (_, ix) in &occ[2..] {
                    errs.push(
                        ix.span,
                        format!("index `{name}` appears {n} times on the right; an index appears once (open) or twice (contracted)"),
                    );
                }
            }
        }
        if occ.len() == 2 && c.output.iter().any(|x| x.label == l) {
            errs.push(
                c.output.iter().find(|x| x.label == l).map_or(occ[0].1.span, |x| x.span),
                format!("index `{name}` is contracted on the right-hand side, so it cannot appear in the output"),
            );
            errs.push(occ[0].1.span, "contracted here");
        }
    }
}

/// Every term has exactly the output's free indices.
fn check_free_indices(c: &Checked, t: &TermIr, errs: &mut Errors) {
    let occ = occurrences(c, t);
    let free: Vec<usize> = (0..c.labels.len()).filter(|&l| occ[l].len() == 1).collect();
    let out: Vec<usize> = c.output.iter().map(|x| x.label).collect();
    let single = c.terms.iter().filter(|x| !x.is_target).count() == 1;
    for &l in &out {
        if occ[l].is_empty() {
            let at = c
                .output
                .iter()
                .find(|x| x.label == l)
                .map_or(t.span, |x| x.span);
            let msg = if single {
                format!(
                    "output index `{}` does not appear on the right-hand side",
                    c.labels[l]
                )
            } else {
                format!(
                    "output index `{}` does not appear in this term; every term has the output's free indices",
                    c.labels[l]
                )
            };
            errs.push(if single { at } else { t.span }, msg);
        }
    }
    for &l in &free {
        if !out.contains(&l) {
            let at = occ[l][0].1.span;
            let msg = if single {
                format!("index `{}` appears once on the right but not in the output; hint: add it to the output or contract it with another factor", c.labels[l])
            } else {
                format!(
                    "this term has the free index `{}`, which the output does not; every term has the output's free indices",
                    c.labels[l]
                )
            };
            errs.push(at, msg);
        }
    }
}

fn check_contracted_flows(c: &Checked, t: &TermIr, errs: &mut Errors) {
    for (l, occ) in occurrences(c, t).iter().enumerate() {
        let [(_, a), (_, b)] = occ.as_slice() else {
            continue;
        };
        let name = &c.labels[l];
        if let (Some((fa, sa)), Some((fb, sb))) = (a.ann.flow, b.ann.flow) {
            if fa == fb {
                errs.push(
                    sb,
                    format!("contracted index `{name}` is annotated `{}` on both sides; a contracted pair needs opposite flows", fb.word()),
                );
                errs.push(sa, format!("`{}` first written here", fa.word()));
            }
        }
        if a.ann.any && b.ann.any && a.ann.local.is_some() != b.ann.local.is_some() {
            let (with, without) = if a.ann.local.is_some() {
                (a, b)
            } else {
                (b, a)
            };
            errs.push(
                without.span,
                format!("contracted index `{name}` is annotated `local` on one side only; both sides join the same space"),
            );
            errs.push(with.ann.local.expect("local set"), "`local` written here");
        }
    }
}

fn check_output_annotations(c: &Checked, t: &TermIr, errs: &mut Errors) {
    let occ = occurrences(c, t);
    for ix in &c.output {
        let [(_, src)] = occ[ix.label].as_slice() else {
            continue;
        };
        let name = &c.labels[ix.label];
        if let (Some((fo, so)), Some((fs, ss))) = (ix.ann.flow, src.ann.flow) {
            if fo != fs {
                errs.push(
                    so,
                    format!("output index `{name}` is annotated `{}` but its source is annotated `{}`; an output leg keeps its source's flow", fo.word(), fs.word()),
                );
                errs.push(ss, "source annotated here");
            }
        }
        if ix.ann.any && src.ann.any && ix.ann.local.is_some() != src.ann.local.is_some() {
            errs.push(
                ix.span,
                format!("output index `{name}` and its source disagree on `local`; an output leg keeps its source's space"),
            );
            errs.push(src.span, "source here");
        }
    }
}

/// Options: `executor = planned | pairwise | dense`, `threads = n`, `cache = expr`, each once.
fn check_options(c: &Checked, errs: &mut Errors) {
    let mut seen: Vec<String> = Vec::new();
    for o in c.options {
        let name = o.name.to_string();
        if seen.contains(&name) {
            errs.push(o.name.span(), format!("option `{name}` given twice"));
        }
        seen.push(name.clone());
        match name.as_str() {
            "executor" => {
                let ok = o.word.as_ref().is_some_and(|w| {
                    ["planned", "pairwise", "dense"].contains(&w.to_string().as_str())
                });
                if !ok {
                    errs.push(
                        o.word.as_ref().map_or(o.name.span(), |w| w.span()),
                        "unknown executor; expected `planned`, `pairwise` or `dense`",
                    );
                }
            }
            "threads" | "cache" => {}
            _ => errs.push(
                o.name.span(),
                format!("unknown option `{name}`; expected `executor`, `threads` or `cache`"),
            ),
        }
    }
}
