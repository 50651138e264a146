//! `impl Parse` for the contraction syntax.

use crate::ast::*;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{bracketed, parenthesized, Ident, Token};

mod kw {
    syn::custom_keyword!(conj);
}

impl Parse for Contraction {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "empty contraction; expected `out[i, j] := a[i, k] * b[k, j]`",
            ));
        }
        let target = parse_operand_expr(input, "the output tensor")?;
        if !input.peek(syn::token::Bracket) {
            return Err(
                input.error("expected `[` with the output's indices after the output tensor")
            );
        }
        let indices = parse_index_list(input, true)?;
        let output = Output { target, indices };
        let op_span = input.span();
        let assign = if input.peek(Token![:]) && input.peek2(Token![=]) {
            let _: Token![:] = input.parse()?;
            let _: Token![=] = input.parse()?;
            AssignOp::New
        } else if input.peek(Token![+=]) {
            let _: Token![+=] = input.parse()?;
            AssignOp::Accumulate
        } else if input.peek(Token![=]) {
            let _: Token![=] = input.parse()?;
            AssignOp::Overwrite
        } else {
            return Err(input.error(
                "expected `:=`, `=` or `+=` after the output; hint: `:=` makes a new tensor, `=` overwrites, `+=` accumulates",
            ));
        };
        if input.is_empty() {
            return Err(syn::Error::new(
                op_span,
                "missing right-hand side after the assignment operator",
            ));
        }
        let rhs = parse_product(input)?;
        if !input.is_empty() {
            return Err(input.error("expected `*` between factors"));
        }
        Ok(Contraction {
            output,
            assign,
            rhs,
        })
    }
}

impl Parse for Product {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let p = parse_product(input)?;
        if !input.is_empty() {
            return Err(input.error("expected `*` between factors"));
        }
        Ok(p)
    }
}

fn parse_product(input: ParseStream) -> syn::Result<Product> {
    let mut items = vec![parse_item(input)?];
    while input.peek(Token![*]) {
        let star: Token![*] = input.parse()?;
        if input.is_empty() {
            return Err(syn::Error::new(star.span, "missing operand after `*`"));
        }
        items.push(parse_item(input)?);
    }
    Ok(Product { items })
}

