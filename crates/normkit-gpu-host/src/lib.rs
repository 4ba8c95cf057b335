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
// The types of the typed kernel lists (kernels-common/variants.rs, documented there), one
// definition for both backends; their build scripts include the same file.
#[allow(dead_code)]
#[path = "../../../kernels-common/variants.rs"]
pub mod variants;

impl variants::Dt {
    /// The dtype specialised kernels are compiled for that is `d`, if any.
    pub const fn of(d: normkit_core::DType) -> Option<variants::Dt> {
        match d {
            normkit_core::DType::F32 => Some(variants::Dt::F32),
            normkit_core::DType::F16 => Some(variants::Dt::F16),
            normkit_core::DType::BF16 => Some(variants::Dt::Bf16),
            _ => None,
        }
    }
}

/// What the GPU backends say about an FP8 `y` until their kernels exist: both answer
/// `supports` and `forward` with this [`normkit_core::NormError::Unsupported`] (`forward` after
/// validation, before anything is launched or written), so a caller — and the conformance suite —
/// learns that the backend declines FP8 outputs, never a wrong result. `Ok(())` for every other
/// dtype combination.
pub fn fp8_unsupported(backend: &'static str, dtypes: &normkit_core::DTypes) -> normkit_core::Result<()> {
    if dtypes.y.is_fp8() {
        Err(normkit_core::NormError::Unsupported {
            backend,
            what: format!("an FP8 `y` ({}): FP8 outputs are not implemented on this backend yet", dtypes.y),
        })
    } else {
        Ok(())
    }
}

pub use fill::{bwd_params, casting_code, dt_code, fwd_params, mat_vec_ok, span_vec_ok, BwdInfo, DeviceBuffer, Fp8Info, FwdInfo};
pub use params::{BwdParams, FwdParams};

#[cfg(test)]
mod tests;
