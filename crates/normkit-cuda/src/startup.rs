//! Start-up: the driver and the device, the module loaded from the embedded fatbin, each
//! kernel's shared-memory limits, the [`DeviceFacts`] the planner reads, and the backend's
//! [`Tuning`] with the environment overrides read once, here.

use std::sync::{Arc, Mutex};

use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use normkit_core::{NormError, Result};

use crate::kernels::{self, Kernel};
use crate::plan::DeviceFacts;
use crate::tuning::Tuning;

/// Every kernel, as one fatbin (sm_90a, sm_100a, compute_90 PTX).
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/normkit.fatbin"));
/// The kernels compiled in a unit of their own (kernels-cuda/variants.rs, `own_unit`): a second
/// module.
static FATBIN_FP8T: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/normkit_fp8t.fatbin"));

/// The backend's name in errors.
pub(crate) const BACKEND: &str = "cuda";

/// The kernels that take shared memory past the default 48 KiB (their own opt-in limit less
/// their static shared memory, set at start-up): the register kernels (prefetch buffers, the
/// backward's group reduction, the FP8 transposed tile), the row-batch backward, the FP8 row
/// kernels and the staged cluster forward, FP8 output included (a CTA's slice of the row). The
/// planner's tests build their device facts from it too.
pub(crate) fn opts_in_dyn_smem(k: &Kernel) -> bool {
    ["nk_fwd_reg", "nk_bwd_reg", "nk_bwd_sm", "nk_bwd_rows", "nk_fwd_q_row", "nk_fwd_cs_", "nk_fwd_csq"]
        .iter()
        .any(|p| k.name.starts_with(p))
}

