//! Device memory: [`CudaBuffer`] (owned or a view of foreign memory; its owner id, the context,
//! which normkit-core's validation checks every operand against), allocation, upload, download,
//! and the workspace lent to each call.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::CudaContext;
use normkit_core::{check_owner, Buffer, DType, HostBuf, NormError, Operand, Result};
use normkit_gpu_host::DeviceBuffer;

use crate::startup::{dev_err, Device, BACKEND};

/// Device memory owned by a [`CudaBuffer`]; freed on drop.
#[derive(Debug)]
pub(crate) struct DeviceAlloc {
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
    pub(crate) dtype: DType,
    pub(crate) len: usize,
    pub(crate) ptr: u64,
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
    /// The context the buffer was made in (raw views included): only the backend of that
    /// context may use it ([`NormError::ForeignBuffer`] otherwise).
    fn owner(&self) -> Option<u64> {
        Some(self.ctx_id as u64)
    }
}

impl DeviceBuffer for CudaBuffer {
    fn device_addr(&self) -> u64 {
        self.ptr
    }
}

/// A buffer viewing `len` elements of `dtype` at device address `ptr`, owned elsewhere.
///
/// # Safety
/// As [`CudaBackend::buffer_from_raw`](crate::CudaBackend::buffer_from_raw).
pub(crate) unsafe fn buffer_from_raw(dev: &Device, ptr: u64, len: usize, dtype: DType) -> Result<CudaBuffer> {
    let es = dtype.size_bytes();
    if !ptr.is_multiple_of(es as u64) {
        return Err(NormError::Alignment { operand: Operand::X, required: es, offset_bytes: (ptr % es as u64) as usize });
    }
    if len.checked_mul(es).and_then(|b| (ptr as usize).checked_add(b)).is_none() {
        return Err(NormError::Overflow { operand: Operand::X });
    }
    Ok(CudaBuffer { dtype, len, ptr, ctx_id: dev.ctx_id(), _owner: None })
}

/// The workspace lent to one call: its address, valid while the lease lives (see
/// [`Memory::workspace`]).
pub(crate) struct WsLease<'a> {
    _lock: Option<MutexGuard<'a, Workspace>>,
    /// Base address (0 when the call needs none).
    pub ptr: u64,
    /// The FP8 amax's two synchronisation words (running max, CTAs arrived): zero between calls,
    /// in the workspace allocation's reserved tail (0 when the call needs no workspace).
    pub sync: u64,
}

/// Bytes after the lent workspace kept for [`WsLease::sync`]: zeroed when the allocation is made;
/// the kernels that use them put them back to zero (kernels-common/nk_fp8.cuh, q_amax_commit).
const SYNC_BYTES: usize = 256;

/// Scratch memory reused across calls (stream-ordered; grows, never shrinks).
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    alloc: Option<DeviceAlloc>,
    bytes: usize,
}

/// A backend's allocations: the workspace and the allocation-failure hook.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    workspace: Mutex<Workspace>,
    /// Device allocations still to fail on purpose ([`Memory::inject_alloc_failures`]).
    alloc_faults: AtomicU32,
}

impl Memory {
    /// Arms `n` allocation failures (see `CudaBackend::inject_alloc_failures`).
    pub(crate) fn inject_alloc_failures(&self, n: u32) {
        self.alloc_faults.store(n, Ordering::Relaxed);
    }

    /// Bytes of device memory the workspace holds now.
    pub(crate) fn workspace_bytes(&self) -> usize {
        self.workspace.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }

    /// Takes one injected allocation failure, if any is armed.
    fn take_alloc_fault(&self) -> bool {
        self.alloc_faults.load(Ordering::Relaxed) > 0
            && self.alloc_faults.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
    }

    fn malloc(&self, dev: &Device, bytes: usize) -> Result<DeviceAlloc> {
        dev.ctx.bind_to_thread().map_err(dev_err("bind context"))?;
        let r = if self.take_alloc_fault() {
            Err(cu::DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        } else {
            // SAFETY: a plain cuMemAlloc of `bytes > 0` bytes in the bound context.
            unsafe { cu::malloc_sync(bytes) }
        };
        match r {
            Ok(ptr) => Ok(DeviceAlloc { ptr, ctx: dev.ctx.clone() }),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let free = dev.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
                Err(NormError::ResourceLimit { resource: "device memory", requested: bytes as u64, available: free })
            }
            Err(e) => Err(dev_err("allocation")(e)),
        }
    }

