use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>, x: &Tensor<f64, 3>) {
    let _ = contract!(d[i, j] := a[i, j] + 2.0 * b[j, k]);
}

fn main() {}
