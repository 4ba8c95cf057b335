//! # normkit-cuda
//!
//! normkit's CUDA backend for Hopper (sm_90a) and Blackwell (sm_100a). The kernels
//! (`kernels-cuda/norm.cu` over the vendor-neutral bodies in `kernels-common/`) are compiled
//! ahead of time by nvcc 13.0 into one fatbin embedded in this crate and loaded from memory
//! through cudarc's driver API, loaded at run time (`dynamic-loading`): a binary built with
//! this crate starts on a machine without CUDA and [`CudaBackend::new`] then returns
//! [`NormError::BackendUnavailable`].
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

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod bench;
mod cluster;
mod params;
mod rows;
pub mod tuning;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg};
use normkit_core::{
    validate_backward, validate_forward, Backward, Buffer, CastingMode, DType, DTypes, Direction, Forward, HostBuf, InOut, Layout,
    NormDesc, NormError, NormKernel, NormKind, Operand, Result, Span,
};

use params::{BwdParams, FwdParams};
pub use tuning::{RowConfig, Tuning};

/// The generated kernel table (from kernels-cuda/kernels.def).
#[allow(dead_code)]
mod kernels {
    /// One kernel entry point of the fatbin.
    #[derive(Debug, Clone, Copy)]
    pub struct Kernel {
        pub index: usize,
        pub name: &'static str,
        pub max_threads: u32,
    }
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}
use kernels::Kernel;

/// Every kernel, as one fatbin (sm_90a, sm_100a, compute_90 PTX).
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/normkit.fatbin"));

const BACKEND: &str = "cuda";

/// Names of the kernels in the embedded fatbin (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    kernels::ALL.iter().map(|k| k.name).collect()
}

fn dev_err(during: &'static str) -> impl FnOnce(cu::DriverError) -> NormError {
    move |e| NormError::Device { backend: BACKEND, during, source: Box::new(e) }
}

fn dt_code(d: DType) -> i32 {
    match d {
        DType::F32 => params::DT_F32,
        DType::F16 => params::DT_F16,
        _ => params::DT_BF16,
    }
}

/// Device memory owned by a [`CudaBuffer`]; freed on drop.
#[derive(Debug)]
struct DeviceAlloc {
    ptr: u64,
    ctx: Arc<CudaContext>,
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from cuMemAlloc in this context and is freed exactly once, here;
            // cuMemFree waits for work using it to finish. An error cannot be reported from drop.
            let _ = unsafe { cu::free_sync(self.ptr) };
        }
    }
}

/// A CUDA device buffer: `len` elements of `dtype`.
#[derive(Debug)]
pub struct CudaBuffer {
    dtype: DType,
    len: usize,
    ptr: u64,
    ctx_id: usize,
    _owner: Option<DeviceAlloc>,
}

impl CudaBuffer {
    /// Device address of element 0.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }
}

impl Buffer for CudaBuffer {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn base_addr(&self) -> Option<u64> {
        Some(self.ptr)
    }
}

/// The workspace lent to one call: its address, valid while the lease lives (see
/// `CudaBackend::workspace`).
struct WsLease<'a> {
    _lock: Option<MutexGuard<'a, Workspace>>,
    ptr: u64,
}

/// Scratch memory reused across calls (stream-ordered; grows, never shrinks).
#[derive(Debug, Default)]
struct Workspace {
    alloc: Option<DeviceAlloc>,
    bytes: usize,
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
/// and bias at the largest M and N. A failed growth returns [`NormError::ResourceLimit`]
/// (`resource: "device memory"`, the bytes requested, the free bytes cuMemGetInfo reports)
/// before anything is launched, so the call's outputs are untouched; the backend then holds no
/// workspace, stays usable, and the next call that needs one allocates again. `alloc` and
/// `upload` report a failed cuMemAlloc the same way.
#[derive(Debug)]
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    funcs: Vec<CudaFunction>,
    name: String,
    sms: u32,
    cc: (i32, i32),
    tuning: &'static Tuning,
    /// Dynamic shared memory a row-path CTA may use (the same for every row kernel).
    smem_limit: usize,
    /// Backward register path: N above which one chunk per thread is used (env
    /// `NORMKIT_CUDA_BWD_K1_ABOVE`, default 4096; for tuning).
    bwd_k1_above: usize,
    /// Forward register path with 8 chunks per thread (env `NORMKIT_CUDA_FWD_K8=0` turns it off;
    /// for tuning).
    fwd_k8: bool,
    /// ... for LayerNorm as well (env `NORMKIT_CUDA_FWD_K8=all`; for tuning).
    fwd_k8_ln: bool,
    /// Register kernels' prefetching twins (env `NORMKIT_CUDA_PF=0` turns them off; for A/B
    /// measurements — both give the same bits).
    pf: bool,
    /// Register kernels without their FULL specialisation (env `NORMKIT_CUDA_FULL=0`; for A/B).
    no_full: bool,
    /// Forward register kernels without prefetch on an occupancy-sized persistent grid instead
    /// of one CTA per rows_per_cta rows (env `NORMKIT_CUDA_FWD_GRID=persist`; for tuning).
    fwd_persistent: bool,
    /// Backward register kernels: at most this many CTAs (partial rows) per SM (env
    /// `NORMKIT_CUDA_BWD_CTAS_PER_SM`; for tuning).
    bwd_ctas_per_sm: Option<u32>,
    /// Finalize: at N ≥ 65536, at most this many partial rows take the one-column-per-thread
    /// kernel (env `NORMKIT_CUDA_FIN_COLS_MAX`, default 64; for A/B measurements).
    fin_cols_max: i64,
    /// Largest dynamic shared memory each kernel may be launched with (bytes).
    dyn_smem_max: Vec<usize>,
    workspace: Mutex<Workspace>,
    /// Row-batch backward settings (rows.rs).
    rows: rows::RowsConfig,
    /// Programmatic dependent launches for the row-batch and finalize kernels (env
    /// `NORMKIT_CUDA_PDL=0` turns them off; for A/B measurements).
    pdl: bool,
    /// Device allocations still to fail on purpose ([`CudaBackend::inject_alloc_failures`]).
    alloc_faults: AtomicU32,
}

