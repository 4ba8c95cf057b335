//! Executes a [`Launch`]: lends the workspace, writes the path's fields and the workspace
//! addresses into the parameters, and queues the kernels in order — plain launches
//! (cuLaunchKernel through cudarc), cluster launches and programmatic dependent launches (both
//! through the one cuLaunchKernelEx helper, [`launch_ex`]). Also the device's answers to the
//! planner's [`Occupancy`] questions.

use std::ffi::c_void;

use cudarc::driver::sys;
use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
use normkit_core::Result;

use crate::buffers::Memory;
use crate::kernels::Kernel;
use crate::params::{self, BwdParams, FwdParams, KernelArg};
use crate::plan::{Fields, Launch, Mode, Occupancy, Step, Workspace};
use crate::startup::{dev_err, Device};

/// A kernel parameter struct a [`Launch`] can complete (launched as a [`KernelArg`]).
pub(crate) trait PlanParams: Copy {
    /// Writes the path's fields and the workspace addresses (`base`: the lent workspace, `sync`:
    /// its zeroed synchronisation words).
    fn apply(&mut self, f: &Fields, ws: &Workspace, base: u64, sync: u64);
    /// This launch's `group` (finalize_wide: columns per CTA).
    fn set_group(&mut self, group: i32);
}

impl PlanParams for FwdParams {
    fn apply(&mut self, f: &Fields, ws: &Workspace, base: u64, sync: u64) {
        self.group = f.group;
        self.rpc = f.rpc;
        self.slot = f.slot;
        self.nsplit = f.nsplit;
        if let Some(at) = ws.stats {
            self.ws = base + at;
        }
        self.q |= f.q;
        self.tm = f.tm;
        self.tpitch = f.tpitch;
        self.lag = f.lag;
        self.pf = f.pf;
        self.pfd = f.pfd;
        if let Some(at) = ws.q {
            self.ws_q = base + at;
        }
        self.q_sync = sync;
        if f.trigger {
            self.flags |= params::F_TRIGGER;
        }
    }
    fn set_group(&mut self, group: i32) {
        self.group = group;
    }
}

impl PlanParams for BwdParams {
    fn apply(&mut self, f: &Fields, ws: &Workspace, base: u64, _sync: u64) {
        if f.wglobal {
            self.flags |= params::F_WGLOBAL;
        }
        self.group = f.group;
        self.rpc = f.rpc;
        self.slot = f.slot;
        self.nparts = f.nparts;
        self.nsplit = f.nsplit;
        if let Some(at) = ws.stats {
            self.ws_stats = base + at;
        }
        self.ws_dw = base + ws.dw;
        self.ws_db = base + ws.db;
        if f.trigger {
            self.flags |= params::F_TRIGGER;
        }
    }
    fn set_group(&mut self, group: i32) {
        self.group = group;
    }
}

/// Queues the kernels of `l` on the device's stream with the parameters `p` (the operands'
/// fields filled; the path's are written here). The workspace stays leased — its lock held —
/// until every kernel is queued.
pub(crate) fn run<P: PlanParams>(dev: &Device, mem: &Memory, l: &Launch, p: &mut P) -> Result<()>
where
    KernelArg<P>: DeviceRepr,
{
    let lease = mem.workspace(dev, l.workspace.bytes)?;
    p.apply(&l.fields, &l.workspace, lease.ptr, lease.sync);
    for s in l.steps() {
        match s.group {
            Some(g) => {
                let mut q = *p;
                q.set_group(g);
                step(dev, s, &KernelArg(q))?;
            }
            None => step(dev, s, &KernelArg(*p))?,
        }
    }
    drop(lease);
    Ok(())
}

fn step<P: DeviceRepr>(dev: &Device, s: &Step, p: &P) -> Result<()> {
    dev.launches[s.kernel.index].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    match s.mode {
        Mode::Plain => launch(dev, s.kernel, s.grid, s.block, s.smem, p),
        Mode::Cluster(c) => launch_ex(dev, s.kernel, s.grid.0, s.block, s.smem, cluster_attr(c), p),
        Mode::Pdl => launch_ex(dev, s.kernel, s.grid.0, s.block, s.smem, pdl_attr(), p),
    }
}

