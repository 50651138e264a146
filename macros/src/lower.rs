//! Checked IR -> tokens: the code generation (the parser only re-emits scalar tokens as written).

use crate::ast::{AssignOp, OperandExpr};
use crate::check::{Checked, FlowIr, IxIr, TreeIr};
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

pub fn lower(c: &Checked) -> TokenStream {
    let p = private();
    let labels = &c.labels;
    let output_name = &c.output_name;
    let output: Vec<TokenStream> = c.output.iter().map(ix_tokens).collect();
    let ops: Vec<TokenStream> = c
        .operands
        .iter()
        .map(|o| {
            let name = o.expr.display();
            let conj = o.conj;
            let ixs: Vec<TokenStream> = o.indices.iter().map(ix_tokens).collect();
            quote!(#p::op(#name, #conj, ::std::vec![#(#ixs),*]))
        })
        .collect();
    let tree = match &c.tree {
        Some(t) => {
            let t = tree_tokens(t);
            quote!(::core::option::Option::Some(#t))
        }
        None => quote!(::core::option::Option::None),
    };
    let assign = match c.assign {
        AssignOp::New => quote!(#p::AssignKind::New),
        AssignOp::Overwrite => quote!(#p::AssignKind::Overwrite),
        AssignOp::Accumulate => quote!(#p::AssignKind::Accumulate),
    };
    let vars: Vec<_> = (0..c.operands.len())
        .map(|i| format_ident!("__bc_op_{}", i))
        .collect();
    let bind: Vec<TokenStream> = c
        .operands
        .iter()
        .zip(&vars)
        .map(|(o, v)| {
            let val = operand_value(o.expr);
            quote!(let #v = &#val;)
        })
        .collect();
    let rank_checks: Vec<TokenStream> = c
        .operands
        .iter()
        .zip(&vars)
        .map(|(o, v)| {
            let k = o.indices.len();
            let span = o.expr.span();
            let v = spanned_ident(v, span);
            quote_spanned!(span=> #p::check_rank::<_, #k>(#v);)
        })
        .collect();
    let first = &vars[0];
    let scalars: Vec<TokenStream> = c
        .scalars
        .iter()
        .map(|s| quote!(let __bc_alpha = __bc_alpha * #p::scalar_for(#first, #s);))
        .collect();
    // spanned at each operand, so that an element-type mismatch points at the operand
    let dyns: Vec<TokenStream> = c
        .operands
        .iter()
        .zip(&vars)
        .map(|(o, v)| {
            let span = o.expr.span();
            let v = spanned_ident(v, span);
            quote_spanned!(span=> ::blockcontract::__private::as_dyn(#v))
        })
        .collect();
    let n_out = c.output.len();
    let call = match c.assign {
        AssignOp::New => quote! {
            #p::contract_new::<_, #n_out>(&__BC_SITE, __bc_spec, &[#(#dyns),*], __bc_alpha)
        },
        AssignOp::Overwrite | AssignOp::Accumulate => {
            let target = operand_value(c.target);
            let span = c.target.span();
            let t = spanned_ident(&format_ident!("__bc_target"), span);
            let rank_check = quote_spanned!(span=> #p::check_rank::<_, #n_out>(#t););
            quote! {{
                let __bc_target = &mut #target;
                #rank_check
                #p::contract_into(&__BC_SITE, __bc_spec, __bc_target, &[#(#dyns),*], __bc_alpha)
            }}
        }
    };
    quote! {{
        static __BC_SITE: #p::CallSite = #p::CallSite::new();
        let __bc_spec = __BC_SITE.spec(|| #p::spec(
            &[#(#labels),*],
            #output_name,
            ::std::vec![#(#output),*],
            ::std::vec![#(#ops),*],
            #tree,
            #assign,
        ));
        #(#bind)*
        #(#rank_checks)*
        let __bc_alpha = #p::one_for(#first);
        #(#scalars)*
        #call
    }}
}

fn spanned_ident(v: &syn::Ident, span: Span) -> syn::Ident {
    syn::Ident::new(&v.to_string(), span)
}
