use blockcontract::{contract, Tensor};

struct Mps {
    sites: Vec<Tensor<f64, 3>>,
}

#[allow(unused_variables)]
fn f(mps: &Mps, b: &Tensor<f64, 2>) {
    let _ = contract!(c[a, s, j] := mps.sites[3][a, s, k] * b[k, j]);
}

fn main() {}
