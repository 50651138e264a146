use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>, beta: f64) {
    let _ = contract!(c[i, j] := beta.sqrt() * a[i, k] * b[k, j]);
}

fn main() {}
