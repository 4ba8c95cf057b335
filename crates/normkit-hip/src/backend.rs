//! `HipBackend`: device set-up, buffers, launches.

use crate::config::LaunchConfig;
use crate::elf;
use crate::ffi::{self, attr, Api, DevicePtr, Event, Function, HipError, LoadError, Module, Stream};
use crate::kernels::{self, Kernel};
use crate::params::{self, BwdParams, FwdParams};
use crate::plan::{self, align256, BwdPath, BwdShape, FwdLaunch, FwdShape};
use normkit_core::{
    check_desc, check_dtypes, validate_backward, validate_forward, Backward, BenchBackend, Buffer, CastingMode, DType, DTypes, DeviceInfo,
    Direction, Forward, HostBuf, InOut, Layout, NormDesc, NormError, NormKernel, NormKind, Operand, Result, Span,
};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const BACKEND: &str = "hip";

/// Environment variable naming the one HIP runtime library to load instead of the default list
/// (tests point it at a name that does not exist).
pub const LIBRARY_ENV: &str = "NORMKIT_HIP_LIBRARY";

/// Why the HIP backend cannot start. Converted into [`NormError::BackendUnavailable`] by
/// [`HipBackend::new`]; [`HipBackend::try_with_options`] returns it as is.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitError {
    /// libamdhip64 could not be loaded.
    Library(LoadError),
    /// The runtime loaded but sees no AMD GPU (`hipErrorNoDevice`, or zero devices).
    NoDevice,
    /// The requested device index is out of range.
    BadDevice {
        /// The device index asked for.
        requested: i32,
        /// Devices present.
        count: i32,
    },
    /// The device is not one normkit has a code object for.
    UnsupportedArch {
        /// The device's name.
        name: String,
        /// Compute capability, major.
        major: i32,
        /// Compute capability, minor.
        minor: i32,
    },
    /// The device's wavefront size differs from the one the code object was built for.
    WavefrontMismatch {
        /// The target of the code object.
        arch: &'static str,
        /// The device's wavefront size.
        device: i32,
        /// The wavefront size the code object was built for.
        code_object: u32,
    },
    /// The embedded code object is malformed or lacks a kernel of the list.
    CodeObject(String),
    /// A HIP call failed during set-up.
    Runtime(HipError),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Library(e) => write!(f, "{e}"),
            InitError::NoDevice => write!(f, "no AMD GPU (hipErrorNoDevice)"),
            InitError::BadDevice { requested, count } => write!(f, "device {requested} requested, {count} present"),
            InitError::UnsupportedArch { name, major, minor } => {
                write!(f, "no code object for {name} (gfx{major}{minor}x); built for {}", kernels::archs().collect::<Vec<_>>().join(", "))
            }
            InitError::WavefrontMismatch { arch, device, code_object } => {
                write!(f, "wavefront size mismatch: the device reports {device}, the {arch} code object was built for {code_object}")
            }
            InitError::CodeObject(e) => write!(f, "{e}"),
            InitError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InitError {}

impl From<InitError> for NormError {
    fn from(e: InitError) -> Self {
        NormError::BackendUnavailable { backend: BACKEND, reason: e.to_string() }
    }
}

fn dev_err(during: &'static str) -> impl FnOnce(HipError) -> NormError {
    move |e| NormError::Device { backend: BACKEND, during, source: Box::new(e) }
}

/// How to open the backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipOptions {
    /// Library names tried in order (default: `$NORMKIT_HIP_LIBRARY` alone if set, else
    /// [`ffi::LIB_NAMES`]).
    pub libraries: Vec<String>,
    /// Device index.
    pub device: i32,
}

impl Default for HipOptions {
    fn default() -> Self {
        let libraries = match std::env::var(LIBRARY_ENV) {
            Ok(v) if !v.is_empty() => vec![v],
            _ => ffi::LIB_NAMES.iter().map(|s| s.to_string()).collect(),
        };
        HipOptions { libraries, device: 0 }
    }
}

/// The device's arch from its compute capability (gfx9.4 -> gfx942 ...); the code object load
/// then confirms it (the loader rejects an object of another ISA).
fn arch_of(major: i32, minor: i32) -> Option<&'static str> {
    match (major, minor) {
        (9, 0) => Some("gfx90a"),
        (9, 4) => Some("gfx942"),
        (9, 5) => Some("gfx950"),
        _ => None,
    }
}

