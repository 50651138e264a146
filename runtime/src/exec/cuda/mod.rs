//! The CUDA executor (cudarc with dynamic loading, cuBLAS): device-resident tensors, a plan
//! lowered to an op list run on one stream with no synchronisation between steps (one
//! terminal synchronisation when the result is downloaded), gather/scatter kernels compiled
//! with NVRTC. Probes for the CUDA libraries first: cudarc panics when they are missing.

mod kernels;

use super::device::{lower_with, Buf, GemmOp, LowerOptions, Lowered, Op, Trans};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::plan::{CostModel, Input, Plan};
use crate::scalar::Scalar;
use cudarc::cublas::safe::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use std::sync::Arc;

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
    unsafe fn grouped(
        h: cudarc::cublas::sys::cublasHandle_t,
        g: &GroupedArgs<'_, Self>,
    ) -> cudarc::cublas::sys::cublasStatus_t;
}

macro_rules! grouped_impl {
    ($t:ty, $c:literal, $f:ident) => {
        impl DeviceScalar for $t {
            const C_TYPE: &'static str = $c;
            unsafe fn grouped(
                h: cudarc::cublas::sys::cublasHandle_t,
                g: &GroupedArgs<'_, Self>,
            ) -> cudarc::cublas::sys::cublasStatus_t {
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

fn cuda_err(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Cuda(format!("{what}: {e:?}"))
}

/// Whether the driver, cuBLAS and NVRTC libraries can be loaded (no panic when they cannot).
pub fn probe() -> Result<()> {
    // SAFETY: these only try to dlopen the libraries.
    let (drv, blas, rtc) = unsafe {
        (
            cudarc::driver::sys::is_culib_present(),
            cudarc::cublas::sys::is_culib_present(),
            cudarc::nvrtc::sys::is_culib_present(),
        )
    };
    if !drv {
        return Err(Error::CudaUnavailable(
            "the CUDA driver library (libcuda) cannot be loaded".into(),
        ));
    }
    if !blas {
        return Err(Error::CudaUnavailable(
            "cuBLAS (libcublas) cannot be loaded".into(),
        ));
    }
    if !rtc {
        return Err(Error::CudaUnavailable(
            "NVRTC (libnvrtc) cannot be loaded".into(),
        ));
    }
    Ok(())
}

/// One GPU: context, stream, cuBLAS handle and the gather kernels.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    kernels: std::sync::Mutex<Vec<(&'static str, CudaFunction)>>,
    model: std::sync::OnceLock<CostModel>,
}

/// A tensor whose buffer lives on the device; its block structure stays on the host.
pub struct DeviceTensor<T> {
    structure: DynTensor<T>,
    data: CudaSlice<T>,
}

impl<T: Scalar> DeviceTensor<T> {
    /// The host-side structure (legs, blocks, layouts; no values).
    pub fn structure(&self) -> &DynTensor<T> {
        &self.structure
    }
}

impl CudaDevice {
    /// Opens device `ordinal`, or a typed error when there is no usable GPU.
    pub fn open(ordinal: usize) -> Result<Self> {
        probe()?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| Error::CudaUnavailable(format!("device {ordinal}: {e:?}")))?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(|e| cuda_err("cuBLAS handle", e))?;
        Ok(CudaDevice {
            ctx,
            stream,
            blas,
            kernels: Default::default(),
            model: Default::default(),
        })
    }

    /// Copies a tensor to the device.
    pub fn upload<T: DeviceScalar>(&self, t: &DynTensor<T>) -> Result<DeviceTensor<T>>
    where
        CudaBlas: Gemm<T>,
    {
        let data = self
            .stream
            .clone_htod(t.data())
            .map_err(|e| cuda_err("upload", e))?;
        Ok(DeviceTensor {
            structure: t.skeleton(),
            data,
        })
    }

    /// Copies a device tensor back (synchronises the stream).
    pub fn download<T: DeviceScalar>(&self, t: &DeviceTensor<T>) -> Result<DynTensor<T>>
    where
        CudaBlas: Gemm<T>,
    {
        let data = self
            .stream
            .clone_dtoh(&t.data)
            .map_err(|e| cuda_err("download", e))?;
        Ok(t.structure.with_data(data))
    }

    /// Waits for every queued operation.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| cuda_err("synchronize", e))
    }

    fn gather_kernel<T: DeviceScalar>(&self) -> Result<CudaFunction>
    where
        CudaBlas: Gemm<T>,
    {
        let mut g = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = g.iter().find(|(n, _)| *n == T::C_TYPE) {
            return Ok(f.clone());
        }
        let src = kernels::gather_source(T::C_TYPE);
        let ptx = cudarc::nvrtc::compile_ptx(src).map_err(|e| cuda_err("NVRTC", e))?;
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| cuda_err("load module", e))?;
        let f = module
            .load_function("bc_gather")
            .map_err(|e| cuda_err("load function", e))?;
        g.push((T::C_TYPE, f.clone()));
        Ok(f)
    }

    /// Lowers `plan` for these operands and uploads its gather descriptors: do once per plan.
    pub fn prepare<T: DeviceScalar>(
        &self,
        plan: &Plan,
        ops: &[&DeviceTensor<T>],
    ) -> Result<Prepared>
    where
        CudaBlas: Gemm<T>,
    {
        let layouts: Vec<Vec<crate::view::Layout>> = ops
            .iter()
            .map(|t| {
                t.structure
                    .blocks()
                    .iter()
                    .map(|b| b.layout.clone())
                    .collect()
            })
            .collect();
        let lowered = lower_with(
            plan,
            &layouts,
            LowerOptions {
                grouped: self.grouped_supported(),
            },
        );
        let mut descs = Vec::new();
        for st in &lowered.steps {
            let mut v = Vec::new();
            for op in &st.ops {
                v.push(match op {
                    Op::Gather { segments, .. } => {
                        let d = kernels::descriptors(segments)?;
                        Some(
                            self.stream
                                .clone_htod(&d)
                                .map_err(|e| cuda_err("descriptors", e))?,
                        )
                    }
                    _ => None,
                });
            }
            descs.push(v);
        }
        Ok(Prepared { lowered, descs })
    }

    /// Runs a prepared plan on device tensors; the result stays on the device. Launches are
    /// queued on one stream; nothing synchronises until a download.
    pub fn contract<T: DeviceScalar>(
        &self,
        plan: &Plan,
        prep: &Prepared,
        ops: &[&DeviceTensor<T>],
        alpha: T,
    ) -> Result<DeviceTensor<T>>
    where
        CudaBlas: Gemm<T>,
    {
        if T::IS_COMPLEX {
            return Err(Error::CudaUnavailable(
                "complex tensors are not supported by the CUDA executor".into(),
            ));
        }
        let gather = self.gather_kernel::<T>()?;
        let mut outs: Vec<Option<CudaSlice<T>>> = Vec::new();
        // buffers freed only after the last launch is queued, so that no free synchronises
        // the stream between steps
        let mut keep: Vec<CudaSlice<T>> = Vec::new();
        let mut keep_ptrs: Vec<CudaSlice<u64>> = Vec::new();
        for (si, st) in prep.lowered.steps.iter().enumerate() {
            let mut out: CudaSlice<T> = self
                .stream
                .alloc_zeros(st.out_len.max(1))
                .map_err(|e| cuda_err("alloc", e))?;
            let mut sa: CudaSlice<T> = self
                .stream
                .alloc_zeros(st.scratch[0].max(1))
                .map_err(|e| cuda_err("alloc", e))?;
            let mut sb: CudaSlice<T> = self
                .stream
                .alloc_zeros(st.scratch[1].max(1))
                .map_err(|e| cuda_err("alloc", e))?;
            let mut sc: CudaSlice<T> = self
                .stream
                .alloc_zeros(st.scratch[2].max(1))
                .map_err(|e| cuda_err("alloc", e))?;
            let pick = |inp: Input| -> Result<&CudaSlice<T>> {
                match inp {
                    Input::Operand(k) => Ok(&ops[k].data),
                    Input::Step(j) => outs[j]
                        .as_ref()
                        .ok_or_else(|| Error::Cuda("an intermediate was used twice".into())),
                }
            };
            let (left, right) = (pick(st.inputs.0)?, pick(st.inputs.1)?);
            let a = if st.scaled { alpha } else { T::one() };
            for (oi, op) in st.ops.iter().enumerate() {
                let mut bufs = Bufs {
                    left,
                    right,
                    out: &mut out,
                    sa: &mut sa,
                    sb: &mut sb,
                    sc: &mut sc,
                };
                match op {
                    Op::Gather {
                        src,
                        dst,
                        segments,
                        accumulate,
                        conj: _,
                    } => {
                        let desc = prep.descs[si][oi]
                            .as_ref()
                            .expect("descriptors uploaded for every gather");
                        self.launch_gather(
                            &gather,
                            &mut bufs,
                            *src,
                            *dst,
                            desc,
                            segments.len(),
                            *accumulate,
                        )?;
                    }
                    Op::Gemm(g) => self.gemm(&mut bufs, g, a, None)?,
                    Op::GemmGrouped { gemms } => {
                        keep_ptrs.extend(self.grouped(&mut bufs, gemms, a)?)
                    }
                    Op::GemmStridedBatched {
                        gemm,
                        batch,
                        stride_a,
                        stride_b,
                        stride_c,
                    } => self.gemm(
                        &mut bufs,
                        gemm,
                        a,
                        Some((*batch, *stride_a, *stride_b, *stride_c)),
                    )?,
                }
            }
            keep.extend([sa, sb, sc]);
            outs.push(Some(out));
        }
        let data = outs
            .pop()
            .flatten()
            .ok_or_else(|| Error::Cuda("a plan without steps".into()))?;
        // intermediates, scratch and pointer arrays are released only now, after every
        // launch is queued (a free may synchronise: at most this once, at the end)
        keep.extend(outs.into_iter().flatten());
        drop((keep, keep_ptrs));
        let last = plan.steps.last().ok_or_else(|| {
            Error::InvalidContraction("the plan has no pairwise step (a single operand)".into())
        })?;
        let g = &last.plan.geometry;
        let structure = DynTensor::from_shared(
            g.out_legs.clone(),
            g.symmetry.clone(),
            g.out_charge.clone(),
            last.plan.out_index.clone(),
            Vec::new(),
        );
        Ok(DeviceTensor { structure, data })
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_gather<T: DeviceScalar>(
        &self,
        f: &CudaFunction,
        bufs: &mut Bufs<'_, T>,
        src: Buf,
        dst: Buf,
        desc: &CudaSlice<i64>,
        nseg: usize,
        accumulate: bool,
    ) -> Result<()>
    where
        CudaBlas: Gemm<T>,
    {
        if nseg == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (nseg as u32, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n, acc) = (nseg as i32, accumulate as i32);
        // source and destination are always distinct buffers in a lowered program
        let (s, mut d) = bufs.pair(src, dst)?;
        let mut b = self.stream.launch_builder(f);
        b.arg(&s).arg(&mut d).arg(desc).arg(&n).arg(&acc);
        // SAFETY: the descriptors address only elements inside both buffers (lowering invariant).
        unsafe { b.launch(cfg) }.map_err(|e| cuda_err("gather kernel", e))?;
        Ok(())
    }

    fn gemm<T: DeviceScalar>(
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
            beta: if g.accumulate { T::one() } else { T::zero() },
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

    fn grouped<T: DeviceScalar>(
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
        let (da, db, dc) = (dev(&ptrs[0])?, dev(&ptrs[1])?, dev(&ptrs[2])?);
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
        let betas: Vec<T> = gemms
            .iter()
            .map(|g| if g.accumulate { T::one() } else { T::zero() })
            .collect();
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
        let st = unsafe { T::grouped(*self.blas.handle(), &args) };
        if st != cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::Cuda(format!("cuBLAS grouped gemm: {st:?}")));
        }
        // the pointer arrays must outlive the launch: the caller keeps them to the end
        Ok(vec![da, db, dc])
    }

    /// GPU cost-model constants measured on this device (launch, GEMM rate, gather bandwidth).
    pub fn cost_model(&self) -> Result<CostModel> {
        if let Some(m) = self.model.get() {
            return Ok(*m);
        }
        let m = kernels::calibrate(self)?;
        Ok(*self.model.get_or_init(|| m))
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    pub(crate) fn blas(&self) -> &CudaBlas {
        &self.blas
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
    i32::try_from(x).map_err(|_| Error::Cuda(format!("dimension {x} exceeds cuBLAS's int range")))
}

/// A plan lowered for the device, with its gather descriptors resident there.
pub struct Prepared {
    /// The op list.
    pub lowered: Lowered,
    descs: Vec<Vec<Option<CudaSlice<i64>>>>,
}

struct Bufs<'a, T> {
    left: &'a CudaSlice<T>,
    right: &'a CudaSlice<T>,
    out: &'a mut CudaSlice<T>,
    sa: &'a mut CudaSlice<T>,
    sb: &'a mut CudaSlice<T>,
    sc: &'a mut CudaSlice<T>,
}

type View<'b, T> = cudarc::driver::CudaView<'b, T>;
type ViewMut<'b, T> = cudarc::driver::CudaViewMut<'b, T>;

impl<T: DeviceRepr> Bufs<'_, T> {
    fn get(&self, b: Buf) -> &CudaSlice<T> {
        match b {
            Buf::Left => self.left,
            Buf::Right => self.right,
            Buf::Out => self.out,
            Buf::ScratchA => self.sa,
            Buf::ScratchB => self.sb,
            Buf::ScratchC => self.sc,
        }
    }
    fn pair(&mut self, src: Buf, dst: Buf) -> Result<(View<'_, T>, ViewMut<'_, T>)> {
        let (s, d): (&CudaSlice<T>, &mut CudaSlice<T>) = match (src, dst) {
            (Buf::Left, Buf::ScratchA) => (self.left, self.sa),
            (Buf::Right, Buf::ScratchB) => (self.right, self.sb),
            (Buf::ScratchC, Buf::Out) => (self.sc, self.out),
            _ => return Err(Error::Cuda(format!("unexpected gather {src:?} -> {dst:?}"))),
        };
        Ok((s.as_view(), d.as_view_mut()))
    }
    fn gemm_views(&mut self, g: &GemmOp) -> Result<(View<'_, T>, View<'_, T>, ViewMut<'_, T>)> {
        let bad = |w: &str| Error::Cuda(format!("GEMM {w} outside its buffer"));
        let (c_buf, rest): (&mut CudaSlice<T>, [&CudaSlice<T>; 5]) = match g.c.buf {
            Buf::Out => (self.out, [self.left, self.right, self.sa, self.sb, self.sc]),
            Buf::ScratchC => (self.sc, [self.left, self.right, self.sa, self.sb, self.out]),
            other => return Err(Error::Cuda(format!("GEMM output in {other:?}"))),
        };
        let find = |b: Buf| -> Result<&CudaSlice<T>> {
            Ok(match b {
                Buf::Left => rest[0],
                Buf::Right => rest[1],
                Buf::ScratchA => rest[2],
                Buf::ScratchB => rest[3],
                _ => return Err(Error::Cuda(format!("GEMM operand in {b:?}"))),
            })
        };
        let a = find(g.a.buf)?
            .try_slice(g.a.offset..)
            .ok_or_else(|| bad("A"))?;
        let b = find(g.b.buf)?
            .try_slice(g.b.offset..)
            .ok_or_else(|| bad("B"))?;
        let c = c_buf.try_slice_mut(g.c.offset..).ok_or_else(|| bad("C"))?;
        Ok((a, b, c))
    }
}
