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
                "static __BC_SITE_STATE: ::blockcontract::__private::CallSite"
            ),
            "{out}"
        );
        assert!(has(&out, r#"&["i", "j", "k"]"#), "{out}");
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
                "::blockcontract::__private::contract_new::<_, 2usize,>(__BC_SITE, &["
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
        assert!(
            e.contains("index `k` is traced on `b` and also appears elsewhere"),
            "{e}"
        );
        assert!(e.contains("first used here"), "{e}");
    }

    #[test]
    fn sums_divisors_and_options_expand() {
        let out = pretty(
            expand(
                quote!(d[a, b] := 2.0 * x[a, b] / n - y[b, a]; executor = pairwise, threads = 2),
            )
            .unwrap(),
        );
        // one spec per term, the second term negated, the divisor applied
        assert!(has(&out, "Term{spec:0usize"), "{out}");
        assert!(has(&out, "Term{spec:1usize"), "{out}");
        assert!(
            has(
                &out,
                "/ ::blockcontract::__private::scalar_for(__bc_op_0, n)"
            ),
            "{out}"
        );
        assert!(has(&out, "::blockcontract::__private::negate("), "{out}");
        assert!(
            has(
                &out,
                r#"executor: ::blockcontract::__private::executor("pairwise")"#
            ),
            "{out}"
        );
        assert!(
            has(&out, "threads: ::blockcontract::__private::threads(2)"),
            "{out}"
        );
        // the target as a term of its own: a scale, the target not bound as an operand
        let out = pretty(expand(quote!(c[i, j] = 0.5 * c[i, j] + a[i, k] * b[k, j])).unwrap());
        assert!(
            has(&out, "let __bc_scale = ::core::option::Option::Some("),
            "{out}"
        );
        assert!(!has(&out, "= &c;"), "{out}");
        // -= negates every term
        let out = pretty(expand(quote!(c[i] -= a[i, k] * v[k])).unwrap());
        assert!(has(&out, "::blockcontract::__private::negate("), "{out}");
        assert!(has(&out, "AssignKind::Accumulate"), "{out}");
    }

    #[test]
    fn new_errors() {
        let e = err(quote!(c[i] := a[i, k, k] * b[k]));
        assert!(
            e.contains("traced on `a` and also appears elsewhere"),
            "{e}"
        );
        let e = err(quote!(d[a, b] := x[a, b] + y[a, c]));
        assert!(e.contains("free index `c`"), "{e}");
        let e = err(quote!(d[a] := x[a] / y[a]));
        assert!(e.contains("a divisor must be a scalar"), "{e}");
        let e = err(quote!(c[i, j] := a.conj()[i, j]));
        assert!(e.contains("`(a.conj())[i, j]`"), "{e}");
        let e = err(quote!(c[a, s, b] := mps.sites[3][a, s, b]));
        assert!(e.contains("`(mps.sites[3])[a, s, b]`"), "{e}");
        let e = err(quote!(c[i] := beta.sqrt() * a[i]));
        assert!(e.contains("`(beta.sqrt())`"), "{e}");
        let e = err(quote!(c[i] := a[i]; executor = gpu));
        assert!(e.contains("unknown executor"), "{e}");
        let e = err(quote!(c[i] := a[i]; thread = 2));
        assert!(e.contains("unknown option `thread`"), "{e}");
        let e = err(quote!(c[i] = a[i, k] * c[k]));
        assert!(
            e.contains("the target `c` is written by this contraction"),
            "{e}"
        );
    }

    #[test]
    fn parse_errors() {
        assert!(err(quote!(c[i, j] a[i, k] * b[k, j])).contains("expected `:=`, `=`, `+=` or `-=`"));
        assert!(err(quote!(c[i, j] := a[i, k] * )).contains("missing operand after `*`"));
        assert!(err(quote!(c[i, j] := a[i,, k] * b[k, j])).contains("stray comma"));
        assert!(err(quote!(c[i] := a[] * b[i])).contains("empty index list"));
    }
}
