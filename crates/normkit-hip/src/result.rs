//! The result layer over [`crate::ffi`], in the manner of cudarc's `driver::result`: one function
//! per HIP runtime call normkit makes, each returning `Result<T, HipError>`, where [`HipError`]
//! carries the `hipError_t` code, its name (`hipGetErrorName`) and its description
//! (`hipGetErrorString`). Outside this file the crate calls no raw runtime function.
//!
//! Functions whose only inputs are values (device indices, sizes) are safe; those that take
//! device pointers, handles or host memory that the runtime reads later are `unsafe`, with the
//! caller's obligations under `# Safety`.
//!
//! The last section maps a [`HipError`] onto normkit's [`NormError`]: out of memory becomes
//! [`NormError::ResourceLimit`], a kernel missing from the code object [`NormError::Internal`],
//! anything else [`NormError::Device`].

use crate::ffi::{self, Api, DevicePtr, Event, Function, HipStatus, Module, Stream};
use normkit_core::NormError;
use std::ffi::{c_char, c_void, CStr};
use std::fmt;

/// A failed HIP call: the status, its name and description, and the call that returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipError {
    /// The `hipError_t` the call returned.
    pub code: HipStatus,
    /// The status's name (`hipErrorOutOfMemory`, ...): `hipGetErrorName`, or [`status_name`]'s
    /// table when the runtime gives nothing.
    pub name: String,
    /// `hipGetErrorString`, or the code in words if the runtime gave nothing.
    pub message: String,
    /// The HIP function that failed.
    pub call: &'static str,
}

impl HipError {
    /// The error for `code` returned by `call`; `api`, when given, names and describes it
    /// (else the built-in table does: see [`error_name`]).
    pub fn new(api: Option<&Api>, code: HipStatus, call: &'static str) -> Self {
        let message = api.and_then(|api| runtime_str(api.get_error_string, code)).unwrap_or_else(|| format!("status {code}"));
        HipError { code, name: error_name(api, code), message, call }
    }

    /// `hipErrorOutOfMemory` (whose deprecated alias `hipErrorMemoryAllocation` has the same
    /// value): the device could not provide the memory asked for.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == ffi::HIP_ERROR_OUT_OF_MEMORY
    }
}

impl fmt::Display for HipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed with {} ({}): {}", self.call, self.name, self.code, self.message)
    }
}

impl std::error::Error for HipError {}

