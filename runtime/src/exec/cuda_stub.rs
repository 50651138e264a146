//! Stand-in when the crate is built without the `cuda` feature: every entry point says so.

use crate::error::{Error, Result};

/// Always `CudaUnavailable`: this build has no CUDA executor.
pub fn probe() -> Result<()> {
    Err(Error::CudaUnavailable(
        "blockcontract was built without the `cuda` feature".into(),
    ))
}
