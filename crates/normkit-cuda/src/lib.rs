//! # normkit-cuda
//!
//! normkit's CUDA backend for Hopper (sm_90a) and Blackwell (sm_100a). The kernels
//! (`kernels-cuda/norm.cu` over the vendor-neutral bodies in `kernels-common/`) are compiled
//! ahead of time by nvcc 13.0 into one fatbin embedded in this crate and loaded from memory
//! through cudarc's driver API, loaded at run time (`dynamic-loading`): a binary built with
//! this crate starts on a machine without CUDA and [`CudaBackend::new`] then returns
//! [`NormError::BackendUnavailable`](normkit_core::NormError::BackendUnavailable).
//!
//! [`CudaBackend`] implements [`NormKernel`] and [`BenchBackend`](normkit_core::BenchBackend) over [`CudaBuffer`]s, device
//! buffers that either own their memory or view foreign device memory
//! ([`CudaBackend::buffer_from_raw`]).
//!
//! Hot path: when every tensor has x's dtype and casting is Gemma, register-resident kernels
//! (`nk_fwd_reg*`, `nk_bwd_reg*`: dtype, LayerNorm and residual fixed at compile time; a row's
//! 16-byte vectors loaded once into registers; the backward's dW/dB partials in registers of a
//! persistent grid) run wherever a row fits their chunks-per-thread limit; the forward ones use
//! the same group/chunk table and reduction as the staged kernels' and have an element-wise twin,
//! so the layout never changes a result. Otherwise:
//!
//! Dispatch (all on the host, from validated plans): the row path — a group of threads per row,
//! persistent CTAs, the row staged in shared memory — while the staged row and weights fit, else
//! the split-row path (partial statistics per chunk, then a second pass); each with a 16-byte
//! variant when N, every row stride and every view start allow it, else an element-wise variant
//! that assigns the same chunks to the same threads (so results are bitwise identical and a
//! misaligned view is never an error); and, when every tensor is f16/bf16, variants specialised
//! at compile time on that dtype and on Gemma casting. The path depends on N and the dtypes only,
//! never on M or the layout: the forward pass is batch-invariant. See `tuning.rs` for the tables.
//!
//! Backward: persistent CTAs keep dW/dB partials in shared memory (row path) or registers (split
//! path) and write one fp32 partial row each to a workspace; `nk_bwd_finalize` sums the partial
//! rows in index order. No floating-point atomics anywhere: bitwise deterministic.
//!
//! # Layout of the crate
//!
//! ```text
//! lib.rs      CudaBackend: NormKernel = validate (ownership included) → params::{forward,backward} → plan → launch::run
//! startup.rs  driver, device, module, per-kernel shared-memory limits → DeviceFacts; Tuning + env, once
//! buffers.rs  CudaBuffer (its owner id: the context), alloc / upload / download / buffer_from_raw, the workspace lease
//! params.rs   normkit-gpu-host's parameter filling → the planner's calls; the cudarc kernel-argument wrapper
//! tuning.rs   every threshold and measurement override, as data (the env variables, listed once)
//! plan.rs     pure: (call, DeviceFacts, Occupancy, Tuning) → Launch (kernels, grids, smem, workspace)
//! launch.rs   executes a Launch: plain, cluster and programmatic-dependent launches; Occupancy
//! kernels.rs  the kernel table generated from kernels-cuda/variants.rs (typed KernelKey lookups)
//! bench.rs    BenchBackend: device facts, copy ceiling, CUDA-graph timing
//! ```
//!
//! Imports point one way: lib → params, plan, launch, buffers, startup → tuning, kernels.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod bench;
mod buffers;
mod kernels;
mod launch;
mod params;
mod plan;
mod raw;
mod startup;
pub mod tuning;

use cudarc::driver::result as cu;
use normkit_core::{
    validate_backward_for, validate_forward_for, Backward, DType, DTypes, Direction, Forward, HostBuf, NormDesc, NormKernel, Result,
};

pub use buffers::CudaBuffer;
pub use tuning::{RowConfig, Tuning};