/// Every row-path kernel (their shared-memory limit is raised together).
const ROW_KERNELS: [Kernel; 6] = [
    kernels::NK_FWD_ROW_A,
    kernels::NK_FWD_ROW_AH,
    kernels::NK_FWD_ROW_U,
    kernels::NK_BWD_ROW_A,
    kernels::NK_BWD_ROW_AH,
    kernels::NK_BWD_ROW_U,
];

/// Rounds up to a multiple of 256 bytes (workspace sub-regions).
fn align256(b: usize) -> usize {
    b.div_ceil(256) * 256
}

impl CudaBackend {
    /// Opens device `ordinal`. Errors, never panics: no driver library, no device, or a device
    /// the fatbin has no code for.
    pub fn with_device(ordinal: usize) -> Result<Self> {
        // SAFETY: only probes for the driver library (dlopen); cudarc panics on first use otherwise.
        if !unsafe { sys::is_culib_present() } {
            return Err(NormError::BackendUnavailable { backend: BACKEND, reason: "no CUDA driver (libcuda.so not found)".into() });
        }
        let unavailable = |reason: String| NormError::BackendUnavailable { backend: BACKEND, reason };
        cu::init().map_err(|e| unavailable(format!("cuInit failed: {e}")))?;
        let count = CudaContext::device_count().map_err(|e| unavailable(format!("no CUDA device ({e})")))?;
        if count <= 0 {
            return Err(unavailable("no CUDA device".into()));
        }
        if ordinal >= count as usize {
            return Err(unavailable(format!("no CUDA device {ordinal} ({count} present)")));
        }
        let ctx = CudaContext::new(ordinal).map_err(dev_err("context creation"))?;
        let cc = ctx.compute_capability().map_err(dev_err("device query"))?;
        if cc.0 < 9 {
            return Err(unavailable(format!("compute capability {}.{} is below 9.0 (the fatbin targets sm_90+)", cc.0, cc.1)));
        }
        if FATBIN.is_empty() {
            return Err(unavailable("this build holds no kernels (built by clippy or with NORMKIT_KERNELS=skip)".into()));
        }
        let stream = ctx.new_stream().map_err(dev_err("stream creation"))?;
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(FATBIN.to_vec())).map_err(dev_err("module load"))?;
        let mut funcs = Vec::with_capacity(kernels::ALL.len());
        for k in kernels::ALL.iter() {
            let f = module.load_function(k.name).map_err(dev_err("kernel lookup"))?;
            funcs.push(f);
        }
        let smem_optin = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(dev_err("device query"))?;
        let mut smem_limit = smem_optin;
        for k in ROW_KERNELS {
            // The opt-in limit covers static + dynamic shared memory: leave the static part out.
            let static_smem = funcs[k.index]
                .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
                .map_err(dev_err("kernel attribute"))?;
            smem_limit = smem_limit.min(smem_optin - static_smem);
        }
        for k in ROW_KERNELS {
            funcs[k.index]
                .set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_limit)
                .map_err(dev_err("kernel attribute"))?;
        }
        // The register kernels (prefetch buffers, the backward's group reduction): each its own
        // opt-in limit less its static shared memory.
        let mut dyn_smem_max = vec![48 * 1024; kernels::ALL.len()];
        for k in kernels::ALL.iter() {
            if ROW_KERNELS.iter().any(|r| r.index == k.index) {
                dyn_smem_max[k.index] = smem_limit as usize;
            } else if k.name.starts_with("nk_fwd_reg") || k.name.starts_with("nk_bwd_reg") || k.name.starts_with("nk_bwd_rows") {
                let f = &funcs[k.index];
                let st =
                    f.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).map_err(dev_err("kernel attribute"))?;
                let lim = smem_optin - st;
                f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lim)
                    .map_err(dev_err("kernel attribute"))?;
                dyn_smem_max[k.index] = lim as usize;
            }
        }
        let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(dev_err("device query"))? as u32;
        let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        Ok(CudaBackend {
            ctx,
            stream,
            _module: module,
            funcs,
            name,
            sms,
            cc,
            tuning: Tuning::for_cc(cc.0).with_overrides(
                std::env::var("NORMKIT_CUDA_FWD_TABLE").ok().as_deref(),
                std::env::var("NORMKIT_CUDA_BWD_TABLE").ok().as_deref(),
                std::env::var("NORMKIT_CUDA_BWD4_TABLE").ok().as_deref(),
            ),
            smem_limit: smem_limit as usize,
            bwd_k1_above: std::env::var("NORMKIT_CUDA_BWD_K1_ABOVE").ok().and_then(|v| v.parse().ok()).unwrap_or(4096),
            fwd_k8: std::env::var("NORMKIT_CUDA_FWD_K8").map_or(true, |v| v != "0"),
            fwd_k8_ln: std::env::var("NORMKIT_CUDA_FWD_K8").is_ok_and(|v| v == "all"),
            pf: std::env::var("NORMKIT_CUDA_PF").map_or(true, |v| v != "0"),
            no_full: std::env::var("NORMKIT_CUDA_FULL").is_ok_and(|v| v == "0"),
            fwd_persistent: std::env::var("NORMKIT_CUDA_FWD_GRID").is_ok_and(|v| v == "persist"),
            bwd_ctas_per_sm: std::env::var("NORMKIT_CUDA_BWD_CTAS_PER_SM").ok().and_then(|v| v.parse().ok()).filter(|&c| c > 0),
            fin_cols_max: std::env::var("NORMKIT_CUDA_FIN_COLS_MAX").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
            dyn_smem_max,
            workspace: Mutex::new(Workspace::default()),
            rows: rows::RowsConfig::from_env(),
            pdl: std::env::var("NORMKIT_CUDA_PDL").map_or(true, |v| v != "0"),
            alloc_faults: AtomicU32::new(0),
        })
    }

    /// Opens device 0.
    pub fn new() -> Result<Self> {
        Self::with_device(0)
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }

    /// Multiprocessor count.
    pub fn sm_count(&self) -> u32 {
        self.sms
    }

    /// The launch tables in use.
    pub fn tuning(&self) -> &'static Tuning {
        self.tuning
    }

    fn ctx_id(&self) -> usize {
        self.ctx.cu_ctx() as usize
    }

    /// A buffer viewing `len` elements of `dtype` at device address `ptr`, owned elsewhere.
    ///
    /// # Safety
    /// `ptr .. ptr + len·size` must be device memory of this backend's context, valid for reads
    /// and writes for as long as the buffer (and any call using it) lives. Views may overlap
    /// each other; the validation of every call rejects overlapping operands
    /// ([`NormError::Aliasing`]) except the explicit in-place form.
    pub unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: DType) -> Result<CudaBuffer> {
        let es = dtype.size_bytes();
        if !ptr.is_multiple_of(es as u64) {
            return Err(NormError::Alignment { operand: Operand::X, required: es, offset_bytes: (ptr % es as u64) as usize });
        }
        if len.checked_mul(es).and_then(|b| (ptr as usize).checked_add(b)).is_none() {
            return Err(NormError::Overflow { operand: Operand::X });
        }
        Ok(CudaBuffer { dtype, len, ptr, ctx_id: self.ctx_id(), _owner: None })
    }

    /// Fault injection for tests: the next `n` device allocations of this backend — workspace
    /// growth in `forward`/`backward`, `alloc`, `upload` — fail as if cuMemAlloc had returned
    /// `CUDA_ERROR_OUT_OF_MEMORY`, through the same error mapping as a real failure
    /// ([`NormError::ResourceLimit`] with `resource: "device memory"`, the bytes requested, and
    /// the free memory cuMemGetInfo reports, which is real and so may exceed the request).
    /// `0` disarms. Not part of the supported API.
    #[doc(hidden)]
    pub fn inject_alloc_failures(&self, n: u32) {
        self.alloc_faults.store(n, Ordering::Relaxed);
    }

    /// Bytes of device memory the workspace holds now (0 before the first call that needs one,
    /// and after a failed growth). See [`CudaBackend`] for its bound.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }

    /// (free, total) bytes of device memory, as cuMemGetInfo reports them: the whole device,
    /// every context and process on it.
    pub fn device_memory(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().map_err(dev_err("device query"))
    }

    /// Takes one injected allocation failure, if any is armed.
    fn take_alloc_fault(&self) -> bool {
        self.alloc_faults.load(Ordering::Relaxed) > 0
            && self.alloc_faults.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
    }

    fn malloc(&self, bytes: usize) -> Result<DeviceAlloc> {
        self.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
        let r = if self.take_alloc_fault() {
            Err(cu::DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        } else {
            // SAFETY: a plain cuMemAlloc of `bytes > 0` bytes in the bound context.
            unsafe { cu::malloc_sync(bytes) }
        };
        match r {
            Ok(ptr) => Ok(DeviceAlloc { ptr, ctx: self.ctx.clone() }),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let free = self.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
                Err(NormError::ResourceLimit { resource: "device memory", requested: bytes as u64, available: free })
            }
            Err(e) => Err(dev_err("allocation")(e)),
        }
    }

    fn check_own(&self, operand: Operand, b: &CudaBuffer) -> Result<()> {
        if b.ctx_id != self.ctx_id() {
            return Err(NormError::ForeignBuffer { backend: BACKEND, operand });
        }
        Ok(())
    }

    /// Makes sure the workspace holds `bytes` and lends it to one call. Growing waits for queued
    /// work (the old workspace may be in use) and is refused during graph capture. Every caller
    /// asks before its first launch, so a failed growth (`ResourceLimit`, from `malloc`) leaves
    /// the call's outputs unwritten; the old workspace is freed first (the peak is the new size,
    /// not old + new), so after a failure the backend holds none and the next call that needs
    /// one allocates again.
    ///
    /// The lease holds the workspace's lock until the call has queued its kernels and drops it:
    /// another thread sharing the backend cannot grow (and so free) the workspace between this
    /// call reading its address and launching on it. Calls that share it run in stream order.
    /// `bytes == 0` takes no lock and lends address 0.
    fn workspace(&self, bytes: usize) -> Result<WsLease<'_>> {
        if bytes == 0 {
            return Ok(WsLease { _lock: None, ptr: 0 });
        }
        let mut ws = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        if ws.bytes < bytes {
            self.stream.synchronize().map_err(dev_err("workspace growth"))?;
            ws.alloc = None;
            ws.bytes = 0;
            let a = self.malloc(bytes.max(1 << 20))?;
            ws.bytes = bytes.max(1 << 20);
            ws.alloc = Some(a);
        }
        let ptr = ws.alloc.as_ref().map_or(0, |a| a.ptr);
        Ok(WsLease { _lock: Some(ws), ptr })
    }

    /// `launch` as a programmatic dependent launch (cuLaunchKernelEx with
    /// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): the grid may be set up before the
    /// previous kernel of the stream has finished. Only for kernels that execute
    /// `griddepcontrol.wait` before their first memory access (the row-batch and finalize
    /// kernels), so stream order still holds for every byte. Plain `launch` with PDL off.
    fn launch_pdl(&self, k: Kernel, grid: u32, block: u32, smem: u32, p: &BwdParams) -> Result<()> {
        if !self.pdl {
            return self.launch(k, (grid, 1), block, smem, p);
        }
        // SAFETY: a plain C struct (an id and a union of plain values): all-zero is a valid value.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        self.launch_ex(k, grid, block, smem, attr, p)
    }

    fn launch<P: cudarc::driver::DeviceRepr>(&self, k: Kernel, grid: (u32, u32), block: u32, smem: u32, p: &P) -> Result<()> {
        debug_assert!(block <= k.max_threads);
        let cfg = LaunchConfig { grid_dim: (grid.0, grid.1, 1), block_dim: (block, 1, 1), shared_mem_bytes: smem };
        let f = &self.funcs[k.index];
        let mut b = self.stream.launch_builder(f);
        b.arg(p);
        // SAFETY: the kernel's single argument is `P`, the #[repr(C)] mirror of the C++ struct it
        // takes; every address in it was validated by normkit-core against its buffer's length
        // (views in bounds, outputs disjoint from other operands), and the workspace is sized
        // for the launch. Buffers outlive the call's queued work because the API borrows them
        // until it returns and `download`/`synchronize`/drop (cuMemFree) order after the stream.
        unsafe { b.launch(cfg) }.map_err(dev_err("kernel launch"))?;
        Ok(())
    }
}

