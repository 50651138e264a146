use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>) {
    let _ = contract!(c[i, j] := a[i, j] / b[i, j]);
}

fn main() {}