/// Checks an embedded code object against the kernel list and the device's wavefront size;
/// returns the kernels' descriptors.
pub fn check_code_object(arch: &'static str, bytes: &[u8], device_wave: i32) -> std::result::Result<elf::CodeObject, InitError> {
    let co = elf::parse(bytes).map_err(|e| InitError::CodeObject(format!("{arch}: {e}")))?;
    if co.arch() != Some(arch) {
        return Err(InitError::CodeObject(format!("{arch}: the code object is for machine {:#x}", co.mach)));
    }
    for k in kernels::KERNELS {
        let Some(info) = co.kernel(k.name) else {
            return Err(InitError::CodeObject(format!("{arch}: kernel {} missing", k.name)));
        };
        if i64::from(info.wavefront_size) != i64::from(device_wave) {
            return Err(InitError::WavefrontMismatch { arch, device: device_wave, code_object: info.wavefront_size });
        }
        let need = if k.bwd { std::mem::size_of::<BwdParams>() } else { std::mem::size_of::<FwdParams>() };
        if (info.kernarg_size as usize) < need {
            return Err(InitError::CodeObject(format!(
                "{arch}: {} takes {} kernarg bytes, normkit passes {need}",
                k.name, info.kernarg_size
            )));
        }
    }
    Ok(co)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Device scratch reused across calls (split-row statistics, dW/dB partials).
struct Workspace {
    ptr: u64,
    bytes: usize,
}

struct Ctx {
    api: Api,
    /// Device index (HIP's current device is per host thread; set before allocating).
    device: i32,
    stream: Stream,
    module: Module,
    arch: &'static str,
    config: LaunchConfig,
    /// Dynamic LDS the forward / backward row kernels may use (per-workgroup LDS minus their
    /// static LDS, from the kernel descriptors).
    fwd_lds_limit: usize,
    bwd_lds_limit: usize,
    cus: u32,
    name: String,
    funcs: Mutex<HashMap<&'static str, usize>>,
    ws: Mutex<Workspace>,
    id: u64,
}

// SAFETY: the raw handles (stream, module, function pointers stored as usize) are HIP runtime
// objects that the runtime allows to be used from any host thread; the mutable state (function
// cache, workspace) is behind mutexes.
unsafe impl Send for Ctx {}
// SAFETY: as above; every `&self` method either only reads immutable handles or locks a mutex.
unsafe impl Sync for Ctx {}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the handles were created by this context and are released once, here; the
        // stream is drained first so no queued kernel still uses the workspace or the module.
        // Errors cannot be reported from drop and are ignored.
        unsafe {
            (self.api.stream_synchronize)(self.stream);
            if let Ok(ws) = self.ws.get_mut() {
                if ws.ptr != 0 {
                    (self.api.free)(ws.ptr as DevicePtr);
                }
            }
            (self.api.module_unload)(self.module);
            (self.api.stream_destroy)(self.stream);
        }
    }
}

/// normkit on an AMD GPU through HIP. See the crate docs.
#[derive(Clone)]
pub struct HipBackend {
    ctx: Arc<Ctx>,
}

impl fmt::Debug for HipBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HipBackend").field("device", &self.ctx.name).field("arch", &self.ctx.arch).finish_non_exhaustive()
    }
}

/// Device memory: owned (from [`NormKernel::alloc`]/[`NormKernel::upload`], freed on drop) or
/// borrowed from a raw device pointer ([`HipBackend::buffer_from_raw`], [`HipBuffer::from_raw`]).
pub struct HipBuffer {
    ptr: u64,
    len: usize,
    dtype: DType,
    /// The backend context the memory belongs to; 0 for [`HipBuffer::from_raw`] (any context).
    ctx_id: u64,
    /// Set for memory this buffer frees on drop.
    owner: Option<Arc<Ctx>>,
}

impl fmt::Debug for HipBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HipBuffer({:#x}, {} x {}, {})", self.ptr, self.len, self.dtype, if self.owner.is_some() { "owned" } else { "raw" })
    }
}

impl HipBuffer {
    /// A view of device memory normkit does not own (not freed on drop), usable with any
    /// [`HipBackend`]. Prefer [`HipBackend::buffer_from_raw`], which also checks alignment and
    /// ties the buffer to its backend.
    ///
    /// # Safety
    /// `ptr` must be a device address valid for `len` elements of `dtype` on the device of the
    /// backend it is used with, aligned to the element size, for as long as the buffer is used;
    /// no other code may write it while a normkit call that reads it is in flight, nor access it
    /// while a call that writes it is in flight. Overlaps with other operands are detected from
    /// [`Buffer::base_addr`] by validation.
    pub unsafe fn from_raw(ptr: u64, dtype: DType, len: usize) -> Self {
        HipBuffer { ptr, len, dtype, ctx_id: 0, owner: None }
    }

