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

/// A buffer of whichever backend made it: the [`AnyBackend::Buffer`] type.
///
/// Make one with [`NormKernel::alloc`] or [`NormKernel::upload`] on an [`AnyBackend`] and pass it
/// back to the same backend. A buffer of another backend is rejected with
/// [`NormError::ForeignBuffer`] before anything runs. With default features there is only
/// [`AnyBuffer::Host`].
#[non_exhaustive]
pub enum AnyBuffer {
    /// Host memory, used by [`AnyBackend::Cpu`].
    Host(HostBuf),
    /// Device memory of the CUDA backend, used by `AnyBackend::Cuda` (feature `cuda`).
    #[cfg(feature = "cuda")]
    Cuda(CudaBuf),
    /// Device memory of the HIP backend, used by `AnyBackend::Hip` (feature `hip`).
    #[cfg(feature = "hip")]
    Hip(HipBuf),
}

impl AnyBuffer {
    /// The name of the backend that made this buffer: `"cpu"`, `"cuda"` or `"hip"`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            AnyBuffer::Host(_) => "cpu",
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(_) => "cuda",
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(_) => "hip",
        }
    }
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
    fn owner(&self) -> Option<u64> {
        match self {
            AnyBuffer::Host(b) => b.owner(),
            #[cfg(feature = "cuda")]
            AnyBuffer::Cuda(b) => b.owner(),
            #[cfg(feature = "hip")]
            AnyBuffer::Hip(b) => b.owner(),
        }
    }
}

/// One of the backends compiled into this build, chosen at run time ([`auto`], [`backend`]).
///
/// It implements [`NormKernel`] (and [`BenchBackend`]) by dispatching to the backend it holds;
/// its buffers are [`AnyBuffer`]s. Which variants exist depends on the cargo features: with
/// default features only [`AnyBackend::Cpu`]; `cuda` adds `AnyBackend::Cuda`, `hip` adds
/// `AnyBackend::Hip`.
#[non_exhaustive]
// A backend is made once and lives as long as its user: the CUDA variant's size (its kernel table
// inline) costs nothing, and boxing it would add an indirection to every call.
#[allow(clippy::large_enum_variant)]
pub enum AnyBackend {
    /// The rayon CPU backend (always compiled in).
    Cpu(CpuBackend),
    /// An NVIDIA GPU (feature `cuda`).
    #[cfg(feature = "cuda")]
    Cuda(normkit_cuda::CudaBackend),
    /// An AMD GPU (feature `hip`).
    #[cfg(feature = "hip")]
    Hip(normkit_hip::HipBackend),
}

impl fmt::Debug for AnyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyBackend::{}({})", self.name(), self.device_name())
    }
}

/// Whether one backend can run here: one entry of [`probe`].
#[derive(Debug)]
pub struct BackendStatus {
    /// The backend's name, as [`backend`] accepts it: `"cpu"`, `"cuda"` or `"hip"`.
    pub backend: &'static str,
    /// `Ok` with the device name (as [`NormKernel::device_name`] gives it), or the error
    /// [`backend`] returned: why the backend cannot run here.
    pub status: Result<String>,
}

/// The names [`backend`] accepts, in the order [`auto`] tries them.
pub const BACKENDS: [&str; 3] = ["cuda", "hip", "cpu"];

/// [`BACKENDS`] as a list in messages.
const KNOWN: &str = "cpu, cuda, hip";

/// The backend called `name`, opened now, or why it cannot run here.
///
/// - `"cpu"`: always `Ok` with [`AnyBackend::Cpu`] (the rayon CPU backend, parallel over the current
///   rayon thread pool).
/// - `"cuda"`: with the `cuda` feature, `Ok(AnyBackend::Cuda)` on CUDA device 0 if a driver, a
///   device of compute capability 9.0 or newer and the embedded kernels are all there, else
///   [`NormError::BackendUnavailable`] saying which is missing (or [`NormError::Device`] if the
///   driver fails while opening the device). Without the `cuda` feature, always
///   [`NormError::BackendUnavailable`] (normkit was built without it).
/// - `"hip"`: with the `hip` feature, `Ok(AnyBackend::Hip)` on HIP device 0 if the HIP runtime
///   (`libamdhip64.so`, or the library named by `NORMKIT_HIP_LIBRARY`) loads and there is a
///   device with a matching code object, else [`NormError::BackendUnavailable`] with the reason.
///   Without the `hip` feature, always [`NormError::BackendUnavailable`].
/// - any other name: [`NormError::UnknownBackend`] with the name asked for.
///
/// ```
/// use normkit::{NormError, NormKernel};
///
/// assert_eq!(normkit::backend("cpu")?.name(), "cpu");
/// let e = normkit::backend("gpu").unwrap_err();
/// assert!(matches!(e, NormError::UnknownBackend { .. }));
/// assert_eq!(e.to_string(), "No backend is called `gpu` (known: cpu, cuda, hip)");
/// # Ok::<(), NormError>(())
/// ```
pub fn backend(name: &str) -> Result<AnyBackend> {
    match name {
        "cpu" => Ok(AnyBackend::Cpu(CpuBackend::new())),
        #[cfg(feature = "cuda")]
        "cuda" => normkit_cuda::CudaBackend::new().map(AnyBackend::Cuda),
        #[cfg(not(feature = "cuda"))]
        "cuda" => Err(NormError::BackendUnavailable {
            backend: "cuda",
            reason: "normkit was built without the `cuda` feature (enable it with `features = [\"cuda\"]`)".into(),
        }),
        #[cfg(feature = "hip")]
        "hip" => normkit_hip::HipBackend::new().map(AnyBackend::Hip),
        #[cfg(not(feature = "hip"))]
        "hip" => Err(NormError::BackendUnavailable {
            backend: "hip",
            reason: "normkit was built without the `hip` feature (enable it with `features = [\"hip\"]`)".into(),
        }),
        _ => Err(NormError::UnknownBackend { name: name.to_string(), known: KNOWN }),
    }
}