/// Dynamic shared memory of the forward row kernel (nk_norm.cuh, fwd_row): the staged weight
/// and bias, then per group the staged row (and residual).
fn fwd_row_smem(rc: RowConfig, n: usize, slot: usize, nvec: usize, staged: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nvec + rc.rows_per_cta as usize * staged * k * g * slot
}

/// Dynamic shared memory of the backward row kernel (nk_norm.cuh, bwd_row): the staged weight,
/// then per group the staged x, dy (and d_residual_out) and the fp32 dW/dB accumulators.
fn bwd_row_smem(rc: RowConfig, n: usize, slot: usize, nw: usize, staged: usize, nacc: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nw + rc.rows_per_cta as usize * (staged * k * g * slot + nacc * k * g * 8 * 4)
}

/// Address of element `offset` of a buffer.
fn addr(b: &CudaBuffer, offset: usize) -> u64 {
    b.ptr + (offset * b.dtype.size_bytes()) as u64
}

/// Whether a 2-D view allows the 16-byte path: start 16-byte aligned, stride a multiple of 8.
fn mat_vec_ok(b: &CudaBuffer, l: &Layout) -> bool {
    addr(b, l.offset).is_multiple_of(16) && l.stride.is_multiple_of(8)
}
fn span_vec_ok(b: &CudaBuffer, s: &Span) -> bool {
    addr(b, s.offset).is_multiple_of(16)
}

