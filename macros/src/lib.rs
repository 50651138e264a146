//! The `contract!` macro of blockcontract: index notation for block-sparse tensor
//! contractions, checked at compile time. See the `blockcontract` crate for the user guide.
#![forbid(unsafe_code)]

mod ast;
mod check;
mod expand;
mod lower;
mod parse;

use proc_macro::TokenStream;

/// Contracts block-sparse tensors written in index notation.
///
/// `contract!(y[a, b] := x[a, k] * z[k, b])` yields `Result<Tensor<T, 2>>`;
/// `=` overwrites and `+=` accumulates into an existing tensor, yielding `Result<()>`.
#[proc_macro]
pub fn contract(input: TokenStream) -> TokenStream {
    expand::expand(input.into())
        .unwrap_or_else(|e| {
            let errs = e.to_compile_error();
            quote::quote!({ #errs })
        })
        .into()
}
