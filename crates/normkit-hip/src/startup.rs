//! Start-up: loading the runtime, finding the device, matching it to a code object (arch and
//! wavefront size), loading the module and creating the stream. Everything that can stop the
//! backend from starting is an [`InitError`].

use crate::buffers::Workspace;
use crate::elf;
use crate::ffi::{self, attr, Api, LoadError, Module, Stream};
use crate::kernels;
use crate::params::{BwdParams, FwdParams};
use crate::plan;
use crate::result::{self, HipError};
use crate::tuning::Tuning;
use crate::{HipBackend, BACKEND};
use normkit_core::NormError;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// What a started backend holds: the runtime, the device, its module and stream, the tuning of
/// its target, and the state calls share (function cache, workspace) behind mutexes.
pub(crate) struct Ctx {
    pub(crate) api: Api,
    /// Device index (HIP's current device is per host thread; set before allocating).
    pub(crate) device: i32,
    pub(crate) stream: Stream,
    /// Whether the stream was created here (and so is destroyed here), or is the caller's.
    pub(crate) owns_stream: bool,
    pub(crate) module: Module,
    pub(crate) arch: &'static str,
    pub(crate) config: Tuning,
    /// Dynamic LDS the forward / backward row kernels may use (per-workgroup LDS minus their
    /// static LDS, from the kernel descriptors).
    pub(crate) fwd_lds_limit: usize,
    pub(crate) bwd_lds_limit: usize,
    /// Dynamic LDS the quantised forward's row kernels may use (their fused transpose tile).
    pub(crate) fwd_q_lds_limit: usize,
    pub(crate) cus: u32,
    pub(crate) name: String,
    pub(crate) funcs: Mutex<HashMap<&'static str, usize>>,
    pub(crate) ws: Mutex<Workspace>,
    /// Tells this backend's buffers from another's ([`crate::HipBuffer`]'s owner check).
    pub(crate) id: u64,
}

// SAFETY: the raw handles (stream, module, function pointers stored as usize) are HIP runtime
// objects that the runtime allows to be used from any host thread; the mutable state (function
// cache, workspace) is behind mutexes.
unsafe impl Send for Ctx {}
// SAFETY: as above; every `&self` method either only reads immutable handles or locks a mutex.
unsafe impl Sync for Ctx {}

impl Drop for Ctx {
    fn drop(&mut self) {
        // Errors cannot be reported from drop and are ignored.
        // SAFETY: the handles were created by this context (the stream unless it is the caller's,
        // which is only synchronised) and are released once, here; the stream is drained first so no queued kernel still uses the workspace or the module.
        unsafe {
            let _ = result::stream_synchronize(&self.api, self.stream);
            if let Ok(ws) = self.ws.get_mut() {
                if ws.ptr != 0 {
                    let _ = result::free(&self.api, ws.ptr as ffi::DevicePtr);
                }
            }
            let _ = result::module_unload(&self.api, self.module);
            if self.owns_stream {
                let _ = result::stream_destroy(&self.api, self.stream);
            }
        }
    }
}

impl HipBackend {
    /// A backend on the caller's HIP stream: every launch, workspace allocation and copy is
    /// queued on `stream` (device `opts.device`), so normkit's calls are ordered with the
    /// engine's own work without synchronisation. Nothing on the hot path synchronises except a
    /// workspace growth (make one call of the largest shape first, or
    /// [`HipBackend::reserve_workspace`], before capturing a graph). The backend never destroys
    /// the stream; dropping its last clone synchronises it once (the workspace is freed after the
    /// calls that use it).
    ///
    /// # Safety
    /// `stream` must be a `hipStream_t` of device `opts.device` created by the HIP runtime this
    /// backend loads (the same `libamdhip64.so` in this process: `opts.libraries`), or null for
    /// that device's default stream, and it must stay valid until the last clone of the backend
    /// (and of every buffer it made) is dropped. There is no shared Rust HIP stream type to
    /// check this against.
    pub unsafe fn from_raw_stream(stream: *mut std::ffi::c_void, opts: &HipOptions) -> std::result::Result<Self, InitError> {
        Self::start(opts, Some(stream))
    }

    /// Opens device 0 with the default library list.
    pub fn new() -> normkit_core::Result<Self> {
        Ok(Self::try_with_options(&HipOptions::default())?)
    }

    /// Opens the backend, reporting why it cannot start as an [`InitError`].
    pub fn try_with_options(opts: &HipOptions) -> std::result::Result<Self, InitError> {
        Self::start(opts, None)
    }