    /// A buffer of `len` elements of `dtype` (uninitialised).
    pub(crate) fn alloc(&self, dev: &Device, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or(NormError::ResourceLimit {
            resource: "device memory",
            requested: u64::MAX,
            available: 0,
        })?;
        if bytes == 0 {
            return Ok(CudaBuffer { dtype, len, ptr: 0, ctx_id: dev.ctx_id(), _owner: None });
        }
        let a = self.malloc(dev, bytes)?;
        Ok(CudaBuffer { dtype, len, ptr: a.ptr, ctx_id: dev.ctx_id(), _owner: Some(a) })
    }

    /// A buffer holding a copy of `src`.
    pub(crate) fn upload(&self, dev: &Device, src: &HostBuf) -> Result<CudaBuffer> {
        let b = self.alloc(dev, src.dtype(), src.len())?;
        if b.len > 0 {
            let bytes = src.as_bytes();
            // SAFETY: `b` holds exactly `bytes.len()` bytes; the host slice stays borrowed until the
            // stream is synchronised below, so the asynchronous copy reads live memory.
            unsafe { cu::memcpy_htod_async(b.ptr, bytes, dev.stream.cu_stream()) }.map_err(dev_err("upload"))?;
            dev.stream.synchronize().map_err(dev_err("upload"))?;
        }
        Ok(b)
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
    pub(crate) fn workspace(&self, dev: &Device, bytes: usize) -> Result<WsLease<'_>> {
        if bytes == 0 {
            return Ok(WsLease { _lock: None, ptr: 0, sync: 0 });
        }
        let mut ws = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        if ws.bytes < bytes {
            // Growing synchronises the stream and allocates: neither may happen inside a graph
            // capture (the capture would be invalidated), so refuse before touching anything.
            let status = dev.stream.capture_status().map_err(dev_err("workspace growth"))?;
            if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                return Err(NormError::ResourceLimit {
                    resource:
                        "workspace bytes (it cannot grow during CUDA graph capture: reserve it first with CudaBackend::reserve_workspace)",
                    requested: bytes as u64,
                    available: ws.bytes as u64,
                });
            }
            dev.stream.synchronize().map_err(dev_err("workspace growth"))?;
            ws.alloc = None;
            ws.bytes = 0;
            let cap = bytes.max(1 << 20);
            let a = self.malloc(dev, cap + SYNC_BYTES)?;
            // SAFETY: the tail of the allocation just made (cap + SYNC_BYTES bytes), queued on the
            // backend's stream before any kernel that reads it.
            unsafe { sys::cuMemsetD8Async(a.ptr + cap as u64, 0, SYNC_BYTES, dev.stream.cu_stream()) }
                .result()
                .map_err(dev_err("workspace growth"))?;
            ws.bytes = cap;
            ws.alloc = Some(a);
        }
        let ptr = ws.alloc.as_ref().map_or(0, |a| a.ptr);
        let sync = ptr + ws.bytes as u64;
        Ok(WsLease { _lock: Some(ws), ptr, sync })
    }
}

/// A host copy of `buf`.
pub(crate) fn download(dev: &Device, buf: &CudaBuffer) -> Result<HostBuf> {
    check_owner(BACKEND, dev.owner_id(), Operand::X, buf)?;
    let mut h = HostBuf::zeros(buf.dtype, buf.len);
    if buf.len > 0 {
        let dst = h.as_bytes_mut();
        debug_assert_eq!(dst.len(), buf.bytes());
        // SAFETY: the device range is the buffer's own `bytes()` bytes; the host slice is
        // exclusively borrowed and the stream is synchronised before it is released.
        unsafe { cu::memcpy_dtoh_async(dst, buf.ptr, dev.stream.cu_stream()) }.map_err(dev_err("download"))?;
        dev.stream.synchronize().map_err(dev_err("download"))?;
    }
    Ok(h)
}

