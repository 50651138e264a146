//! `impl Parse` for the contraction syntax.

use crate::ast::*;
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
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
                Span::call_site(),
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
        let assign = parse_assign(input)?;
        if input.is_empty() || input.peek(Token![;]) {
            return Err(syn::Error::new(
                op_span,
                "missing right-hand side after the assignment operator",
            ));
        }
        let rhs = parse_sum(input)?;
        let options = if input.peek(Token![;]) {
            let _: Token![;] = input.parse()?;
            parse_options(input)?
        } else {
            Vec::new()
        };
        if !input.is_empty() {
            return Err(input.error("expected `*` between factors"));
        }
        Ok(Contraction {
            output,
            assign,
            rhs,
            options,
        })
    }
}

fn parse_assign(input: ParseStream) -> syn::Result<AssignOp> {
    if input.peek(Token![:]) && input.peek2(Token![=]) {
        let _: Token![:] = input.parse()?;
        let _: Token![=] = input.parse()?;
        Ok(AssignOp::New)
    } else if input.peek(Token![+=]) {
        let _: Token![+=] = input.parse()?;
        Ok(AssignOp::Accumulate)
    } else if input.peek(Token![-=]) {
        let _: Token![-=] = input.parse()?;
        Ok(AssignOp::Subtract)
    } else if input.peek(Token![=]) {
        let _: Token![=] = input.parse()?;
        Ok(AssignOp::Overwrite)
    } else {
        Err(input.error(
            "expected `:=`, `=`, `+=` or `-=` after the output; hint: `:=` makes a new tensor, `=` overwrites, `+=` and `-=` accumulate",
        ))
    }
}

/// Whether the next token ends a product: a term's sign, the options, or the end.
fn at_product_end(input: ParseStream) -> bool {
    input.is_empty() || input.peek(Token![;]) || input.peek(Token![+]) || input.peek(Token![-])
}

/// Whether the next tokens are a negative literal (`-1.0`): a scalar, not a term's sign.
fn at_negative_literal(input: ParseStream) -> bool {
    input.peek(Token![-]) && input.peek2(syn::Lit)
}

/// `[-] term (+|- term)*`, each term a product; a parenthesised sum inside a term is
/// distributed over it (`-(x + y)` is `-x - y`).
fn parse_sum(input: ParseStream) -> syn::Result<Sum> {
    let mut terms = Vec::new();
    let mut negative = false;
    // the last sign read, where a missing term is reported
    let mut sign = None;
    loop {
        // unary minus signs (a negative literal is a scalar factor instead)
        while input.peek(Token![-]) && !input.peek2(syn::Lit) {
            let m: Token![-] = input.parse()?;
            (negative, sign) = (!negative, Some(m.span));
        }
        let span = input.span();
        if at_product_end(input) && !at_negative_literal(input) {
            let at = sign.unwrap_or(span);
            return Err(syn::Error::new(at, "missing term after `+` or `-`"));
        }
        terms.extend(distribute(negative, span, parse_pieces(input)?));
        if input.peek(Token![+]) {
            let p: Token![+] = input.parse()?;
            (negative, sign) = (false, Some(p.span));
        } else if input.peek(Token![-]) {
            let m: Token![-] = input.parse()?;
            (negative, sign) = (true, Some(m.span));
        } else {
            break;
        }
    }
    Ok(Sum { terms })
}

/// A parenthesised sum of terms, at least one with a tensor factor.
struct ParenSum(Vec<Term>);

impl Parse for ParenSum {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let sum = parse_sum(input)?;
        if !input.is_empty() {
            return Err(input.error("expected `*` between factors"));
        }
        Ok(ParenSum(sum.terms))
    }
}

/// One factor of a term as parsed: an item, or a parenthesised sum still to be distributed.
enum Piece {
    Item(Item),
    Sum(Vec<Term>, Span),
}

