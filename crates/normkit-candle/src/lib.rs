//! # normkit-candle
//!
//! Fused RMSNorm, LayerNorm and residual-add + RMSNorm for [candle](https://docs.rs/candle-core)
//! **with gradients**: candle's own fused norms (`candle_nn::ops::rms_norm`,
//! `candle_nn::ops::layer_norm`) have no backward, so training code falls back to a chain of
//! unfused ops. Here each norm is one candle `CustomOp` whose backward is normkit's fused
//! backward, so `loss.backward()` gives `dx`, `dw`, `db` and the residual's gradient.
//!
//! - [`rms_norm`], [`rms_norm_offset`] (`x̂ · (offset + w)`, Gemma's `1 + w`), [`layer_norm`],
//!   [`add_rms_norm`] / [`add_rms_norm_offset`] (`h = x + residual`, `y = rms_norm(h)`; returns
//!   `(y, h)`, `h` being the residual stream of the next layer).
//! - [`RmsNorm`] and [`LayerNorm`]: `candle_nn::Module`s built from a `VarBuilder` with the same
//!   parameter names as candle's (`weight`, `bias`), so a model swaps one line.
//!
//! Tensors of any rank are normalised over their last dimension; f32, f16 and bf16 (all inputs of
//! one call in one dtype). The arithmetic is fp32 with one rounding to the output dtype, and the
//! weight/bias gradients are summed over rows in fp32 in a fixed order (deterministic), so
//! `dw` keeps full accuracy where candle's unfused bf16 ops accumulate in bf16.
//!
//! On the CPU the ops run normkit's rayon backend directly on candle's storage, without copying
//! the inputs: contiguous tensors and tensors whose rows are evenly spaced (a narrow of the last
//! dimension of a wider tensor, a slice of rows) are read in place; other layouts (a transpose,
//! a broadcast) are made contiguous first. The `cuda` feature is reserved for the CUDA backend.
//! Second derivatives are not supported (the backward ops have no backward).
//!
//! ```
//! use candle_core::{Device, Tensor, Var, D};
//!
//! let dev = Device::Cpu;
//! let x = Var::from_tensor(&Tensor::arange(0f32, 24.0, &dev)?.reshape((2, 3, 4))?)?;
//! let w = Var::from_tensor(&Tensor::ones(4, candle_core::DType::F32, &dev)?)?;
//!
//! let y = normkit_candle::rms_norm(x.as_tensor(), w.as_tensor(), 1e-6)?;
//! let loss = y.sqr()?.sum_all()?;
//! let grads = loss.backward()?;
//! let (dx, dw) = (grads.get(&x).unwrap(), grads.get(&w).unwrap());
//! assert_eq!((dx.dims(), dw.dims()), (&[2, 3, 4][..], &[4][..]));
//!
//! // The same as candle's unfused ops, which carry gradients too.
//! let reference = candle_nn::ops::rms_norm_slow(x.as_tensor(), w.as_tensor(), 1e-6)?;
//! let diff = (y - reference)?.abs()?.flatten_all()?.max(D::Minus1)?.to_scalar::<f32>()?;
//! assert!(diff < 1e-5);
//! # Ok::<(), candle_core::Error>(())
//! ```

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod module;
mod op;
mod rows;

pub use module::{LayerNorm, RmsNorm};

use candle_core::{bail, Result, Tensor, D};
use op::{NormOp, Spec};
use rows::rowable;