/// An element type a cudarc slice can hold for normkit: `f32`, `half::f16`, `half::bf16`.
pub trait CudaElem: cudarc::driver::DeviceRepr + private::Sealed {
    /// Its normkit dtype.
    const DTYPE: DType;
}
impl CudaElem for f32 {
    const DTYPE: DType = DType::F32;
}
impl CudaElem for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl CudaElem for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// A read-only [`CudaBuffer`] borrowing a cudarc `CudaSlice<T>` or `CudaView<T>` (no copy),
/// made by [`CudaBackend::view`](crate::CudaBackend::view). It dereferences to the buffer, so it
/// goes wherever a `&CudaBuffer` does (`MatRef::new(&x, m, n)`); the borrow it holds keeps the
/// slice alive and unwritten by safe code until it is dropped.
///
/// cudarc's stream synchronisation is kept: making the view orders the backend's stream after
/// the slice's last write (when cudarc tracks events, i.e. its context has several streams), and
/// dropping it records the slice's read event after every call queued while it lived.
#[derive(Debug)]
pub struct CudaRef<'a> {
    buf: CudaBuffer,
    _sync: cudarc::driver::SyncOnDrop<'a>,
}

/// A writable [`CudaBuffer`] borrowing a cudarc `CudaSlice<T>` or `CudaViewMut<T>` mutably (no
/// copy), made by [`CudaBackend::view_mut`](crate::CudaBackend::view_mut); it dereferences to
/// the buffer mutably (`MatMut::new(&mut y, m, n)`). As [`CudaRef`], with the slice's write
/// event recorded on drop.
#[derive(Debug)]
pub struct CudaMut<'a> {
    buf: CudaBuffer,
    _sync: cudarc::driver::SyncOnDrop<'a>,
}

impl std::ops::Deref for CudaRef<'_> {
    type Target = CudaBuffer;
    fn deref(&self) -> &CudaBuffer {
        &self.buf
    }
}
impl std::ops::Deref for CudaMut<'_> {
    type Target = CudaBuffer;
    fn deref(&self) -> &CudaBuffer {
        &self.buf
    }
}
impl std::ops::DerefMut for CudaMut<'_> {
    fn deref_mut(&mut self) -> &mut CudaBuffer {
        &mut self.buf
    }
}

/// A read-only view of a cudarc slice (see [`CudaRef`]).
///
/// A slice of another context (another device) becomes a buffer owned by that context, with no
/// address and no synchronisation (cudarc's events cannot be recorded on a stream of another
/// context): the call that uses it fails with `ForeignBuffer`, naming the operand, before
/// anything is written.
pub(crate) fn view<'a, T: CudaElem, S: cudarc::driver::DevicePtr<T>>(dev: &'a Device, s: &'a S) -> CudaRef<'a> {
    let ctx_id = s.stream().context().cu_ctx() as usize;
    let len = s.len();
    if ctx_id != dev.ctx_id() {
        return CudaRef { buf: foreign::<T>(len, ctx_id), _sync: cudarc::driver::SyncOnDrop::Sync(None) };
    }
    let (ptr, sync) = s.device_ptr(&dev.stream);
    CudaRef { buf: CudaBuffer { dtype: T::DTYPE, len, ptr, ctx_id, _owner: None }, _sync: sync }
}

/// A writable view of a cudarc slice (see [`CudaMut`] and [`view`]).
pub(crate) fn view_mut<'a, T: CudaElem, S: cudarc::driver::DevicePtrMut<T>>(dev: &'a Device, s: &'a mut S) -> CudaMut<'a> {
    let ctx_id = s.stream().context().cu_ctx() as usize;
    let len = s.len();
    if ctx_id != dev.ctx_id() {
        return CudaMut { buf: foreign::<T>(len, ctx_id), _sync: cudarc::driver::SyncOnDrop::Sync(None) };
    }
    let (ptr, sync) = s.device_ptr_mut(&dev.stream);
    CudaMut { buf: CudaBuffer { dtype: T::DTYPE, len, ptr, ctx_id, _owner: None }, _sync: sync }
}

/// The buffer standing for a slice of another context: never dereferenced, since every use
/// checks its owner first.
fn foreign<T: CudaElem>(len: usize, ctx_id: usize) -> CudaBuffer {
    CudaBuffer { dtype: T::DTYPE, len, ptr: 0, ctx_id, _owner: None }
}
