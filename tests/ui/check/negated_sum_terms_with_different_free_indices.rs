use blockcontract::{contract, Tensor};

fn f(x: &Tensor<f64, 2>, y: &Tensor<f64, 2>, v: &Tensor<f64, 1>) {
    // a negated sum in parentheses is multiplied out; each of its terms is checked
    let _ = contract!(r[m] := -(x[m, k] * v[k] + y[m, k]));
}

fn main() {}
