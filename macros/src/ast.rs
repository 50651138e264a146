//! Parsed syntax of a contraction; every node keeps its span.

use proc_macro2::{Span, TokenStream};
use syn::Ident;

/// `out[..] op rhs [; options]`.
pub struct Contraction {
    pub output: Output,
    pub assign: AssignOp,
    pub rhs: Sum,
    pub options: Vec<Opt>,
}

/// The left-hand side.
pub struct Output {
    pub target: OperandExpr,
    pub indices: IndexList,
}

/// `:=`, `=`, `+=` or `-=`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    New,
    Overwrite,
    Accumulate,
    Subtract,
}

/// A tensor expression: an identifier or a parenthesised Rust expression.
#[derive(Clone)]
pub enum OperandExpr {
    Ident(Ident),
    Paren { expr: TokenStream, span: Span },
}

impl OperandExpr {
    pub fn span(&self) -> Span {
        match self {
            OperandExpr::Ident(i) => i.span(),
            OperandExpr::Paren { span, .. } => *span,
        }
    }
    /// The operand as the user wrote it, for messages.
    pub fn display(&self) -> String {
        match self {
            OperandExpr::Ident(i) => i.to_string(),
            OperandExpr::Paren { expr, .. } => format!("({expr})"),
        }
    }
}

/// `[i, j: out, s: out local]`.
#[derive(Clone)]
pub struct IndexList {
    pub indices: Vec<Index>,
}

/// One index with its annotation words.
#[derive(Clone)]
pub struct Index {
    pub name: Ident,
    pub words: Vec<Ident>,
}

/// Terms joined by `+` and `-`.
pub struct Sum {
    pub terms: Vec<Term>,
}

/// A signed product.
#[derive(Clone)]
pub struct Term {
    pub negative: bool,
    pub product: Product,
    /// The first token of the term, for messages about the whole term.
    pub span: Span,
}

/// Items joined by `*` (and scalar divisors after `/`).
#[derive(Clone)]
pub struct Product {
    pub items: Vec<Item>,
}

/// A factor of a product.
#[derive(Clone)]
pub enum Item {
    /// A scalar: literal, identifier or parenthesised expression.
    Scalar(TokenStream),
    /// `/ s`: a scalar divisor.
    Divisor(TokenStream),
    /// A tensor factor.
    Factor(Factor),
    /// A parenthesised sub-product: its operands are contracted first.
    Group(Product),
}

/// `x[..]` or `conj(x)[..]` / `conj(x[..])`.
#[derive(Clone)]
pub struct Factor {
    pub operand: OperandExpr,
    pub conj: bool,
    pub indices: IndexList,
}

/// `name = value` after `;`.
pub struct Opt {
    pub name: Ident,
    pub value: TokenStream,
    /// The value when it is a single identifier (`executor = pairwise`).
    pub word: Option<Ident>,
}
