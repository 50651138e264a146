//! The pipeline on one screen: parse -> check -> lower.

use proc_macro2::TokenStream;

/// Expands one `contract!` invocation.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let ast: crate::ast::Contraction = syn::parse2(input)?;
    let checked = crate::check::check(&ast)?;
    Ok(crate::lower::lower(&checked))
}

#[cfg(test)]
mod tests {
    use super::expand;
    use quote::quote;

    fn pretty(ts: proc_macro2::TokenStream) -> String {
        let file: syn::File =
            syn::parse2(quote!(fn __f() { let _ = #ts; })).expect("valid expansion");
        // whitespace removed so that assertions do not depend on line breaking
        prettyplease::unparse(&file).split_whitespace().collect()
    }

    fn has(out: &str, needle: &str) -> bool {
        out.contains(&needle.split_whitespace().collect::<String>())
    }

    fn err(ts: proc_macro2::TokenStream) -> String {
        match expand(ts) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(" | "),
        }
    }

    #[test]
    fn matrix_product_expansion() {
        let out = pretty(expand(quote!(c[i, j] := a[i, k] * b[k, j])).unwrap());
        assert!(
            has(
                &out,
                "static __BC_SITE: ::blockcontract::__private::CallSite"
            ),
            "{out}"
        );
        assert!(has(&out, r#"&["i", "k", "j"]"#), "{out}");
        assert!(
            has(&out, r#"::blockcontract::__private::op("a", false"#),
            "{out}"
        );
        assert!(
            has(
                &out,
                "::blockcontract::__private::check_rank::<_, 2usize>(__bc_op_0)"
            ),
            "{out}"
        );
        assert!(
            has(
                &out,
                "::blockcontract::__private::contract_new::<_, 2usize,>(&__BC_SITE"
            ),
            "{out}"
        );
        assert!(
            has(&out, "::blockcontract::__private::AssignKind::New"),
            "{out}"
        );
        // no parentheses: the planner chooses the order
        assert!(has(&out, "::core::option::Option::None,"), "{out}");
    }

    #[test]
    fn annotations_scalars_conj_and_parentheses_expand() {
        let out = pretty(
            expand(quote!(y[a: out, s, b] += 0.5 * alpha * conj(l[a, w, x]) * (psi[x, s: out local, z] * r[z, w, b])))
                .unwrap(),
        );
        assert!(has(&out, "ix(0usize, ::core::option::Option::Some(::blockcontract::__private::FlowKind::Out), false)"), "{out}");
        assert!(has(&out, "FlowKind::Out), true)"), "{out}");
        assert!(
            has(&out, r#"::blockcontract::__private::op("l", true"#),
            "{out}"
        );
        assert!(has(&out, "scalar_for(__bc_op_0, 0.5)"), "{out}");
        assert!(has(&out, "scalar_for(__bc_op_0, alpha)"), "{out}");
        assert!(has(&out, "contract_into"), "{out}");
        assert!(has(&out, "AssignKind::Accumulate"), "{out}");
        assert!(has(&out, "::blockcontract::__private::node(::blockcontract::__private::leaf(0usize), ::blockcontract::__private::node("), "{out}");
        assert!(
            has(&out, "::blockcontract::__private::leaf(0usize)"),
            "{out}"
        );
    }

    #[test]
    fn parenthesised_operand_expression_is_evaluated_once() {
        let out = pretty(expand(quote!(y[a] := (env.left)[a, k] * v[k])).unwrap());
        assert!(has(&out, "let __bc_op_0 = &(env.left);"), "{out}");
        assert!(has(&out, r#"op("(env . left)""#), "{out}");
    }

    #[test]
    fn errors_are_collected_together() {
        let e = err(quote!(c[i, i] := a[i, k] * b[k, k]));
        assert!(e.contains("output index `i` is repeated"), "{e}");
        assert!(e.contains("index `k` appears twice on `b`"), "{e}");
        assert!(e.contains("first used here"), "{e}");
    }

    #[test]
    fn parse_errors() {
        assert!(err(quote!(c[i, j] a[i, k] * b[k, j])).contains("expected `:=`, `=` or `+=`"));
        assert!(err(quote!(c[i, j] := a[i, k] * )).contains("missing operand after `*`"));
        assert!(err(quote!(c[i, j] := a[i,, k] * b[k, j])).contains("stray comma"));
        assert!(err(quote!(c[i] := a[] * b[i])).contains("empty index list"));
    }
}
