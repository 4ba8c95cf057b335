//! The rayon CPU backend.
//!
//! Rows are independent in the forward pass and are spread over the rayon pool; each row is
//! widened into an `f32` scratch row (one per task, never one per row), reduced with
//! [`reduce::LANES`] independent fp32 accumulators in an order fixed by `N` alone (batch
//! invariance), then rounded once on the store as the [`crate::CastingMode`] says. The backward
//! pass computes in fp32 and sums dW/dB through fixed blocks and a fixed tree (see `backward.rs`),
//! so it is bitwise deterministic whatever the thread count.
//!
//! Choices the contract leaves to the backend:
//! - `Llama`/`None` casting round to x's dtype ([`crate::DTypes::x`]), also with the fused add.
//! - In `None` mode the statistics written to `mean`/`rstd` are the values the forward used,
//!   i.e. rounded to x's dtype (stored as f32), so a backward re-deriving `x̂` sees them.
//! - The backward of `M = 0` writes zeros to `dw`/`db` (an empty sum).

mod backward;
mod bench;
mod convert;
mod forward;
mod reduce;
#[cfg(test)]
mod tests;

use crate::{
    check_desc, check_dtypes, validate_backward, validate_forward, Backward, DType, DTypes, Direction, Forward, HostBuf, NormDesc,
    NormKernel, Result,
};

/// The CPU backend: every op, forward and backward, on [`HostBuf`]s, parallel over the current
/// rayon pool (run it inside `ThreadPool::install` to choose the pool).
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
        bench::cpu_model()
    }

    /// Everything the contract allows is implemented.
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        check_desc(desc)?;
        check_dtypes(desc, dir, dtypes)
    }

    fn forward(&self, desc: &NormDesc, args: Forward<'_, HostBuf>) -> Result<()> {
        let plan = validate_forward(desc, &args)?;
        forward::run(desc, &plan, args);
        Ok(())
    }

    fn backward(&self, desc: &NormDesc, args: Backward<'_, HostBuf>) -> Result<()> {
        let plan = validate_backward(desc, &args)?;
        backward::run(desc, &plan, args);
        Ok(())
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<HostBuf> {
        Ok(HostBuf::zeros(dtype, len))
    }

    fn upload(&self, src: &HostBuf) -> Result<HostBuf> {
        Ok(src.clone())
    }

    fn download(&self, buf: &HostBuf) -> Result<HostBuf> {
        Ok(buf.clone())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
