//! The cost model: predicted time = calls x call overhead + flops / rate(shape) plus
//! packed elements x pack cost. Constants are calibrated on this machine by a short
//! microbenchmark ([`CostModel::calibrated`], run once per process), with defaults.

use crate::contract::pairwise::{gemm, MatShape};
use crate::contract::Conj;
use faer::Accum;
use std::sync::OnceLock;
use std::time::Instant;

/// Calibrated constants of the CPU cost model (seconds, flops/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Fixed cost of one faer GEMM call.
    pub call_s: f64,
    /// Fixed cost of one member of a batched group run by the tiny-GEMM kernel.
    pub tiny_call_s: f64,
    /// Rate of the tiny-GEMM kernel, flops/s.
    pub tiny_rate: f64,
    /// Dense GEMM rate at large sizes, flops/s.
    pub peak_rate: f64,
    /// Cost per operand element a GEMM streams (thin-GEMM memory term).
    pub elem_s: f64,
    /// Cost per element gathered into or scattered from a packed buffer.
    pub pack_elem_s: f64,
    /// Fixed cost of one member of a grouped call (a GEMM call per member on a CPU).
    pub member_s: f64,
}

impl Default for CostModel {
    /// Defaults measured on the project's 2-core AVX-512 machine (see ENGINEERING-NOTES).
    fn default() -> Self {
        CostModel {
            call_s: 60e-9,
            tiny_call_s: 8e-9,
            tiny_rate: 4e9,
            peak_rate: 100e9,
            elem_s: 0.15e-9,
            pack_elem_s: 0.5e-9,
            member_s: 60e-9,
        }
    }
}

impl CostModel {
    /// GPU constants before calibration on a device: a 5 us launch, f64 GEMM at 50 TFLOP/s,
    /// 3 TB/s memory (what `CudaDevice::cost_model` measures replaces them).
    pub fn gpu_default() -> CostModel {
        CostModel {
            call_s: 5e-6,
            tiny_call_s: 0.1e-6,
            tiny_rate: 2.5e12,
            peak_rate: 50e12,
            elem_s: 8.0 / 3.0e12,
            pack_elem_s: 16.0 / 3.0e12,
            member_s: 0.1e-6,
        }
    }
}

/// The largest `m*n*k` the tiny-GEMM kernel takes for any shape.
pub const TINY_MNK: usize = 64;

/// Whether batched members run on the tiny-GEMM kernel rather than faer: very small
/// products, and thin ones (`n*k <= 16`: B fits in registers; `m*k <= 8`: few long rows).
/// On isolated contiguous shapes faer is often as fast (`examples/kernel_probe`), but on the
/// MPO steps of the m = 512 workloads this rule measured 3-5% faster in the same run.
pub fn tiny_wins(m: usize, n: usize, k: usize) -> bool {
    m * n * k <= TINY_MNK || n * k <= 16 || m * k <= 8
}

impl CostModel {
    /// Predicted time of one faer GEMM of shape m x k times k x n.
    pub fn gemm_s(&self, m: usize, n: usize, k: usize) -> f64 {
        let flops = 2.0 * (m * n * k) as f64;
        self.call_s + flops / self.peak_rate + (m * k + k * n + 2 * m * n) as f64 * self.elem_s
    }
    /// Predicted time of one member of a batched group (tiny kernel when small, faer otherwise).
    pub fn batched_member_s(&self, m: usize, n: usize, k: usize) -> f64 {
        if tiny_wins(m, n, k) {
            self.tiny_call_s + 2.0 * (m * n * k) as f64 / self.tiny_rate
        } else {
            self.gemm_s(m, n, k)
        }
    }
    /// Predicted time to gather or scatter `elems` elements.
    pub fn pack_s(&self, elems: usize) -> f64 {
        elems as f64 * self.pack_elem_s
    }

    /// This machine's constants, measured once per process (a few hundred ms), then cached.
    pub fn calibrated() -> CostModel {
        static CAL: OnceLock<CostModel> = OnceLock::new();
        *CAL.get_or_init(measure)
    }
}

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
    let sh = |r: usize, cc: usize| MatShape {
        m: r,
        rs: cc as isize,
        n: cc,
        cs: 1,
    };
    time_per_call(reps, || {
        // SAFETY: the buffers hold exactly the row-major matrices described.
        unsafe {
            gemm(
                c.as_mut_ptr(),
                sh(m, n),
                Accum::Add,
                a.as_ptr(),
                sh(m, k),
                Conj::No,
                b.as_ptr(),
                sh(k, n),
                Conj::No,
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

fn measure() -> CostModel {
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
    let sh = MatShape {
        m: 4,
        rs: 4,
        n: 4,
        cs: 1,
    };
    let t_tiny = time_per_call(20000, || {
        // SAFETY: 4x4 row-major buffers.
        unsafe {
            crate::exec::tiny::tiny_gemm(
                c.as_mut_ptr(),
                sh,
                std::hint::black_box(a.as_ptr()),
                sh,
                Conj::No,
                std::hint::black_box(b.as_ptr()),
                sh,
                Conj::No,
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

impl std::fmt::Display for CostModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "call {:.1} ns, tiny call {:.1} ns, tiny rate {:.2} GFLOP/s, peak {:.1} GFLOP/s, stream {:.3} ns/elem, pack {:.3} ns/elem, grouped member {:.1} ns",
            self.call_s * 1e9,
            self.tiny_call_s * 1e9,
            self.tiny_rate / 1e9,
            self.peak_rate / 1e9,
            self.elem_s * 1e9,
            self.pack_elem_s * 1e9,
            self.member_s * 1e9
        )
    }
}
