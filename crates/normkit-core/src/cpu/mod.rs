//! The rayon CPU backend.
//!
//! Rows are independent in the forward pass and are spread over the rayon pool; each row is
//! widened into an `f32` scratch row (one per task, never one per row), reduced with
//! `reduce::LANES` independent fp32 accumulators in an order fixed by `N` alone (batch
//! invariance), then rounded once on the store as the [`crate::CastingMode`] says. The backward
//! pass computes in fp32 and sums dW/dB through fixed blocks and a fixed tree (see `backward.rs`),
//! so it is bitwise deterministic whatever the thread count.
//!
//! Choices the contract leaves to the backend:
//! - `Llama`/`None` casting round to x's dtype ([`crate::DTypes::x`]), also with the fused add.
//! - In `None` mode the statistics are fp32 (as in every mode, see [`crate::CastingMode::None`]);
//!   the values written to `mean`/`rstd` are the ones the forward used.
//! - The backward of `M = 0` writes zeros to `dw`/`db` (an empty sum).

mod backward;
mod bench;
pub(crate) mod convert;
mod forward;
#[cfg(test)]
mod fp8_tests;
#[cfg(target_arch = "x86_64")]
mod fused;
mod reduce;
#[cfg(test)]
mod tests;

use crate::{
    check_desc, check_dtypes, validate_backward, validate_forward, Backward, Buffer, DType, DTypes, Direction, Forward, HostBuf, HostView,
    NormDesc, NormKernel, Result,
};
use convert::Ptr;

/// Host memory the row kernels run on: owned [`HostBuf`]s and borrowed [`HostView`]s. The kernels
/// work through the typed base pointer only, so both take the same code path, bit for bit.
pub(crate) trait HostMem: Buffer {
    /// The base pointer, for reading.
    fn ptr(&self) -> Ptr;
    /// The base pointer, for writing. Only called on an output operand that validation accepted,
    /// so on a writable buffer ([`Buffer::is_writable`]).
    fn ptr_mut(&mut self) -> Ptr;
}

impl HostMem for HostBuf {
    fn ptr(&self) -> Ptr {
        Ptr::of(self)
    }
    fn ptr_mut(&mut self) -> Ptr {
        Ptr::of_mut(self)
    }
}

impl HostMem for HostView<'_> {
    fn ptr(&self) -> Ptr {
        self.raw()
    }
    fn ptr_mut(&mut self) -> Ptr {
        debug_assert!(self.is_writable(), "validation lets only writable views be outputs");
        self.raw()
    }
}

/// Outputs of at least this many bytes (per call) are written with streaming stores, which skip
/// the read-for-ownership of each destination line (a third of the traffic of a forward pass) and
/// do not evict the inputs of the next op from the cache. Below it the output is likely to be read
/// soon from the cache, so plain stores win. 64 MiB (8192×4096 bf16, the smallest benchmark
/// output) is a judgement, not a measured crossover.
const STREAM_MIN_BYTES: usize = 64 << 20;

/// Whether an output of `bytes` bytes is written with streaming stores on `isa`.
fn use_stream(isa: Isa, bytes: usize) -> bool {
    #[cfg(test)]
    if FORCE_STREAM.with(|c| c.get()) {
        return isa.has_avx2();
    }
    isa.has_avx2() && bytes >= STREAM_MIN_BYTES
}

/// The instruction set the row kernels are compiled for, detected once per call.
///
/// Every build performs the same correctly rounded f32 operations in the same order (Rust never
/// contracts a multiply and an add into an FMA, and the reductions fix their lane order, see
/// `reduce.rs`), so the choice changes speed only, never a bit of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Portable,
    /// AVX2: 256-bit vectors.
    Avx2,
    /// AVX-512 F/BW/VL: 512-bit vectors for the elementwise passes and conversions.
    Avx512,
}