/// Reads the static string a `hipGetError*` function returns for `code` (`None` for null).
fn runtime_str(get: unsafe extern "C" fn(HipStatus) -> *const c_char, code: HipStatus) -> Option<String> {
    // SAFETY: hipGetErrorString / hipGetErrorName accept any status value and return a pointer
    // to a static, NUL-terminated string of the loaded runtime (or null, handled below).
    let p = unsafe { get(code) };
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, static storage of the runtime (see above), read now.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The name of a status: the runtime's (`hipGetErrorName`) when `api` is given and answers,
/// else [`status_name`]'s, else `hipError_t(<code>)`.
pub fn error_name(api: Option<&Api>, code: HipStatus) -> String {
    api.and_then(|api| runtime_str(api.get_error_name, code))
        .filter(|s| !s.is_empty())
        .or_else(|| status_name(code).map(str::to_string))
        .unwrap_or_else(|| format!("hipError_t({code})"))
}

/// The `hipError_t` names of hip_runtime_api.h (ROCm 5.x to 7.x), for when no runtime is loaded
/// to ask. Where two names share a value, the current one (`hipErrorOutOfMemory`, not the
/// deprecated `hipErrorMemoryAllocation`).
pub fn status_name(code: HipStatus) -> Option<&'static str> {
    Some(match code {
        0 => "hipSuccess",
        1 => "hipErrorInvalidValue",
        2 => "hipErrorOutOfMemory",
        3 => "hipErrorNotInitialized",
        4 => "hipErrorDeinitialized",
        5 => "hipErrorProfilerDisabled",
        6 => "hipErrorProfilerNotInitialized",
        7 => "hipErrorProfilerAlreadyStarted",
        8 => "hipErrorProfilerAlreadyStopped",
        9 => "hipErrorInvalidConfiguration",
        12 => "hipErrorInvalidPitchValue",
        13 => "hipErrorInvalidSymbol",
        17 => "hipErrorInvalidDevicePointer",
        21 => "hipErrorInvalidMemcpyDirection",
        35 => "hipErrorInsufficientDriver",
        52 => "hipErrorMissingConfiguration",
        53 => "hipErrorPriorLaunchFailure",
        98 => "hipErrorInvalidDeviceFunction",
        100 => "hipErrorNoDevice",
        101 => "hipErrorInvalidDevice",
        200 => "hipErrorInvalidImage",
        201 => "hipErrorInvalidContext",
        202 => "hipErrorContextAlreadyCurrent",
        205 => "hipErrorMapFailed",
        206 => "hipErrorUnmapFailed",
        207 => "hipErrorArrayIsMapped",
        208 => "hipErrorAlreadyMapped",
        209 => "hipErrorNoBinaryForGpu",
        210 => "hipErrorAlreadyAcquired",
        211 => "hipErrorNotMapped",
        212 => "hipErrorNotMappedAsArray",
        213 => "hipErrorNotMappedAsPointer",
        214 => "hipErrorECCNotCorrectable",
        215 => "hipErrorUnsupportedLimit",
        216 => "hipErrorContextAlreadyInUse",
        217 => "hipErrorPeerAccessUnsupported",
        218 => "hipErrorInvalidKernelFile",
        219 => "hipErrorInvalidGraphicsContext",
        300 => "hipErrorInvalidSource",
        301 => "hipErrorFileNotFound",
        302 => "hipErrorSharedObjectSymbolNotFound",
        303 => "hipErrorSharedObjectInitFailed",
        304 => "hipErrorOperatingSystem",
        400 => "hipErrorInvalidHandle",
        401 => "hipErrorIllegalState",
        500 => "hipErrorNotFound",
        600 => "hipErrorNotReady",
        700 => "hipErrorIllegalAddress",
        701 => "hipErrorLaunchOutOfResources",
        702 => "hipErrorLaunchTimeOut",
        704 => "hipErrorPeerAccessAlreadyEnabled",
        705 => "hipErrorPeerAccessNotEnabled",
        708 => "hipErrorSetOnActiveProcess",
        709 => "hipErrorContextIsDestroyed",
        710 => "hipErrorAssert",
        712 => "hipErrorHostMemoryAlreadyRegistered",
        713 => "hipErrorHostMemoryNotRegistered",
        719 => "hipErrorLaunchFailure",
        720 => "hipErrorCooperativeLaunchTooLarge",
        801 => "hipErrorNotSupported",
        900 => "hipErrorStreamCaptureUnsupported",
        901 => "hipErrorStreamCaptureInvalidated",
        902 => "hipErrorStreamCaptureMerge",
        903 => "hipErrorStreamCaptureUnmatched",
        904 => "hipErrorStreamCaptureUnjoined",
        905 => "hipErrorStreamCaptureIsolation",
        906 => "hipErrorStreamCaptureImplicit",
        907 => "hipErrorCapturedEvent",
        908 => "hipErrorStreamCaptureWrongThread",
        910 => "hipErrorGraphExecUpdateFailure",
        999 => "hipErrorUnknown",
        1052 => "hipErrorRuntimeMemory",
        1053 => "hipErrorRuntimeOther",
        1054 => "hipErrorTbd",
        _ => return None,
    })
}

