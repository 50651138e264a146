use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>, x: &Tensor<f64, 3>) {
    let _ = contract!(c[i] := x[i, k, k] * a[k, j] * b[j, i]);
}

fn main() {}