    /// The device address of element 0.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
}

impl Drop for HipBuffer {
    fn drop(&mut self) {
        if let Some(ctx) = &self.owner {
            if self.ptr != 0 {
                // SAFETY: the pointer came from hipMalloc in this context and is freed once.
                // hipFree waits for queued work that may still use it.
                unsafe { (ctx.api.free)(self.ptr as DevicePtr) };
            }
        }
    }
}

impl Buffer for HipBuffer {
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

/// Device address of element `offset` of `buf`.
fn addr(buf: &HipBuffer, offset: usize) -> u64 {
    buf.ptr + (offset as u64) * buf.dtype.size_bytes() as u64
}

impl HipBackend {
    /// Opens device 0 with the default library list.
    pub fn new() -> Result<Self> {
        Ok(Self::try_with_options(&HipOptions::default())?)
    }

    /// Opens the backend, reporting why it cannot start as an [`InitError`].
    pub fn try_with_options(opts: &HipOptions) -> std::result::Result<Self, InitError> {
        let names: Vec<&str> = opts.libraries.iter().map(String::as_str).collect();
        let api = Api::load(&names).map_err(InitError::Library)?;
        let rt = |status, call| api.check(status, call).map_err(InitError::Runtime);

        // SAFETY: hipInit takes flags (0) and has no other preconditions.
        let init = unsafe { (api.init)(0) };
        let mut count = 0;
        // SAFETY: writes one int through a valid pointer.
        let st = unsafe { (api.get_device_count)(&mut count) };
        // Without an AMD GPU, Debian's 5.2 runtime answers hipInit with hipErrorInvalidDevice and
        // hipGetDeviceCount with hipErrorNoDevice; either call reporting "no device" (or a count
        // of zero) means there is nothing to run on.
        if init == ffi::HIP_ERROR_NO_DEVICE || st == ffi::HIP_ERROR_NO_DEVICE || (st == ffi::HIP_SUCCESS && count == 0) {
            return Err(InitError::NoDevice);
        }
        rt(init, "hipInit")?;
        rt(st, "hipGetDeviceCount")?;
        if opts.device < 0 || opts.device >= count {
            return Err(InitError::BadDevice { requested: opts.device, count });
        }
        let dev = opts.device;
        // SAFETY: dev is a valid device index (checked above).
        rt(unsafe { (api.set_device)(dev) }, "hipSetDevice")?;
        let attribute = |a: i32| -> std::result::Result<i32, InitError> {
            let mut v = 0;
            // SAFETY: writes one int; `a` is a hipDeviceAttribute_t value and dev is valid.
            api.check(unsafe { (api.device_get_attribute)(&mut v, a, dev) }, "hipDeviceGetAttribute").map_err(InitError::Runtime)?;
            Ok(v)
        };
        let warp = attribute(attr::WARP_SIZE)?;
        let cus = attribute(attr::MULTIPROCESSOR_COUNT)?;
        let (major, minor) = (attribute(attr::COMPUTE_CAPABILITY_MAJOR)?, attribute(attr::COMPUTE_CAPABILITY_MINOR)?);
        let mut name_buf = [0u8; 256];
        // SAFETY: the runtime writes at most `len` bytes (NUL-terminated) into the buffer.
        rt(unsafe { (api.device_get_name)(name_buf.as_mut_ptr().cast(), name_buf.len() as i32, dev) }, "hipDeviceGetName")?;
        let end = name_buf.iter().position(|&c| c == 0).unwrap_or(name_buf.len());
        let name = String::from_utf8_lossy(&name_buf[..end]).into_owned();

        let Some(arch) = arch_of(major, minor) else {
            return Err(InitError::UnsupportedArch { name, major, minor });
        };
        let (Some(bytes), Some(config)) = (kernels::code_object(arch), LaunchConfig::for_arch(arch)) else {
            return Err(InitError::UnsupportedArch { name, major, minor });
        };
        let co = check_code_object(arch, bytes, warp)?;
        if i64::from(config.wavefront) != i64::from(warp) {
            return Err(InitError::WavefrontMismatch { arch, device: warp, code_object: config.wavefront });
        }

        let mut module: Module = std::ptr::null_mut();
        // SAFETY: `bytes` is a complete code object embedded in the binary ('static); the runtime
        // copies what it needs during the call.
        let st = unsafe { (api.module_load_data)(&mut module, bytes.as_ptr().cast()) };
        if let Err(e) = api.check(st, "hipModuleLoadData") {
            // E.g. an MI100 (gfx908) also reports compute capability 9.0 but cannot run gfx90a code.
            return Err(InitError::CodeObject(format!(
                "the {arch} code object was rejected by the runtime on {name} (compute capability {major}.{minor}): {e}"
            )));
        }
        let mut stream: Stream = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let st = unsafe { (api.stream_create)(&mut stream) };
        if let Err(e) = api.check(st, "hipStreamCreate") {
            // SAFETY: the module was loaded above and is not used elsewhere.
            unsafe { (api.module_unload)(module) };
            return Err(InitError::Runtime(e));
        }
        let ctx = Ctx {
            api,
            device: dev,
            stream,
            module,
            arch,
            config,
            // "nk_fwd_r" / "nk_bwd_r": the LDS row kernels and the register-resident ones.
            fwd_lds_limit: plan::dyn_lds_limit(&config, &co, "nk_fwd_r"),
            bwd_lds_limit: plan::dyn_lds_limit(&config, &co, "nk_bwd_r"),
            cus: cus.max(1) as u32,
            name,
            funcs: Mutex::new(HashMap::new()),
            ws: Mutex::new(Workspace { ptr: 0, bytes: 0 }),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        Ok(HipBackend { ctx: Arc::new(ctx) })
    }

    /// Makes this backend's device current on the calling thread (allocations go to the current
    /// device; launches and copies follow the stream's device).
    fn bind(&self) -> Result<()> {
        // SAFETY: the index was validated at start-up.
        let st = unsafe { (self.ctx.api.set_device)(self.ctx.device) };
        self.ctx.api.check(st, "hipSetDevice").map_err(dev_err("hipSetDevice"))
    }

    /// The target the device was matched to (`gfx942`, `gfx950`, `gfx90a`).
    pub fn arch(&self) -> &'static str {
        self.ctx.arch
    }