use buffers::Memory;
use startup::{dev_err, Device, BACKEND};

/// Names of the kernels in the embedded fatbin (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    kernels::ALL.iter().map(|k| k.name).collect()
}

/// The CUDA backend: one device, one stream.
///
/// # Workspace (device scratch memory)
///
/// Two kinds of call need scratch memory on the device: the split-row forward (rows too long for
/// the staged-row and cluster kernels, e.g. 16-bit RMSNorm above N = 262144) and every backward
/// that computes dW or dB (one fp32 partial row per persistent CTA or cluster, summed in a fixed
/// order by the finalize kernel). The backend keeps one workspace, grown on demand to exactly the
/// largest size a call has needed so far (at least 1 MiB), never shrunk, freed with the backend.
/// For M rows of N elements on a device with S multiprocessors, with C = 8192 (elements per split
/// chunk) and `nacc` the number of dW/dB outputs (0 to 2), a call needs at most:
///
/// - forward: `8·M·(⌈N/C⌉ + 1)` bytes on the split path, nothing on the others;
/// - backward: `nacc·(4·N·P + 255)` bytes, plus `8·M·(⌈N/C⌉ + 1) + 255` on the split path, where
///   P, the number of partial rows, is the resident CTA (or cluster) count of the chosen kernel,
///   never more than `min(M, 32·S)` (32 CTAs per SM: the hardware limit of sm_90 and sm_100; at
///   most 8·S on the split path).
///
/// So the workspace is at most `max(1 MiB, 8·M·(⌈N/8192⌉ + 1) + 8·N·min(M, 32·S) + 768)` bytes
/// over the largest M and N a backend has been called with, whatever the dtypes (partials and
/// statistics are fp32; the dtypes only choose the path). Beyond the buffers it hands out, that
/// workspace is the only device memory a backend allocates per call; the rest is the loaded
/// module and the driver's own. [`CudaBackend::workspace_bytes`] says what it holds now.
///
/// Growing synchronises the stream (the old workspace may still be in use), frees the old
/// workspace, then allocates the new one, and is refused during CUDA graph capture. There is no
/// reserve call: to size the workspace up front (and keep growth out of a graph capture or a
/// latency-sensitive loop), make one call of the largest shape first — a backward with weight
/// and bias at the largest M and N. A failed growth returns [`NormError::ResourceLimit`](normkit_core::NormError::ResourceLimit)
/// (`resource: "device memory"`, the bytes requested, the free bytes cuMemGetInfo reports)
/// before anything is launched, so the call's outputs are untouched; the backend then holds no
/// workspace, stays usable, and the next call that needs one allocates again. `alloc` and
/// `upload` report a failed cuMemAlloc the same way.
#[derive(Debug)]
pub struct CudaBackend {
    dev: Device,
    /// The launch tables, thresholds and overrides, fixed when the backend is created.
    tuning: Tuning,
    /// The workspace and the allocation-failure hook.
    mem: Memory,
}

impl CudaBackend {
    /// Opens device `ordinal`. Errors, never panics: no driver library, no device, or a device
    /// the fatbin has no code for.
    pub fn with_device(ordinal: usize) -> Result<Self> {
        let dev = Device::open(ordinal)?;
        let tuning = startup::tuning(dev.cc);
        Ok(CudaBackend { dev, tuning, mem: Memory::default() })
    }

    /// Opens device 0.
    pub fn new() -> Result<Self> {
        Self::with_device(0)
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.dev.cc
    }

    /// Multiprocessor count.
    pub fn sm_count(&self) -> u32 {
        self.dev.facts.sms
    }

