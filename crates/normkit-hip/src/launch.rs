//! Executing a call: the planner's view of a validated call ([`FwdShape`], [`BwdShape`], from
//! the kernel arguments and call summary normkit-gpu-host fills), then the kernels of a
//! [`FwdLaunch`] / [`FwdQLaunch`] / [`BwdLaunch`] queued in order on the backend's stream.

use crate::buffers::HipBuffer;
use crate::ffi::Function;
use crate::kernels::{self, Dt, Kernel};
use crate::params::{self, BwdParams, FwdParams};
use crate::plan::{self, align256, BwdLaunch, BwdPath, BwdShape, FwdLaunch, FwdQLaunch, FwdShape};
use crate::result::{self, device_error, lookup_error};
use crate::HipBackend;
use normkit_core::{Backward, BackwardPlan, DType, Forward, ForwardPlan, NormDesc, NormError, Result};
use normkit_gpu_host::{bwd_params, fwd_params};
use std::ffi::{c_void, CString};

/// The kernel arguments and the planner's shape of a validated forward call (the ownership of
/// every operand was checked by the validation).
pub(crate) fn forward_args(desc: &NormDesc, a: &Forward<'_, HipBuffer>, plan: &ForwardPlan) -> (FwdParams, FwdShape) {
    let (p, i) = fwd_params(desc, a, plan);
    // Every tensor 16-bit: 16-byte staging slots and, when aligned, the narrow kernel. A dtype
    // property: strided and contiguous views of the same dtypes take the same path.
    let d = i.dtypes;
    let all16 = d.x != DType::F32
        && d.y != DType::F32
        && (!i.residual || d.residual != DType::F32)
        && (!(i.weight || i.bias) || d.weight != DType::F32);
    let nvec = usize::from(i.weight) + usize::from(i.bias);
    // The register-resident kernels: every tensor in x's dtype and Gemma casting.
    let uniform = d.y == d.x && (!i.residual || d.residual == d.x) && (!(i.weight || i.bias) || d.weight == d.x);
    let reg = if uniform && i.gemma { Dt::of(d.x).map(|dt| (dt, i.ln)) } else { None };
    let shape = FwdShape { m: i.m, n: i.n, aligned: i.aligned, all16, nvec, residual: i.residual, reg, gemma: i.gemma, fp8: i.fp8 };
    (p, shape)
}

/// The kernel arguments and the planner's shape of a validated backward call (the ownership of
/// every operand was checked by the validation).
pub(crate) fn backward_args(desc: &NormDesc, a: &Backward<'_, HipBuffer>, plan: &BackwardPlan) -> (BwdParams, BwdShape) {
    let (p, i) = bwd_params(desc, a, plan);
    let d = i.dtypes;
    let all16 = d.x != DType::F32 && d.y != DType::F32 && (!i.weight || d.weight != DType::F32);
    let shape = BwdShape {
        m: i.m,
        n: i.n,
        aligned: i.aligned,
        all16,
        weight: i.weight,
        d_residual: i.d_residual,
        nacc: i.nacc(),
        reg: if i.aligned && d.y == d.x && (!i.weight || d.weight == d.x) && (i.ln || !i.db) {
            Dt::of(d.x).map(|dt| (dt, i.ln))
        } else {
            None
        },
    };
    (p, shape)
}

