//! # normkit-hip
//!
//! normkit's backend for AMD Instinct GPUs: MI300X / MI325X (gfx942), MI350X / MI355X (gfx950),
//! and MI200 (gfx90a).
//!
//! **Status: compiled and ISA-checked, not yet run on AMD hardware.** Every kernel is compiled
//! ahead of time for every target and its code object inspected by `tests/isa.rs` (16-byte
//! vector memory on the hot paths, no scratch, wave64, VGPRs within budget); the host side is
//! tested without a device. Numerical results have not been observed on a GPU.
//!
//! ## Files (one idea each; the CUDA crate has the same tree)
//! - `lib.rs`: these docs, [`HipBackend`], and its [`NormKernel`] impl: validate the call
//!   (normkit-core, every operand's ownership included), build the kernel arguments
//!   (normkit-gpu-host), plan, launch.
//! - `startup.rs`: [`HipBackend::new`] / [`HipBackend::try_with_options`]: loading the runtime,
//!   finding the device, matching it to a code object ([`check_code_object`]: kernel list,
//!   kernarg sizes, wavefront size), loading the module; [`InitError`], [`HipOptions`],
//!   [`LIBRARY_ENV`].
//! - `buffers.rs`: [`HipBuffer`] (owned or a raw view; its owner id, which normkit-core's
//!   validation checks every operand against), alloc / upload / download,
//!   [`HipBackend::buffer_from_raw`], and the workspace calls share.
//! - `launch.rs`: executing a call: the planner's view of a validated call (from the kernel
//!   arguments normkit-gpu-host fills), then the planned kernels queued in order on the
//!   backend's stream.
//! - [`plan`]: kernels, groups, grids, LDS and workspace of a call, as pure functions (tested
//!   without a device).
//! - [`tuning`]: the launch tables and thresholds of each target as data, each with its
//!   reasoning ([`Tuning::for_gfx942`], ...), and the occupancy each kernel is designed for (its
//!   VGPR budget). (`config` is its former name, still re-exported.)
//! - `bench.rs`: [`normkit_core::BenchBackend`]: device description, copy ceiling, call timing
//!   between HIP events.
//! - [`result`]: the result layer over [`ffi`], as cudarc's `result` module: one function per
//!   runtime call, each returning `Result<_, `[`HipError`]`>` (the `hipError_t` code, its name
//!   and description); and the mapping onto [`NormError`] (out of memory:
//!   [`NormError::ResourceLimit`]; a kernel missing from the code object:
//!   [`NormError::Internal`]; anything else: [`NormError::Device`]).
//! - [`ffi`]: the HIP runtime, opened at run time with libloading (`libamdhip64.so`, then
//!   `.so.7`, `.so.6`, `.so.5`); only the functions used are declared; a missing library or
//!   `hipErrorNoDevice` become [`NormError::BackendUnavailable`]. Nothing panics.
//! - [`kernels`]: the code objects (one per target, built by build.rs from `kernels-hip/` and
//!   `kernels-common/`, embedded with `include_bytes!`, loaded from memory with
//!   `hipModuleLoadData`) and the kernel table generated from `kernels-hip/variants.rs`, the same
//!   list the C++ side expands into its entry points.
//! - [`elf`]: a std-only reader of AMDGPU code objects (kernel descriptors: wavefront size,
//!   scratch, VGPRs), used at start-up to check the code object against the device.
//! - [`params`]: the kernel argument structs, mirrored from kernels-common/nk_params.h (defined
//!   once, in normkit-gpu-host, for both GPU backends).
//!
//! ## Errors
//! | error | when |
//! |---|---|
//! | [`NormError::BackendUnavailable`] | start-up only ([`InitError`]): no runtime, no device, no code object for the device, a wavefront mismatch |
//! | [`NormError::ResourceLimit`] | `hipMalloc` out of memory (`resource: "device memory"`, the bytes asked for, the free bytes `hipMemGetInfo` reports or 0), or a grid, workgroup or LDS limit |
//! | [`NormError::Device`] | any other failed runtime call, with the [`HipError`] as its source (`during: "allocation"`, `"upload"`, `"kernel launch"`, ...) |
//! | [`NormError::Internal`] | the library's own fault: a kernel missing from the code object, a lock poisoned by an earlier panic |
//!
//! ## Start-up checks
//! The device's arch (from its compute capability) selects a code object; the device's
//! wavefront size (`hipDeviceAttributeWarpSize`) must equal the one every kernel descriptor of
//! that object was built for, else [`InitError::WavefrontMismatch`].
//!
//! ## Kernels (see `kernels-hip/README.md`)
//! The kernel bodies are kernels-common's, shared with the CUDA backend; `kernels-hip/platform.h`
//! maps their platform interface onto clang AMDGPU builtins (wave64 `ds_bpermute` butterflies,
//! address-space-1 `global_load_dwordx4`, LDS staging through `ds_write_b128`, correctly rounded
//! `1/sqrt`), and `kernels-hip/variants.rs` sets the HIP constants. Forward: a group of threads
//! per row, persistent workgroups, the row staged in LDS while it and the weights fit (64 KiB per
//! workgroup); longer rows take the split-row two-pass path (CDNA has no thread-block clusters).
//! Backward: a persistent grid keeps dW/dB partials in LDS (row path) or in registers (split
//! path) and writes one fp32 partial row per workgroup into a (parts x N) workspace; a finalize
//! kernel sums them in a fixed order: deterministic, no atomics. The path depends on N, the
//! dtypes and which operands exist, never on M or the layout (batch-invariant forward; see
//! [`plan`]). All indexing is 64-bit.
//!
//! FP8 outputs (`Forward::fp8`, all four formats): register rows (16-bit Gemma rows to N = 32768,
//! the rest to 16384), else split rows, and a separate transpose for `yT`
//! ([`plan::forward_fp8`]); gfx942 converts e4m3fnuz / e5m2fnuz and
//! gfx950 e4m3 / e5m2 with `v_cvt_pk_{fp8,bf8}_f32` (inputs saturated first), every other
//! (format, target) pair in exact software. Compiled and ISA-checked only; not yet run on AMD
//! hardware.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod bench;
mod buffers;
pub mod elf;
pub mod ffi;
pub mod kernels;
mod launch;
pub mod params;
pub mod plan;
mod raw;
pub mod result;
mod startup;
pub mod tuning;

