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

/// Bytes per row of the FP8 fused transpose's shared-memory (LDS) tile of `tm` rows for N = `n`
/// (both GPU backends' planners): N rounded up to 8, plus a pad that makes the 4-byte tile reads
/// of `q_write_t` (kernels-common/nk_fp8.cuh) conflict-free. 32 lanes read rows 4·rb + k, words cb,
/// with tm/4 values of rb and 32·4/tm of cb, so 4·pitch (in words) must step the banks by the cb
/// span: the pitch in words odd for tm = 32, ≡ 2 (mod 8) for 16, ≡ 4 (mod 8) for 8. NVIDIA's shared
/// memory and CDNA's LDS both have 32 banks of 4 bytes and serve 32 lanes' 4-byte reads at a time.
pub fn fp8_tile_pitch(n: usize, tm: u32) -> usize {
    let words = n.div_ceil(8) * 2; // even
    let target = match tm {
        16 => 2,
        8 => 4,
        _ => 1,
    };
    let pad = (target + 8 - words % 8) % 8;
    (words + pad) * 4
}

pub use fill::{bwd_params, casting_code, dt_code, fwd_params, mat_vec_ok, span_vec_ok, BwdInfo, DeviceBuffer, Fp8Info, FwdInfo};
pub use params::{BwdParams, FwdParams};

#[cfg(test)]
mod tests;
