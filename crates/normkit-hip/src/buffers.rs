//! Device memory: [`HipBuffer`] (owned or a raw view), allocation, upload and download, which
//! backend a buffer belongs to (its owner id, checked for every operand by normkit-core's
//! validation), and the workspace calls share (split-row statistics, dW/dB partials).

use crate::ffi::DevicePtr;
use crate::result::{self, alloc_error, device_error};
use crate::startup::Ctx;
use crate::{HipBackend, BACKEND};
use normkit_core::{check_owner, Buffer, DType, HostBuf, NormError, NormKernel, Operand, Result};
use normkit_gpu_host::DeviceBuffer;
use std::fmt;
use std::sync::{Arc, MutexGuard};

/// Device memory: owned (from [`normkit_core::NormKernel::alloc`] /
/// [`normkit_core::NormKernel::upload`], freed on drop) or borrowed from a raw device pointer
/// ([`HipBackend::buffer_from_raw`], [`HipBuffer::from_raw`]).
pub struct HipBuffer {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    /// The backend context the memory belongs to; 0 for [`HipBuffer::from_raw`] (any context).
    pub(crate) ctx_id: u64,
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
                // hipFree waits for queued work that may still use it. Errors cannot be
                // reported from drop.
                let _ = unsafe { result::free(&ctx.api, self.ptr as DevicePtr) };
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
    /// The id of the backend that made the buffer (or viewed it with
    /// [`HipBackend::buffer_from_raw`]); `None` for [`HipBuffer::from_raw`], which any backend
    /// may use.
    fn owner(&self) -> Option<u64> {
        (self.ctx_id != 0).then_some(self.ctx_id)
    }
}

impl DeviceBuffer for HipBuffer {
    fn device_addr(&self) -> u64 {
        self.ptr
    }
}

/// The workspace lent to one call (`HipBackend::workspace`): its address, valid while the lease
/// lives.
pub(crate) struct WsLease<'a> {
    _lock: Option<MutexGuard<'a, Workspace>>,
    pub(crate) ptr: u64,
    /// The FP8 amax's two synchronisation words (running max, workgroups arrived): zero between
    /// calls, in the allocation's reserved tail after the lent bytes (0 when the call needs no
    /// workspace).
    pub(crate) sync: u64,
}

/// Bytes after the workspace kept for [`WsLease::sync`]: zeroed when the allocation is made (on
/// the stream, before any kernel that reads them); the kernels that use them put them back to
/// zero (kernels-common/nk_fp8.cuh, `q_amax_commit`).
const SYNC_BYTES: usize = 256;

/// Device scratch reused across calls (split-row statistics, dW/dB partials; FP8 chunk maxima),
/// followed in its allocation by [`SYNC_BYTES`] of zeroed synchronisation words; grows, never
/// shrinks, freed with the backend.
pub(crate) struct Workspace {
    pub(crate) ptr: u64,
    pub(crate) bytes: usize,
}

impl HipBackend {
    /// Makes this backend's device current on the calling thread (allocations go to the current
    /// device; launches and copies follow the stream's device).
    pub(crate) fn bind(&self) -> Result<()> {
        result::set_device(&self.ctx.api, self.ctx.device).map_err(device_error("hipSetDevice"))
    }