    /// The launch tables, thresholds and overrides in use (the environment's overrides were read
    /// when the backend was created).
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// A buffer viewing `len` elements of `dtype` at device address `ptr`, owned elsewhere.
    ///
    /// # Safety
    /// `ptr .. ptr + len·size` must be device memory of this backend's context, valid for reads
    /// and writes for as long as the buffer (and any call using it) lives. Views may overlap
    /// each other; the validation of every call rejects overlapping operands
    /// ([`NormError::Aliasing`](normkit_core::NormError::Aliasing)) except the explicit in-place form.
    pub unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: DType) -> Result<CudaBuffer> {
        // SAFETY: the caller upholds this function's contract, which is that of the callee.
        unsafe { buffers::buffer_from_raw(&self.dev, ptr, len, dtype) }
    }

    /// Fault injection for tests: the next `n` device allocations of this backend — workspace
    /// growth in `forward`/`backward`, `alloc`, `upload` — fail as if cuMemAlloc had returned
    /// `CUDA_ERROR_OUT_OF_MEMORY`, through the same error mapping as a real failure
    /// ([`NormError::ResourceLimit`](normkit_core::NormError::ResourceLimit) with `resource: "device memory"`, the bytes requested, and
    /// the free memory cuMemGetInfo reports, which is real and so may exceed the request).
    /// `0` disarms. Not part of the supported API.
    #[doc(hidden)]
    pub fn inject_alloc_failures(&self, n: u32) {
        self.mem.inject_alloc_failures(n);
    }

    /// Bytes of device memory the workspace holds now (0 before the first call that needs one,
    /// and after a failed growth). See [`CudaBackend`] for its bound.
    pub fn workspace_bytes(&self) -> usize {
        self.mem.workspace_bytes()
    }

    /// (free, total) bytes of device memory, as cuMemGetInfo reports them: the whole device,
    /// every context and process on it.
    pub fn device_memory(&self) -> Result<(usize, usize)> {
        self.dev.ctx.mem_get_info().map_err(dev_err("device query"))
    }

    /// Copies `bytes` bytes device-to-device on the backend's stream (benchmarks).
    pub(crate) fn copy_d2d(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: callers pass two distinct allocations of at least `bytes` bytes each.
        unsafe { cu::memcpy_dtod_async(dst, src, bytes, self.dev.stream.cu_stream()) }.map_err(dev_err("copy"))
    }

    /// F_NOFULL when the FULL specialisation is turned off (Tuning::no_full).
    fn extra_flags(&self) -> i32 {
        if self.tuning.no_full {
            params::F_NOFULL
        } else {
            0
        }
    }
}

impl NormKernel for CudaBackend {
    type Buffer = CudaBuffer;

    fn name(&self) -> &'static str {
        BACKEND
    }

    /// The context: buffers made by another backend (another context) are foreign.
    fn owner_id(&self) -> Option<u64> {
        self.dev.owner_id()
    }

    fn device_name(&self) -> String {
        self.dev.name.clone()
    }

    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        normkit_core::check_desc(desc)?;
        normkit_core::check_dtypes(desc, dir, dtypes)
    }

    fn forward(&self, desc: &NormDesc, a: Forward<'_, CudaBuffer>) -> Result<()> {
        let v = validate_forward_for(self, desc, &a)?;
        let (mut p, call) = params::forward(desc, &a, &v, self.extra_flags());
        let l = plan::forward(&self.tuning, &self.dev.facts, &self.dev, &call)?;
        launch::run(&self.dev, &self.mem, &l, &mut p)
    }

    fn backward(&self, desc: &NormDesc, a: Backward<'_, CudaBuffer>) -> Result<()> {
        let v = validate_backward_for(self, desc, &a)?;
        let (mut p, call) = params::backward(desc, &a, &v, self.extra_flags());
        let l = plan::backward(&self.tuning, &self.dev.facts, &self.dev, &call)?;
        launch::run(&self.dev, &self.mem, &l, &mut p)
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CudaBuffer> {
        self.mem.alloc(&self.dev, dtype, len)
    }

    fn upload(&self, src: &HostBuf) -> Result<CudaBuffer> {
        self.mem.upload(&self.dev, src)
    }

    fn download(&self, buf: &CudaBuffer) -> Result<HostBuf> {
        buffers::download(&self.dev, buf)
    }

    fn synchronize(&self) -> Result<()> {
        self.dev.stream.synchronize().map_err(dev_err("synchronize"))
    }
}
