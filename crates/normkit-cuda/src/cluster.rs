//! Cluster row kernels (sm_90+, kernels-cuda/cluster.cuh): one row per thread-block cluster of
//! C CTAs, row statistics reduced through distributed shared memory, x read from HBM once.
//!
//! Forward: chosen by N, the dtypes and the flags alone (every tensor in x's dtype, Gemma
//! casting, N within the table), never by M or the layout: a 16-byte layout runs the `_a`
//! kernel, any other the element-wise `_u` twin (same chunks, same reduction order), so the
//! forward stays batch- and layout-invariant. Backward: 16-byte layouts only (it needs
//! determinism, not layout invariance); dW/dB partials per cluster, summed by the existing
//! `nk_bwd_finalize_wide` in a fixed order.
//!
//! Each hook returns `Ok(false)` ("not handled") where the existing paths must run instead.

use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::driver::sys;
use normkit_core::{CastingMode, DType, DTypes, NormDesc, NormError, NormKind, Result};

use crate::kernels::Kernel;
use crate::params::{self, BwdParams, FwdParams};
use crate::{align256, dev_err, dt_tag, find_kernel, CudaBackend};

/// One row of a cluster launch table: rows up to `max_n` elements run on clusters of `c` CTAs of
/// `t` threads (chunks per thread K = ⌈N/8 / (c·t)⌉, at most the kernel's KMAX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterConfig {
    pub max_n: usize,
    pub c: u32,
    pub t: u32,
}

const fn cc(max_n: usize, c: u32, t: u32) -> ClusterConfig {
    ClusterConfig { max_n, c, t }
}

// Forward tables. Shape (not yet swept, first measurement in kernels-cuda/NOTES.md "cluster"):
// a CTA slice of at most 32 KiB at 256 threads (8 chunks of 16 bytes per thread for 16-bit,
// 4 of 32 bytes for f32), the cluster growing with N to 16, then 512 threads per CTA (a 1024-thread,
// 64-register variant for N = 1M spilled once the weight loads were batched; N > 524288 runs the
// split path). The residual kernels stop at 256 threads (their element-wise twin needs
// more than 128 registers), so at 262144 elements; beyond, the split path runs.
static FWD16: [ClusterConfig; 5] = [cc(32768, 2, 256), cc(65536, 4, 256), cc(131072, 8, 256), cc(262144, 16, 256), cc(524288, 16, 512)];
static FWD32: [ClusterConfig; 4] = [cc(32768, 4, 256), cc(65536, 8, 256), cc(131072, 16, 256), cc(262144, 16, 512)];
// Backward: 4 chunks per thread (16-bit) or 2 (f32); dW/dB in registers up to 256 threads, in
// shared memory (the `cls` kernels) at 512 — except where the prefetching twins run (`clp`, 16-bit:
// LayerNorm at every size, RMSNorm at 512 threads; registers, see `cluster_backward`).
static BWD16: [ClusterConfig; 5] = [cc(16384, 2, 256), cc(32768, 4, 256), cc(65536, 8, 256), cc(131072, 16, 256), cc(262144, 16, 512)];
static BWD32: [ClusterConfig; 4] = [cc(16384, 4, 256), cc(32768, 8, 256), cc(65536, 16, 256), cc(131072, 16, 512)];

