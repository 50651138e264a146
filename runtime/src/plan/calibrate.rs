//! Measuring the cost model's constants on this machine: short microbenchmarks of faer, the
//! tiny kernel and packing.

use super::cost::CostModel;
use crate::kernel::{gemm, Accum, RawMat, RawMatMut};
use crate::view::MatShape;
use std::time::Instant;

fn time_per_call(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t0 = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t0.elapsed().as_secs_f64() / reps as f64);
    }
    best
}

fn faer_gemm_s(m: usize, n: usize, k: usize, reps: usize) -> f64 {
    let a = vec![0.5f64; m * k];
    let b = vec![0.25f64; k * n];
    let mut c = vec![0.0f64; m * n];
    let sh = MatShape::row_major;
    time_per_call(reps, || {
        // SAFETY: the buffers hold exactly the row-major matrices described.
        unsafe {
            gemm(
                RawMatMut::new(c.as_mut_ptr(), sh(m, n)),
                Accum::Add,
                RawMat::new(a.as_ptr(), sh(m, k)),
                RawMat::new(b.as_ptr(), sh(k, n)),
                1.0,
            );
        }
        std::hint::black_box(&mut c);
    })
}

/// The dense GEMM rate of this machine with one thread: faer on an `n x n x n` f64 product,
/// best of three, in GFLOP/s (the bench's peak probe).
pub fn dense_gemm_gflops(n: usize) -> f64 {
    let t = faer_gemm_s(n, n, n, 1);
    2.0 * (n * n * n) as f64 / t / 1e9
}

pub(super) fn measure() -> CostModel {
    let d = CostModel::default();
    let call_s = faer_gemm_s(1, 1, 1, 2000);
    let big = 192;
    let t_big = faer_gemm_s(big, big, big, 3);
    let peak_rate = 2.0 * (big * big * big) as f64 / t_big;
    // thin GEMM: memory-bound; what the flops do not explain is the element term
    let (tm, tn, tk) = (2048, 4, 4);
    let t_thin = faer_gemm_s(tm, tn, tk, 50);
    let elems = (tm * tk + tk * tn + 2 * tm * tn) as f64;
    let elem_s = ((t_thin - call_s - 2.0 * (tm * tn * tk) as f64 / peak_rate) / elems).max(0.0);
    // tiny kernel
    let a = [0.5f64; 16];
    let b = [0.25f64; 16];
    let mut c = [0.0f64; 16];
    let sh = MatShape::row_major(4, 4);
    let t_tiny = time_per_call(20000, || {
        // SAFETY: 4x4 row-major buffers.
        unsafe {
            crate::kernel::tiny_gemm(
                RawMatMut::new(c.as_mut_ptr(), sh),
                RawMat::new(std::hint::black_box(a.as_ptr()), sh),
                RawMat::new(std::hint::black_box(b.as_ptr()), sh),
                std::hint::black_box(1.0),
            )
        };
        std::hint::black_box(&mut c);
    });
    let tiny_rate = 2.0 * 64.0 / (t_tiny * 0.8).max(1e-12);
    let tiny_call_s = t_tiny * 0.2;
    // packing: gathering blocks' rows (32 contiguous elements each) into a matrix of wider rows
    let n = 1 << 18;
    let src = vec![1.0f64; n];
    let mut dst = vec![0.0f64; 2 * n];
    let t_pack = time_per_call(5, || {
        // SAFETY: src holds 8192 rows of 32; dst holds 8192 rows of 64.
        unsafe {
            crate::view::strided_copy(
                &[8192, 32],
                src.as_ptr(),
                &[32, 1],
                dst.as_mut_ptr(),
                &[64, 1],
                crate::view::CopyMode::Set,
            );
        }
        std::hint::black_box(&mut dst);
    });
    let finite = |x: f64, dflt: f64| if x.is_finite() && x > 0.0 { x } else { dflt };
    CostModel {
        call_s: finite(call_s, d.call_s),
        tiny_call_s: finite(tiny_call_s, d.tiny_call_s),
        tiny_rate: finite(tiny_rate, d.tiny_rate),
        peak_rate: finite(peak_rate, d.peak_rate),
        elem_s: if elem_s.is_finite() { elem_s } else { d.elem_s },
        pack_elem_s: finite(t_pack / n as f64, d.pack_elem_s),
        member_s: finite(call_s, d.call_s),
    }
}