/// The former name of [`tuning`] (`config::OCCUPANCY`, `config::vgpr_budget`, ...).
pub use tuning as config;

pub use buffers::HipBuffer;
pub use result::HipError;
pub use startup::{check_code_object, HipOptions, InitError, LIBRARY_ENV};
pub use tuning::{LaunchConfig, Tuning};

use normkit_core::{
    check_desc, check_dtypes, validate_backward_for, validate_forward_for, Backward, DType, DTypes, Direction, Forward, HostBuf, NormDesc,
    NormError, NormKernel, Result,
};
use startup::Ctx;
use std::fmt;
use std::sync::Arc;

/// The backend's name in errors and reports.
pub(crate) const BACKEND: &str = "hip";

/// normkit on an AMD GPU through HIP. See the crate docs.
///
/// Cloning is cheap and shares the device context (module, stream, workspace); the context is
/// released when the last clone and the last buffer it owns are dropped.
#[derive(Clone)]
pub struct HipBackend {
    ctx: Arc<Ctx>,
}

impl fmt::Debug for HipBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HipBackend").field("device", &self.ctx.name).field("arch", &self.ctx.arch).finish_non_exhaustive()
    }
}

impl HipBackend {
    /// The target the device was matched to (`gfx942`, `gfx950`, `gfx90a`).
    pub fn arch(&self) -> &'static str {
        self.ctx.arch
    }

    /// The launch tables and thresholds in use (the target's [`Tuning`]).
    pub fn config(&self) -> &Tuning {
        &self.ctx.config
    }

    /// The `hipStream_t` every call is queued on (the backend's own, or the caller's from
    /// [`HipBackend::from_raw_stream`]). Valid while the backend lives; do not destroy it.
    pub fn raw_stream(&self) -> *mut std::ffi::c_void {
        self.ctx.stream
    }

    /// Grows the workspace now to at least `bytes` (synchronising the stream if it grows), so
    /// later calls that need at most that much neither allocate nor synchronise. Returns the
    /// bytes held. `ResourceLimit` when the memory cannot be had.
    pub fn reserve_workspace(&self, bytes: usize) -> Result<usize> {
        drop(self.workspace(bytes)?);
        Ok(self.ctx.ws.lock().map_err(|_| poisoned())?.bytes)
    }
}

/// A mutex of the backend was poisoned by a panic in an earlier call.
pub(crate) fn poisoned() -> NormError {
    NormError::Internal { backend: BACKEND, what: "a previous call panicked while holding the backend's lock".into() }
}

impl NormKernel for HipBackend {
    type Buffer = HipBuffer;

    fn name(&self) -> &'static str {
        BACKEND
    }

    /// This backend's context: buffers it made (or viewed with [`HipBackend::buffer_from_raw`])
    /// carry its id; those of another backend are foreign.
    fn owner_id(&self) -> Option<u64> {
        Some(self.ctx.id)
    }

    fn device_name(&self) -> String {
        format!("{} ({})", self.ctx.name, self.ctx.arch)
    }

    /// Every op, option and dtype combination of the contract (the kernels take the dtypes at
    /// run time), FP8 outputs included: all four formats, converted by the target's instruction
    /// where it has one (gfx942: e4m3fnuz / e5m2fnuz; gfx950: e4m3 / e5m2), else by an exact
    /// software conversion (kernels-hip/README.md, "FP8 outputs").
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        check_desc(desc)?;
        check_dtypes(desc, dir, dtypes)
    }

    fn forward(&self, desc: &NormDesc, a: Forward<'_, HipBuffer>) -> Result<()> {
        let checked = validate_forward_for(self, desc, &a)?;
        let (mut params, shape) = launch::forward_args(desc, &a, &checked);
        if shape.fp8.is_some() {
            // Also with M = 0: a per-tensor `scale_inv` and a zero `amax` are still written.
            let launch = plan::forward_fp8(&self.ctx.config, self.ctx.cus, &shape, self.ctx.fwd_q_lds_limit)?;
            return self.run_forward_fp8(launch, &mut params);
        }
        if shape.m == 0 {
            return Ok(());
        }
        let launch = plan::forward(&self.ctx.config, self.ctx.cus, &shape, self.ctx.fwd_lds_limit)?;
        self.run_forward(launch, &mut params)
    }

    fn backward(&self, desc: &NormDesc, a: Backward<'_, HipBuffer>) -> Result<()> {
        let checked = validate_backward_for(self, desc, &a)?;
        let (mut params, shape) = launch::backward_args(desc, &a, &checked);
        let launch = plan::backward(&self.ctx.config, self.ctx.cus, &shape, self.ctx.bwd_lds_limit)?;
        self.run_backward(launch, &mut params)
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<HipBuffer> {
        self.alloc_buffer(dtype, len)
    }

    fn upload(&self, src: &HostBuf) -> Result<HipBuffer> {
        self.upload_buffer(src)
    }

    fn download(&self, buf: &HipBuffer) -> Result<HostBuf> {
        self.download_buffer(buf)
    }

    fn synchronize(&self) -> Result<()> {
        self.sync()
    }
}