/// Largest N per flag class, from the first measurements (H200, bf16/f16, same-run A/B against
/// the existing paths, kernels-cuda/NOTES.md "cluster v1"): where the cluster kernel lost, the
/// existing path keeps the N range. Forward 16-bit: LayerNorm 48% vs 44% at 65536 but 37% vs 43%
/// at 262144 and 44% vs 45% (f16) at 131072 → 65536; residual 83% vs 74% at 65536, 68% vs 73% at
/// 262144 → 65536; RMSNorm 53% vs 50% at 262144 → 262144 (524288 unmeasured). f32 forward: rms
/// 57% vs 37% at 131072, 47% vs 37% at 262144, LayerNorm 48% vs 33%, 35% vs 32% → the whole table.
/// Backward LayerNorm: 38% vs 34% at 65536 (C = 8), 24% vs 32% at 262144 and 21% with C = 16 at
/// 65536 → clusters of at most 8 (16-bit 65536, f32 32768); RMSNorm and residual: 58% vs 40%,
/// 70% vs 50% at 65536, 41% vs 36% and 51% vs 45% at 262144, f32 49% vs 44% at 131072.
/// Re-measured 2026-11-22 after the instruction diet (NOTES v4, `NORMKIT_CUDA_CLUSTER_CAP` A/B,
/// 16-bit): at 131072 cluster vs split ln_fwd 49% vs 42%, addrms_fwd 77% vs 68%, ln_bwd 29% vs
/// 22% → those caps move to 131072; at 262144 the cluster still loses (44/68/24% vs 48/73/43%).
/// H100 2026-11-22 (fifth session), with the prefetching LayerNorm twins (`nk_bwd_clp_*`): ln_bwd
/// 512×262144 63% on clusters of 16 × 512 threads against 51.5% on the split path (1024×262144:
/// 64% vs 55%) → the 16-bit LayerNorm backward cap moves to 262144 where the twin fits (no
/// d_residual_out: its third row buffer needs 256 KiB of shared memory at 512 threads).
/// `NORMKIT_CUDA_CLUSTER_CAP=N` raises every cap to at least N (measurements only).
fn cap(fwd: bool, dt: DType, ln: bool, residual: bool) -> usize {
    static RAISE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let raise = *RAISE.get_or_init(|| std::env::var("NORMKIT_CUDA_CLUSTER_CAP").ok().and_then(|v| v.parse().ok()).unwrap_or(0));
    let f32 = dt == DType::F32;
    raise.max(match (fwd, f32) {
        (true, false) if ln || residual => 131072,
        (true, false) => 262144,
        (true, true) if residual => 131072,
        (true, true) => 262144,
        (false, false) if ln && residual => 131072,
        (false, false) if ln => 262144,
        (false, false) => 262144,
        (false, true) if ln => 32768,
        (false, true) => 131072,
    })
}

/// Chunks per thread of the kernels (KMAX in cluster.cuh).
fn fwd_kmax(dt: DType) -> usize {
    if dt == DType::F32 {
        4
    } else {
        8
    }
}
fn bwd_kmax(dt: DType) -> usize {
    if dt == DType::F32 {
        2
    } else {
        4
    }
}

fn pick(table: &[ClusterConfig], n: usize) -> Option<ClusterConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}

/// Tuning overrides from the environment, read once: `NORMKIT_CUDA_CLUSTER=0` turns the cluster
/// path off; `NORMKIT_CUDA_CLUSTER_CT=C,T` forces C CTAs of T threads at every N (where the chunks
/// fit). For measurements only: they apply to every N alike, so the path still depends on N alone.
fn env_override() -> (bool, Option<(u32, u32)>) {
    static V: std::sync::OnceLock<(bool, Option<(u32, u32)>)> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        let off = std::env::var("NORMKIT_CUDA_CLUSTER").is_ok_and(|v| v == "0");
        let ct = std::env::var("NORMKIT_CUDA_CLUSTER_CT").ok().and_then(|v| {
            let (c, t) = v.split_once(',')?;
            Some((c.trim().parse().ok()?, t.trim().parse().ok()?))
        });
        (off, ct)
    })
}

/// The prefetching LayerNorm backward twins (`nk_bwd_clp_*`, 16-bit) run unless
/// `NORMKIT_CUDA_CLUSTER_PF=0` (measurements only: the plain kernels do the same arithmetic).
fn prefetch_enabled() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("NORMKIT_CUDA_CLUSTER_PF").map_or(true, |v| v != "0"))
}

fn table_pick(table: &[ClusterConfig], n: usize) -> Option<ClusterConfig> {
    match env_override() {
        (true, _) => None,
        (false, Some((c, t))) => pick(table, n).map(|_| cc(n, c, t)),
        (false, None) => pick(table, n),
    }
}

/// The forward configuration for N (None: not on the cluster path). Public for tests and tools.
pub fn forward_config(dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    if n > cap(true, dt, ln, residual) {
        return None;
    }
    let rc = table_pick(if dt == DType::F32 { &FWD32 } else { &FWD16 }, n)?;
    if residual && rc.t > 256 {
        return None;
    }
    (n.div_ceil(8).div_ceil((rc.c * rc.t) as usize) <= fwd_kmax(dt)).then_some(rc)
}

/// The backward configuration for N (`residual`: with d_residual_out).
pub fn backward_config(dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    if n > cap(false, dt, ln, residual) {
        return None;
    }
    let rc = table_pick(if dt == DType::F32 { &BWD32 } else { &BWD16 }, n)?;
    (n.div_ceil(8).div_ceil((rc.c * rc.t) as usize) <= bwd_kmax(dt)).then_some(rc)
}

/// (context, kernel, cluster size, threads, shared memory): what the occupancy query depends on.
type OccupancyKey = (usize, usize, u32, u32, u32);

