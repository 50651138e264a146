//! cuBLAS calls of the device executor: GEMM, strided-batched GEMM and grouped-batched GEMM
//! (raw sys call with device pointer arrays), and the element types they run.

use super::bufs::Bufs;
use super::{cuda_err, CudaDevice};
use crate::error::{CudaError, Result};
use crate::exec::device::{Accum, GemmOp, Trans};
use crate::scalar::Scalar;
use cudarc::cublas::safe::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::cublas::sys::{cublasHandle_t, cublasOperation_t, cublasStatus_t};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

/// Arguments of one grouped-batched GEMM launch (host arrays; pointer arrays on the device).
pub struct GroupedArgs<'a, T> {
    transa: &'a [cublasOperation_t],
    transb: &'a [cublasOperation_t],
    m: &'a [i32],
    n: &'a [i32],
    k: &'a [i32],
    alpha: &'a [T],
    lda: &'a [i32],
    ldb: &'a [i32],
    beta: &'a [T],
    ldc: &'a [i32],
    group_size: &'a [i32],
    a: u64,
    b: u64,
    c: u64,
}

/// Element types the device executor runs (real; complex tensors get a typed error).
pub trait DeviceScalar: Scalar + DeviceRepr + ValidAsZeroBits
where
    CudaBlas: Gemm<Self>,
{
    /// The C type in kernels.
    const C_TYPE: &'static str;
    /// `cublas<t>gemmGroupedBatched`.
    ///
    /// # Safety
    /// Every array has one entry per group; the device pointer arrays hold valid pointers.
    unsafe fn grouped_gemm(h: cublasHandle_t, g: &GroupedArgs<'_, Self>) -> cublasStatus_t;
}

macro_rules! grouped_impl {
    ($t:ty, $c:literal, $f:ident) => {
        impl DeviceScalar for $t {
            const C_TYPE: &'static str = $c;
            unsafe fn grouped_gemm(h: cublasHandle_t, g: &GroupedArgs<'_, Self>) -> cublasStatus_t {
                // SAFETY: forwarded from the caller.
                unsafe {
                    cudarc::cublas::sys::$f(
                        h,
                        g.transa.as_ptr(),
                        g.transb.as_ptr(),
                        g.m.as_ptr(),
                        g.n.as_ptr(),
                        g.k.as_ptr(),
                        g.alpha.as_ptr(),
                        g.a as *const *const $t,
                        g.lda.as_ptr(),
                        g.b as *const *const $t,
                        g.ldb.as_ptr(),
                        g.beta.as_ptr(),
                        g.c as *const *mut $t,
                        g.ldc.as_ptr(),
                        g.group_size.len() as i32,
                        g.group_size.as_ptr(),
                    )
                }
            }
        }
    };
}
grouped_impl!(f64, "double", cublasDgemmGroupedBatched);
grouped_impl!(f32, "float", cublasSgemmGroupedBatched);

impl CudaDevice {
    pub(super) fn gemm<T: DeviceScalar>(
        &self,
        bufs: &mut Bufs<'_, T>,
        g: &GemmOp,
        alpha: T,
        batch: Option<(usize, usize, usize, usize)>,
    ) -> Result<()>
    where
        CudaBlas: Gemm<T>,
    {
        let (op, int) = (cublas_op, cublas_int);
        let cfg = GemmConfig {
            transa: op(g.transa),
            transb: op(g.transb),
            m: int(g.m)?,
            n: int(g.n)?,
            k: int(g.k)?,
            alpha,
            lda: int(g.lda)?,
            ldb: int(g.ldb)?,
            beta: beta::<T>(g.accum),
            ldc: int(g.ldc)?,
        };
        let (a, b, c) = bufs.gemm_views(g)?;
        // SAFETY: shapes, leading dimensions and batch strides come from the lowering, which
        // keeps every addressed element inside its buffer (tested by the CPU interpreter).
        let r = unsafe {
            match batch {
                None => self.blas.gemm(cfg, &a, &b, &mut { c }),
                Some((n, sa, sb, sc)) => self.blas.gemm_strided_batched(
                    StridedBatchedConfig {
                        gemm: cfg,
                        batch_size: int(n)?,
                        stride_a: sa as i64,
                        stride_b: sb as i64,
                        stride_c: sc as i64,
                    },
                    &a,
                    &b,
                    &mut { c },
                ),
            }
        };
        r.map_err(|e| cuda_err("cuBLAS gemm", e))
    }

    /// Whether cuBLAS has grouped-batched GEMM (12.5 or newer).
    pub fn grouped_supported(&self) -> bool {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: a live handle and an out-pointer to an int.
        let st = unsafe { cudarc::cublas::sys::cublasGetVersion_v2(*self.blas.handle(), &mut v) };
        st == cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS && v >= 120500
    }

    /// The A, B and C pointers of every GEMM, as three arrays in device memory.
    fn pointer_arrays<T: DeviceScalar>(
        &self,
        bufs: &Bufs<'_, T>,
        gemms: &[GemmOp],
    ) -> Result<[CudaSlice<u64>; 3]>
    where
        CudaBlas: Gemm<T>,
    {
        let mut ptrs = [Vec::new(), Vec::new(), Vec::new()];
        for g in gemms {
            for (slot, p) in [(0usize, g.a), (1, g.b), (2, g.c)] {
                let (base, _guard) =
                    cudarc::driver::DevicePtr::device_ptr(bufs.get(p.buf), &self.stream);
                ptrs[slot].push(base + (p.offset * std::mem::size_of::<T>()) as u64);
            }
        }
        let dev = |v: &Vec<u64>| {
            self.stream
                .clone_htod(v)
                .map_err(|e| cuda_err("pointer arrays", e))
        };
        Ok([dev(&ptrs[0])?, dev(&ptrs[1])?, dev(&ptrs[2])?])
    }

    pub(super) fn grouped<T: DeviceScalar>(
        &self,
        bufs: &mut Bufs<'_, T>,
        gemms: &[GemmOp],
        alpha: T,
    ) -> Result<Vec<CudaSlice<u64>>>
    where
        CudaBlas: Gemm<T>,
    {
        if !self.grouped_supported() {
            for g in gemms {
                self.gemm(bufs, g, alpha, None)?;
            }
            return Ok(Vec::new());
        }
        let (op, int) = (cublas_op, cublas_int);
        let [da, db, dc] = self.pointer_arrays(bufs, gemms)?;
        let addr = |s: &CudaSlice<u64>| cudarc::driver::DevicePtr::device_ptr(s, &self.stream).0;
        let n = gemms.len();
        let ta: Vec<_> = gemms.iter().map(|g| op(g.transa)).collect();
        let tb: Vec<_> = gemms.iter().map(|g| op(g.transb)).collect();
        let dims = |f: &dyn Fn(&GemmOp) -> usize| {
            gemms
                .iter()
                .map(|g| int(f(g)))
                .collect::<Result<Vec<i32>>>()
        };
        let (m, nn, k) = (dims(&|g| g.m)?, dims(&|g| g.n)?, dims(&|g| g.k)?);
        let (lda, ldb, ldc) = (dims(&|g| g.lda)?, dims(&|g| g.ldb)?, dims(&|g| g.ldc)?);
        let alphas = vec![alpha; n];
        let betas: Vec<T> = gemms.iter().map(|g| beta::<T>(g.accum)).collect();
        let sizes = vec![1i32; n];
        let args = GroupedArgs {
            transa: &ta,
            transb: &tb,
            m: &m,
            n: &nn,
            k: &k,
            alpha: &alphas,
            lda: &lda,
            ldb: &ldb,
            beta: &betas,
            ldc: &ldc,
            group_size: &sizes,
            a: addr(&da),
            b: addr(&db),
            c: addr(&dc),
        };
        // SAFETY: one entry per GEMM in every array; the pointers address elements inside
        // the step's buffers (lowering invariant); outputs are disjoint across the launch.
        let st = unsafe { T::grouped_gemm(*self.blas.handle(), &args) };
        if st != cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(cuda_err(
                "cuBLAS grouped gemm",
                CudaError::Blas(format!("{st:?}")),
            ));
        }
        // the pointer arrays must outlive the launch: the caller keeps them to the end
        Ok(vec![da, db, dc])
    }
}

/// cuBLAS's operation for a lowered operand.
fn cublas_op(t: Trans) -> cublasOperation_t {
    match t {
        Trans::N => cublasOperation_t::CUBLAS_OP_N,
        Trans::T => cublasOperation_t::CUBLAS_OP_T,
    }
}

/// A dimension as cuBLAS's `int`, or an error naming it.
fn cublas_int(x: usize) -> Result<i32> {
    i32::try_from(x).map_err(|_| {
        cuda_err(
            "cuBLAS arguments",
            CudaError::Lowering(format!("dimension {x} exceeds cuBLAS's int range")),
        )
    })
}

/// BLAS beta for a lowered op's accumulation mode.
fn beta<T: Scalar>(accum: Accum) -> T {
    match accum {
        Accum::Replace => T::zero(),
        Accum::Add => T::one(),
    }
}
