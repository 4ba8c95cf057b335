//! # normkit-gpu-host
//!
//! The vendor-neutral host layer of normkit's GPU backends (CUDA and HIP), written once:
//!
//! - [`params`]: the kernel parameter structs [`FwdParams`] and [`BwdParams`], the `#[repr(C)]`
//!   mirror of `kernels-common/nk_params.h` (sizes and field offsets asserted), and its
//!   constants (dtype codes `DT_*`, casting codes `CAST_*`, flags `F_*`).
//! - [`fill`]: the step from a validated call to those parameters — [`fwd_params`] and
//!   [`bwd_params`] fill every operand-dependent field (addresses advanced to each view's first
//!   element, strides in elements, dtype and casting codes, flags, `eps`, the weight offset) and
//!   say what the planners need to know of the call ([`FwdInfo`], [`BwdInfo`]), over any buffer
//!   type that implements [`DeviceBuffer`] (a device address for element 0).
//!
//! What stays in each backend: its buffer type, its planner (which kernels, grids, shared
//! memory, workspace; it writes the path-dependent fields), its launch API. Buffer ownership is
//! not checked here: normkit-core's validation checks every operand against the backend's owner
//! id ([`normkit_core::NormKernel::owner_id`], [`normkit_core::Buffer::owner`]) before these
//! functions run. Like normkit-core, this crate knows no vendor.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod fill;
pub mod params;

pub use fill::{bwd_params, casting_code, dt_code, fwd_params, mat_vec_ok, span_vec_ok, BwdInfo, DeviceBuffer, FwdInfo};
pub use params::{BwdParams, FwdParams};

#[cfg(test)]
mod tests;