/// Checks what candle's own fused ops check, with messages that name the operand: `x` has a last
/// dimension, each vector is one-dimensional of that length, every input has `x`'s dtype and
/// device.
fn check(op: &str, x: &Tensor, others: &[(&str, &Tensor, bool)]) -> Result<()> {
    if x.rank() == 0 {
        bail!("{op}: `x` must have at least one dimension (the one normalised), but it is a scalar");
    }
    let n = x.dim(D::Minus1)?;
    for &(name, t, vector) in others {
        if vector && t.dims() != [n] {
            bail!("{op}: `{name}` must have shape [{n}] (the last dimension of `x`, {:?}), but has shape {:?}", x.dims(), t.dims());
        }
        if !vector && t.dims() != x.dims() {
            bail!("{op}: `{name}` must have `x`'s shape {:?}, but has shape {:?}", x.dims(), t.dims());
        }
        if t.dtype() != x.dtype() {
            bail!("{op}: `{name}` is {:?} but `x` is {:?}; every input must have one dtype", t.dtype(), x.dtype());
        }
        if !t.device().same_device(x.device()) {
            bail!("{op}: `{name}` is on {:?} but `x` is on {:?}", t.device().location(), x.device().location());
        }
    }
    Ok(())
}

/// RMSNorm over the last dimension: `y = x / sqrt(mean(x²) + eps) · w`, with gradients for `x`
/// and `w`.
///
/// `w` has shape `[N]` (`N` = the last dimension of `x`) and `x`'s dtype (f32, f16 or bf16).
/// Errors (never panics) on a scalar `x`, a weight of another length, dtype or device, an empty
/// last dimension, a dtype normkit does not run (integers, f64), or a non-finite or
/// non-positive `eps`.
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f32) -> Result<Tensor> {
    rms_norm_offset(x, w, 0.0, eps)
}

/// RMSNorm with the weight applied as `offset + w` (Gemma: `offset = 1`, so a zero weight is the
/// identity scale); otherwise as [`rms_norm`]. The gradient of `w` is that of the scale.
pub fn rms_norm_offset(x: &Tensor, w: &Tensor, offset: f32, eps: f32) -> Result<Tensor> {
    check("rms_norm", x, &[("weight", w, true)])?;
    let save = x.track_op() || w.track_op();
    let op = NormOp::new(Spec { layer: false, residual: false, offset, eps, save });
    rowable(x)?.apply_op2(&rowable(w)?, op)
}

/// LayerNorm over the last dimension: `y = (x − mean(x)) / sqrt(var(x) + eps) · w + b`, with
/// gradients for `x`, `w` and `b`. `w` and `b` have shape `[N]` and `x`'s dtype; errors as
/// [`rms_norm`].
pub fn layer_norm(x: &Tensor, w: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
    check("layer_norm", x, &[("weight", w, true), ("bias", b, true)])?;
    let save = x.track_op() || w.track_op() || b.track_op();
    let op = NormOp::new(Spec { layer: true, residual: false, offset: 0.0, eps, save });
    rowable(x)?.apply_op3(&rowable(w)?, &rowable(b)?, op)
}

/// The fused residual add and RMSNorm of a pre-norm transformer block: `h = x + residual`,
/// `y = rms_norm(h, w, eps)`; returns `(y, h)`. `h` is rounded to the inputs' dtype and the norm
/// reads it as rounded, exactly as `rms_norm(&(x + residual)?, w, eps)` would.
///
/// Gradients flow to `x`, `residual` (both get `dy`'s contribution through the norm plus the
/// gradient arriving at `h`) and `w`. `residual` has `x`'s shape; errors as [`rms_norm`].
pub fn add_rms_norm(x: &Tensor, residual: &Tensor, w: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    add_rms_norm_offset(x, residual, w, 0.0, eps)
}

/// [`add_rms_norm`] with the weight applied as `offset + w` (Gemma: 1).
pub fn add_rms_norm_offset(x: &Tensor, residual: &Tensor, w: &Tensor, offset: f32, eps: f32) -> Result<(Tensor, Tensor)> {
    check("add_rms_norm", x, &[("residual", residual, false), ("weight", w, true)])?;
    let save = x.track_op() || residual.track_op() || w.track_op();
    let op = NormOp::new(Spec { layer: false, residual: true, offset, eps, save });
    // One op, one output: `y` and `h` stacked along a new leading dimension, split here as views.
    let both = rowable(x)?.apply_op3(&rowable(residual)?, &rowable(w)?, op)?;
    Ok((both.get(0)?, both.get(1)?))
}
