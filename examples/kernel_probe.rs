//! Times faer and the tiny kernel on thin shapes (row-major operands): `kernel_probe`.

use blockcontract::view::MatShape;
use blockcontract::Conj;
use std::time::Instant;

fn main() {
    for &(m, n, k) in &[
        (289usize, 2usize, 2usize),
        (289, 1, 2),
        (2, 289, 2),
        (1, 289, 2),
        (1024, 2, 2),
        (2, 1024, 2),
        (34, 17, 17),
        (8, 8, 8),
        (64, 4, 4),
    ] {
        let a = vec![0.5f64; m * k];
        let b = vec![0.25f64; k * n];
        let mut c = vec![0.0f64; m * n];
        let sh = |r: usize, cc: usize| MatShape {
            m: r,
            rs: cc as isize,
            n: cc,
            cs: 1,
        };
        let reps = 20000;
        let t0 = Instant::now();
        for _ in 0..reps {
            unsafe {
                blockcontract::exec::cpu::faer_gemm(
                    c.as_mut_ptr(),
                    sh(m, n),
                    a.as_ptr(),
                    sh(m, k),
                    Conj::No,
                    b.as_ptr(),
                    sh(k, n),
                    Conj::No,
                    1.0,
                )
            };
            std::hint::black_box(&mut c);
        }
        let tf = t0.elapsed().as_secs_f64() / reps as f64;
        let t0 = Instant::now();
        for _ in 0..reps {
            unsafe {
                blockcontract::kernel::tiny_gemm(
                    c.as_mut_ptr(),
                    sh(m, n),
                    std::hint::black_box(a.as_ptr()),
                    sh(m, k),
                    Conj::No,
                    b.as_ptr(),
                    sh(k, n),
                    Conj::No,
                    1.0,
                )
            };
            std::hint::black_box(&mut c);
        }
        let tt = t0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{m}x{n}x{k}: faer {:.3} us, tiny {:.3} us",
            tf * 1e6,
            tt * 1e6
        );
    }
}