    /// The launch configuration in use.
    pub fn config(&self) -> &LaunchConfig {
        &self.ctx.config
    }

    fn function(&self, k: Kernel) -> Result<Function> {
        let mut cache = self.ctx.funcs.lock().map_err(|_| poisoned())?;
        if let Some(&f) = cache.get(k.name) {
            return Ok(f as Function);
        }
        let cname = CString::new(k.name).map_err(|_| unsupported(format!("kernel {}", k.name)))?;
        let mut f: Function = std::ptr::null_mut();
        // SAFETY: module is loaded for the context's lifetime; the name is NUL-terminated.
        let st = unsafe { (self.ctx.api.module_get_function)(&mut f, self.ctx.module, cname.as_ptr()) };
        self.ctx.api.check(st, "hipModuleGetFunction").map_err(dev_err("kernel lookup"))?;
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
        let mut args = [params as *mut P as *mut c_void];
        // SAFETY: `f` is a kernel of the loaded module whose single parameter has P's layout
        // (params.rs mirrors nk_params.h; sizes asserted on both sides and against the kernel
        // descriptor at start-up); every address inside `params` was derived from validated views
        // of live device buffers or from the workspace; the runtime copies the argument block
        // before returning.
        let st = unsafe {
            (self.ctx.api.module_launch_kernel)(f, gx, gy, 1, threads, 1, 1, lds, self.ctx.stream, args.as_mut_ptr(), std::ptr::null_mut())
        };
        self.ctx.api.check(st, "hipModuleLaunchKernel").map_err(dev_err("kernel launch"))
    }

    /// The workspace, grown to at least `bytes` (> 0); returns its device address.
    fn workspace(&self, bytes: usize) -> Result<u64> {
        let mut ws = self.ctx.ws.lock().map_err(|_| poisoned())?;
        if ws.bytes >= bytes {
            return Ok(ws.ptr);
        }
        let api = &self.ctx.api;
        if ws.ptr != 0 {
            // SAFETY: drain the stream so no queued kernel still uses the old workspace, then
            // free it (allocated below by an earlier call, freed once).
            unsafe {
                api.check((api.stream_synchronize)(self.ctx.stream), "hipStreamSynchronize").map_err(dev_err("workspace"))?;
                (api.free)(ws.ptr as DevicePtr);
            }
            *ws = Workspace { ptr: 0, bytes: 0 };
        }
        self.bind()?;
        let mut p: DevicePtr = std::ptr::null_mut();
        // SAFETY: writes one device pointer.
        let st = unsafe { (api.malloc)(&mut p, bytes) };
        api.check(st, "hipMalloc").map_err(|_| NormError::ResourceLimit {
            resource: "HIP workspace bytes",
            requested: bytes as u64,
            available: 0,
        })?;
        *ws = Workspace { ptr: p as u64, bytes };
        Ok(ws.ptr)
    }

