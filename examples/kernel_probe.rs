//! Times faer and the tiny kernel on thin shapes (row-major operands): `kernel_probe`.

use blockcontract::kernel::{gemm, tiny_gemm, Accum, RawMat, RawMatMut};
use blockcontract::view::MatShape;
use std::time::Instant;

/// Seconds per call of `f`, over `reps` calls.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    for _ in 0..reps {
        f();
    }
    t0.elapsed().as_secs_f64() / reps as f64
}

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
        let sh = MatShape::row_major;
        let reps = 20000;
        let tf = time(reps, || {
            // SAFETY: the buffers hold exactly the row-major matrices described.
            unsafe {
                gemm(
                    RawMatMut::new(c.as_mut_ptr(), sh(m, n)),
                    Accum::Add,
                    RawMat::new(a.as_ptr(), sh(m, k)),
                    RawMat::new(b.as_ptr(), sh(k, n)),
                    1.0,
                )
            };
            std::hint::black_box(&mut c);
        });
        let tt = time(reps, || {
            // SAFETY: as above.
            unsafe {
                tiny_gemm(
                    RawMatMut::new(c.as_mut_ptr(), sh(m, n)),
                    Accum::Add,
                    RawMat::new(std::hint::black_box(a.as_ptr()), sh(m, k)),
                    RawMat::new(b.as_ptr(), sh(k, n)),
                    1.0,
                )
            };
            std::hint::black_box(&mut c);
        });
        println!(
            "{m}x{n}x{k}: faer {:.3} us, tiny {:.3} us",
            tf * 1e6,
            tt * 1e6
        );
    }
}