/// Maps a driver error to [`NormError::Device`], naming what was being done.
pub(crate) fn dev_err(during: &'static str) -> impl FnOnce(cu::DriverError) -> NormError {
    move |e| NormError::Device { backend: BACKEND, during, source: Box::new(e) }
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

/// (kernel index, cluster size, threads, shared memory): what a cluster occupancy depends on.
pub(crate) type ClusterKey = (usize, u32, u32, u32);

/// (kernel index, threads, dynamic shared memory): what a CTA occupancy depends on.
pub(crate) type OccupancyKey = (usize, u32, usize);

/// One opened device: context, stream, the loaded kernels and what the planner knows of it.
#[derive(Debug)]
pub(crate) struct Device {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    _modules: [Arc<CudaModule>; 2],
    /// The kernels, by [`Kernel::index`].
    pub funcs: Vec<CudaFunction>,
    pub name: String,
    pub cc: (i32, i32),
    pub facts: DeviceFacts,
    /// Max active clusters per [`ClusterKey`], cached (launch.rs).
    pub clusters: Mutex<Vec<(ClusterKey, u32)>>,
    /// Resident CTAs per SM per (kernel index, block, dynamic shared memory), cached (launch.rs).
    pub occupancy: Mutex<Vec<(OccupancyKey, u32)>>,
    /// Launches so far, by [`Kernel::index`] (launch.rs; [`crate::CudaBackend::launches`]).
    pub launches: Vec<std::sync::atomic::AtomicU64>,
}

impl Device {
    /// Opens device `ordinal` (its primary context, the one cudarc's `CudaContext::new` and
    /// candle use) with a stream of the backend's own. Errors, never panics: no driver library,
    /// no device, or a device the fatbin has no code for.
    pub(crate) fn open(ordinal: usize) -> Result<Device> {
        let unavailable = |reason: String| NormError::BackendUnavailable { backend: BACKEND, reason };
        let count = device_count()?;
        if count == 0 {
            return Err(unavailable("no CUDA device".into()));
        }
        if ordinal >= count {
            return Err(unavailable(format!("no CUDA device {ordinal} ({count} present)")));
        }
        let ctx = CudaContext::new(ordinal).map_err(dev_err("context creation"))?;
        let stream = ctx.new_stream().map_err(dev_err("stream creation"))?;
        Device::on_stream(stream)
    }

    /// Opens the device of `stream`'s context: the module is loaded into that context and every
    /// launch and copy is queued on `stream`.
    pub(crate) fn on_stream(stream: Arc<CudaStream>) -> Result<Device> {
        let unavailable = |reason: String| NormError::BackendUnavailable { backend: BACKEND, reason };
        let ctx = stream.context().clone();
        let cc = ctx.compute_capability().map_err(dev_err("device query"))?;
        if cc.0 < 9 {
            return Err(unavailable(format!("compute capability {}.{} is below 9.0 (the fatbin targets sm_90+)", cc.0, cc.1)));
        }
        if FATBIN.is_empty() || FATBIN_FP8T.is_empty() {
            return Err(unavailable("this build holds no kernels (built by clippy or with NORMKIT_KERNELS=skip)".into()));
        }
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(FATBIN.to_vec())).map_err(dev_err("module load"))?;
        let module_fp8t = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(FATBIN_FP8T.to_vec())).map_err(dev_err("module load"))?;
        let mut funcs = Vec::with_capacity(kernels::ALL.len());
        for k in kernels::ALL.iter() {
            let m = if kernels::list::own_unit(k.key) { &module_fp8t } else { &module };
            let f = m.load_function(k.name).map_err(dev_err("kernel lookup"))?;
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
        // The kernels of opts_in_dyn_smem: each its own opt-in limit less its static shared memory.
        let mut dyn_smem_max = vec![48 * 1024; kernels::ALL.len()];
        for k in kernels::ALL.iter() {
            if ROW_KERNELS.iter().any(|r| r.index == k.index) {
                dyn_smem_max[k.index] = smem_limit as usize;
            } else if opts_in_dyn_smem(k) {
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
        let facts = DeviceFacts { sms, cc_major: cc.0, row_smem_limit: smem_limit as usize, dyn_smem_max };
        Ok(Device {
            ctx,
            stream,
            _modules: [module, module_fp8t],
            funcs,
            name,
            cc,
            facts,
            clusters: Mutex::new(Vec::new()),
            occupancy: Mutex::new(Vec::new()),
            launches: (0..kernels::ALL.len()).map(|_| std::sync::atomic::AtomicU64::new(0)).collect(),
        })
    }

    /// The context's handle, as an identity for buffer ownership.
    pub(crate) fn ctx_id(&self) -> usize {
        self.ctx.cu_ctx() as usize
    }

    /// [`Device::ctx_id`] as the backend's owner id ([`normkit_core::NormKernel::owner_id`],
    /// [`normkit_core::Buffer::owner`]).
    pub(crate) fn owner_id(&self) -> Option<u64> {
        Some(self.ctx_id() as u64)
    }
}

/// Whether the CUDA driver library can be loaded. Probed here rather than through cudarc, whose
/// probe exists only when it loads the driver at run time (`dynamic-loading`); with candle's
/// `cuda` feature the workspace's cudarc links it instead, and then the probe still answers.
fn driver_present() -> bool {
    ["libcuda.so.1", "libcuda.so", "nvcuda.dll"].iter().any(|name| {
        // SAFETY: loading the CUDA driver library runs its initialisers, which have no
        // preconditions; the handle is dropped at once.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

/// The number of CUDA devices, 0 when there is none; `BackendUnavailable` when there is no
/// driver or it cannot be initialised.
pub(crate) fn device_count() -> Result<usize> {
    let unavailable = |reason: String| NormError::BackendUnavailable { backend: BACKEND, reason };
    if !driver_present() {
        return Err(unavailable("no CUDA driver (libcuda.so not found)".into()));
    }
    cu::init().map_err(|e| unavailable(format!("cuInit failed: {e}")))?;
    match CudaContext::device_count() {
        Ok(n) => Ok(n.max(0) as usize),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
        Err(e) => Err(unavailable(format!("no CUDA device ({e})"))),
    }
}

/// The launch tables for compute capability `cc`, with every override of
/// [`ENV_OVERRIDES`](crate::tuning::ENV_OVERRIDES) read from the environment — once, here,
/// when the backend is created.
pub(crate) fn tuning(dev: &Device) -> Tuning {
    let get = |name: &str| std::env::var(name).ok();
    let gbps = Tuning::mem_gbps_override(get).unwrap_or_else(|| memory_gbps(&dev.ctx));
    Tuning::for_device(dev.cc.0, gbps).with_env(get)
}

/// The device's peak DRAM bandwidth in GB/s from its memory clock and bus width (double data
/// rate), 0 where the driver does not say: H100 SXM about 3350; the H200 reads above 4000 (memory
/// clock 3201 MHz against 2619).
fn memory_gbps(ctx: &CudaContext) -> f64 {
    let attr = |a| ctx.attribute(a).map(f64::from).unwrap_or(0.0);
    let khz = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    let bits = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    2.0 * khz * 1e3 * bits / 8.0 / 1e9
}