impl HipBackend {
    /// Queues the kernels of a planned forward call.
    pub(crate) fn run_forward(&self, launch: FwdLaunch, p: &mut FwdParams) -> Result<()> {
        match launch {
            FwdLaunch::Row { kernel, group, rows_per_cta, slot, lds, blocks } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (blocks, 1), group * rows_per_cta, lds, p)
            }
            FwdLaunch::Split { stats, reduce, apply, nsplit, blocks, reduce_blocks, threads, ws_bytes } => {
                let lease = self.workspace(ws_bytes)?;
                p.ws = lease.ptr;
                p.nsplit = nsplit as i64;
                self.launch(stats, (blocks, 1), threads, 0, p)?;
                self.launch(reduce, (reduce_blocks, 1), threads, 0, p)?;
                self.launch(apply, (blocks, 1), threads, 0, p)
            }
        }
    }

    /// Queues the kernels of a planned quantised (FP8) forward call. With an `amax`, the workgroups
    /// fold their maxima into the workspace's synchronisation words and the last one writes it
    /// (kernels-common/nk_fp8.cuh, `q_amax_commit`): the row path then leases a workspace for
    /// those words alone.
    pub(crate) fn run_forward_fp8(&self, launch: FwdQLaunch, p: &mut FwdParams) -> Result<()> {
        match launch {
            FwdQLaunch::Row { kernel, group, rows_per_cta, tm, tpitch, lds, blocks, transpose } => {
                let lease = self.workspace(if p.q & params::Q_AMAX != 0 { 256 } else { 0 })?;
                p.q_sync = lease.sync;
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.tm = tm as i32;
                p.tpitch = tpitch as i32;
                if tm > 0 {
                    p.q |= params::Q_TFUSED;
                }
                self.launch(kernel, (blocks, 1), group * rows_per_cta, lds, p)?;
                if let Some(t) = transpose {
                    self.launch(t.kernel, (t.blocks, 1), t.kernel.max_threads, 0, p)?;
                }
                Ok(())
            }
            FwdQLaunch::Split {
                stats,
                reduce,
                amax,
                apply,
                nsplit,
                blocks,
                reduce_blocks,
                apply_blocks,
                threads,
                ws_bytes,
                ws_q,
                transpose,
            } => {
                let lease = self.workspace(ws_bytes)?;
                p.ws = lease.ptr;
                p.q_sync = lease.sync;
                if let Some(at) = ws_q {
                    p.ws_q = lease.ptr + at as u64;
                }
                p.nsplit = nsplit as i64;
                self.launch(stats, (blocks, 1), threads, 0, p)?;
                self.launch(reduce, (reduce_blocks, 1), threads, 0, p)?;
                if let Some(k) = amax {
                    self.launch(k, (blocks, 1), threads, 0, p)?;
                }
                self.launch(apply, (apply_blocks, 1), threads, 0, p)?;
                if let Some(t) = transpose {
                    self.launch(t.kernel, (t.blocks, 1), t.kernel.max_threads, 0, p)?;
                }
                Ok(())
            }
        }
    }

    /// Lays out the workspace of a planned backward call (`[split stats | dW parts | dB parts]`)
    /// and queues its kernels: the main pass, then the finalize that sums the dW/dB partials.
    pub(crate) fn run_backward(&self, l: BwdLaunch, p: &mut BwdParams) -> Result<()> {
        let lease = self.workspace(l.ws_bytes)?;
        let ws = lease.ptr;
        p.ws_stats = ws;
        p.ws_dw = ws + align256(l.stats_bytes) as u64;
        p.ws_db = p.ws_dw + if p.flags & params::F_WEIGHT != 0 { align256(l.part_bytes) as u64 } else { 0 };
        p.nparts = l.parts as i64;
        p.nsplit = l.nsplit as i64;
        match l.path {
            BwdPath::Row { kernel, group, rows_per_cta, slot, lds } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (l.parts, 1), group * rows_per_cta, lds, p)?;
            }
            BwdPath::Split { stats, apply, tiles, reduce_blocks } => {
                let threads = kernels::NK_SPLIT_THREADS as u32;
                self.launch(stats, (tiles.min(plan::MAX_GRID), 1), threads, 0, p)?;
                self.launch(kernels::NK_BWD_SPLIT_REDUCE, (reduce_blocks, 1), threads, 0, p)?;
                self.launch(apply, (l.nsplit as u64, l.parts), threads, 0, p)?;
            }
            BwdPath::Empty => {}
        }
        if l.finalize_blocks > 0 {
            // With M = 0 the finalize sums zero parts: dw and db become zeros (an empty sum).
            // One column per lane of a wavefront (p.group: the finalize's columns per workgroup).
            let k = kernels::NK_BWD_FINALIZE_WIDE;
            p.group = kernels::NK_WARP_WIDTH as i32;
            self.launch(k, (l.finalize_blocks, 1), k.max_threads, 0, p)?;
        }
        Ok(())
    }

    /// The loaded function of `k`, looked up once and cached. A kernel the module lacks is
    /// [`NormError::Internal`] ([`result::lookup_error`]): start-up checked that the code object
    /// exports every kernel of the list, so this is the library's fault.
    fn function(&self, k: Kernel) -> Result<Function> {
        let mut cache = self.ctx.funcs.lock().map_err(|_| crate::poisoned())?;
        if let Some(&f) = cache.get(k.name) {
            return Ok(f as Function);
        }
        let cname = CString::new(k.name)
            .map_err(|_| NormError::Internal { backend: crate::BACKEND, what: format!("kernel name {:?} contains a NUL byte", k.name) })?;
        // SAFETY: the module is loaded for the context's lifetime, which the cached handle does
        // not outlive.
        let f = unsafe { result::module_get_function(&self.ctx.api, self.ctx.module, &cname) }
            .map_err(|e| lookup_error(k.name, self.ctx.arch, e))?;
        cache.insert(k.name, f as usize);
        Ok(f)
    }

    /// Launches `k` with one by-value argument struct and `lds` bytes of dynamic LDS.
    fn launch<P>(&self, k: Kernel, grid: (u64, u64), threads: u32, lds: usize, params: &mut P) -> Result<()> {
        let f = self.function(k)?;
        let too_big = |v: u64| NormError::ResourceLimit { resource: "HIP grid size", requested: v, available: u32::MAX as u64 };
        let gx = u32::try_from(grid.0).map_err(|_| too_big(grid.0))?;
        let gy = u32::try_from(grid.1).map_err(|_| too_big(grid.1))?;
        let lds = u32::try_from(lds).map_err(|_| NormError::ResourceLimit {
            resource: "HIP LDS bytes",
            requested: lds as u64,
            available: self.ctx.config.lds_per_workgroup as u64,
        })?;
        if threads > k.max_threads || threads == 0 {
            return Err(NormError::ResourceLimit {
                resource: "HIP workgroup size",
                requested: threads as u64,
                available: k.max_threads as u64,
            });
        }
        // SAFETY: `f` is a kernel of the loaded module whose single parameter has P's layout
        // (normkit-gpu-host mirrors nk_params.h; sizes asserted on both sides and against the
        // kernel descriptor at start-up); every address inside `params` was derived from validated views
        // of live device buffers or from the workspace; the runtime copies the argument block
        // before returning.
        unsafe {
            result::module_launch_kernel(
                &self.ctx.api,
                f,
                [gx, gy, 1],
                [threads, 1, 1],
                lds,
                self.ctx.stream,
                params as *mut P as *mut c_void,
            )
        }
        .map_err(device_error("kernel launch"))
    }
}
