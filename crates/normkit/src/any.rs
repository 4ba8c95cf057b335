//! A backend chosen at run time: [`auto`] picks the best one available, [`AnyBackend`] is one
//! type for all of them, with [`AnyBuffer`] as its buffer. Calls dispatch with one `match` and
//! then go through the backend's own (statically dispatched) code.

use normkit_core::cpu::CpuBackend;
use normkit_core::{
    Backward, BenchBackend, Buffer, DType, DTypes, DeviceInfo, Direction, Forward, HostBuf, NormDesc, NormError, NormKernel, Operand,
    Result,
};
use std::fmt;

#[cfg(feature = "cuda")]
type CudaBuf = <normkit_cuda::CudaBackend as NormKernel>::Buffer;
#[cfg(feature = "hip")]
type HipBuf = <normkit_hip::HipBackend as NormKernel>::Buffer;

/// A buffer of whichever backend made it.
#[non_exhaustive]
pub enum AnyBuffer {
    Host(HostBuf),
    #[cfg(feature = "cuda")]
    Cuda(CudaBuf),
    #[cfg(feature = "hip")]
    Hip(HipBuf),
}

impl fmt::Debug for AnyBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            AnyBuffer::Host(_) => "host",
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(_) => "cuda",
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(_) => "hip",
        };
        write!(f, "AnyBuffer::{kind}({} × {})", self.len(), self.dtype())
    }
}

impl Buffer for AnyBuffer {
    fn dtype(&self) -> DType {
        match self {
            AnyBuffer::Host(b) => b.dtype(),
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(b) => b.dtype(),
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(b) => b.dtype(),
        }
    }
    fn len(&self) -> usize {
        match self {
            AnyBuffer::Host(b) => b.len(),
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(b) => b.len(),
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(b) => b.len(),
        }
    }
    fn base_addr(&self) -> Option<u64> {
        match self {
            AnyBuffer::Host(b) => b.base_addr(),
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(b) => b.base_addr(),
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(b) => b.base_addr(),
        }
    }
}

/// One of the backends compiled into this build.
#[non_exhaustive]
pub enum AnyBackend {
    Cpu(CpuBackend),
    #[cfg(feature = "cuda")]
    Cuda(normkit_cuda::CudaBackend),
    #[cfg(feature = "hip")]
    Hip(normkit_hip::HipBackend),
}

impl fmt::Debug for AnyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyBackend::{}({})", self.name(), self.device_name())
    }
}

/// Whether one backend can run here.
#[derive(Debug)]
pub struct BackendStatus {
    pub backend: &'static str,
    /// The device name, or why the backend cannot run.
    pub status: Result<String>,
}

/// The names [`backend`] accepts, in the order [`auto`] tries them.
pub const BACKENDS: [&str; 3] = ["cuda", "hip", "cpu"];

/// The backend called `name` (`"cpu"`, `"cuda"`, `"hip"`), or why it cannot run here.
pub fn backend(name: &str) -> Result<AnyBackend> {
    match name {
        "cpu" => Ok(AnyBackend::Cpu(CpuBackend::new())),
        #[cfg(feature = "cuda")]
        "cuda" => normkit_cuda::CudaBackend::new().map(AnyBackend::Cuda),
        #[cfg(not(feature = "cuda"))]
        "cuda" => Err(NormError::BackendUnavailable { backend: "cuda", reason: "normkit was built without the `cuda` feature".into() }),
        #[cfg(feature = "hip")]
        "hip" => normkit_hip::HipBackend::new().map(AnyBackend::Hip),
        #[cfg(not(feature = "hip"))]
        "hip" => Err(NormError::BackendUnavailable { backend: "hip", reason: "normkit was built without the `hip` feature".into() }),
        _ => Err(NormError::BackendUnavailable {
            backend: "unknown",
            reason: format!("no backend is called `{name}` (known: cpu, cuda, hip)"),
        }),
    }
}

/// The best backend available: a CUDA device, else an AMD device, else the CPU.
pub fn auto() -> AnyBackend {
    BACKENDS.iter().find_map(|name| backend(name).ok()).unwrap_or_else(|| AnyBackend::Cpu(CpuBackend::new()))
}

/// Every backend and whether it can run here (for `cargo xtask test-all` and the bench runner).
pub fn probe() -> Vec<BackendStatus> {
    ["cpu", "cuda", "hip"].into_iter().map(|name| BackendStatus { backend: name, status: backend(name).map(|b| b.device_name()) }).collect()
}

macro_rules! dispatch {
    ($self:expr, $b:ident => $e:expr) => {
        match $self {
            AnyBackend::Cpu($b) => $e,
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda($b) => $e,
            #[cfg(feature = "hip")]
            AnyBackend::Hip($b) => $e,
        }
    };
}

