//! Checked IR -> tokens: the code generation (the parser only re-emits scalar tokens as written).
//!
//! Every identifier the expansion declares is made at the call site's hygiene context
//! (`Span::call_site().located_at(..)` where it points at the user's tokens), so that a macro
//! forwarding its tokens to `contract!` expands to code that resolves.

use crate::ast::{AssignOp, OperandExpr};
use crate::check::{Checked, FlowIr, IxIr, OpIr, TermIr, TreeIr};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

const P: &str = "::blockcontract::__private";

fn private() -> TokenStream {
    P.parse().expect("valid path")
}

fn ix_tokens(ix: &IxIr) -> TokenStream {
    let p = private();
    let label = ix.label;
    let flow = match ix.ann.flow {
        Some((FlowIr::Out, _)) => quote!(::core::option::Option::Some(#p::FlowKind::Out)),
        Some((FlowIr::In, _)) => quote!(::core::option::Option::Some(#p::FlowKind::In)),
        None => quote!(::core::option::Option::None),
    };
    let local = ix.ann.local.is_some();
    quote!(#p::ix(#label, #flow, #local))
}

fn tree_tokens(t: &TreeIr) -> TokenStream {
    let p = private();
    match t {
        TreeIr::Leaf(i) => quote!(#p::leaf(#i)),
        TreeIr::Node(a, b) => {
            let (a, b) = (tree_tokens(a), tree_tokens(b));
            quote!(#p::node(#a, #b))
        }
    }
}

fn operand_value(e: &OperandExpr) -> TokenStream {
    match e {
        OperandExpr::Ident(i) => quote!(#i),
        OperandExpr::Paren { expr, span } => quote_spanned!(*span=> (#expr)),
    }
}

/// The identifier `name` at the call site's hygiene, pointing at `span`.
fn ident_at(name: &str, span: Span) -> syn::Ident {
    syn::Ident::new(name, Span::call_site().located_at(span))
}

fn op_var(i: usize) -> syn::Ident {
    format_ident!("__bc_op_{}", i)
}

/// The spec of one term.
fn spec_tokens(c: &Checked, t: &TermIr) -> TokenStream {
    let p = private();
    let labels = &c.labels;
    let output_name = &c.output_name;
    let output: Vec<TokenStream> = c.output.iter().map(ix_tokens).collect();
    let ops: Vec<TokenStream> = t
        .operands
        .iter()
        .map(|&o| {
            let op: &OpIr = &c.operands[o];
            let name = op.expr.display();
            let conj = op.conj;
            let ixs: Vec<TokenStream> = op.indices.iter().map(ix_tokens).collect();
            quote!(#p::op(#name, #conj, ::std::vec![#(#ixs),*]))
        })
        .collect();
    let tree = match &t.tree {
        Some(tr) => {
            let tr = tree_tokens(tr);
            quote!(::core::option::Option::Some(#tr))
        }
        None => quote!(::core::option::Option::None),
    };
    let assign = match c.assign {
        AssignOp::New => quote!(#p::AssignKind::New),
        AssignOp::Overwrite => quote!(#p::AssignKind::Overwrite),
        AssignOp::Accumulate | AssignOp::Subtract => quote!(#p::AssignKind::Accumulate),
    };
    quote!(#p::spec(&[#(#labels),*], #output_name, ::std::vec![#(#output),*], ::std::vec![#(#ops),*], #tree, #assign))
}

/// The scalar of one term: its scalars, its sign (and the sign of `-=`), its divisors.
fn alpha_tokens(c: &Checked, t: &TermIr, first: &syn::Ident) -> TokenStream {
    let p = private();
    let mut a = quote!(#p::one_for(#first));
    for s in &t.scalars {
        a = quote!((#a * #p::scalar_for(#first, #s)));
    }
    for d in &t.divisors {
        a = quote!((#a / #p::scalar_for(#first, #d)));
    }
    if t.negative != (c.assign == AssignOp::Subtract) {
        a = quote!(#p::negate(#a));
    }
    a
}

/// The options after `;`.
fn options_tokens(c: &Checked) -> TokenStream {
    let p = private();
    let mut fields = Vec::new();
    for o in c.options {
        let v = &o.value;
        match o.name.to_string().as_str() {
            "executor" => {
                let w = o.word.as_ref().map(|w| w.to_string()).unwrap_or_default();
                fields.push(quote!(executor: #p::executor(#w)));
            }
            "threads" => fields.push(quote!(threads: #p::threads(#v))),
            _ => fields.push(quote!(cache: ::core::option::Option::Some(&#v))),
        }
    }
    quote!(#p::Options { #(#fields,)* ..::core::default::Default::default() })
}

/// `let` bindings of the operands used (each once) and their static rank checks, spanned at
/// the operand.
fn bindings(c: &Checked, bound: &[usize]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let p = private();
    let bind = bound
        .iter()
        .map(|&o| {
            let v = op_var(o);
            let val = operand_value(c.operands[o].expr);
            quote!(let #v = &#val;)
        })
        .collect();
    let rank_checks = bound
        .iter()
        .map(|&o| {
            let op = &c.operands[o];
            let k = op.indices.len();
            let span = op.expr.span();
            let v = ident_at(&op_var(o).to_string(), span);
            quote_spanned!(span=> #p::check_rank::<_, #k>(#v);)
        })
        .collect();
    (bind, rank_checks)
}

/// One runtime `Term` per term that is not the target: its spec, operands and alpha.
fn term_tokens(c: &Checked, real: &[&TermIr], first: &syn::Ident) -> Vec<TokenStream> {
    let p = private();
    real.iter()
        .enumerate()
        .map(|(i, t)| {
            // spanned at each operand, so that an element-type mismatch points at the operand
            let dyns: Vec<TokenStream> = t
                .operands
                .iter()
                .map(|&o| {
                    let span = c.operands[o].expr.span();
                    let v = ident_at(&op_var(o).to_string(), span);
                    quote_spanned!(span=> ::blockcontract::__private::as_dyn(#v))
                })
                .collect();
            let alpha = alpha_tokens(c, t, first);
            quote!(#p::Term { spec: #i, ops: &[#(#dyns),*], alpha: #alpha })
        })
        .collect()
}

/// The call that writes into the target (`=`, `+=`, `-=`), scaled by its own term if any.
fn into_target(
    c: &Checked,
    terms: &[TokenStream],
    first: &syn::Ident,
    no_operand: bool,
) -> TokenStream {
    let p = private();
    let options = options_tokens(c);
    let n_out = c.output.len();
    let target_var = ident_at("__bc_target", c.target.span());
    let target = operand_value(c.target);
    let span = c.target.span();
    let rank_check = quote_spanned!(span=> #p::check_rank::<_, #n_out>(#target_var););
    let assign = if c.assign == AssignOp::Overwrite {
        quote!(#p::AssignKind::Overwrite)
    } else {
        quote!(#p::AssignKind::Accumulate)
    };
    let scale = match c.terms.iter().find(|t| t.is_target) {
        Some(t) => {
            let a = alpha_tokens(c, t, first);
            quote!(::core::option::Option::Some(#a))
        }
        None => quote!(::core::option::Option::None),
    };
    let target_ref = if no_operand {
        quote!(let __bc_target_ref = #p::target_view(#target_var);)
    } else {
        quote!()
    };
    quote! {{
        let #target_var = &mut #target;
        #rank_check
        #target_ref
        let __bc_scale = #scale;
        #p::contract_into(__BC_SITE, #target_var, __bc_scale, #assign, &[#(#terms),*], #options)
    }}
}

pub fn lower(c: &Checked) -> TokenStream {
    let p = private();
    let real: Vec<&TermIr> = c.terms.iter().filter(|t| !t.is_target).collect();
    let specs: Vec<TokenStream> = real.iter().map(|t| spec_tokens(c, t)).collect();
    // operands bound once each (a target term binds nothing: the target is written)
    let bound: Vec<usize> = real
        .iter()
        .flat_map(|t| t.operands.iter().copied())
        .collect();
    let (bind, rank_checks) = bindings(c, &bound);
    // the element type comes from the first operand (or the target when it is the only one)
    let first = match bound.first() {
        Some(&o) => op_var(o),
        None => format_ident!("__bc_target_ref"),
    };
    let terms = term_tokens(c, &real, &first);
    let call = match c.assign {
        AssignOp::New => {
            let (options, n_out) = (options_tokens(c), c.output.len());
            quote! {
                #p::contract_new::<_, #n_out>(__BC_SITE, &[#(#terms),*], #options)
            }
        }
        _ => into_target(c, &terms, &first, bound.is_empty()),
    };
    quote! {{
        static __BC_SITE_STATE: #p::CallSite = #p::CallSite::new();
        let __BC_SITE = __BC_SITE_STATE.specs(|| ::std::vec![#(#specs),*]);
        #(#bind)*
        #(#rank_checks)*
        #call
    }}
}
