use std::time::Instant;
fn main() {
    for &(m, n, k) in &[(78usize, 186usize, 17usize), (43, 109, 8), (34, 17, 17)] {
        let a = vec![0.5f64; m * k];
        let b = vec![0.25f64; k * n];
        let mut c = vec![0.0f64; m * n];
        for (label, rs_c, cs_c) in [
            ("row-major C", n as isize, 1isize),
            ("col-major C", 1, m as isize),
        ] {
            let t0 = Instant::now();
            let reps = 2000;
            for _ in 0..reps {
                unsafe {
                    let am = faer::MatRef::<f64>::from_raw_parts(a.as_ptr(), m, k, k as isize, 1);
                    let bm = faer::MatRef::<f64>::from_raw_parts(b.as_ptr(), k, n, n as isize, 1);
                    let cm =
                        faer::MatMut::<f64>::from_raw_parts_mut(c.as_mut_ptr(), m, n, rs_c, cs_c);
                    faer::linalg::matmul::matmul(cm, faer::Accum::Add, am, bm, 1.0, faer::Par::Seq);
                }
            }
            let dt = t0.elapsed().as_secs_f64() / reps as f64;
            println!(
                "{m}x{n}x{k} {label}: {:.2} us, {:.1} GFLOP/s",
                dt * 1e6,
                2.0 * (m * n * k) as f64 / dt / 1e9
            );
        }
    }
}
