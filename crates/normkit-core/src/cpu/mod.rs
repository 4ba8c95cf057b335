//! The rayon CPU backend. (Placeholder while the real backend is written; every call reports
//! `Unsupported`.)

use crate::{Backward, DTypes, Direction, DType, Forward, HostBuf, NormDesc, NormError, NormKernel, Result, Buffer};

/// The CPU backend.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend {}

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend {}
    }
}

impl NormKernel for CpuBackend {
    type Buffer = HostBuf;
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn device_name(&self) -> String {
        "cpu".into()
    }
    fn supports(&self, _dir: Direction, _desc: &NormDesc, _dtypes: &DTypes) -> Result<()> {
        Err(NormError::Unsupported { backend: "cpu", what: "anything yet".into() })
    }
    fn forward(&self, desc: &NormDesc, args: Forward<'_, HostBuf>) -> Result<()> {
        crate::validate_forward(desc, &args)?;
        Err(NormError::Unsupported { backend: "cpu", what: "anything yet".into() })
    }
    fn backward(&self, desc: &NormDesc, args: Backward<'_, HostBuf>) -> Result<()> {
        crate::validate_backward(desc, &args)?;
        Err(NormError::Unsupported { backend: "cpu", what: "anything yet".into() })
    }
    fn alloc(&self, dtype: DType, len: usize) -> Result<HostBuf> {
        Ok(HostBuf::zeros(dtype, len))
    }
    fn upload(&self, src: &HostBuf) -> Result<HostBuf> {
        Ok(src.clone())
    }
    fn download(&self, buf: &HostBuf) -> Result<HostBuf> {
        let _ = buf.len();
        Ok(buf.clone())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
