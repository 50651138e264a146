use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>, x: &Tensor<f64, 3>) {
    let _ = contract!(c[i, j] := a[i: out in, k] * b[k, j]);
}

fn main() {}