fn in_out<'a>(io: &'a InOut<'_, CudaBuffer>) -> (&'a CudaBuffer, &'a CudaBuffer) {
    match io {
        InOut::Separate { input, output } => (input.buf, &*output.buf),
        InOut::InPlace(m) => (&*m.buf, &*m.buf),
    }
}

fn casting_code(c: CastingMode) -> i32 {
    match c {
        CastingMode::Gemma => 0,
        CastingMode::Llama => 1,
        _ => 2,
    }
}

fn to_i32(v: u64, what: &'static str) -> Result<u32> {
    u32::try_from(v).map_err(|_| NormError::ResourceLimit { resource: what, requested: v, available: u32::MAX as u64 })
}

/// Chunks per thread the forward register-resident kernels hold (REG_KMAX of nk_norm.cuh; the 8-
/// and 16-chunk variants hold twice and four times as many).
const REG_KMAX: usize = 4;

fn dt_tag(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F16 => "f16",
        _ => "bf16",
    }
}

fn find_kernel(name: &str) -> Result<Kernel> {
    kernels::ALL
        .iter()
        .copied()
        .find(|k| k.name == name)
        .ok_or_else(|| NormError::Internal { backend: BACKEND, what: format!("kernel {name} is missing from the fatbin") })
}

const SPLIT_CHUNK: usize = kernels::NK_SPLIT_THREADS * kernels::NK_SPLIT_ELEMS;
/// Grid-stride kernels never need more CTAs than this; rows beyond are walked in a loop.
const MAX_GRID: u64 = 1 << 20;

impl NormKernel for CudaBackend {
    type Buffer = CudaBuffer;