/// The terms of `sign * pieces[0] * pieces[1] * ...`, each parenthesised sum multiplied out.
/// A sub-term that shares its term with other tensor factors stays parenthesised (its
/// operands are contracted first, as written).
fn distribute(negative: bool, span: Span, pieces: Vec<Piece>) -> Vec<Term> {
    let factors = |p: &Piece| match p {
        Piece::Item(i) => !matches!(i, Item::Scalar(_) | Item::Divisor(_)),
        Piece::Sum(..) => true,
    };
    let mut terms = vec![Term {
        negative,
        product: Product { items: Vec::new() },
        span,
    }];
    let tensor_pieces = pieces.iter().filter(|p| factors(p)).count();
    for piece in pieces {
        match piece {
            Piece::Item(item) => terms
                .iter_mut()
                .for_each(|t| t.product.items.push(item.clone())),
            Piece::Sum(subs, _) => {
                terms = terms
                    .iter()
                    .flat_map(|t| {
                        subs.iter().map(move |s| {
                            let mut items = t.product.items.clone();
                            if tensor_pieces > 1 {
                                items.push(Item::Group(s.product.clone()));
                            } else {
                                items.extend(s.product.items.iter().cloned());
                            }
                            Term {
                                negative: t.negative != s.negative,
                                product: Product { items },
                                span: s.span,
                            }
                        })
                    })
                    .collect()
            }
        }
    }
    terms
}

impl Parse for Product {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let p = parse_product(input)?;
        if !input.is_empty() {
            if input.peek(Token![+]) || input.peek(Token![-]) {
                return Err(input.error(
                    "a sum inside parentheses is not supported here; write the terms out at the top level",
                ));
            }
            return Err(input.error("expected `*` between factors"));
        }
        Ok(p)
    }
}

/// A product with no parenthesised sum in it (the inside of an order-fixing group).
fn parse_product(input: ParseStream) -> syn::Result<Product> {
    let mut items = Vec::new();
    for piece in parse_pieces(input)? {
        match piece {
            Piece::Item(item) => items.push(item),
            Piece::Sum(_, span) => {
                return Err(syn::Error::new(
                    span,
                    "a sum inside parentheses is not supported here; write the terms out at the top level",
                ))
            }
        }
    }
    Ok(Product { items })
}

/// Pieces joined by `*` (and scalar divisors after `/`).
fn parse_pieces(input: ParseStream) -> syn::Result<Vec<Piece>> {
    let mut pieces = vec![parse_piece(input)?];
    loop {
        if input.peek(Token![*]) {
            let star: Token![*] = input.parse()?;
            if at_product_end(input) && !at_negative_literal(input) {
                return Err(syn::Error::new(star.span, "missing operand after `*`"));
            }
            pieces.push(parse_piece(input)?);
        } else if input.peek(Token![/]) {
            let slash: Token![/] = input.parse()?;
            if at_product_end(input) && !at_negative_literal(input) {
                return Err(syn::Error::new(slash.span, "missing divisor after `/`"));
            }
            pieces.push(Piece::Item(parse_divisor(input)?));
        } else {
            return Ok(pieces);
        }
    }
}

/// An item, or a parenthesised sum of terms.
fn parse_piece(input: ParseStream) -> syn::Result<Piece> {
    if input.peek(syn::token::Paren) {
        return parse_paren_item(input);
    }
    parse_item(input).map(Piece::Item)
}

/// `/ s`: a literal, a name or a parenthesised expression; never a tensor.
fn parse_divisor(input: ParseStream) -> syn::Result<Item> {
    let span = input.span();
    let item = parse_item(input)?;
    match item {
        Item::Scalar(ts) => Ok(Item::Divisor(ts)),
        _ => Err(syn::Error::new(
            span,
            "a divisor must be a scalar (a literal, a name or a parenthesised expression), not a tensor factor",
        )),
    }
}