fn parse_item(input: ParseStream) -> syn::Result<Item> {
    if input.peek(Token![*]) {
        return Err(input.error("missing operand before `*`"));
    }
    if input.peek(syn::Lit) || input.peek(Token![-]) {
        let mut ts = TokenStream::new();
        if input.peek(Token![-]) {
            let m: Token![-] = input.parse()?;
            ts.extend(quote::quote!(#m));
        }
        let lit: syn::Lit = input.parse()?;
        ts.extend(quote::quote!(#lit));
        return Ok(Item::Scalar(ts));
    }
    if input.peek(kw::conj) && input.peek2(syn::token::Paren) {
        return parse_conj(input);
    }
    if input.peek(syn::token::Paren) {
        let span = input.span();
        let content;
        parenthesized!(content in input);
        let inner: TokenStream = content.parse()?;
        if input.peek(syn::token::Bracket) {
            let operand = OperandExpr::Paren { expr: inner, span };
            let indices = parse_index_list(input, false)?;
            return Ok(Item::Factor(Factor {
                operand,
                conj: false,
                indices,
            }));
        }
        return match syn::parse2::<Product>(inner.clone()) {
            Ok(p) if p.items.iter().any(|i| !matches!(i, Item::Scalar(..))) => Ok(Item::Group(p)),
            Ok(_) => Ok(Item::Scalar(quote::quote!((#inner)))),
            Err(e) => match syn::parse2::<syn::Expr>(inner.clone()) {
                Ok(_) if !has_top_level_bracket(&inner) => {
                    Ok(Item::Scalar(quote::quote!((#inner))))
                }
                _ => Err(e),
            },
        };
    }
    if input.peek(Ident) {
        let id: Ident = input.parse()?;
        if input.peek(syn::token::Bracket) {
            let indices = parse_index_list(input, false)?;
            return Ok(Item::Factor(Factor {
                operand: OperandExpr::Ident(id),
                conj: false,
                indices,
            }));
        }
        return Ok(Item::Scalar(quote::quote!(#id)));
    }
    if input.is_empty() {
        return Err(input.error("missing operand"));
    }
    Err(input
        .error("expected a tensor factor like `a[i, k]`, a parenthesised product, or a scalar"))
}

fn has_top_level_bracket(ts: &TokenStream) -> bool {
    ts.clone()
        .into_iter()
        .any(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket))
}

/// `conj(x)[..]`, `conj((expr))[..]` or `conj(x[..])`.
fn parse_conj(input: ParseStream) -> syn::Result<Item> {
    let _: kw::conj = input.parse()?;
    let content;
    let paren = parenthesized!(content in input);
    if content.is_empty() {
        return Err(syn::Error::new(
            paren.span.join(),
            "missing operand inside `conj()`",
        ));
    }
    let operand = parse_operand_expr(&content, "the conjugated tensor")?;
    if content.peek(syn::token::Bracket) {
        let indices = parse_index_list(&content, false)?;
        if !content.is_empty() {
            return Err(content.error("`conj(..)` takes one tensor factor"));
        }
        return Ok(Item::Factor(Factor {
            operand,
            conj: true,
            indices,
        }));
    }
    if !content.is_empty() {
        return Err(content.error("`conj(..)` takes one tensor factor"));
    }
    if !input.peek(syn::token::Bracket) {
        return Err(input.error("expected `[` with indices after `conj(..)`"));
    }
    let indices = parse_index_list(input, false)?;
    Ok(Item::Factor(Factor {
        operand,
        conj: true,
        indices,
    }))
}

fn parse_operand_expr(input: ParseStream, what: &str) -> syn::Result<OperandExpr> {
    if input.peek(syn::token::Paren) {
        let span = input.span();
        let content;
        parenthesized!(content in input);
        let expr: TokenStream = content.parse()?;
        if expr.is_empty() {
            return Err(syn::Error::new(
                span,
                format!("empty parentheses where {what} was expected"),
            ));
        }
        return Ok(OperandExpr::Paren { expr, span });
    }
    if input.peek(Ident) {
        return Ok(OperandExpr::Ident(input.parse()?));
    }
    Err(input.error(format!(
        "expected {what}: an identifier or a parenthesised expression"
    )))
}

fn parse_index_list(input: ParseStream, is_output: bool) -> syn::Result<IndexList> {
    let content;
    let bracket = bracketed!(content in input);
    let span = bracket.span.join();
    let mut indices = Vec::new();
    while !content.is_empty() {
        if content.peek(Token![,]) {
            let c: Token![,] = content.parse()?;
            return Err(syn::Error::new(
                c.span,
                "stray comma: expected an index name before `,`",
            ));
        }
        let name = if content.peek(Ident::peek_any) && !content.peek(Token![in]) {
            content.call(Ident::parse_any)?
        } else {
            return Err(content.error("expected an index name"));
        };
        let mut words = Vec::new();
        if content.peek(Token![:]) {
            let colon: Token![:] = content.parse()?;
            while content.peek(Ident::peek_any) {
                words.push(content.call(Ident::parse_any)?);
            }
            if words.is_empty() {
                return Err(syn::Error::new(
                    colon.span,
                    "expected `out`, `in` or `local` after `:`",
                ));
            }
        }
        indices.push(Index { name, words });
        if content.is_empty() {
            break;
        }
        let comma: Token![,] = content
            .parse()
            .map_err(|_| content.error("expected `,` between indices"))?;
        if content.is_empty() {
            return Err(syn::Error::new(
                comma.span,
                "trailing comma: expected an index name after `,`",
            ));
        }
    }
    if indices.is_empty() && !is_output {
        return Err(syn::Error::new(
            span,
            "empty index list; a tensor factor needs one index per leg (hint: multiply by a scalar instead)",
        ));
    }
    Ok(IndexList { indices })
}