#[allow(unreachable_patterns)]
fn host_ref(b: &AnyBuffer) -> Option<&HostBuf> {
    match b {
        AnyBuffer::Host(h) => Some(h),
        _ => None,
    }
}
#[allow(unreachable_patterns)]
fn host_mut(b: &mut AnyBuffer) -> Option<&mut HostBuf> {
    match b {
        AnyBuffer::Host(h) => Some(h),
        _ => None,
    }
}
#[cfg(feature = "cuda")]
#[allow(unreachable_patterns)]
fn cuda_ref(b: &AnyBuffer) -> Option<&CudaBuf> {
    match b {
        AnyBuffer::Cuda(h) => Some(h),
        _ => None,
    }
}
#[cfg(feature = "cuda")]
#[allow(unreachable_patterns)]
fn cuda_mut(b: &mut AnyBuffer) -> Option<&mut CudaBuf> {
    match b {
        AnyBuffer::Cuda(h) => Some(h),
        _ => None,
    }
}
#[cfg(feature = "hip")]
#[allow(unreachable_patterns)]
fn hip_ref(b: &AnyBuffer) -> Option<&HipBuf> {
    match b {
        AnyBuffer::Hip(h) => Some(h),
        _ => None,
    }
}
#[cfg(feature = "hip")]
#[allow(unreachable_patterns)]
fn hip_mut(b: &mut AnyBuffer) -> Option<&mut HipBuf> {
    match b {
        AnyBuffer::Hip(h) => Some(h),
        _ => None,
    }
}

fn foreign(backend: &'static str) -> impl Fn(Operand) -> NormError {
    move |operand| NormError::ForeignBuffer { backend, operand }
}

impl NormKernel for AnyBackend {
    type Buffer = AnyBuffer;

    fn name(&self) -> &'static str {
        dispatch!(self, b => b.name())
    }
    fn device_name(&self) -> String {
        dispatch!(self, b => b.device_name())
    }
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        dispatch!(self, b => b.supports(dir, desc, dtypes))
    }
    fn forward(&self, desc: &NormDesc, args: Forward<'_, AnyBuffer>) -> Result<()> {
        match self {
            AnyBackend::Cpu(b) => b.forward(desc, args.try_map(host_ref, host_mut).map_err(foreign("cpu"))?),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.forward(desc, args.try_map(cuda_ref, cuda_mut).map_err(foreign("cuda"))?),
            #[cfg(feature = "hip")]
            AnyBackend::Hip(b) => b.forward(desc, args.try_map(hip_ref, hip_mut).map_err(foreign("hip"))?),
        }
    }
    fn backward(&self, desc: &NormDesc, args: Backward<'_, AnyBuffer>) -> Result<()> {
        match self {
            AnyBackend::Cpu(b) => b.backward(desc, args.try_map(host_ref, host_mut).map_err(foreign("cpu"))?),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.backward(desc, args.try_map(cuda_ref, cuda_mut).map_err(foreign("cuda"))?),
            #[cfg(feature = "hip")]
            AnyBackend::Hip(b) => b.backward(desc, args.try_map(hip_ref, hip_mut).map_err(foreign("hip"))?),
        }
    }
    fn alloc(&self, dtype: DType, len: usize) -> Result<AnyBuffer> {
        Ok(match self {
            AnyBackend::Cpu(b) => AnyBuffer::Host(b.alloc(dtype, len)?),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => AnyBuffer::Cuda(b.alloc(dtype, len)?),
            #[cfg(feature = "hip")]
            AnyBackend::Hip(b) => AnyBuffer::Hip(b.alloc(dtype, len)?),
        })
    }
    fn upload(&self, src: &HostBuf) -> Result<AnyBuffer> {
        Ok(match self {
            AnyBackend::Cpu(b) => AnyBuffer::Host(b.upload(src)?),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => AnyBuffer::Cuda(b.upload(src)?),
            #[cfg(feature = "hip")]
            AnyBackend::Hip(b) => AnyBuffer::Hip(b.upload(src)?),
        })
    }
    #[allow(unreachable_patterns)]
    fn download(&self, buf: &AnyBuffer) -> Result<HostBuf> {
        match (self, buf) {
            (AnyBackend::Cpu(b), AnyBuffer::Host(h)) => b.download(h),
            #[cfg(feature = "cuda")]
            (AnyBackend::Cuda(b), AnyBuffer::Cuda(h)) => b.download(h),
            #[cfg(feature = "hip")]
            (AnyBackend::Hip(b), AnyBuffer::Hip(h)) => b.download(h),
            _ => Err(NormError::ForeignBuffer { backend: self.name(), operand: Operand::X }),
        }
    }
    fn synchronize(&self) -> Result<()> {
        dispatch!(self, b => b.synchronize())
    }
}

impl BenchBackend for AnyBackend {
    fn device_info(&self) -> DeviceInfo {
        dispatch!(self, b => b.device_info())
    }
    fn copy_gbps(&self, bytes: usize) -> Result<f64> {
        dispatch!(self, b => b.copy_gbps(bytes))
    }
    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        dispatch!(self, b => b.time_calls(calls, reps, f))
    }
}