fn parse_item(input: ParseStream) -> syn::Result<Item> {
    if input.peek(Token![*]) || input.peek(Token![/]) {
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
        return match parse_paren_item(input)? {
            Piece::Item(item) => Ok(item),
            Piece::Sum(_, span) => Err(syn::Error::new(
                span,
                "a sum inside parentheses cannot be a divisor; a divisor is a scalar",
            )),
        };
    }
    if input.peek(Ident) {
        if input.peek2(Token![.]) || input.peek2(Token![::]) || input.peek2(syn::token::Paren) {
            return Err(unparenthesised_expression(input));
        }
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

/// `(expr)[..]`, `(a[..] * b[..])`, `(a[..] + b[..])` or `(scalar expression)`.
fn parse_paren_item(input: ParseStream) -> syn::Result<Piece> {
    let span = input.span();
    let content;
    parenthesized!(content in input);
    let inner: TokenStream = content.parse()?;
    if input.peek(syn::token::Bracket) {
        let operand = OperandExpr::Paren { expr: inner, span };
        let indices = parse_index_list(input, false)?;
        return Ok(Piece::Item(Item::Factor(Factor {
            operand,
            conj: false,
            indices,
        })));
    }
    let has_factor = |p: &Product| p.items.iter().any(|i| !matches!(i, Item::Scalar(..)));
    match syn::parse2::<Product>(inner.clone()) {
        Ok(p) if has_factor(&p) => Ok(Piece::Item(Item::Group(p))),
        Ok(_) => Ok(Piece::Item(Item::Scalar(quote::quote!((#inner))))),
        // not a product: a sum of terms (the sum's error is the more precise), or a scalar
        // expression such as `(alpha - beta)`
        Err(_) => {
            let sum = syn::parse2::<ParenSum>(inner.clone());
            if let Ok(ParenSum(terms)) = &sum {
                if terms.iter().any(|t| has_factor(&t.product)) {
                    return Ok(Piece::Sum(sum.map(|s| s.0)?, span));
                }
            }
            match syn::parse2::<syn::Expr>(inner.clone()) {
                Ok(_) if !has_top_level_bracket(&inner) => {
                    Ok(Piece::Item(Item::Scalar(quote::quote!((#inner)))))
                }
                _ => Err(sum.err().unwrap_or_else(|| {
                    syn::Error::new(span, "expected a product or a sum of terms")
                })),
            }
        }
    }
}

/// A method call, field access, path or call used as an operand or scalar without
/// parentheses: the error shows the parenthesised form, spanned at the expression.
fn unparenthesised_expression(input: ParseStream) -> syn::Error {
    // the expression's tokens, up to the operator (or end) that ends the item
    let mut tokens: Vec<TokenTree> = Vec::new();
    let _ = input.step(|cursor| {
        let mut c = *cursor;
        while let Some((tt, next)) = c.token_tree() {
            if let TokenTree::Punct(p) = &tt {
                if matches!(p.as_char(), '*' | '+' | '-' | '/' | ';') {
                    break;
                }
            }
            tokens.push(tt);
            c = next;
        }
        Ok(((), c))
    });
    let span = tokens
        .iter()
        .map(TokenTree::span)
        .reduce(|a, b| a.join(b).unwrap_or(a))
        .unwrap_or_else(|| input.span());
    let text = |ts: &[TokenTree]| -> String {
        let s: TokenStream = ts.iter().cloned().collect();
        pretty(&s)
    };
    match tokens.split_last() {
        Some((TokenTree::Group(g), expr)) if g.delimiter() == Delimiter::Bracket => {
            syn::Error::new(
                span,
                format!(
                    "an expression used as a tensor must be parenthesised; wrap it in parentheses: `({})[{}]`",
                    text(expr),
                    pretty(&g.stream())
                ),
            )
        }
        _ => syn::Error::new(
            span,
            format!(
                "a scalar expression must be parenthesised; wrap it in parentheses: `({})`",
                text(&tokens)
            ),
        ),
    }
}

/// Tokens as the user would write them: no space before `.`, `(`, `[`, `,` or after `.`.
fn pretty(ts: &TokenStream) -> String {
    let s = ts.to_token_stream().to_string();
    s.replace(" . ", ".")
        .replace(" (", "(")
        .replace(" [", "[")
        .replace(" ,", ",")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" :: ", "::")
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
        if input.peek2(Token![.]) || input.peek2(Token![::]) || input.peek2(syn::token::Paren) {
            return Err(unparenthesised_expression(input));
        }
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

/// `name = value, ...` after `;`.
fn parse_options(input: ParseStream) -> syn::Result<Vec<Opt>> {
    let mut opts = Vec::new();
    while !input.is_empty() {
        let name: Ident = input.call(Ident::parse_any).map_err(|_| {
            input.error("expected an option `name = value` (executor, threads or cache)")
        })?;
        if !input.peek(Token![=]) {
            return Err(input.error(format!("expected `=` after option `{name}`")));
        }
        let _: Token![=] = input.parse()?;
        let mut value = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![,]) {
            let tt: TokenTree = input.parse()?;
            value.extend(std::iter::once(tt));
        }
        if value.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                format!("missing value for option `{name}`"),
            ));
        }
        let word = syn::parse2::<Ident>(value.clone()).ok();
        opts.push(Opt { name, value, word });
        if input.peek(Token![,]) {
            let _: Token![,] = input.parse()?;
        }
    }
    Ok(opts)
}
