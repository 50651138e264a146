use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, c: &mut Tensor<f64, 2>) {
    let _ = contract!(c[i, j] = a[i, k] * c[k, j]);
}

fn main() {}
