use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 3>, b: &Tensor<f64, 2>) {
    let _ = contract!(c[i, j] := a[i, k] * b[k, j]);
}

fn main() {}
