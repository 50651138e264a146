//! The gather/scatter kernel (NVRTC source), its descriptors, and the GPU calibration.

use super::CudaDevice;
use crate::error::{CudaError, Result};
use crate::exec::device::Segment;
use crate::plan::CostModel;
use crate::view::MAX_RANK;
use cudarc::cublas::safe::{Gemm, GemmConfig};
use cudarc::cublas::sys::cublasOperation_t;
use std::time::Instant;

/// i64 words per segment descriptor: src, dst, rank, then dims, src and dst strides.
pub const DESC: usize = 3 + 3 * MAX_RANK;

/// CUDA source of `bc_gather`: one block per segment, threads over its elements.
pub fn gather_source(t: &str) -> String {
    format!(
        r#"
extern "C" __global__ void bc_gather(const {t}* src, {t}* dst, const long long* desc, int nseg, int accumulate) {{
    int s = blockIdx.x;
    if (s >= nseg) return;
    const long long* d = desc + (long long)s * {DESC};
    long long so = d[0], dof = d[1];
    int rank = (int)d[2];
    const long long* dims = d + 3;
    const long long* ss = dims + {MAX_RANK};
    const long long* ds = ss + {MAX_RANK};
    long long total = 1;
    for (int i = 0; i < rank; ++i) total *= dims[i];
    for (long long e = threadIdx.x; e < total; e += blockDim.x) {{
        long long rem = e, sp = so, dp = dof;
        for (int i = rank - 1; i >= 0; --i) {{
            long long x = rem % dims[i];
            rem /= dims[i];
            sp += x * ss[i];
            dp += x * ds[i];
        }}
        if (accumulate) dst[dp] += src[sp]; else dst[dp] = src[sp];
    }}
}}
"#
    )
}

/// Packs segments into descriptor words.
pub fn descriptors(segments: &[Segment]) -> Result<Vec<i64>> {
    let mut v = vec![0i64; segments.len() * DESC];
    for (i, s) in segments.iter().enumerate() {
        if s.dims.len() > MAX_RANK {
            return Err(super::cuda_err(
                "gather descriptors",
                CudaError::Lowering(format!(
                    "segment of rank {} exceeds {MAX_RANK}",
                    s.dims.len()
                )),
            ));
        }
        let d = &mut v[i * DESC..(i + 1) * DESC];
        d[0] = s.src as i64;
        d[1] = s.dst as i64;
        d[2] = s.dims.len() as i64;
        for (k, ((&n, &a), &b)) in s
            .dims
            .iter()
            .zip(&s.src_strides)
            .zip(&s.dst_strides)
            .enumerate()
        {
            d[3 + k] = n as i64;
            d[3 + MAX_RANK + k] = a as i64;
            d[3 + 2 * MAX_RANK + k] = b as i64;
        }
    }
    Ok(v)
}

fn gemm_time(dev: &CudaDevice, n: usize, reps: usize) -> Result<f64> {
    let err = |e: &dyn std::fmt::Debug| {
        super::cuda_err("calibration", CudaError::Driver(format!("{e:?}")))
    };
    let a = dev
        .stream()
        .alloc_zeros::<f64>(n * n)
        .map_err(|e| err(&e))?;
    let b = dev
        .stream()
        .alloc_zeros::<f64>(n * n)
        .map_err(|e| err(&e))?;
    let mut c = dev
        .stream()
        .alloc_zeros::<f64>(n * n)
        .map_err(|e| err(&e))?;
    let ni = n as i32;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: ni,
        n: ni,
        k: ni,
        alpha: 1.0,
        lda: ni,
        ldb: ni,
        beta: 1.0,
        ldc: ni,
    };
    let mut run = || -> Result<()> {
        // SAFETY: three n x n buffers, column-major, ld = n.
        unsafe { dev.blas().gemm(cfg, &a, &b, &mut c) }.map_err(|e| err(&e))
    };
    run()?;
    dev.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..reps {
        run()?;
    }
    dev.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() / reps as f64)
}

/// Launch cost (back-to-back 1x1x1 GEMMs), dense f64 rate (2048^3), defaults for the rest.
pub fn calibrate(dev: &CudaDevice) -> Result<CostModel> {
    let launch = gemm_time(dev, 1, 200)?;
    let n = 2048;
    let big = gemm_time(dev, n, 5)?;
    let peak = 2.0 * (n * n * n) as f64 / big;
    Ok(CostModel {
        call_s: launch,
        tiny_call_s: launch / 50.0,
        tiny_rate: peak / 20.0,
        peak_rate: peak,
        elem_s: 8.0 / 3.0e12,
        pack_elem_s: 16.0 / 3.0e12,
        member_s: launch / 50.0,
    })
}