impl Api {
    /// Turns a status into a `Result`, naming the call; the runtime names and describes the
    /// error.
    pub fn check(&self, status: HipStatus, call: &'static str) -> Result<(), HipError> {
        if status == ffi::HIP_SUCCESS {
            Ok(())
        } else {
            Err(HipError::new(Some(self), status, call))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Initialisation and device queries
// ---------------------------------------------------------------------------------------------

/// `hipInit(flags)`.
pub fn init(api: &Api, flags: u32) -> Result<(), HipError> {
    // SAFETY: hipInit takes flags and has no other preconditions.
    api.check(unsafe { (api.init)(flags) }, "hipInit")
}

/// `hipGetDeviceCount`: the devices the runtime sees.
pub fn get_device_count(api: &Api) -> Result<i32, HipError> {
    let mut count = 0;
    // SAFETY: writes one int through a valid pointer.
    api.check(unsafe { (api.get_device_count)(&mut count) }, "hipGetDeviceCount")?;
    Ok(count)
}

/// `hipSetDevice`: makes `device` current on the calling host thread.
pub fn set_device(api: &Api, device: i32) -> Result<(), HipError> {
    // SAFETY: takes an index by value; an index out of range is an error status.
    api.check(unsafe { (api.set_device)(device) }, "hipSetDevice")
}

/// `hipDeviceGetAttribute(attr, device)` ([`ffi::attr`] lists the values used).
pub fn device_get_attribute(api: &Api, attr: i32, device: i32) -> Result<i32, HipError> {
    let mut v = 0;
    // SAFETY: writes one int through a valid pointer; attribute and device are plain values
    // the runtime checks.
    api.check(unsafe { (api.device_get_attribute)(&mut v, attr, device) }, "hipDeviceGetAttribute")?;
    Ok(v)
}

/// `hipDeviceGetName`: the device's marketing name (at most 255 bytes, lossily UTF-8).
pub fn device_get_name(api: &Api, device: i32) -> Result<String, HipError> {
    let mut buf = [0u8; 256];
    // SAFETY: the runtime writes at most `len` bytes (NUL-terminated) into the buffer.
    api.check(unsafe { (api.device_get_name)(buf.as_mut_ptr().cast(), buf.len() as i32, device) }, "hipDeviceGetName")?;
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// `hipDeviceTotalMem`: the device's memory, bytes.
pub fn device_total_mem(api: &Api, device: i32) -> Result<usize, HipError> {
    let mut bytes = 0usize;
    // SAFETY: writes one size_t through a valid pointer.
    api.check(unsafe { (api.device_total_mem)(&mut bytes, device) }, "hipDeviceTotalMem")?;
    Ok(bytes)
}

/// `hipRuntimeGetVersion`.
pub fn runtime_get_version(api: &Api) -> Result<i32, HipError> {
    let mut v = 0;
    // SAFETY: writes one int through a valid pointer.
    api.check(unsafe { (api.runtime_get_version)(&mut v) }, "hipRuntimeGetVersion")?;
    Ok(v)
}

/// `hipMemGetInfo`: (free, total) bytes of the current device.
pub fn mem_get_info(api: &Api) -> Result<(usize, usize), HipError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two size_t through valid pointers.
    api.check(unsafe { (api.mem_get_info)(&mut free, &mut total) }, "hipMemGetInfo")?;
    Ok((free, total))
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/// `hipMalloc(bytes)` on the current device. The caller owns the memory and frees it with
/// [`free`].
pub fn malloc(api: &Api, bytes: usize) -> Result<DevicePtr, HipError> {
    let mut p: DevicePtr = std::ptr::null_mut();
    // SAFETY: writes one device pointer through a valid pointer.
    api.check(unsafe { (api.malloc)(&mut p, bytes) }, "hipMalloc")?;
    Ok(p)
}

/// `hipFree`. It waits for queued work that may still use the memory.
///
/// # Safety
/// `ptr` came from [`malloc`] with this runtime, is freed once, and is not used afterwards.
pub unsafe fn free(api: &Api, ptr: DevicePtr) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.free)(ptr) }, "hipFree")
}

/// `hipMemcpyHtoDAsync`: queues a copy of `src` to `dst` on `stream`.
///
/// # Safety
/// `dst` is valid for `src.len()` bytes; `src` stays alive and unmodified until the stream has
/// been synchronised (the runtime may read it asynchronously); `stream` is live.
pub unsafe fn memcpy_htod_async(api: &Api, dst: DevicePtr, src: &[u8], stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.memcpy_htod_async)(dst, src.as_ptr().cast(), src.len(), stream) }, "hipMemcpyHtoDAsync")
}