    fn check_owner(&self, operand: Operand, buf: &HipBuffer) -> Result<()> {
        if buf.ctx_id != 0 && buf.ctx_id != self.ctx.id {
            return Err(NormError::ForeignBuffer { backend: BACKEND, operand });
        }
        Ok(())
    }

    /// A buffer over device memory this backend does not own (not freed on drop): `len`
    /// elements of `dtype` at device address `ptr`. The address must be aligned to the element
    /// size ([`NormError::Alignment`] otherwise); overlaps with other operands are rejected by
    /// validation ([`Buffer::base_addr`]).
    ///
    /// # Safety
    /// `ptr` must be valid for `len` elements on this backend's device for as long as the
    /// buffer is used, and not be accessed by other code while a normkit call that uses it is in
    /// flight (see [`HipBuffer::from_raw`]).
    pub unsafe fn buffer_from_raw(&self, ptr: u64, len: usize, dtype: DType) -> Result<HipBuffer> {
        let es = dtype.size_bytes();
        if !ptr.is_multiple_of(es as u64) {
            return Err(NormError::Alignment { operand: Operand::X, required: es, offset_bytes: (ptr % es as u64) as usize });
        }
        if len.checked_mul(es).and_then(|b| ptr.checked_add(b as u64)).is_none() {
            return Err(NormError::Overflow { operand: Operand::X });
        }
        Ok(HipBuffer { ptr, len, dtype, ctx_id: self.ctx.id, owner: None })
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: the stream lives as long as the context.
        let st = unsafe { (self.ctx.api.stream_synchronize)(self.ctx.stream) };
        self.ctx.api.check(st, "hipStreamSynchronize").map_err(dev_err("synchronize"))
    }
}

fn poisoned() -> NormError {
    NormError::Internal { backend: BACKEND, what: "a previous call panicked while holding the backend's lock".into() }
}

fn unsupported(what: String) -> NormError {
    NormError::Unsupported { backend: BACKEND, what }
}

fn dt_code(d: DType) -> i32 {
    match d {
        DType::F32 => params::DT_F32,
        DType::F16 => params::DT_F16,
        _ => params::DT_BF16,
    }
}

fn casting_code(c: CastingMode) -> i32 {
    match c {
        CastingMode::Gemma => params::CAST_GEMMA,
        CastingMode::Llama => params::CAST_LLAMA,
        _ => params::CAST_NONE,
    }
}

fn in_out<'a>(io: &'a InOut<'_, HipBuffer>) -> (&'a HipBuffer, &'a HipBuffer) {
    match io {
        InOut::Separate { input, output } => (input.buf, &*output.buf),
        InOut::InPlace(m) => (&*m.buf, &*m.buf),
    }
}

/// Whether a 2-D view allows the 16-byte path: start 16-byte aligned, stride a multiple of 8
/// elements. Checked whatever M is (also for one row), so the path never depends on M.
fn mat_vec_ok(b: &HipBuffer, l: &Layout) -> bool {
    addr(b, l.offset).is_multiple_of(16) && l.stride.is_multiple_of(8)
}
fn span_vec_ok(b: &HipBuffer, s: &Span) -> bool {
    addr(b, s.offset).is_multiple_of(16)
}

impl NormKernel for HipBackend {
    type Buffer = HipBuffer;

