//! [`RawBuffers`] for the CUDA backend: what the conformance suite's device-only tests use.

use crate::{CudaBackend, CudaBuffer};
use normkit_core::{DType, RawBuffers, Result};

impl RawBuffers for CudaBackend {
    fn buffer_addr(buf: &CudaBuffer) -> u64 {
        buf.device_ptr()
    }

    unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: DType) -> Result<CudaBuffer> {
        // SAFETY: the caller upholds the trait's contract, which is the inherent method's.
        unsafe { CudaBackend::buffer_from_raw(self, ptr, len, dtype) }
    }
}
