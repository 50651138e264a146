use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>) {
    let _ = contract!(c[i, j] := a.conj()[i, k] * b[k, j]);
}

fn main() {}