    fn name(&self) -> &'static str {
        BACKEND
    }

    fn device_name(&self) -> String {
        format!("{} ({})", self.ctx.name, self.ctx.arch)
    }

    /// Every op, option and dtype combination of the contract: the kernels take the dtypes at
    /// run time.
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        check_desc(desc)?;
        check_dtypes(desc, dir, dtypes)
    }

    fn forward(&self, desc: &NormDesc, a: Forward<'_, HipBuffer>) -> Result<()> {
        let plan = validate_forward(desc, &a)?;
        let (xb, yb) = in_out(&a.x);
        self.check_owner(Operand::X, xb)?;
        self.check_owner(Operand::Y, yb)?;
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
            self.check_owner(Operand::Residual, rb)?;
            self.check_owner(Operand::ResidualOut, rob)?;
            p.r = addr(rb, rl.offset);
            p.r_out = addr(rob, rol.offset);
            p.sr = rl.stride as i64;
            p.sro = rol.stride as i64;
            vec_ok &= mat_vec_ok(rb, &rl) && mat_vec_ok(rob, &rol);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_owner(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
            flags |= params::F_WEIGHT;
        }
        if let (Some(b), Some(s)) = (&a.bias, plan.bias) {
            self.check_owner(Operand::Bias, b.buf)?;
            p.b = addr(b.buf, s.offset);
            vec_ok &= span_vec_ok(b.buf, &s);
            flags |= params::F_BIAS;
        }
        if let (Some(r), Some(s)) = (&a.rstd, plan.rstd) {
            self.check_owner(Operand::Rstd, r.buf)?;
            p.rstd = addr(r.buf, s.offset);
            flags |= params::F_STATS;
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_owner(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        p.flags = flags;
        if plan.m == 0 {
            return Ok(());
        }
        // Every tensor 16-bit: 16-byte staging slots and, when aligned, the narrow kernel. A dtype
        // property: strided and contiguous views of the same dtypes take the same path.
        let d = plan.dtypes;
        let all16 = d.x != DType::F32
            && d.y != DType::F32
            && (!desc.residual || d.residual != DType::F32)
            && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || d.weight != DType::F32);
        let nvec = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
        // The register-resident kernels: every tensor in x's dtype and Gemma casting.
        let uniform =
            d.y == d.x && (!desc.residual || d.residual == d.x) && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || d.weight == d.x);
        let reg = (uniform && desc.casting == CastingMode::Gemma).then(|| (d.x.name(), desc.kind == NormKind::Layer));
        let shape = FwdShape { m: plan.m, n: plan.n, aligned: vec_ok, all16, nvec, residual: desc.residual, reg };
        match plan::forward(&self.ctx.config, self.ctx.cus, &shape, self.ctx.fwd_lds_limit)? {
            FwdLaunch::Row { kernel, group, rows_per_cta, slot, lds, blocks } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (blocks, 1), group * rows_per_cta, lds, &mut p)
            }
            FwdLaunch::Split { stats, reduce, apply, nsplit, blocks, reduce_blocks, threads, ws_bytes } => {
                p.ws = self.workspace(ws_bytes)?;
                p.nsplit = nsplit as i64;
                self.launch(stats, (blocks, 1), threads, 0, &mut p)?;
                self.launch(reduce, (reduce_blocks, 1), threads, 0, &mut p)?;
                self.launch(apply, (blocks, 1), threads, 0, &mut p)
            }
        }
    }

    fn backward(&self, desc: &NormDesc, a: Backward<'_, HipBuffer>) -> Result<()> {
        let plan = validate_backward(desc, &a)?;
        let (dyb, dxb) = in_out(&a.dy);
        self.check_owner(Operand::X, a.x.buf)?;
        self.check_owner(Operand::Dy, dyb)?;
        self.check_owner(Operand::Dx, dxb)?;
        self.check_owner(Operand::Rstd, a.rstd.buf)?;
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
            self.check_owner(Operand::DResidualOut, d.buf)?;
            p.dres = addr(d.buf, l.offset);
            p.sdres = l.stride as i64;
            vec_ok &= mat_vec_ok(d.buf, &l);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_owner(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_owner(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        if let (Some(d), Some(s)) = (&a.dw, plan.dw) {
            self.check_owner(Operand::Dw, d.buf)?;
            p.dw = addr(d.buf, s.offset);
            flags |= params::F_WEIGHT;
        }
        if let (Some(d), Some(s)) = (&a.db, plan.db) {
            self.check_owner(Operand::Db, d.buf)?;
            p.db = addr(d.buf, s.offset);
            flags |= params::F_BIAS;
        }
        p.flags = flags;
        let nacc = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
        let d = plan.dtypes;
        let all16 = d.x != DType::F32 && d.y != DType::F32 && (a.weight.is_none() || d.weight != DType::F32);
        let shape = BwdShape {
            m: plan.m,
            n: plan.n,
            aligned: vec_ok,
            all16,
            weight: a.weight.is_some(),
            d_residual: a.d_residual_out.is_some(),
            nacc,
            reg: (vec_ok
                && d.y == d.x
                && (a.weight.is_none() || d.weight == d.x)
                && (desc.kind == NormKind::Layer || flags & params::F_BIAS == 0))
                .then(|| (d.x.name(), desc.kind == NormKind::Layer)),
        };
        let l = plan::backward(&self.ctx.config, self.ctx.cus, &shape, self.ctx.bwd_lds_limit)?;
        let ws = if l.ws_bytes > 0 { self.workspace(l.ws_bytes)? } else { 0 };
        p.ws_stats = ws;
        p.ws_dw = ws + align256(l.stats_bytes) as u64;
        p.ws_db = p.ws_dw + if flags & params::F_WEIGHT != 0 { align256(l.part_bytes) as u64 } else { 0 };
        p.nparts = l.parts as i64;
        p.nsplit = l.nsplit as i64;
        match l.path {
            BwdPath::Row { kernel, group, rows_per_cta, slot, lds } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (l.parts, 1), group * rows_per_cta, lds, &mut p)?;
            }
            BwdPath::Split { stats, apply, tiles, reduce_blocks } => {
                let threads = kernels::NK_SPLIT_THREADS as u32;
                self.launch(stats, (tiles.min(plan::MAX_GRID), 1), threads, 0, &mut p)?;
                self.launch(kernels::NK_BWD_SPLIT_REDUCE, (reduce_blocks, 1), threads, 0, &mut p)?;
                self.launch(apply, (l.nsplit as u64, l.parts), threads, 0, &mut p)?;
            }
            BwdPath::Empty => {}
        }
        if l.finalize_blocks > 0 {
            // With M = 0 the finalize sums zero parts: dw and db become zeros (an empty sum).
            // One column per lane of a wavefront (p.group: the finalize's columns per workgroup).
            let k = kernels::NK_BWD_FINALIZE_WIDE;
            p.group = kernels::NK_WARP_WIDTH as i32;
            self.launch(k, (l.finalize_blocks, 1), k.max_threads, 0, &mut p)?;
        }
        Ok(())
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<HipBuffer> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or(NormError::ResourceLimit {
            resource: "HIP allocation bytes",
            requested: u64::MAX,
            available: 0,
        })?;
        let mut p: DevicePtr = std::ptr::null_mut();
        if bytes > 0 {
            self.bind()?;
            // SAFETY: writes one device pointer.
            let st = unsafe { (self.ctx.api.malloc)(&mut p, bytes) };
            self.ctx.api.check(st, "hipMalloc").map_err(|_| NormError::ResourceLimit {
                resource: "HIP device memory bytes",
                requested: bytes as u64,
                available: 0,
            })?;
        }
        Ok(HipBuffer { ptr: p as u64, len, dtype, ctx_id: self.ctx.id, owner: Some(self.ctx.clone()) })
    }

    fn upload(&self, src: &HostBuf) -> Result<HipBuffer> {
        let buf = self.alloc(src.dtype(), src.len())?;
        let bytes = src.as_bytes();
        if !bytes.is_empty() {
            // SAFETY: the destination holds exactly bytes.len() bytes (allocated above); the
            // source slice stays borrowed until the stream is drained below, so the runtime may
            // read it asynchronously.
            let st = unsafe { (self.ctx.api.memcpy_htod_async)(buf.ptr as DevicePtr, bytes.as_ptr().cast(), bytes.len(), self.ctx.stream) };
            self.ctx.api.check(st, "hipMemcpyHtoDAsync").map_err(dev_err("upload"))?;
            self.sync()?;
        }
        Ok(buf)
    }

    fn download(&self, buf: &HipBuffer) -> Result<HostBuf> {
        self.check_owner(Operand::X, buf)?;
        let mut host = HostBuf::zeros(buf.dtype, buf.len);
        let out = host.as_bytes_mut();
        if !out.is_empty() {
            // SAFETY: `out` holds exactly the buffer's bytes; it stays borrowed until the stream
            // (on which the copy is ordered after every earlier call) is drained below.
            let st = unsafe { (self.ctx.api.memcpy_dtoh_async)(out.as_mut_ptr().cast(), buf.ptr as DevicePtr, out.len(), self.ctx.stream) };
            self.ctx.api.check(st, "hipMemcpyDtoHAsync").map_err(dev_err("download"))?;
        }
        self.sync()?;
        Ok(host)
    }

    fn synchronize(&self) -> Result<()> {
        self.sync()
    }
}