/// Max active clusters per [`OccupancyKey`], cached.
static OCCUPANCY: Mutex<Vec<(OccupancyKey, u32)>> = Mutex::new(Vec::new());

impl CudaBackend {
    /// Prepares kernel `k` for clusters of `c` CTAs with `smem` bytes of dynamic shared memory
    /// and returns how many such clusters fit on the device at once (0: none).
    fn cluster_capacity(&self, k: Kernel, c: u32, t: u32, smem: u32) -> Result<u32> {
        // The attributes are set on every call (cheap): a cached occupancy may come from an
        // earlier context whose handles the driver reused, and the attributes belong to the
        // function of this module.
        let f = &self.funcs[k.index];
        if c > 8 {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(dev_err("kernel attribute"))?;
        }
        if smem > 48 * 1024 {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(dev_err("kernel attribute"))?;
        }
        let key = (self.ctx_id(), f.cu_function() as usize, c, t, smem);
        {
            let cache = OCCUPANCY.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, v)) = cache.iter().find(|(kk, _)| *kk == key) {
                return Ok(v);
            }
        }
        self.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
        let mut attr = cluster_attr(c);
        let cfg = launch_config(c, t, smem, std::ptr::null_mut(), &mut attr);
        let mut count: i32 = 0;
        // SAFETY: `cfg` and the attribute it points to live across the call; `f` is a function
        // of this backend's module, which outlives the call.
        let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut count, f.cu_function(), &cfg) };
        let v = match r.result() {
            Ok(()) => count.max(0) as u32,
            // A cluster shape the device refuses (e.g. no GPC that large): not an error, the
            // other paths run.
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE => 0,
            Err(e) => return Err(dev_err("occupancy query")(e)),
        };
        OCCUPANCY.lock().unwrap_or_else(|p| p.into_inner()).push((key, v));
        Ok(v)
    }

    /// Launches `clusters` clusters of `c` CTAs of `t` threads (cuLaunchKernelEx).
    fn launch_cluster<P: cudarc::driver::DeviceRepr>(&self, k: Kernel, clusters: u32, c: u32, t: u32, smem: u32, p: &P) -> Result<()> {
        let grid = clusters.checked_mul(c).ok_or(NormError::ResourceLimit {
            resource: "grid",
            requested: clusters as u64 * c as u64,
            available: u32::MAX as u64,
        })?;
        self.launch_ex(k, grid, t, smem, cluster_attr(c), p)
    }

    /// cuLaunchKernelEx of `grid` CTAs of `t` threads with one launch attribute (a cluster
    /// shape, or a programmatic dependency).
    pub(crate) fn launch_ex<P: cudarc::driver::DeviceRepr>(
        &self,
        k: Kernel,
        grid: u32,
        t: u32,
        smem: u32,
        mut attr: sys::CUlaunchAttribute,
        p: &P,
    ) -> Result<()> {
        debug_assert!(t <= k.max_threads);
        self.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
        let cfg = launch_config(grid, t, smem, self.stream.cu_stream(), &mut attr);
        let mut args: [*mut c_void; 1] = [p as *const P as *mut c_void];
        // SAFETY: the kernel's single argument is `P`, the #[repr(C)] mirror of the C++ struct it
        // takes, passed by address as the driver API expects (copied at launch); every address
        // in it was validated by normkit-core against its buffer, and the workspace is sized for
        // the launch (see CudaBackend::launch for the lifetime argument). `cfg` points at `attr`,
        // which lives across the call.
        unsafe { sys::cuLaunchKernelEx(&cfg, self.funcs[k.index].cu_function(), args.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(dev_err("kernel launch"))
    }

    /// Forward hook: runs the cluster kernel and returns true, or returns false (other paths).
    pub(crate) fn cluster_forward(&self, desc: &NormDesc, dtypes: &DTypes, p: &mut FwdParams, vec_ok: bool) -> Result<bool> {
        if self.compute_capability().0 < 9 || p.m <= 0 || desc.casting != CastingMode::Gemma {
            return Ok(false);
        }
        let dt = dtypes.x;
        let affine = p.flags & (params::F_WEIGHT | params::F_BIAS) != 0;
        if dtypes.y != dt || (desc.residual && dtypes.residual != dt) || (affine && dtypes.weight != dt) {
            return Ok(false);
        }
        let n = p.n as usize;
        let ln = desc.kind == NormKind::Layer;
        let Some(rc) = forward_config(dt, n, ln, desc.residual) else { return Ok(false) };
        let name = format!(
            "nk_fwd_cl_{}_{}{}_{}",
            dt_tag(dt),
            if ln { "ln" } else { "rms" },
            if desc.residual { "_res" } else { "" },
            if vec_ok { "a" } else { "u" }
        );
        let k = find_kernel(&name)?;
        if rc.t > k.max_threads {
            return Ok(false);
        }
        let cap = self.cluster_capacity(k, rc.c, rc.t, 0)?;
        if cap == 0 {
            return Ok(false);
        }
        p.group = rc.t as i32;
        p.rpc = rc.c as i32;
        let clusters = (p.m as u64).min(cap as u64) as u32;
        self.launch_cluster(k, clusters, rc.c, rc.t, 0, p)?;
        Ok(true)
    }

    /// Backward hook (after the register path, before the staged/split planning): runs the
    /// cluster kernel and the finalize and returns true, or returns false.
    pub(crate) fn cluster_backward(
        &self,
        desc: &NormDesc,
        dtypes: &DTypes,
        has_weight: bool,
        p: &mut BwdParams,
        vec_ok: bool,
        nacc: usize,
    ) -> Result<bool> {
        let dt = dtypes.x;
        let ln = desc.kind == NormKind::Layer;
        if self.compute_capability().0 < 9
            || p.m <= 0
            || !vec_ok
            || dtypes.y != dt
            || (has_weight && dtypes.weight != dt)
            || (!ln && p.flags & params::F_BIAS != 0)
        {
            return Ok(false);
        }
        let n = p.n as usize;
        let res = p.flags & params::F_RESIDUAL != 0;
        let Some(rc) = backward_config(dt, n, ln, res) else { return Ok(false) };
        let kk = n.div_ceil(8).div_ceil((rc.c * rc.t) as usize);
        // 16-bit LayerNorm, and RMSNorm at 512 threads: the prefetching twin (`nk_bwd_clp_*`,
        // register accumulators) where its two row buffers and the fp32 weight slots fit in
        // shared memory; else dW/dB in registers up to 256 threads, in shared memory (`cls`) at
        // 512. RMSNorm at 256 threads keeps the plain kernel (two CTAs per SM; kernels.def).
        let pf_smem = (2 * (2 + res as usize) * 16 + if has_weight { 32 } else { 0 }) * kk * rc.t as usize;
        let pf = (ln || rc.t > 256) && dt != DType::F32 && prefetch_enabled() && pf_smem <= self.smem_limit;
        let sacc = !pf && rc.t > 256;
        let name = format!(
            "nk_bwd_{}_{}_{}{}",
            if pf {
                "clp"
            } else if sacc {
                "cls"
            } else {
                "cl"
            },
            dt_tag(dt),
            if ln { "ln" } else { "rms" },
            if res { "_res" } else { "" }
        );
        let k = find_kernel(&name)?;
        if rc.t > k.max_threads {
            return Ok(false);
        }
        let smem = if pf {
            pf_smem
        } else if sacc {
            // Shared-memory accumulators: nacc × K·8·T floats.
            nacc * kk * 8 * rc.t as usize * 4
        } else {
            0
        } as u32;
        if smem as usize > self.smem_limit {
            return Ok(false);
        }
        let cap = self.cluster_capacity(k, rc.c, rc.t, smem)?;
        if cap == 0 {
            return Ok(false);
        }
        let clusters = (p.m as u64).min(cap as u64);
        let too_big = || NormError::ResourceLimit { resource: "workspace bytes", requested: u64::MAX, available: usize::MAX as u64 };
        let part_bytes = (clusters as usize).checked_mul(n * 4).ok_or_else(too_big)?;
        let total = align256(part_bytes).checked_mul(nacc).ok_or_else(too_big)?;
        let lease = self.workspace(total)?;
        let ws = lease.ptr;
        p.ws_dw = ws;
        p.ws_db = ws + if p.flags & params::F_WEIGHT != 0 { align256(part_bytes) as u64 } else { 0 };
        p.nparts = clusters as i64;
        p.group = rc.t as i32;
        p.rpc = rc.c as i32;
        self.launch_cluster(k, clusters as u32, rc.c, rc.t, smem, p)?;
        self.finalize(n, nacc, p)?;
        Ok(true)
    }
}

fn cluster_attr(c: u32) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct (an id and a union of plain values): all-zero is a valid value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x: c, y: 1, z: 1 };
    attr
}

fn launch_config(grid: u32, t: u32, smem: u32, stream: sys::CUstream, attr: &mut sys::CUlaunchAttribute) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: t,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: stream,
        attrs: attr as *mut _,
        numAttrs: 1,
    }
}
