//! The HIP runtime, loaded at run time with libloading: only the functions normkit calls, no
//! `hipDeviceProp_t` (its layout changes between ROCm releases), no build-time ROCm.
//!
//! These are the raw C entry points. The rest of the crate calls them through
//! [`crate::result`], which wraps each in a function returning `Result<_, HipError>`.

use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::fmt;

/// Sonames tried in order: the unversioned development link, then ROCm 7, 6, 5.
pub const LIB_NAMES: &[&str] = &["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];

/// `hipError_t`: the status every HIP call returns (0 is success).
pub type HipStatus = c_int;
/// `hipDeviceptr_t`: a device address.
pub type DevicePtr = *mut c_void;
/// `hipModule_t`: a loaded code object.
pub type Module = *mut c_void;
/// `hipFunction_t`: a kernel of a loaded module.
pub type Function = *mut c_void;
/// `hipStream_t`: a stream.
pub type Stream = *mut c_void;
/// `hipEvent_t`: an event (for timing).
pub type Event = *mut c_void;

/// `hipSuccess`.
pub const HIP_SUCCESS: HipStatus = 0;
/// `hipErrorOutOfMemory` (also `hipErrorMemoryAllocation`, its deprecated alias: the same value).
pub const HIP_ERROR_OUT_OF_MEMORY: HipStatus = 2;
/// `hipErrorNoDevice`.
pub const HIP_ERROR_NO_DEVICE: HipStatus = 100;
/// `hipErrorNotFound` (e.g. `hipModuleGetFunction` for a name the module lacks).
pub const HIP_ERROR_NOT_FOUND: HipStatus = 500;

/// `hipDeviceAttribute_t` values used here. They are stable from ROCm 5.x to 7.x (retired
/// attributes were renamed `Unused*`, keeping the numbering).
pub mod attr {
    /// `hipDeviceAttributeClockRate` (kHz).
    pub const CLOCK_RATE: i32 = 5;
    /// `hipDeviceAttributeL2CacheSize` (bytes).
    pub const L2_CACHE_SIZE: i32 = 19;
    /// `hipDeviceAttributeComputeCapabilityMajor`.
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 23;
    /// `hipDeviceAttributeMemoryClockRate` (kHz).
    pub const MEMORY_CLOCK_RATE: i32 = 60;
    /// `hipDeviceAttributeComputeCapabilityMinor`.
    pub const COMPUTE_CAPABILITY_MINOR: i32 = 61;
    /// `hipDeviceAttributeMultiprocessorCount` (compute units).
    pub const MULTIPROCESSOR_COUNT: i32 = 63;
    /// `hipDeviceAttributeMaxSharedMemoryPerBlock` (LDS bytes per workgroup).
    pub const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 74;
    /// `hipDeviceAttributeWarpSize` (the wavefront size).
    pub const WARP_SIZE: i32 = 87;
}

pub use crate::result::HipError;

/// The loaded runtime. Function pointers stay valid while `_lib` is loaded, i.e. as long as
/// this struct lives.
pub struct Api {
    /// `hipInit`.
    pub init: unsafe extern "C" fn(c_uint) -> HipStatus,
    /// `hipGetDeviceCount`.
    pub get_device_count: unsafe extern "C" fn(*mut c_int) -> HipStatus,
    /// `hipSetDevice`.
    pub set_device: unsafe extern "C" fn(c_int) -> HipStatus,
    /// `hipDeviceGetAttribute`.
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipStatus,
    /// `hipDeviceGetName`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipStatus,
    /// `hipDeviceTotalMem`.
    pub device_total_mem: unsafe extern "C" fn(*mut usize, c_int) -> HipStatus,
    /// `hipRuntimeGetVersion`.
    pub runtime_get_version: unsafe extern "C" fn(*mut c_int) -> HipStatus,
    /// `hipMalloc`.
    pub malloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> HipStatus,
    /// `hipFree`.
    pub free: unsafe extern "C" fn(DevicePtr) -> HipStatus,
    /// `hipMemcpyHtoDAsync`.
    pub memcpy_htod_async: unsafe extern "C" fn(DevicePtr, *const c_void, usize, Stream) -> HipStatus,
    /// `hipMemcpyDtoHAsync`.
    pub memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, DevicePtr, usize, Stream) -> HipStatus,
    /// `hipMemcpyDtoDAsync`.
    pub memcpy_dtod_async: unsafe extern "C" fn(DevicePtr, DevicePtr, usize, Stream) -> HipStatus,
    /// `hipMemsetAsync`.
    pub memset_async: unsafe extern "C" fn(DevicePtr, c_int, usize, Stream) -> HipStatus,
    /// `hipModuleLoadData`.
    pub module_load_data: unsafe extern "C" fn(*mut Module, *const c_void) -> HipStatus,
    /// `hipModuleUnload`.
    pub module_unload: unsafe extern "C" fn(Module) -> HipStatus,
    /// `hipModuleGetFunction`.
    pub module_get_function: unsafe extern "C" fn(*mut Function, Module, *const c_char) -> HipStatus,
    /// `hipModuleLaunchKernel`.
    #[allow(clippy::type_complexity)]
    pub module_launch_kernel: unsafe extern "C" fn(
        Function,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Stream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> HipStatus,
    /// `hipStreamCreate`.
    pub stream_create: unsafe extern "C" fn(*mut Stream) -> HipStatus,
    /// `hipStreamDestroy`.
    pub stream_destroy: unsafe extern "C" fn(Stream) -> HipStatus,
    /// `hipStreamSynchronize`.
    pub stream_synchronize: unsafe extern "C" fn(Stream) -> HipStatus,
    /// `hipEventCreate`.
    pub event_create: unsafe extern "C" fn(*mut Event) -> HipStatus,
    /// `hipEventDestroy`.
    pub event_destroy: unsafe extern "C" fn(Event) -> HipStatus,
    /// `hipEventRecord`.
    pub event_record: unsafe extern "C" fn(Event, Stream) -> HipStatus,
    /// `hipEventSynchronize`.
    pub event_synchronize: unsafe extern "C" fn(Event) -> HipStatus,
    /// `hipEventElapsedTime`.
    pub event_elapsed_time: unsafe extern "C" fn(*mut f32, Event, Event) -> HipStatus,
    /// `hipMemGetInfo` (free, total bytes of the current device).
    pub mem_get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> HipStatus,
    /// `hipGetErrorString`.
    pub get_error_string: unsafe extern "C" fn(HipStatus) -> *const c_char,
    /// `hipGetErrorName`.
    pub get_error_name: unsafe extern "C" fn(HipStatus) -> *const c_char,
    /// The soname that was loaded.
    pub soname: String,
    _lib: Library,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api").field("soname", &self.soname).finish_non_exhaustive()
    }
}

