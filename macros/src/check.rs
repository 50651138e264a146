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

/// One operand.
pub struct OpIr<'a> {
    pub expr: &'a OperandExpr,
    pub conj: bool,
    pub indices: Vec<IxIr>,
}

/// Pairwise order from parentheses.
pub enum TreeIr {
    Leaf(usize),
    Node(Box<TreeIr>, Box<TreeIr>),
}

/// The checked contraction: what `lower` needs.
pub struct Checked<'a> {
    pub labels: Vec<String>,
    pub output_name: String,
    pub target: &'a OperandExpr,
    pub output: Vec<IxIr>,
    pub operands: Vec<OpIr<'a>>,
    pub tree: Option<TreeIr>,
    pub scalars: Vec<TokenStream>,
    pub assign: AssignOp,
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
    let mut operands = Vec::new();
    let mut scalars = Vec::new();
    let tree = collect(&c.rhs, &mut operands, &mut scalars, &mut intern, &mut errs);
    let has_groups = has_group(&c.rhs);
    let output: Vec<IxIr> = c
        .output
        .indices
        .indices
        .iter()
        .map(|ix| resolve(ix, &mut intern, &mut errs))
        .collect();
    let ck = Checked {
        labels,
        output_name: c.output.target.display(),
        target: &c.output.target,
        output,
        operands,
        tree: if has_groups { Some(tree) } else { None },
        scalars,
        assign: c.assign,
    };
    check_new_target(&ck, &mut errs);
    check_repeat_on_operand(&ck, &mut errs);
    check_counts(&ck, &mut errs);
    check_output(&ck, &mut errs);
    check_contracted_flows(&ck, &mut errs);
    check_output_annotations(&ck, &mut errs);
    errs.finish()?;
    Ok(ck)
}

fn has_group(p: &Product) -> bool {
    p.items.iter().any(|i| matches!(i, Item::Group(_)))
}

/// Walks the product depth-first: operands in source order, scalars collected, the tree built.
fn collect<'a>(
    p: &'a Product,
    ops: &mut Vec<OpIr<'a>>,
    scalars: &mut Vec<TokenStream>,
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
            Item::Group(g) => collect(g, ops, scalars, intern, errs),
        };
        tree = Some(match tree {
            None => sub,
            Some(t) => TreeIr::Node(Box::new(t), Box::new(sub)),
        });
    }
    // a product of scalars alone is rejected by the parser's group rule; keep a leaf for safety
    tree.unwrap_or(TreeIr::Leaf(0))
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

fn check_new_target(c: &Checked, errs: &mut Errors) {
    if let (AssignOp::New, OperandExpr::Paren { span, .. }) = (c.assign, c.target) {
        errs.push(*span, "`:=` makes a new tensor, so its output must be a plain name; hint: use `=` or `+=` to write into an existing tensor");
    }
}

fn check_repeat_on_operand(c: &Checked, errs: &mut Errors) {
    for op in &c.operands {
        for (i, ix) in op.indices.iter().enumerate() {
            if let Some(first) = op.indices[..i].iter().find(|x| x.label == ix.label) {
                errs.push(
                    ix.span,
                    format!(
                        "index `{}` appears twice on `{}`; partial traces are not supported (hint: contract with an identity tensor)",
                        c.labels[ix.label],
                        op.expr.display()
                    ),
                );
                errs.push(first.span, "first used here");
            }
        }
    }
}

/// Occurrences of each label on the right.
fn rhs_occurrences<'c>(c: &'c Checked) -> Vec<Vec<&'c IxIr>> {
    let mut occ: Vec<Vec<&IxIr>> = vec![Vec::new(); c.labels.len()];
    for op in &c.operands {
        for ix in &op.indices {
            occ[ix.label].push(ix);
        }
    }
    occ
}

fn check_counts(c: &Checked, errs: &mut Errors) {
    for (l, occ) in rhs_occurrences(c).iter().enumerate() {
        if occ.len() > 2 {
            for ix in &occ[2..] {
                errs.push(
                    ix.span,
                    format!(
                        "index `{}` appears {} times on the right; an index appears once (open) or twice (contracted)",
                        c.labels[l],
                        occ.len()
                    ),
                );
            }
        }
    }
}

fn check_output(c: &Checked, errs: &mut Errors) {
    let occ = rhs_occurrences(c);
    for (i, ix) in c.output.iter().enumerate() {
        let name = &c.labels[ix.label];
        if let Some(first) = c.output[..i].iter().find(|x| x.label == ix.label) {
            errs.push(ix.span, format!("output index `{name}` is repeated"));
            errs.push(first.span, "first used here");
            continue;
        }
        match occ[ix.label].len() {
            0 => errs.push(
                ix.span,
                format!("output index `{name}` does not appear on the right-hand side"),
            ),
            2 => {
                errs.push(
                    ix.span,
                    format!("index `{name}` is contracted on the right-hand side, so it cannot appear in the output"),
                );
                errs.push(occ[ix.label][0].span, "contracted here");
            }
            _ => {}
        }
    }
    for (l, o) in occ.iter().enumerate() {
        if o.len() == 1 && !c.output.iter().any(|x| x.label == l) {
            errs.push(
                o[0].span,
                format!(
                    "index `{}` appears once on the right but not in the output; hint: add it to the output or contract it with another factor",
                    c.labels[l]
                ),
            );
        }
    }
}

fn check_contracted_flows(c: &Checked, errs: &mut Errors) {
    for (l, occ) in rhs_occurrences(c).iter().enumerate() {
        let [a, b] = occ.as_slice() else { continue };
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

fn check_output_annotations(c: &Checked, errs: &mut Errors) {
    let occ = rhs_occurrences(c);
    for ix in &c.output {
        let [src] = occ[ix.label].as_slice() else {
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