/// cuLaunchKernel (through cudarc) of a `grid` of CTAs of `block` threads.
fn launch<P: DeviceRepr>(dev: &Device, k: Kernel, grid: (u32, u32), block: u32, smem: u32, p: &P) -> Result<()> {
    debug_assert!(block <= k.max_threads);
    let cfg = LaunchConfig { grid_dim: (grid.0, grid.1, 1), block_dim: (block, 1, 1), shared_mem_bytes: smem };
    let f = &dev.funcs[k.index];
    let mut b = dev.stream.launch_builder(f);
    b.arg(p);
    // SAFETY: the kernel's single argument is `P`, the #[repr(C)] mirror of the C++ struct it
    // takes; every address in it was validated by normkit-core against its buffer's length
    // (views in bounds, outputs disjoint from other operands), and the workspace is sized for
    // the launch. Buffers outlive the call's queued work because the API borrows them until it
    // returns and `download`/`synchronize`/drop (cuMemFree) order after the stream.
    unsafe { b.launch(cfg) }.map_err(dev_err("kernel launch"))?;
    Ok(())
}

/// cuLaunchKernelEx of `grid` CTAs of `t` threads with one launch attribute (a cluster shape,
/// or a programmatic dependency).
fn launch_ex<P: DeviceRepr>(dev: &Device, k: Kernel, grid: u32, t: u32, smem: u32, mut attr: sys::CUlaunchAttribute, p: &P) -> Result<()> {
    debug_assert!(t <= k.max_threads);
    dev.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
    let cfg = launch_config(grid, t, smem, dev.stream.cu_stream(), &mut attr);
    let mut args: [*mut c_void; 1] = [p as *const P as *mut c_void];
    // SAFETY: the kernel's single argument is `P`, the #[repr(C)] mirror of the C++ struct it
    // takes, passed by address as the driver API expects (copied at launch); every address
    // in it was validated by normkit-core against its buffer, and the workspace is sized for
    // the launch (see `launch` for the lifetime argument). `cfg` points at `attr`, which lives
    // across the call.
    unsafe { sys::cuLaunchKernelEx(&cfg, dev.funcs[k.index].cu_function(), args.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .map_err(dev_err("kernel launch"))
}

/// Programmatic dependent launch (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): the
/// grid may be set up before the previous kernel of the stream has finished. Only for kernels
/// that execute `griddepcontrol.wait` before their first memory access (the row-batch and
/// finalize kernels), so stream order still holds for every byte.
fn pdl_attr() -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct (an id and a union of plain values): all-zero is a valid value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    attr
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

impl Occupancy for Device {
    /// Cached per (kernel, block, shared memory): the answer depends on nothing else, and the
    /// driver query (cuOccupancyMaxActiveBlocksPerMultiprocessor) would otherwise be paid on
    /// every call of a persistent kernel — host time that an eager decode step sees.
    fn blocks_per_sm(&self, k: Kernel, block: u32, smem: usize) -> Result<u32> {
        let key = (k.index, block, smem);
        {
            let cache = self.occupancy.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, v)) = cache.iter().find(|(kk, _)| *kk == key) {
                return Ok(v);
            }
        }
        let v =
            self.funcs[k.index].occupancy_max_active_blocks_per_multiprocessor(block, smem, None).map_err(dev_err("occupancy query"))?;
        self.occupancy.lock().unwrap_or_else(|p| p.into_inner()).push((key, v));
        Ok(v)
    }

    fn max_active_clusters(&self, k: Kernel, c: u32, t: u32, smem: u32) -> Result<u32> {
        // The attributes are set on every call (cheap), cached answer or not: they belong to the
        // function of this module and must hold when the kernel is launched with this shape.
        let f = &self.funcs[k.index];
        if c > 8 {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(dev_err("kernel attribute"))?;
        }
        if smem > 48 * 1024 {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(dev_err("kernel attribute"))?;
        }
        let key = (k.index, c, t, smem);
        {
            let cache = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, v)) = cache.iter().find(|(kk, _)| *kk == key) {
                return Ok(v);
            }
        }
        self.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
        let mut attr = cluster_attr(c);
        let cfg = launch_config(c, t, smem, std::ptr::null_mut(), &mut attr);
        let mut count: i32 = 0;
        // SAFETY: `cfg` and the attribute it points to live across the call; `f` is a function
        // of this device's module, which outlives the call.
        let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut count, f.cu_function(), &cfg) };
        let v = match r.result() {
            Ok(()) => count.max(0) as u32,
            // A cluster shape the device refuses (e.g. no GPC that large): not an error, the
            // other paths run.
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE => 0,
            Err(e) => return Err(dev_err("occupancy query")(e)),
        };
        self.clusters.lock().unwrap_or_else(|p| p.into_inner()).push((key, v));
        Ok(v)
    }
}
