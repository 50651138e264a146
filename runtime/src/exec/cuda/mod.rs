//! The CUDA executor (cudarc with dynamic loading, cuBLAS): device-resident tensors, a plan
//! lowered to an op list run on one stream with no synchronisation between steps (one
//! terminal synchronisation when the result is downloaded), gather/scatter kernels compiled
//! with NVRTC. Probes for the CUDA libraries first: cudarc panics when they are missing.

mod blas;
mod bufs;
mod kernels;

pub use blas::{DeviceScalar, GroupedArgs};

use super::device::{lower_with, Accum, Buf, LowerOptions, Lowered, Op, StepOps};
use crate::block::DynTensor;
use crate::error::{CudaError, Error, Result};
use crate::plan::{CostModel, Input, Plan};
use crate::scalar::Scalar;
use bufs::Bufs;
use cudarc::cublas::safe::{CudaBlas, Gemm};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

impl From<cudarc::driver::DriverError> for CudaError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        CudaError::Driver(format!("{e:?}"))
    }
}

impl From<cudarc::cublas::result::CublasError> for CudaError {
    fn from(e: cudarc::cublas::result::CublasError) -> Self {
        CudaError::Blas(format!("{e:?}"))
    }
}

impl From<cudarc::nvrtc::CompileError> for CudaError {
    fn from(e: cudarc::nvrtc::CompileError) -> Self {
        CudaError::Nvrtc(format!("{e:?}"))
    }
}

