//! # normkit-hip
//!
//! normkit's backend for AMD Instinct GPUs: MI300X / MI325X (gfx942), MI350X / MI355X (gfx950),
//! and MI200 (gfx90a).
//!
//! **Status: compiled and ISA-checked, not yet run on AMD hardware.** Every kernel is compiled
//! ahead of time for every target and its code object inspected by `tests/isa.rs` (16-byte
//! vector memory on the hot paths, no scratch, wave64, VGPRs within budget); the host side is
//! tested without a device. Numerical results have not been observed on a GPU.
//!
//! ## Layers
//! - [`ffi`]: the HIP runtime, opened at run time with libloading (`libamdhip64.so`, then
//!   `.so.7`, `.so.6`, `.so.5`); only the functions used are declared; a missing library or
//!   `hipErrorNoDevice` become [`normkit_core::NormError::BackendUnavailable`]. Nothing panics.
//! - [`kernels`]: the code objects (one per target, built by build.rs from `kernels-hip/` and
//!   `kernels-common/`, embedded with `include_bytes!`, loaded from memory with
//!   `hipModuleLoadData`) and the kernel table generated from `kernels-hip/kernels.def`, the same
//!   list the C++ side expands into its entry points.
//! - [`elf`]: a std-only reader of AMDGPU code objects (kernel descriptors: wavefront size,
//!   scratch, VGPRs), used at start-up to check the code object against the device.
//! - [`config`]: launch configuration per target, as data ([`LaunchConfig::for_gfx942`], ...),
//!   and the occupancy each kernel is designed for (its VGPR budget).
//! - [`plan`]: kernels, groups, grids and workspace of a call, as pure functions.
//! - [`params`]: the kernel argument structs, mirrored from kernels-common/nk_params.h.
//! - [`HipBackend`]: implements [`normkit_core::NormKernel`] and
//!   [`normkit_core::BenchBackend`] over [`HipBuffer`]s.
//!
//! ## Start-up checks
//! The device's arch (from its compute capability) selects a code object; the device's
//! wavefront size (`hipDeviceAttributeWarpSize`) must equal the one every kernel descriptor of
//! that object was built for, else [`InitError::WavefrontMismatch`].
//!
//! ## Kernels (see `kernels-hip/README.md`)
//! The kernel bodies are kernels-common's, shared with the CUDA backend; `kernels-hip/platform.h`
//! maps their platform interface onto clang AMDGPU builtins (wave64 `ds_bpermute` butterflies,
//! address-space-1 `global_load_dwordx4`, LDS staging through `ds_write_b128`, correctly rounded
//! `1/sqrt`), and `kernels-hip/kernels.def` sets the HIP constants. Forward: a group of threads
//! per row, persistent workgroups, the row staged in LDS while it and the weights fit (64 KiB per
//! workgroup); longer rows take the split-row two-pass path (CDNA has no thread-block clusters).
//! Backward: a persistent grid keeps dW/dB partials in LDS (row path) or in registers (split
//! path) and writes one fp32 partial row per workgroup into a (parts x N) workspace; a finalize
//! kernel sums them in a fixed order: deterministic, no atomics. The path depends on N, the
//! dtypes and which operands exist, never on M or the layout (batch-invariant forward; see
//! [`plan`]). All indexing is 64-bit.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod backend;
pub mod config;
pub mod elf;
pub mod ffi;
pub mod kernels;
pub mod params;
pub mod plan;

pub use backend::{check_code_object, HipBackend, HipBuffer, HipOptions, InitError, LIBRARY_ENV};
pub use config::LaunchConfig;
