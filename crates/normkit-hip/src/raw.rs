//! [`RawBuffers`] for the HIP backend: what the conformance suite's device-only tests use.

use crate::{HipBackend, HipBuffer};
use normkit_core::{DType, RawBuffers, Result};

impl RawBuffers for HipBackend {
    fn buffer_addr(buf: &HipBuffer) -> u64 {
        buf.device_ptr()
    }

    unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: DType) -> Result<HipBuffer> {
        // SAFETY: the caller upholds the trait's contract, which is the inherent method's.
        unsafe { HipBackend::buffer_from_raw(self, ptr, len, dtype) }
    }
}