/// A failed CUDA call, kept typed by library.
pub(crate) fn cuda_err(op: &str, e: impl Into<CudaError>) -> Error {
    Error::Cuda {
        op: op.to_string(),
        source: e.into(),
    }
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
        real_only::<T>()?;
        let last = plan.steps.last().ok_or_else(|| Error::EmptyPlan {
            executor: "cuda".into(),
        })?;
        let gather = self.gather_kernel::<T>()?;
        let mut outs: Vec<Option<CudaSlice<T>>> = Vec::new();
        // buffers freed only after the last launch is queued, so that no free synchronises
        // the stream between steps
        let mut keep: Vec<CudaSlice<T>> = Vec::new();
        let mut keep_ptrs: Vec<CudaSlice<u64>> = Vec::new();
        for (si, st) in prep.lowered.steps.iter().enumerate() {
            let (out, scratch, ptrs) =
                self.launch_step(st, &prep.descs[si], &gather, ops, &outs, alpha)?;
            keep_ptrs.extend(ptrs);
            keep.extend(scratch);
            outs.push(Some(out));
        }
        let data = outs.pop().flatten().ok_or_else(|| Error::EmptyPlan {
            executor: "cuda".into(),
        })?;
        // intermediates, scratch and pointer arrays are released only now, after every
        // launch is queued (a free may synchronise: at most this once, at the end)
        keep.extend(outs.into_iter().flatten());
        drop((keep, keep_ptrs));
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

    /// Allocates step `st`'s output and scratch and queues its launches (`outs`: the earlier
    /// steps' outputs): the output, the scratch and the pointer arrays, to be freed only
    /// after the last launch is queued.
    #[allow(clippy::type_complexity)]
    fn launch_step<T: DeviceScalar>(
        &self,
        st: &StepOps,
        descs: &[Option<CudaSlice<i64>>],
        gather: &CudaFunction,
        ops: &[&DeviceTensor<T>],
        outs: &[Option<CudaSlice<T>>],
        alpha: T,
    ) -> Result<(CudaSlice<T>, [CudaSlice<T>; 3], Vec<CudaSlice<u64>>)>
    where
        CudaBlas: Gemm<T>,
    {
        let alloc = |n: usize| -> Result<CudaSlice<T>> {
            self.stream
                .alloc_zeros(n.max(1))
                .map_err(|e| cuda_err("alloc", e))
        };
        let mut out = alloc(st.out_len)?;
        let [mut sa, mut sb, mut sc] = [
            alloc(st.scratch[0])?,
            alloc(st.scratch[1])?,
            alloc(st.scratch[2])?,
        ];
        let pick = |inp: Input| -> Result<&CudaSlice<T>> {
            match inp {
                Input::Operand(k) => Ok(&ops[k].data),
                Input::Step(j) => outs[j].as_ref().ok_or_else(|| {
                    cuda_err(
                        "step inputs",
                        CudaError::Lowering("an intermediate was used twice".into()),
                    )
                }),
            }
        };
        let mut bufs = Bufs {
            left: pick(st.inputs.0)?,
            right: pick(st.inputs.1)?,
            out: &mut out,
            sa: &mut sa,
            sb: &mut sb,
            sc: &mut sc,
        };
        let a = if st.scaled { alpha } else { T::one() };
        let ptrs = self.run_step(st, descs, gather, &mut bufs, a)?;
        Ok((out, [sa, sb, sc], ptrs))
    }

    /// Queues one step's ops; returns the grouped GEMMs' pointer arrays, which must outlive
    /// the launches.
    fn run_step<T: DeviceScalar>(
        &self,
        st: &StepOps,
        descs: &[Option<CudaSlice<i64>>],
        gather: &CudaFunction,
        bufs: &mut Bufs<'_, T>,
        alpha: T,
    ) -> Result<Vec<CudaSlice<u64>>>
    where
        CudaBlas: Gemm<T>,
    {
        let mut keep = Vec::new();
        for (oi, op) in st.ops.iter().enumerate() {
            match op {
                Op::Gather {
                    src,
                    dst,
                    segments,
                    accum,
                    conj: _,
                } => {
                    let desc = descs.get(oi).and_then(Option::as_ref).ok_or_else(|| {
                        cuda_err(
                            "gather",
                            CudaError::Lowering("no descriptors for a gather".into()),
                        )
                    })?;
                    self.launch_gather(gather, bufs, (*src, *dst), desc, segments.len(), *accum)?;
                }
                Op::Gemm(g) => self.gemm(bufs, g, alpha, None)?,
                Op::GemmGrouped { gemms } => keep.extend(self.grouped(bufs, gemms, alpha)?),
                Op::GemmStridedBatched {
                    gemm,
                    batch,
                    stride_a,
                    stride_b,
                    stride_c,
                } => self.gemm(
                    bufs,
                    gemm,
                    alpha,
                    Some((*batch, *stride_a, *stride_b, *stride_c)),
                )?,
            }
        }
        Ok(keep)
    }

    fn launch_gather<T: DeviceScalar>(
        &self,
        f: &CudaFunction,
        bufs: &mut Bufs<'_, T>,
        (src, dst): (Buf, Buf),
        desc: &CudaSlice<i64>,
        nseg: usize,
        accum: Accum,
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
        let (n, acc) = (nseg as i32, (accum == Accum::Add) as i32);
        // source and destination are always distinct buffers in a lowered program
        let (s, mut d) = bufs.pair(src, dst)?;
        let mut b = self.stream.launch_builder(f);
        b.arg(&s).arg(&mut d).arg(desc).arg(&n).arg(&acc);
        // SAFETY: the descriptors address only elements inside both buffers (lowering invariant).
        unsafe { b.launch(cfg) }.map_err(|e| cuda_err("gather kernel", e))?;
        Ok(())
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

/// A plan lowered for the device, with its gather descriptors resident there.
pub struct Prepared {
    /// The op list.
    pub lowered: Lowered,
    descs: Vec<Vec<Option<CudaSlice<i64>>>>,
}

/// The CUDA executor runs real element types only (its GEMMs are cuBLAS's real ones).
fn real_only<T: DeviceScalar>() -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    if T::IS_COMPLEX {
        return Err(Error::UnsupportedDtype {
            dtype: T::DTYPE,
            executor: "cuda".into(),
        });
    }
    Ok(())
}
