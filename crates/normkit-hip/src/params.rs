//! The kernel argument structs, mirrored field for field from kernels-common/nk_params.h
//! (`#[repr(C)]`; sizes and field offsets asserted by normkit-gpu-host, sizes by `static_assert`
//! there; the kernel descriptors' kernarg sizes are checked against them when a code object is
//! loaded). One definition, shared with the CUDA backend: this module re-exports
//! [`normkit_gpu_host::params`], which also fills them from a validated call
//! ([`normkit_gpu_host::fwd_params`], [`normkit_gpu_host::bwd_params`]).

pub use normkit_gpu_host::params::*;