#[cfg(test)]
thread_local! {
    /// Tests cap the instruction set of the calls made from their thread, to compare the builds.
    static MAX_ISA: std::cell::Cell<Isa> = const { std::cell::Cell::new(Isa::Avx512) };
    /// Tests force streaming stores on small outputs, to compare them with plain stores.
    static FORCE_STREAM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Isa {
    fn detect() -> Isa {
        let isa = Isa::detect_cpu();
        #[cfg(test)]
        let isa = match (isa, MAX_ISA.with(|m| m.get())) {
            (_, Isa::Portable) => Isa::Portable,
            (Isa::Avx512, Isa::Avx2) => Isa::Avx2,
            (isa, _) => isa,
        };
        isa
    }

    fn detect_cpu() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl")
            {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Whether AVX2 (and so streaming stores through `Ptr::store_stream`) is available.
    fn has_avx2(self) -> bool {
        self != Isa::Portable
    }
}

/// Whether the CPU has AVX2.
#[cfg(test)]
fn has_avx2() -> bool {
    Isa::detect().has_avx2()
}

/// The CPU backend: every op, forward and backward, on [`HostBuf`]s (or, through
/// [`CpuBackend::forward_view`] / [`CpuBackend::backward_view`], on borrowed [`HostView`]s), parallel over the current
/// rayon pool (run it inside `ThreadPool::install` to choose the pool).
///
/// # Threads
/// `CpuBackend` is `Send + Sync` and holds no state: one backend (or clones of it) may be shared
/// by any number of threads calling `forward`/`backward`/`alloc`/… at the same time. Calls are
/// independent: each borrows its operands (the borrow checker keeps two calls from writing the
/// same buffer), and a call's results are bitwise the same whether or not other calls run
/// concurrently, and whatever the size of the rayon pool (tested by `tests/tests/concurrency.rs`:
/// 4 threads of interleaved calls against the same calls made alone). Calls are synchronous:
/// `synchronize` has nothing to wait for.
///
/// # Memory
/// `alloc`, `upload` and `download` never panic or abort on a size: they return
/// [`crate::NormError::ResourceLimit`] (see [`HostBuf::try_zeros`]). The ops themselves allocate
/// only scratch rows of `N` floats per worker and the `w`/`b` vectors, bounded by the buffers the
/// caller already holds.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend {}

impl CpuBackend {
    /// The CPU backend (it holds nothing; creating one is free).
    pub fn new() -> Self {
        CpuBackend {}
    }
}

impl CpuBackend {
    /// [`NormKernel::forward`] on borrowed host memory ([`HostView`]s), without copying it: the
    /// same validation, the same kernels, bitwise the same results as on [`HostBuf`]s holding the
    /// same values. Every output operand (`y`, `residual_out`, `mean`, `rstd`) must be a writable
    /// view ([`HostView::new_mut`]); a read-only one is [`crate::NormError::ReadOnly`], returned
    /// before anything is written.
    pub fn forward_view(&self, desc: &NormDesc, args: Forward<'_, HostView<'_>>) -> Result<()> {
        let plan = validate_forward(desc, &args)?;
        forward::run(desc, &plan, args);
        Ok(())
    }

    /// [`NormKernel::backward`] on borrowed host memory, as [`CpuBackend::forward_view`]: the
    /// outputs `dx`, `dw`, `db` must be writable views.
    pub fn backward_view(&self, desc: &NormDesc, args: Backward<'_, HostView<'_>>) -> Result<()> {
        let plan = validate_backward(desc, &args)?;
        backward::run(desc, &plan, args);
        Ok(())
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

    /// Zeros ([`HostBuf::try_zeros`]): [`crate::NormError::ResourceLimit`] (in bytes) when `len`
    /// elements overflow, exceed [`HostBuf::alloc_limit`] (physical memory + swap on Linux) or
    /// the allocator refuses; never a panic or an abort.
    fn alloc(&self, dtype: DType, len: usize) -> Result<HostBuf> {
        HostBuf::try_zeros(dtype, len)
    }

    /// A copy ([`HostBuf::try_clone`]); `ResourceLimit` when the memory cannot be had.
    fn upload(&self, src: &HostBuf) -> Result<HostBuf> {
        src.try_clone()
    }

    /// A copy ([`HostBuf::try_clone`]); `ResourceLimit` when the memory cannot be had.
    fn download(&self, buf: &HostBuf) -> Result<HostBuf> {
        buf.try_clone()
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
