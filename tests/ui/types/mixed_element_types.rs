use blockcontract::{contract, Tensor};

#[allow(unused_variables)]
fn f(a: &Tensor<f64, 2>, b: &Tensor<f64, 2>, x: &Tensor<f64, 3>) {
    let _ = { let z = blockcontract::Tensor::<num_complex::Complex64, 2>::try_from(blockcontract::DynTensor::zeros(a.legs().to_vec(), a.charge().clone()).unwrap()).unwrap(); contract!(c[i, j] := a[i, k] * z[k, j]) };
}

fn main() {}
