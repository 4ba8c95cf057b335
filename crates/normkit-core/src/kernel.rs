//! The backend-agnostic trait.

use crate::args::{Backward, Forward};
use crate::desc::{DTypes, Direction, NormDesc};
use crate::dtype::DType;
use crate::error::Result;
use crate::host::HostBuf;
use crate::tensor::Buffer;

/// A backend that runs normkit's ops: the CPU backend, CUDA, HIP.
///
/// # Contract
/// - `forward` and `backward` validate first ([`crate::validate_forward`],
///   [`crate::validate_backward`]; a backend with an [`NormKernel::owner_id`] through
///   [`crate::validate_forward_for`] / [`crate::validate_backward_for`], which also reject a
///   foreign buffer) and, on any error up to [`crate::NormError::Unsupported`], return it
///   without touching an output.
/// - Calls on a device backend are asynchronous with respect to the host: results are visible to
///   [`NormKernel::download`] (which orders itself after earlier calls) or after
///   [`NormKernel::synchronize`].
/// - Forward is batch-invariant: a row's outputs are bitwise the same whatever `M` is and
///   whatever rows surround it. Backward is deterministic: the same inputs give bitwise the same
///   `dx`, `dw`, `db` on every run (no floating-point atomics; fixed reduction order).
/// - Nothing panics on bad input, and nothing panics or aborts on a size: `alloc`, `upload` and
///   `download` return [`crate::NormError::ResourceLimit`] when the memory cannot be had.
///
/// # Errors, per backend
/// The validation errors (`Shape` … `DType`, see [`crate::NormError`]) come from the shared
/// validation and are the same on every backend, and on error every output is bitwise untouched
/// (tested by the conformance suite's `invalid_forward`/`invalid_backward` categories and by the
/// fuzzer, `tests/tests/fuzz_api.rs`). `Alignment` and `Aliasing` can only occur on the device
/// backends, and `Aliasing` only with buffers built from raw device pointers by their `unsafe`
/// constructors: the CPU backend's buffers and every safely obtained device buffer are owned, and
/// the borrow checker rules out overlaps. `ResourceLimit` comes from `alloc`/`upload`/`download`
/// (every backend) and from a device op whose workspace cannot be had; `BackendUnavailable` only
/// from a backend's constructor; `Device` only from a GPU runtime. The table in
/// [`crate::NormError`] lists them all.
///
/// # Threads
/// A backend that is `Sync` may be shared by threads calling it concurrently; each call's results
/// are then bitwise those of the same call made alone ([`crate::cpu::CpuBackend`] is `Send + Sync`
/// and stateless; the GPU backends state what they promise in their own docs). The check is
/// `normkit_conformance::concurrency`.
pub trait NormKernel {
    /// Where this backend's tensors live.
    type Buffer: Buffer;

    /// Short backend name: `"cpu"`, `"cuda"`, `"hip"`.
    fn name(&self) -> &'static str;

    /// This backend instance's identity for buffer ownership: every operand whose
    /// [`Buffer::owner`] is `Some(id)` with another id is rejected with
    /// [`crate::NormError::ForeignBuffer`] by [`crate::validate_forward_for`] /
    /// [`crate::validate_backward_for`], before anything runs. `None` (the default) accepts every
    /// buffer of [`NormKernel::Buffer`] (the CPU backend: host memory belongs to no one).
    fn owner_id(&self) -> Option<u64> {
        None
    }

    /// The device in words (CPU model, GPU name), for reports.
    fn device_name(&self) -> String;

    /// Whether this backend implements `desc` with these dtypes. `Ok(())` means a
    /// `forward`/`backward` call with valid shapes will not fail with `Unsupported`.
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()>;

    /// `y = norm(x [+ residual])`, plus `residual_out`, `mean`, `rstd` as the descriptor asks.
    fn forward(&self, desc: &NormDesc, args: Forward<'_, Self::Buffer>) -> Result<()>;

    /// `dx` (and `dw`, `db`) from `dy` and the statistics saved by the forward pass.
    fn backward(&self, desc: &NormDesc, args: Backward<'_, Self::Buffer>) -> Result<()>;

    /// A buffer of `len` elements whose contents are unspecified.
    fn alloc(&self, dtype: DType, len: usize) -> Result<Self::Buffer>;

    /// A copy of a host buffer on this backend.
    fn upload(&self, src: &HostBuf) -> Result<Self::Buffer>;

    /// A host copy of a buffer (waits for earlier calls that write it).
    fn download(&self, buf: &Self::Buffer) -> Result<HostBuf>;

    /// Waits for every call queued so far.
    fn synchronize(&self) -> Result<()>;
}

/// The machine a backend runs on, as recorded in benchmark reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceInfo {
    /// Backend name (`"cpu"`, `"cuda"`, `"hip"`).
    pub backend: String,
    /// CPU model or GPU name.
    pub name: String,
    /// Cores (CPU), SMs (CUDA) or CUs (HIP).
    pub compute_units: u32,
    /// Driver / runtime version in words (`"580.159.04 (CUDA 13.0)"`), empty on the CPU.
    pub driver: String,
    /// Clocks at the time of the reading, in words.
    pub clocks: String,
    /// Device memory (GPU) or RAM (CPU), bytes.
    pub memory_bytes: u64,
    /// Last-level cache, bytes.
    pub cache_bytes: u64,
}

/// What a benchmark needs from a backend beyond the ops: timing the backend's own way and
/// measuring its copy ceiling in the same run.
pub trait BenchBackend: NormKernel {
    /// The device the backend runs on, as reports describe it (name, driver, memory, caches).
    fn device_info(&self) -> DeviceInfo;

    /// The copy ceiling: GB/s (1e9 bytes/s) of a plain copy of `bytes` bytes, counting the bytes
    /// read plus the bytes written (memcpy on the CPU, device-to-device copy on a GPU).
    fn copy_gbps(&self, bytes: usize) -> Result<f64>;

    /// Times `calls` back-to-back invocations `f(0), f(1), …, f(calls−1)` (the caller rotates
    /// input sets by index so the working set exceeds the caches), `reps` times. Returns the
    /// seconds per call of each repetition; the caller takes the median. GPU backends capture the
    /// calls once (a CUDA graph) and replay it, so launch overhead is what a graph sees.
    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>>;
}

/// A device backend whose buffers have addresses (CUDA, HIP): raw-pointer views of memory the
/// caller owns, for interop with other libraries. The conformance suite's device-only tests
/// (`normkit_conformance::device`) are written once over this trait.
pub trait RawBuffers: NormKernel {
    /// The device address of `buf`'s first element.
    fn buffer_addr(buf: &Self::Buffer) -> u64;

    /// A buffer viewing `len` elements of `dtype` at device address `ptr`, owned elsewhere:
    /// [`NormError::Alignment`](crate::NormError::Alignment) when `ptr` is not a multiple of the
    /// element size. Views may overlap; every call's validation rejects overlapping operands
    /// ([`NormError::Aliasing`](crate::NormError::Aliasing)) except the explicit in-place form.
    ///
    /// # Safety
    /// `ptr .. ptr + len·size` must be device memory of this backend's device (and context),
    /// valid for reads and writes for as long as the buffer and any call using it live, and not
    /// accessed by other code while such a call is in flight.
    unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: crate::DType) -> crate::Result<Self::Buffer>;
}