/// `hipMemcpyDtoHAsync`: queues a copy of `dst.len()` bytes at `src` into `dst` on `stream`.
///
/// # Safety
/// `src` is valid for `dst.len()` bytes; `dst` stays alive and is neither read nor written until
/// the stream has been synchronised; `stream` is live.
pub unsafe fn memcpy_dtoh_async(api: &Api, dst: &mut [u8], src: DevicePtr, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.memcpy_dtoh_async)(dst.as_mut_ptr().cast(), src, dst.len(), stream) }, "hipMemcpyDtoHAsync")
}

/// `hipMemcpyDtoDAsync`: queues a copy of `bytes` bytes from `src` to `dst` on `stream`.
///
/// # Safety
/// Both pointers are valid for `bytes` bytes until the copy has run; `stream` is live.
pub unsafe fn memcpy_dtod_async(api: &Api, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.memcpy_dtod_async)(dst, src, bytes, stream) }, "hipMemcpyDtoDAsync")
}

/// `hipMemsetAsync`: queues setting `bytes` bytes at `dst` to `value` on `stream`.
///
/// # Safety
/// `dst` is valid for `bytes` bytes until the fill has run; `stream` is live.
pub unsafe fn memset_async(api: &Api, dst: DevicePtr, value: i32, bytes: usize, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.memset_async)(dst, value, bytes, stream) }, "hipMemsetAsync")
}

// ---------------------------------------------------------------------------------------------
// Modules and launches
// ---------------------------------------------------------------------------------------------

/// `hipModuleLoadData`: loads a code object from memory (the runtime copies what it needs during
/// the call). Unload it with [`module_unload`].
///
/// # Safety
/// `image` is a complete code object (an AMDGPU ELF); the loader trusts its contents.
pub unsafe fn module_load_data(api: &Api, image: &[u8]) -> Result<Module, HipError> {
    let mut module: Module = std::ptr::null_mut();
    // SAFETY: writes one handle; the image is the caller's promise.
    api.check(unsafe { (api.module_load_data)(&mut module, image.as_ptr().cast()) }, "hipModuleLoadData")?;
    Ok(module)
}

/// `hipModuleUnload`.
///
/// # Safety
/// `module` came from [`module_load_data`], is unloaded once, no queued kernel of it is still
/// to run, and none of its functions is used afterwards.
pub unsafe fn module_unload(api: &Api, module: Module) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.module_unload)(module) }, "hipModuleUnload")
}

/// `hipModuleGetFunction`: the kernel called `name` in `module` (`hipErrorNotFound` if the module
/// lacks it).
///
/// # Safety
/// `module` is loaded; the returned handle is valid while it stays loaded.
pub unsafe fn module_get_function(api: &Api, module: Module, name: &CStr) -> Result<Function, HipError> {
    let mut f: Function = std::ptr::null_mut();
    // SAFETY: writes one handle; the module is live (caller) and the name NUL-terminated.
    api.check(unsafe { (api.module_get_function)(&mut f, module, name.as_ptr()) }, "hipModuleGetFunction")?;
    Ok(f)
}

/// `hipModuleLaunchKernel` with one by-pointer argument (`kernelParams` = `[params]`, no
/// `extra`): queues `f` on `stream` over `grid` workgroups of `block` threads with `lds` bytes of
/// dynamic LDS. The runtime copies the argument before returning.
///
/// # Safety
/// `f` is a function of a loaded module; `params` points to a value whose layout is the
/// kernel's single parameter; every device address inside it is valid for what the kernel
/// reads and writes until the launch has run; `stream` is live.
#[allow(clippy::too_many_arguments)]
pub unsafe fn module_launch_kernel(
    api: &Api,
    f: Function,
    grid: [u32; 3],
    block: [u32; 3],
    lds: u32,
    stream: Stream,
    params: *mut c_void,
) -> Result<(), HipError> {
    let mut args = [params];
    // SAFETY: the caller's contract; `args` outlives the call, which copies the argument block.
    let st = unsafe {
        (api.module_launch_kernel)(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            lds,
            stream,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    api.check(st, "hipModuleLaunchKernel")
}

// ---------------------------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------------------------

/// `hipStreamCreate`. Destroy it with [`stream_destroy`].
pub fn stream_create(api: &Api) -> Result<Stream, HipError> {
    let mut s: Stream = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    api.check(unsafe { (api.stream_create)(&mut s) }, "hipStreamCreate")?;
    Ok(s)
}

/// `hipStreamDestroy`.
///
/// # Safety
/// `stream` came from [`stream_create`], is destroyed once and not used afterwards.
pub unsafe fn stream_destroy(api: &Api, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.stream_destroy)(stream) }, "hipStreamDestroy")
}