    /// `hipMalloc` of `bytes` (> 0) on this backend's device, its failure mapped by
    /// [`result::alloc_error`] (out of memory: the free bytes hipMemGetInfo reports).
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        let api = &self.ctx.api;
        result::malloc(api, bytes).map_err(|e| alloc_error(e, bytes as u64, || result::mem_get_info(api).ok().map(|(free, _)| free as u64)))
    }

    /// Drains the stream: every queued kernel and copy has completed.
    pub(crate) fn sync(&self) -> Result<()> {
        // SAFETY: the stream lives as long as the context.
        unsafe { result::stream_synchronize(&self.ctx.api, self.ctx.stream) }.map_err(device_error("synchronize"))
    }

    /// The workspace, grown to at least `bytes`, lent to one call. The lease holds the
    /// workspace's lock until the call has queued its kernels and drops it: another thread
    /// sharing the backend cannot grow (and so free) the workspace between this call reading its
    /// address and launching on it. Calls that share it run in stream order. `bytes == 0` takes no
    /// lock and lends address 0.
    pub(crate) fn workspace(&self, bytes: usize) -> Result<WsLease<'_>> {
        if bytes == 0 {
            return Ok(WsLease { _lock: None, ptr: 0, sync: 0 });
        }
        let mut ws = self.ctx.ws.lock().map_err(|_| crate::poisoned())?;
        if ws.bytes < bytes {
            let api = &self.ctx.api;
            if ws.ptr != 0 {
                // SAFETY: drain the stream so no queued kernel still uses the old workspace, then
                // free it (allocated below by an earlier call, freed once).
                unsafe {
                    result::stream_synchronize(api, self.ctx.stream).map_err(device_error("workspace"))?;
                    let _ = result::free(api, ws.ptr as DevicePtr);
                }
                *ws = Workspace { ptr: 0, bytes: 0 };
            }
            self.bind()?;
            let total = bytes.checked_add(SYNC_BYTES).ok_or(NormError::ResourceLimit {
                resource: "HIP workspace bytes",
                requested: u64::MAX,
                available: usize::MAX as u64,
            })?;
            let p = self.malloc(total)?;
            // SAFETY: the tail of the allocation just made (`total` bytes), zeroed on the stream
            // before any kernel that reads it is queued.
            if let Err(e) = unsafe { result::memset_async(api, (p as u64 + bytes as u64) as DevicePtr, 0, SYNC_BYTES, self.ctx.stream) } {
                // SAFETY: allocated above, not yet shared.
                let _ = unsafe { result::free(api, p) };
                return Err(device_error("workspace")(e));
            }
            *ws = Workspace { ptr: p as u64, bytes };
        }
        let (ptr, sync) = (ws.ptr, ws.ptr + ws.bytes as u64);
        Ok(WsLease { _lock: Some(ws), ptr, sync })
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

    /// [`normkit_core::NormKernel::alloc`]: `len` elements of `dtype`, uninitialised (a null
    /// address when empty).
    pub(crate) fn alloc_buffer(&self, dtype: DType, len: usize) -> Result<HipBuffer> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or(NormError::ResourceLimit {
            resource: "HIP allocation bytes",
            requested: u64::MAX,
            available: 0,
        })?;
        let mut p: DevicePtr = std::ptr::null_mut();
        if bytes > 0 {
            self.bind()?;
            p = self.malloc(bytes)?;
        }
        Ok(HipBuffer { ptr: p as u64, len, dtype, ctx_id: self.ctx.id, owner: Some(self.ctx.clone()) })
    }

    /// [`normkit_core::NormKernel::upload`]: a new buffer holding `src`, complete on return.
    pub(crate) fn upload_buffer(&self, src: &HostBuf) -> Result<HipBuffer> {
        let buf = self.alloc_buffer(src.dtype(), src.len())?;
        let bytes = src.as_bytes();
        if !bytes.is_empty() {
            // SAFETY: the destination holds exactly bytes.len() bytes (allocated above); the
            // source slice stays borrowed until the stream is drained below, so the runtime may
            // read it asynchronously.
            unsafe { result::memcpy_htod_async(&self.ctx.api, buf.ptr as DevicePtr, bytes, self.ctx.stream) }
                .map_err(device_error("upload"))?;
            self.sync()?;
        }
        Ok(buf)
    }

    /// [`normkit_core::NormKernel::download`]: the buffer's contents after every earlier call.
    pub(crate) fn download_buffer(&self, buf: &HipBuffer) -> Result<HostBuf> {
        check_owner(BACKEND, self.owner_id(), Operand::X, buf)?;
        let mut host = HostBuf::zeros(buf.dtype, buf.len);
        let out = host.as_bytes_mut();
        if !out.is_empty() {
            // SAFETY: `out` holds exactly the buffer's bytes; it stays borrowed until the stream
            // (on which the copy is ordered after every earlier call) is drained below.
            unsafe { result::memcpy_dtoh_async(&self.ctx.api, out, buf.ptr as DevicePtr, self.ctx.stream) }
                .map_err(device_error("download"))?;
        }
        self.sync()?;
        Ok(host)
    }
}