    fn name(&self) -> &'static str {
        BACKEND
    }

    fn device_name(&self) -> String {
        self.name.clone()
    }

    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        normkit_core::check_desc(desc)?;
        normkit_core::check_dtypes(desc, dir, dtypes)
    }

    fn forward(&self, desc: &NormDesc, a: Forward<'_, CudaBuffer>) -> Result<()> {
        let plan = validate_forward(desc, &a)?;
        let (xb, yb) = in_out(&a.x);
        self.check_own(Operand::X, xb)?;
        self.check_own(Operand::Y, yb)?;
        let mut p = FwdParams {
            x: addr(xb, plan.x.offset),
            y: addr(yb, plan.y.offset),
            m: plan.m as i64,
            n: plan.n as i64,
            sx: plan.x.stride as i64,
            sy: plan.y.stride as i64,
            eps: desc.eps,
            offset: desc.weight.map_or(0.0, |w| w.offset),
            dt_x: dt_code(plan.dtypes.x),
            dt_y: dt_code(plan.dtypes.y),
            dt_r: dt_code(plan.dtypes.residual),
            dt_w: dt_code(plan.dtypes.weight),
            casting: casting_code(desc.casting),
            ..Default::default()
        };
        let mut vec_ok = plan.n % 8 == 0 && mat_vec_ok(xb, &plan.x) && mat_vec_ok(yb, &plan.y);
        let mut flags = if desc.kind == NormKind::Layer { params::F_LN } else { 0 };
        if let (Some(r), Some((rl, rol, _))) = (&a.residual, plan.residual) {
            let (rb, rob) = in_out(r);
            self.check_own(Operand::Residual, rb)?;
            self.check_own(Operand::ResidualOut, rob)?;
            p.r = addr(rb, rl.offset);
            p.r_out = addr(rob, rol.offset);
            p.sr = rl.stride as i64;
            p.sro = rol.stride as i64;
            vec_ok &= mat_vec_ok(rb, &rl) && mat_vec_ok(rob, &rol);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_own(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
            flags |= params::F_WEIGHT;
        }
        if let (Some(b), Some(s)) = (&a.bias, plan.bias) {
            self.check_own(Operand::Bias, b.buf)?;
            p.b = addr(b.buf, s.offset);
            vec_ok &= span_vec_ok(b.buf, &s);
            flags |= params::F_BIAS;
        }
        if let (Some(r), Some(s)) = (&a.rstd, plan.rstd) {
            self.check_own(Operand::Rstd, r.buf)?;
            p.rstd = addr(r.buf, s.offset);
            flags |= params::F_STATS;
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_own(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        p.flags = flags | if self.no_full { params::F_NOFULL } else { 0 };
        if plan.m == 0 {
            return Ok(());
        }
        // Every tensor 16-bit: 16-byte staging slots and, when aligned, the kernel that keeps one
        // 16-byte register set per chunk. A dtype property: strided and contiguous views of the
        // same dtypes take the same path and the same reduction order.
        let all16 = plan.dtypes.x != DType::F32
            && plan.dtypes.y != DType::F32
            && (!desc.residual || plan.dtypes.residual != DType::F32)
            && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || plan.dtypes.weight != DType::F32);
        let slot = if all16 { 16 } else { 32 };
        if let Some(rc) = tuning::pick(self.tuning.fwd, plan.n) {
            // The register-resident kernels: every tensor in x's dtype, Gemma casting, the row's
            // chunks fit REG_KMAX per thread. Chosen by N, dtypes and flags only; the 16-byte and
            // element-wise variants share one body (same chunks, same order).
            let dt = plan.dtypes.x;
            let uniform = plan.dtypes.y == dt
                && (!desc.residual || plan.dtypes.residual == dt)
                && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || plan.dtypes.weight == dt);
            let block = rc.group * rc.rows_per_cta;
            let k_per_thread = plan.n.div_ceil(8).div_ceil(rc.group as usize);
            let wide_ok = dt != DType::F32 && !desc.residual;
            // 8 chunks per thread: bf16 RMSNorm without residual only (N = 65536 with 1024-thread groups;
            // H200: 222 µs against 247 for the staged kernel at 2048×65536; LayerNorm was slower).
            let k8 = self.fwd_k8
                && k_per_thread > REG_KMAX
                && k_per_thread <= 2 * REG_KMAX
                && dt == DType::BF16
                && !desc.residual
                && (desc.kind != NormKind::Layer || self.fwd_k8_ln);
            // 16 chunks per thread (a warp per row at N = 4096): 16-bit dtypes without residual,
            // where a table row asks for it (256-thread CTAs at most).
            let k16 = k_per_thread > 2 * REG_KMAX && k_per_thread <= 4 * REG_KMAX && wide_ok && block <= 256;
            if uniform && desc.casting == CastingMode::Gemma && (k_per_thread <= REG_KMAX || k8 || k16) && (block <= 512 || wide_ok) {
                let kind = if flags & params::F_LN != 0 { "ln" } else { "rms" };
                let res = if desc.residual { "_res" } else { "" };
                let ks = if k16 {
                    "16"
                } else if k8 {
                    "8"
                } else {
                    ""
                };
                let k = find_kernel(&format!("nk_fwd_reg{ks}_{}_{kind}{res}_{}", dt_tag(dt), if vec_ok { "a" } else { "u" }))?;
                p.group = rc.group as i32;
                p.rpc = rc.rows_per_cta as i32;
                p.slot = slot as i32;
                // One CTA per rows_per_cta rows: the hardware balances the last wave (an
                // occupancy-sized persistent grid left the tail ~3% idle at 32768×4096).
                let work = (plan.m as u64).div_ceil(rc.rows_per_cta as u64);
                let blocks = if self.fwd_persistent { self.persistent_blocks(k, block, 0, work)? } else { work.min(MAX_GRID) as u32 };
                return self.launch(k, (blocks, 1), block, 0, &p);
            }
            let nvec = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
            let staged = 1 + usize::from(desc.residual);
            let smem = fwd_row_smem(rc, plan.n, slot, nvec, staged);
            if smem <= self.smem_limit {
                p.group = rc.group as i32;
                p.rpc = rc.rows_per_cta as i32;
                p.slot = slot as i32;
                let k = match (vec_ok, all16) {
                    (true, true) => kernels::NK_FWD_ROW_AH,
                    (true, false) => kernels::NK_FWD_ROW_A,
                    _ => kernels::NK_FWD_ROW_U,
                };
                let block = rc.group * rc.rows_per_cta;
                let blocks = self.persistent_blocks(k, block, smem, (plan.m as u64).div_ceil(rc.rows_per_cta as u64))?;
                return self.launch(k, (blocks, 1), block, smem as u32, &p);
            }
        }
        // Cluster row kernels (sm_90+, cluster.rs): chosen by N, dtypes and flags only.
        if self.cluster_forward(desc, &plan.dtypes, &mut p, vec_ok)? {
            return Ok(());
        }
        // Split rows.
        let s = plan.n.div_ceil(SPLIT_CHUNK);
        let tiles = (plan.m as u64).checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
        // [chunk partials (M·S pairs) | combined (mean, rstd) per row (M pairs)]
        let bytes = tiles
            .checked_add(plan.m as u64)
            .and_then(|t| t.checked_mul(8))
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(NormError::ResourceLimit { resource: "workspace bytes", requested: u64::MAX, available: usize::MAX as u64 })?;
        let ws = self.workspace(bytes)?;
        p.ws = ws.ptr;
        p.nsplit = s as i64;
        let blocks = tiles.min(MAX_GRID) as u32;
        let threads = kernels::NK_SPLIT_THREADS as u32;
        let (ks, ka) = match (vec_ok, all16) {
            (true, true) => (kernels::NK_FWD_SPLIT_STATS_AH, kernels::NK_FWD_SPLIT_APPLY_PRE_AH),
            (true, false) => (kernels::NK_FWD_SPLIT_STATS_A, kernels::NK_FWD_SPLIT_APPLY_PRE_A),
            _ => (kernels::NK_FWD_SPLIT_STATS_U, kernels::NK_FWD_SPLIT_APPLY_PRE_U),
        };
        self.launch(ks, (blocks, 1), threads, 0, &p)?;
        self.launch(kernels::NK_FWD_SPLIT_REDUCE, (reduce_blocks(plan.m as u64, threads), 1), threads, 0, &p)?;
        self.launch(ka, (blocks, 1), threads, 0, &p)
    }

    fn backward(&self, desc: &NormDesc, a: Backward<'_, CudaBuffer>) -> Result<()> {
        let plan = validate_backward(desc, &a)?;
        let (dyb, dxb) = in_out(&a.dy);
        self.check_own(Operand::X, a.x.buf)?;
        self.check_own(Operand::Dy, dyb)?;
        self.check_own(Operand::Dx, dxb)?;
        self.check_own(Operand::Rstd, a.rstd.buf)?;
        let mut p = BwdParams {
            x: addr(a.x.buf, plan.x.offset),
            dy: addr(dyb, plan.dy.offset),
            dx: addr(dxb, plan.dx.offset),
            rstd: addr(a.rstd.buf, plan.rstd.offset),
            m: plan.m as i64,
            n: plan.n as i64,
            sx: plan.x.stride as i64,
            sdy: plan.dy.stride as i64,
            sdx: plan.dx.stride as i64,
            offset: desc.weight.map_or(0.0, |w| w.offset),
            dt_x: dt_code(plan.dtypes.x),
            dt_y: dt_code(plan.dtypes.y),
            dt_w: dt_code(plan.dtypes.weight),
            ..Default::default()
        };
        let mut vec_ok = plan.n % 8 == 0 && mat_vec_ok(a.x.buf, &plan.x) && mat_vec_ok(dyb, &plan.dy) && mat_vec_ok(dxb, &plan.dx);
        let mut flags = if desc.kind == NormKind::Layer { params::F_LN } else { 0 };
        if let (Some(d), Some(l)) = (&a.d_residual_out, plan.d_residual_out) {
            self.check_own(Operand::DResidualOut, d.buf)?;
            p.dres = addr(d.buf, l.offset);
            p.sdres = l.stride as i64;
            vec_ok &= mat_vec_ok(d.buf, &l);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_own(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_own(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        if let (Some(d), Some(s)) = (&a.dw, plan.dw) {
            self.check_own(Operand::Dw, d.buf)?;
            p.dw = addr(d.buf, s.offset);
            flags |= params::F_WEIGHT;
        }
        if let (Some(d), Some(s)) = (&a.db, plan.db) {
            self.check_own(Operand::Db, d.buf)?;
            p.db = addr(d.buf, s.offset);
            flags |= params::F_BIAS;
        }
        p.flags = flags | if self.no_full { params::F_NOFULL } else { 0 };
        let nacc = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
        let n = plan.n;
        let m = plan.m as u64;
        let too_big = || NormError::ResourceLimit { resource: "workspace bytes", requested: u64::MAX, available: usize::MAX as u64 };

        let all16 = plan.dtypes.x != DType::F32 && plan.dtypes.y != DType::F32 && (a.weight.is_none() || plan.dtypes.weight != DType::F32);
        let slot = if all16 { 16 } else { 32 };
        let row_kernel = match (vec_ok, all16) {
            (true, true) => kernels::NK_BWD_ROW_AH,
            (true, false) => kernels::NK_BWD_ROW_A,
            _ => kernels::NK_BWD_ROW_U,
        };
        // The register-resident kernel: 16-byte layouts, every tensor in x's dtype, dB only for
        // LayerNorm, 1, 2 or 4 (bf16) chunks per thread (their own tables).
        let dt = plan.dtypes.x;
        let ln = flags & params::F_LN != 0;
        // Tables: 2 chunks per thread to N = 2048, then 4 chunks per thread for 16-bit dtypes to
        // N = 16384 (H200: 74% of the copy ceiling at 16384² rms_bwd, against 50% for one chunk
        // per thread at N = 8192; tuning.rs has the N = 4096 figures); f32 keeps 2 chunks to
        // `bwd_k1_above` (4096), then 1 chunk per thread (groups up to 1024) to N = 8192.
        let table: &[RowConfig] = if dt == DType::F32 {
            if n <= self.bwd_k1_above.min(4096) {
                self.tuning.bwd_reg
            } else {
                self.tuning.bwd_reg1
            }
        } else if n <= 2048 {
            self.tuning.bwd_reg
        } else {
            self.tuning.bwd_reg4
        };
        let uniform_b =
            vec_ok && plan.dtypes.y == dt && (a.weight.is_none() || plan.dtypes.weight == dt) && (ln || flags & params::F_BIAS == 0);
        // Row-batch kernels (rows.rs): 16-bit, 16-byte layouts, 512 < N ≤ 2048, every M.
        let call = rows::RowsCall { dt, ln, res: a.d_residual_out.is_some(), uniform: uniform_b, n, m, nacc };
        if self.rows_backward(&call, &mut p)? {
            return Ok(());
        }
        let reg = tuning::pick(table, n).filter(|_| uniform_b);
        let reg = reg.and_then(|rc| {
            // The kernel family by chunks per thread: 1, 2 or 4 (the last bf16 only).
            let prefix = match n.div_ceil(8).div_ceil(rc.group as usize) {
                1 => "nk_bwd_reg1",
                2 => "nk_bwd_reg",
                3 | 4 => "nk_bwd_reg4",
                _ => return None,
            };
            let block = rc.group * rc.rows_per_cta;
            let red = if rc.rows_per_cta > 1 { rc.rows_per_cta as usize * n * 4 } else { 0 };
            let name = |pf: &str| {
                format!(
                    "{prefix}{pf}_{}_{}{}",
                    dt_tag(dt),
                    if ln { "ln" } else { "rms" },
                    if a.d_residual_out.is_some() { "_res" } else { "" }
                )
            };
            // The prefetching twin: two buffers of x, dy (and d_residual_out) × K chunks × 16
            // bytes (32 for f32) per thread, then the weight + offset in fp32 (32 bytes a chunk),
            // sharing the dynamic shared memory with the group reduction (used after the last row).
            let k_per_thread = n.div_ceil(8).div_ceil(rc.group as usize);
            // Where the weight's slots do not fit (N = 16384 with d_residual_out: 256 KiB), the
            // kernel reads the weight from global memory instead (NK_F_WGLOBAL; only the kernels
            // with d_residual_out have that variant).
            let res = a.d_residual_out.is_some();
            let row_slots = 2 * (2 + usize::from(res)) * if dt == DType::F32 { 32 } else { 16 };
            let w_slots = if a.weight.is_some() { 32 } else { 0 };
            let fits = |k: Kernel, smem: usize| block <= k.max_threads && smem <= self.dyn_smem_max[k.index];
            // f32 keeps the plain kernels: its prefetching twins ran at 55–58% of the copy ceiling
            // against 82–91% without (H200, 32768×4096 and 65536×512, NOTES v4).
            let plain = dt == DType::F32;
            let pf = (self.pf && !plain).then(|| find_kernel(&name("pf")).ok()).flatten().and_then(|k| {
                [(row_slots + w_slots, 0), (row_slots, params::F_WGLOBAL)]
                    .into_iter()
                    .filter(|&(_, flag)| flag == 0 || res)
                    .map(|(bytes, flag)| ((bytes * k_per_thread * block as usize).max(red), flag))
                    .find(|&(smem, _)| fits(k, smem))
                    .map(|(smem, flag)| (k, smem, flag))
            });
            pf.or_else(|| find_kernel(&name("")).ok().map(|k| (k, red, 0)))
                .filter(|&(k, smem, _)| fits(k, smem))
                .map(|(k, smem, flag)| (rc, k, smem, flag))
        });
        if let Some((rc, k, smem, wflag)) = reg {
            p.flags |= wflag;
            let block = rc.group * rc.rows_per_cta;
            let mut parts = if m == 0 { 0 } else { self.persistent_blocks(k, block, smem, m.div_ceil(rc.rows_per_cta as u64))? as u64 };
            if let Some(cap) = self.bwd_ctas_per_sm {
                parts = parts.min(self.sms as u64 * cap as u64).max(u64::from(m > 0));
            }
            let part_bytes = (parts as usize).checked_mul(n * 4).ok_or_else(too_big)?;
            let total = align256(part_bytes) * nacc;
            let lease = self.workspace(total)?;
            let ws = lease.ptr;
            p.ws_dw = ws;
            p.ws_db = ws + if flags & params::F_WEIGHT != 0 { align256(part_bytes) as u64 } else { 0 };
            p.nparts = parts as i64;
            p.group = rc.group as i32;
            p.rpc = rc.rows_per_cta as i32;
            if m > 0 {
                self.launch(k, (to_i32(parts, "grid")?, 1), block, smem as u32, &p)?;
            }
            return self.finalize(n, nacc, &p);
        }
        // Cluster row kernels (sm_90+, cluster.rs).
        if self.cluster_backward(desc, &plan.dtypes, a.weight.is_some(), &mut p, vec_ok, nacc)? {
            return Ok(());
        }
        let staged = 2 + usize::from(a.d_residual_out.is_some());
        let row = tuning::pick(self.tuning.bwd, n)
            .map(|rc| (rc, bwd_row_smem(rc, n, slot, usize::from(a.weight.is_some()), staged, nacc)))
            .filter(|&(_, smem)| smem <= self.smem_limit);
        // Plan the grid and the workspace: [split stats | dW parts | dB parts].
        let (parts, stats_bytes, s) = match row {
            Some((rc, smem)) if m > 0 => {
                let blocks = self.persistent_blocks(row_kernel, rc.group * rc.rows_per_cta, smem, m.div_ceil(rc.rows_per_cta as u64))?;
                (blocks as u64, 0usize, 0usize)
            }
            Some(_) => (0, 0, 0),
            None => {
                let s = n.div_ceil(SPLIT_CHUNK);
                let target = (self.sms * self.tuning.split_bwd_ctas_per_sm) as u64;
                let parts = if m == 0 { 0 } else { target.div_ceil(s as u64).clamp(1, m.min(65535)) };
                // Chunk partials (M·S pairs), then each row's combined (c1, c2) (M pairs).
                let stats = m.checked_mul((s as u64 + 1) * 8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
                (parts, stats, s)
            }
        };
        let part_bytes = (parts as usize).checked_mul(n * 4).ok_or_else(too_big)?;
        let total = align256(stats_bytes).checked_add(align256(part_bytes) * nacc).ok_or_else(too_big)?;
        let lease = self.workspace(total)?;
        let ws = lease.ptr;
        p.ws_stats = ws;
        p.ws_dw = ws + align256(stats_bytes) as u64;
        p.ws_db = p.ws_dw + if flags & params::F_WEIGHT != 0 { align256(part_bytes) as u64 } else { 0 };
        p.nparts = parts as i64;
        p.nsplit = s as i64;

        if m > 0 {
            match row {
                Some((rc, smem)) => {
                    p.group = rc.group as i32;
                    p.rpc = rc.rows_per_cta as i32;
                    p.slot = slot as i32;
                    self.launch(row_kernel, (to_i32(parts, "grid")?, 1), rc.group * rc.rows_per_cta, smem as u32, &p)?;
                }
                None => {
                    let tiles = m.checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
                    let threads = kernels::NK_SPLIT_THREADS as u32;
                    let (ks, ka) = match (vec_ok, all16) {
                        (true, true) => (kernels::NK_BWD_SPLIT_STATS_AH, kernels::NK_BWD_SPLIT_APPLY_PRE_AH),
                        (true, false) => (kernels::NK_BWD_SPLIT_STATS_A, kernels::NK_BWD_SPLIT_APPLY_PRE_A),
                        _ => (kernels::NK_BWD_SPLIT_STATS_U, kernels::NK_BWD_SPLIT_APPLY_PRE_U),
                    };
                    self.launch(ks, (tiles.min(MAX_GRID) as u32, 1), threads, 0, &p)?;
                    // One warp per row combines the row's partials once (the apply CTAs used to do
                    // it serially in every CTA: H200 128×1M rms_bwd apply 699 µs).
                    self.launch(kernels::NK_BWD_SPLIT_REDUCE, (reduce_blocks(m, threads), 1), threads, 0, &p)?;
                    self.launch(ka, (to_i32(s as u64, "grid")?, to_i32(parts, "grid")?), threads, 0, &p)?;
                }
            }
        }
        self.finalize(n, nacc, &p)
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or(NormError::ResourceLimit {
            resource: "device memory",
            requested: u64::MAX,
            available: 0,
        })?;
        if bytes == 0 {
            return Ok(CudaBuffer { dtype, len, ptr: 0, ctx_id: self.ctx_id(), _owner: None });
        }
        let a = self.malloc(bytes)?;
        Ok(CudaBuffer { dtype, len, ptr: a.ptr, ctx_id: self.ctx_id(), _owner: Some(a) })
    }

    fn upload(&self, src: &HostBuf) -> Result<CudaBuffer> {
        let b = self.alloc(src.dtype(), src.len())?;
        if b.len > 0 {
            let bytes = src.as_bytes();
            // SAFETY: `b` holds exactly `bytes.len()` bytes; the host slice stays borrowed until the
            // stream is synchronised below, so the asynchronous copy reads live memory.
            unsafe { cu::memcpy_htod_async(b.ptr, bytes, self.stream.cu_stream()) }.map_err(dev_err("upload"))?;
            self.stream.synchronize().map_err(dev_err("upload"))?;
        }
        Ok(b)
    }

    fn download(&self, buf: &CudaBuffer) -> Result<HostBuf> {
        self.check_own(Operand::X, buf)?;
        let mut h = HostBuf::zeros(buf.dtype, buf.len);
        if buf.len > 0 {
            let dst = h.as_bytes_mut();
            debug_assert_eq!(dst.len(), buf.bytes());
            // SAFETY: the device range is the buffer's own `bytes()` bytes; the host slice is
            // exclusively borrowed and the stream is synchronised before it is released.
            unsafe { cu::memcpy_dtoh_async(dst, buf.ptr, self.stream.cu_stream()) }.map_err(dev_err("download"))?;
            self.stream.synchronize().map_err(dev_err("download"))?;
        }
        Ok(h)
    }

    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(dev_err("synchronize"))
    }
}

/// CTAs of `threads` threads for the split path's per-row reduce kernels (one warp per row).
fn reduce_blocks(m: u64, threads: u32) -> u32 {
    m.div_ceil(u64::from(threads / kernels::NK_WARP_WIDTH as u32)).clamp(1, MAX_GRID) as u32
}

impl CudaBackend {
    /// dW/dB from the partial rows (a fixed order: bitwise repeatable).
    fn finalize(&self, n: usize, nacc: usize, p: &BwdParams) -> Result<()> {
        if nacc > 0 && (p.nparts <= 16 || (p.nparts <= self.fin_cols_max && n >= 65536)) {
            // Few parts (split path at N ≥ 131072, cluster path, M ≤ 16): one column per thread,
            // where its grid still covers the device (H100, 128×1M rms_bwd, 9 parts: 47 µs in
            // finalize_wide; 512×262144 ln_bwd, 33 parts: 537 µs with finalize_wide, 519 µs
            // with this one).
            let k = kernels::NK_BWD_FINALIZE_COLS;
            let blocks = (n as u64).div_ceil(k.max_threads as u64).min(MAX_GRID) as u32;
            self.launch_pdl(k, blocks, k.max_threads, 0, p)?;
        } else if nacc > 0 {
            // Columns per CTA: 32, or 16 / 8 where N / 32 CTAs would leave the device half empty
            // (H200, 4096×1024 rms_bwd: 32 CTAs of 32 columns took 6.6 µs).
            let cols = [32u64, 16, 8].into_iter().find(|&c| (n as u64).div_ceil(c) >= 2 * self.sms as u64).unwrap_or(8);
            let blocks = (n as u64).div_ceil(cols).min(MAX_GRID) as u32;
            let k = kernels::NK_BWD_FINALIZE_WIDE;
            // About four parts per lane: the warp count follows the number of parts.
            let per_warp = 4 * (kernels::NK_WARP_WIDTH as u64 / cols);
            let warps = (p.nparts.max(0) as u64).div_ceil(per_warp).clamp(1, (k.max_threads / kernels::NK_WARP_WIDTH as u32) as u64);
            let mut q = *p;
            q.group = cols as i32;
            self.launch_pdl(k, blocks, warps as u32 * kernels::NK_WARP_WIDTH as u32, 0, &q)?;
        }
        Ok(())
    }

    /// CTAs of a persistent row kernel: as many as fit on the device at once, at most `work`.
    fn persistent_blocks(&self, k: Kernel, block: u32, smem: usize, work: u64) -> Result<u32> {
        let occ = self.funcs[k.index]
            .occupancy_max_active_blocks_per_multiprocessor(block, smem, None)
            .map_err(dev_err("occupancy query"))?
            .max(1);
        Ok(work.min(self.sms as u64 * occ as u64).max(1) as u32)
    }

    /// Copies `bytes` bytes device-to-device on the backend's stream (benchmarks).
    pub(crate) fn copy_d2d(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: callers pass two distinct allocations of at least `bytes` bytes each.
        unsafe { cu::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }.map_err(dev_err("copy"))
    }
}