    /// Starts the backend on `stream` (the caller's) or on a stream of its own (`None`).
    fn start(opts: &HipOptions, stream: Option<Stream>) -> std::result::Result<Self, InitError> {
        let names: Vec<&str> = opts.libraries.iter().map(String::as_str).collect();
        let api = Api::load(&names).map_err(InitError::Library)?;

        let init = result::init(&api, 0);
        let count = result::get_device_count(&api);
        // Without an AMD GPU, Debian's 5.2 runtime answers hipInit with hipErrorInvalidDevice and
        // hipGetDeviceCount with hipErrorNoDevice; either call reporting "no device" (or a count
        // of zero) means there is nothing to run on.
        let no_device = |e: &HipError| e.code == ffi::HIP_ERROR_NO_DEVICE;
        if init.as_ref().err().is_some_and(no_device) || count.as_ref().err().is_some_and(no_device) || count == Ok(0) {
            return Err(InitError::NoDevice);
        }
        init.map_err(InitError::Runtime)?;
        let count = count.map_err(InitError::Runtime)?;
        if opts.device < 0 || opts.device >= count {
            return Err(InitError::BadDevice { requested: opts.device, count });
        }
        let dev = opts.device;
        result::set_device(&api, dev).map_err(InitError::Runtime)?;
        let attribute = |a: i32| result::device_get_attribute(&api, a, dev).map_err(InitError::Runtime);
        let warp = attribute(attr::WARP_SIZE)?;
        let cus = attribute(attr::MULTIPROCESSOR_COUNT)?;
        let (major, minor) = (attribute(attr::COMPUTE_CAPABILITY_MAJOR)?, attribute(attr::COMPUTE_CAPABILITY_MINOR)?);
        let name = result::device_get_name(&api, dev).map_err(InitError::Runtime)?;

        let Some(arch) = arch_of(major, minor) else {
            return Err(InitError::UnsupportedArch { name, major, minor });
        };
        let (Some(bytes), Some(config)) = (kernels::code_object(arch), Tuning::for_arch(arch)) else {
            return Err(InitError::UnsupportedArch { name, major, minor });
        };
        let co = check_code_object(arch, bytes, warp)?;
        if i64::from(config.wavefront) != i64::from(warp) {
            return Err(InitError::WavefrontMismatch { arch, device: warp, code_object: config.wavefront });
        }

        // SAFETY: `bytes` is a complete code object embedded in the binary ('static), checked
        // above by the ELF reader.
        let module = unsafe { result::module_load_data(&api, bytes) }.map_err(|e| {
            // E.g. an MI100 (gfx908) also reports compute capability 9.0 but cannot run gfx90a code.
            InitError::CodeObject(format!(
                "the {arch} code object was rejected by the runtime on {name} (compute capability {major}.{minor}): {e}"
            ))
        })?;
        let (stream, owns_stream) = match stream {
            Some(s) => (s, false),
            None => match result::stream_create(&api) {
                Ok(s) => (s, true),
                Err(e) => {
                    // SAFETY: the module was loaded above and is not used elsewhere.
                    let _ = unsafe { result::module_unload(&api, module) };
                    return Err(InitError::Runtime(e));
                }
            },
        };
        let ctx = Ctx {
            api,
            device: dev,
            stream,
            owns_stream,
            module,
            arch,
            config,
            // "nk_fwd_r" / "nk_bwd_r": the LDS row kernels and the register-resident ones.
            fwd_lds_limit: plan::dyn_lds_limit(&config, &co, "nk_fwd_r"),
            bwd_lds_limit: plan::dyn_lds_limit(&config, &co, "nk_bwd_r"),
            fwd_q_lds_limit: plan::dyn_lds_limit(&config, &co, "nk_fwd_q_row"),
            cus: cus.max(1) as u32,
            name,
            funcs: Mutex::new(HashMap::new()),
            ws: Mutex::new(Workspace { ptr: 0, bytes: 0 }),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        Ok(HipBackend { ctx: Arc::new(ctx) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caller's-stream constructor fails like the plain one, before the stream is touched:
    /// a missing runtime library is `Library`, no AMD GPU is `NoDevice`. (On a machine with one,
    /// it starts on the device's null stream, which is valid, and drop only synchronises it.)
    #[test]
    fn caller_stream_start_errors() {
        let missing = HipOptions { libraries: vec!["libnormkit-no-such-hip.so".into()], device: 0 };
        // SAFETY: null is the default stream, valid for any device; and loading fails first.
        let e = unsafe { HipBackend::from_raw_stream(std::ptr::null_mut(), &missing) }.unwrap_err();
        assert!(matches!(e, InitError::Library(_)), "{e}");
        // SAFETY: as above.
        match unsafe { HipBackend::from_raw_stream(std::ptr::null_mut(), &HipOptions::default()) } {
            Ok(b) => assert!(b.raw_stream().is_null()),
            Err(e) => assert!(matches!(e, InitError::Library(_) | InitError::NoDevice), "{e}"),
        }
    }
}