/// The best backend this build can run here, tried in the order of [`BACKENDS`]: the first
/// that [`backend`] opens.
///
/// - Without features (the default): always the CPU backend, [`AnyBackend::Cpu`].
/// - With the `cuda` feature: CUDA device 0 if it is usable (see [`backend`]), else the CPU.
/// - With the `hip` feature: HIP device 0 if it is usable, else the CPU.
/// - With both: CUDA device 0, else HIP device 0, else the CPU.
///
/// It never fails: the CPU backend is always there. Use [`backend`] to ask for one backend and
/// learn why it cannot run, or [`probe`] to see every backend's status.
///
/// ```
/// use normkit::NormKernel;
///
/// let nk = normkit::auto();
/// if cfg!(not(any(feature = "cuda", feature = "hip"))) {
///     assert_eq!(nk.name(), "cpu");
/// }
/// ```
pub fn auto() -> AnyBackend {
    BACKENDS.iter().find_map(|name| backend(name).ok()).unwrap_or_else(|| AnyBackend::Cpu(CpuBackend::new()))
}

/// Every backend normkit knows and whether it can run here: three entries, for `"cpu"`,
/// `"cuda"` and `"hip"` in that order, whatever the features.
///
/// Each is [`backend`]`(name)` opened and dropped: the CPU entry is always `Ok` with the CPU's
/// model name; a GPU entry is `Ok` with the device name when the backend's feature is enabled
/// and its device is usable, else `Err` with the reason (for a backend whose feature is not
/// enabled, [`NormError::BackendUnavailable`] saying so). Used by `cargo xtask test-all` and
/// the bench runner.
///
/// ```
/// let all = normkit::probe();
/// assert_eq!(all.iter().map(|s| s.backend).collect::<Vec<_>>(), ["cpu", "cuda", "hip"]);
/// assert!(all[0].status.is_ok());
/// ```
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
    fn owner_id(&self) -> Option<u64> {
        dispatch!(self, b => b.owner_id())
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
            _ => Err(NormError::Unsupported {
                backend: self.name(),
                what: format!(
                    "downloading a buffer of the `{}` backend ({} × {}); download it with the backend that made it",
                    buf.backend_name(),
                    buf.len(),
                    buf.dtype()
                ),
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_named_in_the_error() {
        match backend("rocm") {
            Err(e @ NormError::UnknownBackend { .. }) => assert_eq!(e.to_string(), "No backend is called `rocm` (known: cpu, cuda, hip)"),
            other => panic!("expected UnknownBackend, got {other:?}"),
        }
    }

    #[test]
    fn a_backend_left_out_of_the_build_says_which_feature_to_enable() {
        for (name, enabled) in [("cuda", cfg!(feature = "cuda")), ("hip", cfg!(feature = "hip"))] {
            if enabled {
                continue;
            }
            let e = backend(name).expect_err("not compiled in");
            assert_eq!(
                e.to_string(),
                format!("The `{name}` backend cannot run here: normkit was built without the `{name}` feature (enable it with `features = [\"{name}\"]`)")
            );
        }
    }

    #[test]
    fn probe_lists_every_backend_and_auto_falls_back_to_the_cpu() {
        let names: Vec<_> = probe().iter().map(|s| s.backend).collect();
        assert_eq!(names, ["cpu", "cuda", "hip"]);
        if cfg!(not(any(feature = "cuda", feature = "hip"))) {
            assert_eq!(auto().name(), "cpu");
        }
    }
}