/// `hipStreamSynchronize`: waits for everything queued on `stream`.
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_synchronize(api: &Api, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.stream_synchronize)(stream) }, "hipStreamSynchronize")
}

/// `hipEventCreate`. Destroy it with [`event_destroy`].
pub fn event_create(api: &Api) -> Result<Event, HipError> {
    let mut e: Event = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    api.check(unsafe { (api.event_create)(&mut e) }, "hipEventCreate")?;
    Ok(e)
}

/// `hipEventDestroy` (a null event is rejected with an error status, harmlessly).
///
/// # Safety
/// `event` is null or came from [`event_create`], is destroyed once and not used afterwards.
pub unsafe fn event_destroy(api: &Api, event: Event) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.event_destroy)(event) }, "hipEventDestroy")
}

/// `hipEventRecord`: queues `event` on `stream`.
///
/// # Safety
/// `event` and `stream` are live.
pub unsafe fn event_record(api: &Api, event: Event, stream: Stream) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.event_record)(event, stream) }, "hipEventRecord")
}

/// `hipEventSynchronize`: waits until `event` has completed.
///
/// # Safety
/// `event` is live.
pub unsafe fn event_synchronize(api: &Api, event: Event) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    api.check(unsafe { (api.event_synchronize)(event) }, "hipEventSynchronize")
}

/// `hipEventElapsedTime`: milliseconds between two completed events.
///
/// # Safety
/// Both events are live.
pub unsafe fn event_elapsed_time(api: &Api, start: Event, stop: Event) -> Result<f32, HipError> {
    let mut ms = 0.0f32;
    // SAFETY: writes one float; the events are the caller's promise.
    api.check(unsafe { (api.event_elapsed_time)(&mut ms, start, stop) }, "hipEventElapsedTime")?;
    Ok(ms)
}

// ---------------------------------------------------------------------------------------------
// Into normkit's errors
// ---------------------------------------------------------------------------------------------

/// A failed runtime call as [`NormError::Device`], saying what the backend was doing.
pub(crate) fn device_error(during: &'static str) -> impl FnOnce(HipError) -> NormError {
    move |e| NormError::Device { backend: crate::BACKEND, during, source: Box::new(e) }
}

/// A failed `hipMalloc` of `requested` bytes: out of memory is [`NormError::ResourceLimit`]
/// (`resource: "device memory"`, `available` the free bytes `free_bytes` reports, 0 when it
/// cannot tell); any other status is [`NormError::Device`] during `"allocation"`.
pub(crate) fn alloc_error(e: HipError, requested: u64, free_bytes: impl FnOnce() -> Option<u64>) -> NormError {
    if e.is_out_of_memory() {
        NormError::ResourceLimit { resource: "device memory", requested, available: free_bytes().unwrap_or(0) }
    } else {
        device_error("allocation")(e)
    }
}