/// A pair of HIP events, destroyed on drop.
struct Events {
    api: *const Api,
    start: Event,
    stop: Event,
}

impl Drop for Events {
    fn drop(&mut self) {
        // SAFETY: both events were created by `Events::new` from this Api, which outlives this
        // value (it lives in the backend's context, borrowed for the timing call).
        unsafe {
            ((*self.api).event_destroy)(self.start);
            ((*self.api).event_destroy)(self.stop);
        }
    }
}

impl HipBackend {
    fn events(&self) -> Result<Events> {
        let api = &self.ctx.api;
        let mut ev = Events { api, start: std::ptr::null_mut(), stop: std::ptr::null_mut() };
        // SAFETY: each call writes one event handle; a failure leaves a null handle, which
        // hipEventDestroy rejects harmlessly on drop.
        unsafe {
            api.check((api.event_create)(&mut ev.start), "hipEventCreate").map_err(dev_err("timing"))?;
            api.check((api.event_create)(&mut ev.stop), "hipEventCreate").map_err(dev_err("timing"))?;
        }
        Ok(ev)
    }

    /// Seconds between the two events after running `body` between them.
    fn time(&self, ev: &Events, body: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let api = &self.ctx.api;
        let s = self.ctx.stream;
        // SAFETY: events and stream are live handles of this context.
        api.check(unsafe { (api.event_record)(ev.start, s) }, "hipEventRecord").map_err(dev_err("timing"))?;
        body()?;
        // SAFETY: as above.
        api.check(unsafe { (api.event_record)(ev.stop, s) }, "hipEventRecord").map_err(dev_err("timing"))?;
        // SAFETY: as above.
        api.check(unsafe { (api.event_synchronize)(ev.stop) }, "hipEventSynchronize").map_err(dev_err("timing"))?;
        let mut ms = 0.0f32;
        // SAFETY: writes one float; both events have completed.
        api.check(unsafe { (api.event_elapsed_time)(&mut ms, ev.start, ev.stop) }, "hipEventElapsedTime").map_err(dev_err("timing"))?;
        Ok(f64::from(ms) * 1e-3)
    }
}

