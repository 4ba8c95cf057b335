//! # normkit-core
//!
//! The contract every normkit backend implements, and the CPU backend.
//!
//! - [`DType`]: element types (f32, f16, bf16; statistics are always f32; the FP8 formats e4m3,
//!   e5m2, e4m3fnuz, e5m2fnuz as forward outputs only).
//! - [`Layout`], [`MatRef`], [`MatMut`], [`VecRef`], [`VecMut`], [`InOut`]: row views into a
//!   backend's buffers (rows `M`, hidden size `N`, a row stride ≥ `N`, an element offset).
//! - [`NormDesc`]: what is computed (RMSNorm / LayerNorm, eps, weight + offset, bias, fused
//!   residual add, casting mode, saved statistics).
//! - [`Forward`], [`Backward`]: the operands of one call; [`Fp8`]: an FP8 `y` with its scaling
//!   recipe (per tensor or per row), `amax`, `scale_inv` and transposed outputs.
//! - [`validate_forward`], [`validate_backward`]: every rule of the contract, checked once here;
//!   backends call them (or [`validate_forward_for`] / [`validate_backward_for`], which also
//!   check every operand's [`Buffer::owner`] against the backend's [`NormKernel::owner_id`])
//!   before launching anything.
//! - [`NormError`]: the one typed error.
//! - [`NormKernel`]: the trait; [`cpu::CpuBackend`] implements it with rayon.
//!
//! ## Semantics
//! RMSNorm: `rstd = 1/sqrt(mean(x²) + eps)`, `x̂ = x·rstd`.
//! LayerNorm: `μ = mean(x)`, `rstd = 1/sqrt(mean((x−μ)²) + eps)` (two passes in fp32, never
//! `E[x²]−μ²`), `x̂ = (x−μ)·rstd`.
//! Then `y = x̂·(w + offset) + b`, rounded as the [`CastingMode`] says.
//! Fused add: `h = x + residual` is stored to `residual_out` in the residual's dtype and the norm
//! reads `h` as stored.
//! Backward: `g = dy·(w + offset)`; RMSNorm `dx = rstd·(g − x̂·mean(g·x̂))`; LayerNorm
//! `dx = rstd·(g − mean(g) − x̂·mean(g·x̂))`; `dw = Σ_rows dy·x̂`; `db = Σ_rows dy`; with the fused
//! add `dx += d_residual_out`.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod args;
pub mod cpu;
mod desc;
mod dtype;
mod error;
mod fp8;
mod host;
mod kernel;
mod tensor;
mod validate;

pub use args::{Backward, Forward, Fp8, Fp8Scaling, Scale, FP8_ROW_AMAX_FLOOR};
pub use desc::{CastingMode, DTypes, Direction, NormDesc, NormKind, WeightSpec};
pub use dtype::{round_to, DType};
pub use error::{AliasRule, Dim, NormError, Operand, Result};
pub use host::{HostBuf, HostElem, HostView};
pub use kernel::{BenchBackend, DeviceInfo, NormKernel, RawBuffers};
pub use tensor::{Buffer, InOut, Layout, MatMut, MatRef, Span, VecMut, VecRef};
pub use validate::{
    check_backward_owners, check_desc, check_dtypes, check_forward_owners, check_owner, validate_backward, validate_backward_for,
    validate_forward, validate_forward_for, BackwardPlan, ForwardPlan, Fp8Plan, Fp8ScalePlan,
};

pub use float8::{F8E4M3, F8E5M2};
pub use fp8::{F8E4M3Fnuz, F8E5M2Fnuz};
pub use half::{bf16, f16};