/// A failed `hipModuleGetFunction` for `kernel`: `hipErrorNotFound` means the code object built
/// into this library lacks a kernel its planner asked for, the library's own fault
/// ([`NormError::Internal`]); any other status is [`NormError::Device`] during `"kernel lookup"`.
pub(crate) fn lookup_error(kernel: &str, arch: &str, e: HipError) -> NormError {
    if e.code == ffi::HIP_ERROR_NOT_FOUND {
        NormError::Internal { backend: crate::BACKEND, what: format!("kernel {kernel} is missing from the {arch} code object ({e})") }
    } else {
        device_error("kernel lookup")(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: HipStatus, call: &'static str) -> HipError {
        HipError::new(None, code, call)
    }

    #[test]
    fn out_of_memory_is_a_resource_limit_with_the_free_bytes() {
        // hipErrorOutOfMemory and its deprecated alias hipErrorMemoryAllocation are both 2.
        let e = err(2, "hipMalloc");
        assert!(e.is_out_of_memory());
        let n = alloc_error(e.clone(), 1 << 40, || Some(1 << 30));
        assert!(
            matches!(n, NormError::ResourceLimit { resource: "device memory", requested, available } if requested == 1 << 40 && available == 1 << 30),
            "{n:?}"
        );
        // hipMemGetInfo failing too: available unknown (0).
        let n = alloc_error(e, 4096, || None);
        assert!(matches!(n, NormError::ResourceLimit { resource: "device memory", requested: 4096, available: 0 }), "{n:?}");
    }

    #[test]
    fn other_allocation_failures_are_device_errors_with_the_hip_error() {
        for code in [1, 3, 101, 700, 999] {
            let mut asked = false;
            let n = alloc_error(err(code, "hipMalloc"), 64, || {
                asked = true;
                Some(1)
            });
            assert!(!asked, "hipMemGetInfo is asked only after out of memory");
            match n {
                NormError::Device { backend: "hip", during: "allocation", source } => {
                    let h = source.downcast_ref::<HipError>().expect("the source is the HipError");
                    assert_eq!((h.code, h.call), (code, "hipMalloc"));
                    assert_eq!(h.name, status_name(code).unwrap());
                }
                other => panic!("code {code}: expected Device, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_kernel_missing_from_the_code_object_is_internal() {
        let n = lookup_error("nk_fwd_row_a", "gfx942", err(ffi::HIP_ERROR_NOT_FOUND, "hipModuleGetFunction"));
        match n {
            NormError::Internal { backend: "hip", what } => {
                assert!(what.starts_with("kernel nk_fwd_row_a is missing from the gfx942 code object"), "{what}");
                assert!(what.contains("hipErrorNotFound"), "{what}");
            }
            other => panic!("expected Internal, got {other:?}"),
        }
        let n = lookup_error("nk_fwd_row_a", "gfx942", err(98, "hipModuleGetFunction"));
        assert!(matches!(n, NormError::Device { during: "kernel lookup", .. }), "{n:?}");
    }

    #[test]
    fn names_fall_back_to_the_table_without_a_runtime() {
        assert_eq!(error_name(None, 0), "hipSuccess");
        assert_eq!(error_name(None, ffi::HIP_ERROR_OUT_OF_MEMORY), "hipErrorOutOfMemory");
        assert_eq!(error_name(None, ffi::HIP_ERROR_NO_DEVICE), "hipErrorNoDevice");
        assert_eq!(error_name(None, ffi::HIP_ERROR_NOT_FOUND), "hipErrorNotFound");
        assert_eq!(error_name(None, 4242), "hipError_t(4242)");
        let e = err(2, "hipMalloc");
        assert_eq!(e.message, "status 2");
        assert_eq!(e.to_string(), "hipMalloc failed with hipErrorOutOfMemory (2): status 2");
    }

    /// With Debian's libamdhip64 installed (no GPU needed), names and descriptions come from the
    /// runtime itself and agree with the table.
    #[test]
    fn names_come_from_the_runtime_when_it_is_loaded() {
        let Ok(api) = Api::load(ffi::LIB_NAMES) else {
            println!("SKIP: no libamdhip64 on this machine");
            return;
        };
        for code in [ffi::HIP_ERROR_OUT_OF_MEMORY, ffi::HIP_ERROR_NO_DEVICE, ffi::HIP_ERROR_NOT_FOUND, 1, 700] {
            let e = api.check(code, "hipMalloc").expect_err("an error status");
            assert_eq!(e.name, status_name(code).unwrap(), "{}: runtime name vs table", api.soname);
            assert!(!e.message.is_empty());
        }
        assert!(api.check(ffi::HIP_SUCCESS, "hipMalloc").is_ok());
    }
}
