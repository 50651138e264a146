use blockcontract::{contract, Tensor};

fn f(c: &mut Tensor<f64, 2>, x: &Tensor<f64, 2>, y: &Tensor<f64, 2>) {
    let alpha = 0.5;
    // a term may begin with a negative literal; a sign with no term after it is refused
    let _ = contract!(c[a, b] += -1.0 * alpha * x[a, k] * y[k, b] -);
}

fn main() {}