impl BenchBackend for HipBackend {
    fn device_info(&self) -> DeviceInfo {
        let api = &self.ctx.api;
        let attribute = |a: i32| -> i32 {
            let mut v = 0;
            // SAFETY: writes one int for this backend's device; on failure v stays 0.
            unsafe { (api.device_get_attribute)(&mut v, a, self.ctx.device) };
            v
        };
        let mut rt = 0;
        // SAFETY: writes one int.
        unsafe { (api.runtime_get_version)(&mut rt) };
        let mut mem = 0usize;
        // SAFETY: writes one size_t for this backend's device.
        unsafe { (api.device_total_mem)(&mut mem, self.ctx.device) };
        DeviceInfo {
            backend: BACKEND.into(),
            name: format!("{} ({})", self.ctx.name, self.ctx.arch),
            compute_units: self.ctx.cus,
            driver: format!("HIP runtime {} ({})", rt, api.soname),
            clocks: format!(
                "peak SCLK {} MHz, peak MCLK {} MHz (hipDeviceGetAttribute; not the clock under load)",
                attribute(attr::CLOCK_RATE) / 1000,
                attribute(attr::MEMORY_CLOCK_RATE) / 1000
            ),
            memory_bytes: mem as u64,
            cache_bytes: attribute(attr::L2_CACHE_SIZE).max(0) as u64,
        }
    }

    fn copy_gbps(&self, bytes: usize) -> Result<f64> {
        let bytes = bytes.max(4);
        let src = self.alloc(DType::F32, bytes / 4)?;
        let dst = self.alloc(DType::F32, bytes / 4)?;
        let n = (bytes / 4) * 4;
        let api = &self.ctx.api;
        let s = self.ctx.stream;
        let copy = || -> Result<()> {
            // SAFETY: both buffers hold n bytes and live until the end of this function, after
            // the stream was drained by the timing.
            let st = unsafe { (api.memcpy_dtod_async)(dst.ptr as DevicePtr, src.ptr as DevicePtr, n, s) };
            api.check(st, "hipMemcpyDtoDAsync").map_err(dev_err("copy ceiling"))
        };
        // SAFETY: fills src (n bytes) so the copy moves initialised memory.
        let st = unsafe { (api.memset_async)(src.ptr as DevicePtr, 0, n, s) };
        api.check(st, "hipMemsetAsync").map_err(dev_err("copy ceiling"))?;
        copy()?;
        let ev = self.events()?;
        let reps = 10;
        let secs = self.time(&ev, &mut || {
            for _ in 0..reps {
                copy()?;
            }
            Ok(())
        })?;
        Ok(2.0 * n as f64 * reps as f64 / secs / 1e9)
    }

    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        // Back-to-back launches between two events (no graph capture: hipGraph support through
        // the module API is left for when this can be run on a device).
        for i in 0..calls {
            f(i)?;
        }
        let ev = self.events()?;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let secs = self.time(&ev, &mut || {
                for i in 0..calls {
                    f(i)?;
                }
                Ok(())
            })?;
            out.push(secs / calls.max(1) as f64);
        }
        Ok(out)
    }
}