/// Why the runtime could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No soname in the list could be opened.
    NotFound {
        /// The sonames tried, in order.
        tried: Vec<String>,
    },
    /// The library opened but lacks a function (not a HIP runtime, or a very old one).
    MissingSymbol {
        /// The library that was opened.
        soname: String,
        /// The function it lacks.
        symbol: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NotFound { tried } => write!(f, "HIP runtime not found (tried {})", tried.join(", ")),
            LoadError::MissingSymbol { soname, symbol } => write!(f, "{soname} has no `{symbol}`: not a usable HIP runtime"),
        }
    }
}

impl Api {
    /// Opens the first library of `names` that loads and resolves every function.
    pub fn load(names: &[&str]) -> Result<Api, LoadError> {
        let mut tried = Vec::new();
        for name in names {
            tried.push((*name).to_string());
            // SAFETY: loading libamdhip64 runs its initialisers; they are the vendor's runtime
            // start-up and touch no state of ours. A library of that name that is not the HIP
            // runtime is caught below by the missing-symbol check.
            let lib = match unsafe { Library::new(name) } {
                Ok(lib) => lib,
                Err(_) => continue,
            };
            return Self::resolve(lib, name);
        }
        Err(LoadError::NotFound { tried })
    }

    fn resolve(lib: Library, soname: &str) -> Result<Api, LoadError> {
        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the symbol is looked up by its C name and given the signature
                // declared in hip_runtime_api.h (ROCm 5.x .. 7.x, unchanged); the copied
                // function pointer is only called while `_lib` (moved into the returned Api)
                // keeps the library loaded.
                match unsafe { lib.get(concat!($name, "\0").as_bytes()) } {
                    Ok(f) => *f,
                    Err(_) => return Err(LoadError::MissingSymbol { soname: soname.to_string(), symbol: $name.to_string() }),
                }
            }};
        }
        Ok(Api {
            init: sym!("hipInit"),
            get_device_count: sym!("hipGetDeviceCount"),
            set_device: sym!("hipSetDevice"),
            device_get_attribute: sym!("hipDeviceGetAttribute"),
            device_get_name: sym!("hipDeviceGetName"),
            device_total_mem: sym!("hipDeviceTotalMem"),
            runtime_get_version: sym!("hipRuntimeGetVersion"),
            malloc: sym!("hipMalloc"),
            free: sym!("hipFree"),
            memcpy_htod_async: sym!("hipMemcpyHtoDAsync"),
            memcpy_dtoh_async: sym!("hipMemcpyDtoHAsync"),
            memcpy_dtod_async: sym!("hipMemcpyDtoDAsync"),
            memset_async: sym!("hipMemsetAsync"),
            module_load_data: sym!("hipModuleLoadData"),
            module_unload: sym!("hipModuleUnload"),
            module_get_function: sym!("hipModuleGetFunction"),
            module_launch_kernel: sym!("hipModuleLaunchKernel"),
            stream_create: sym!("hipStreamCreate"),
            stream_destroy: sym!("hipStreamDestroy"),
            stream_synchronize: sym!("hipStreamSynchronize"),
            event_create: sym!("hipEventCreate"),
            event_destroy: sym!("hipEventDestroy"),
            event_record: sym!("hipEventRecord"),
            event_synchronize: sym!("hipEventSynchronize"),
            event_elapsed_time: sym!("hipEventElapsedTime"),
            mem_get_info: sym!("hipMemGetInfo"),
            get_error_string: sym!("hipGetErrorString"),
            get_error_name: sym!("hipGetErrorName"),
            soname: soname.to_string(),
            _lib: lib,
        })
    }
}
