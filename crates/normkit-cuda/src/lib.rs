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

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut};
use normkit_core::{
    validate_backward_for, validate_forward_for, Backward, DType, DTypes, Direction, Forward, HostBuf, NormDesc, NormKernel, Result,
};

pub use buffers::{CudaBuffer, CudaElem, CudaMut, CudaRef};
/// cudarc, re-exported: the version whose `CudaStream` and `CudaSlice` the backend takes.
pub use cudarc;
pub use tuning::{RowConfig, Tuning};

use buffers::Memory;
use startup::{dev_err, Device, BACKEND};

/// The number of CUDA devices (0 when the driver sees none); `BackendUnavailable` without a
/// driver. One backend per device: `CudaBackend::with_device(i)` for `i < device_count()?`.
pub fn device_count() -> Result<usize> {
    startup::device_count()
}

/// Names of the kernels in the embedded fatbin (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    kernels::ALL.iter().map(|k| k.name).collect()
}

/// The CUDA backend: one device, one stream — its own ([`CudaBackend::new`],
/// [`CudaBackend::with_device`]) or the caller's ([`CudaBackend::from_stream`]).
///
/// # Threads and devices
/// `CudaBackend` is `Send + Sync`: threads may share one backend, and each call's results are
/// bitwise those of the same call made alone (calls share the stream, so they run in the order
/// they were queued; the workspace is lent to one call at a time). For several GPUs make one
/// backend per device; each binds its own context on the calling thread before it touches the
/// driver, so one thread may drive several devices in turn. See the `multi_device` example of
/// the `normkit` crate.
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
        let tuning = startup::tuning(&dev);
        Ok(CudaBackend { dev, tuning, mem: Memory::default() })
    }

    /// Opens device 0.
    pub fn new() -> Result<Self> {
        Self::with_device(0)
    }

    /// A backend on the caller's stream: every launch, workspace allocation and copy of this
    /// backend is queued on `stream`, in its context (an engine's, candle's
    /// `CudaDevice::cuda_stream()`), so normkit's calls are ordered with the engine's own work
    /// without any synchronisation. The kernels are loaded into that context once, here; make one
    /// backend per stream (or per device) and keep it.
    ///
    /// Nothing on the hot path synchronises: `forward` and `backward` only queue kernels, except
    /// when the workspace has to grow (see [`CudaBackend::reserve_workspace`] to size it up
    /// front, which also keeps a CUDA graph capture of the caller's stream working: growth
    /// during a capture is refused with `ResourceLimit` instead of breaking the capture).
    /// `upload`, `download` and `synchronize` synchronise `stream`, as their contracts say.
    /// To capture normkit's calls in a graph along with cudarc's, allocate the captured slices
    /// with cudarc's event tracking off (`CudaContext::disable_event_tracking`; candle:
    /// `CudaDevice::disable_event_tracking`): otherwise their views wait on events recorded before
    /// the capture, which invalidates it — as it does cudarc's own launches.
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use normkit_cuda::CudaBackend;
    /// use normkit_core::{Forward, InOut, MatMut, MatRef, NormDesc, NormKernel, VecRef};
    ///
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?; // the engine's stream
    /// let nk = CudaBackend::from_stream(stream.clone())?;
    /// let (m, n) = (4, 4096);
    /// let x = stream.clone_htod(&vec![half::bf16::ONE; m * n])?;
    /// let w = stream.clone_htod(&vec![half::bf16::ONE; n])?;
    /// let mut y = stream.alloc_zeros::<half::bf16>(m * n)?;
    /// {
    ///     let (xv, wv, mut yv) = (nk.view(&x), nk.view(&w), nk.view_mut(&mut y));
    ///     let args = Forward::new(InOut::separate(MatRef::new(&*xv, m, n), MatMut::new(&mut *yv, m, n))).weight(VecRef::new(&*wv));
    ///     nk.forward(&NormDesc::rms(1e-6), args)?;
    /// } // the views end: cudarc's events record normkit's use of x, w and y
    /// let host = stream.clone_dtoh(&y)?; // ordered after the norm on the same stream
    /// assert!((host[0].to_f32() - 1.0).abs() < 1e-2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Self> {
        // The driver was initialised by whoever made the stream's context.
        let dev = Device::on_stream(stream)?;
        let tuning = startup::tuning(&dev);
        Ok(CudaBackend { dev, tuning, mem: Memory::default() })
    }

    /// The stream every call of this backend is queued on (its own, or the one given to
    /// [`CudaBackend::from_stream`]).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.dev.stream
    }

    /// The context the kernels are loaded in and buffers must belong to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.dev.ctx
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.dev.ctx.ordinal()
    }

    /// A read-only normkit buffer over a cudarc `CudaSlice<T>` or `CudaView<T>` (`T`: `f32`,
    /// `half::f16`, `half::bf16`), without copying. The view borrows the slice, so the slice
    /// cannot be dropped or written by safe code while normkit may read it; pass `&*view` where a
    /// `&CudaBuffer` goes. cudarc's stream synchronisation is honoured: the backend's stream waits
    /// for the slice's last write, and the slice's read event is recorded when the view is dropped
    /// (after the calls that used it were queued).
    ///
    /// A slice of another context (another device) gives a view that every call rejects with
    /// [`NormError::ForeignBuffer`](normkit_core::NormError::ForeignBuffer), naming the operand,
    /// before anything is written.
    pub fn view<'a, T: CudaElem, S: DevicePtr<T>>(&'a self, slice: &'a S) -> CudaRef<'a> {
        buffers::view(&self.dev, slice)
    }

    /// A writable normkit buffer over a cudarc `CudaSlice<T>` or `CudaViewMut<T>`, borrowed
    /// mutably (no other borrow of the slice can exist while it lives); pass `&mut *view` where a
    /// `&mut CudaBuffer` goes. As [`CudaBackend::view`], with the slice's write event recorded on
    /// drop. Sub-ranges: `slice.slice_mut(a..b)` gives a `CudaViewMut` to view.
    pub fn view_mut<'a, T: CudaElem, S: DevicePtrMut<T>>(&'a self, slice: &'a mut S) -> CudaMut<'a> {
        buffers::view_mut(&self.dev, slice)
    }

    /// The most workspace bytes any call with at most `max_m` rows of at most `max_n` columns
    /// can need on this device, whatever the op and dtypes (the bound in [`CudaBackend`]'s docs).
    pub fn workspace_bound(&self, max_m: usize, max_n: usize) -> usize {
        plan::workspace_bound(max_m, max_n, self.dev.facts.sms as usize)
    }

    /// Grows the workspace now to [`CudaBackend::workspace_bound`]`(max_m, max_n)`, so that no
    /// later call up to that size allocates or synchronises: do this before capturing a CUDA
    /// graph or entering a latency-sensitive loop. Synchronises the stream if it grows. Returns
    /// the bytes the workspace holds. `ResourceLimit` when the memory cannot be had (the backend
    /// stays usable and holds no workspace).
    pub fn reserve_workspace(&self, max_m: usize, max_n: usize) -> Result<usize> {
        let bytes = self.workspace_bound(max_m, max_n);
        drop(self.mem.workspace(&self.dev, bytes)?);
        Ok(self.mem.workspace_bytes())
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.dev.cc
    }

    /// Multiprocessor count.
    pub fn sm_count(&self) -> u32 {
        self.dev.facts.sms
    }

    /// How many times this backend has launched the kernel named `name` (a symbol of
    /// [`kernel_names`]; 0 for any other name): for tests that must know which path ran, and for
    /// diagnostics. Counted when a launch is queued, whether or not it has run yet.
    pub fn launches(&self, name: &str) -> u64 {
        kernels::ALL.iter().find(|k| k.name == name).map_or(0, |k| self.dev.launches[k.index].load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The launch tables, thresholds and overrides in use (the environment's overrides were read
    /// when the backend was created).
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// This backend with other launch tables and thresholds: for A/B measurements and for tests
    /// that walk a path the defaults leave for another shape (the general backward at M ≤ 8, the
    /// plain register forward on a decode-sized grid). Plans are checked against the device as
    /// always; a table that asks for more than a kernel allows falls back to another path.
    #[doc(hidden)]
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
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

    /// Every valid call, FP8 outputs included (all four formats: e4m3 and e5m2 by the
    /// `cvt.rn.satfinite` instructions, the fnuz formats by an exact software conversion).
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
