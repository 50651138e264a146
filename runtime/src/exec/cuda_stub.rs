//! Stand-in when the crate is built without the `cuda` feature: the same types and methods
//! as the CUDA executor, so callers need no `cfg`; every entry point says it is not compiled
//! in (`CudaDevice::open` fails, so no other method can be reached).

use super::device::Lowered;
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::plan::{CostModel, Plan};
use crate::scalar::Scalar;
use std::convert::Infallible;
use std::marker::PhantomData;

fn unavailable() -> Error {
    Error::CudaUnavailable("blockcontract was built without the `cuda` feature".into())
}

/// Always `CudaUnavailable`: this build has no CUDA executor.
pub fn probe() -> Result<()> {
    Err(unavailable())
}

/// Element types the device executor runs.
pub trait DeviceScalar: Scalar {}
impl DeviceScalar for f64 {}
impl DeviceScalar for f32 {}

/// One GPU (never constructed in this build).
pub struct CudaDevice {
    never: Infallible,
}

/// A tensor whose buffer lives on the device (never constructed in this build).
pub struct DeviceTensor<T> {
    never: Infallible,
    _t: PhantomData<T>,
}

/// A plan lowered for the device (never constructed in this build).
pub struct Prepared {
    /// The op list.
    pub lowered: Lowered,
    #[allow(dead_code)]
    never: Infallible,
}

impl<T: Scalar> DeviceTensor<T> {
    /// The host-side structure.
    pub fn structure(&self) -> &DynTensor<T> {
        match self.never {}
    }
}

impl CudaDevice {
    /// Always `CudaUnavailable` in this build.
    pub fn open(_ordinal: usize) -> Result<Self> {
        Err(unavailable())
    }
    /// Copies a tensor to the device.
    pub fn upload<T: DeviceScalar>(&self, _t: &DynTensor<T>) -> Result<DeviceTensor<T>> {
        match self.never {}
    }
    /// Copies a device tensor back.
    pub fn download<T: DeviceScalar>(&self, _t: &DeviceTensor<T>) -> Result<DynTensor<T>> {
        match self.never {}
    }
    /// Waits for every queued operation.
    pub fn synchronize(&self) -> Result<()> {
        match self.never {}
    }
    /// Lowers `plan` for these operands.
    pub fn prepare<T: DeviceScalar>(
        &self,
        _plan: &Plan,
        _ops: &[&DeviceTensor<T>],
    ) -> Result<Prepared> {
        match self.never {}
    }
    /// Runs a prepared plan on device tensors.
    pub fn contract<T: DeviceScalar>(
        &self,
        _plan: &Plan,
        _prep: &Prepared,
        _ops: &[&DeviceTensor<T>],
        _alpha: T,
    ) -> Result<DeviceTensor<T>> {
        match self.never {}
    }
    /// Whether cuBLAS has grouped-batched GEMM.
    pub fn grouped_supported(&self) -> bool {
        match self.never {}
    }
    /// GPU cost-model constants measured on this device.
    pub fn cost_model(&self) -> Result<CostModel> {
        match self.never {}
    }
}
