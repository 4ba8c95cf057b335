//! Drop-in modules: the same constructors and parameter names as `candle_nn::RmsNorm` /
//! `candle_nn::LayerNorm`, with normkit's fused forward and backward.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Init, VarBuilder};

/// RMSNorm over the last dimension, a drop-in for `candle_nn::RmsNorm`:
/// `candle_nn::rms_norm(size, eps, vb)` becomes `RmsNorm::new(size, eps, vb)`.
///
/// The weight is the `weight` tensor of `vb` (initialised to ones when the builder creates it;
/// with an offset, to `1 − offset`, so that the initial scale is 1 either way).
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Tensor,
    offset: f32,
    eps: f32,
}

impl RmsNorm {
    /// The norm of a `size`-wide last dimension, its weight taken from (or created in) `vb`.
    pub fn new(size: usize, eps: f64, vb: VarBuilder) -> Result<Self> {
        Self::new_with_offset(size, eps, 0.0, vb)
    }

    /// As [`RmsNorm::new`], applying the weight as `offset + w` (Gemma: `offset = 1`, weight
    /// initialised to zeros).
    pub fn new_with_offset(size: usize, eps: f64, offset: f32, vb: VarBuilder) -> Result<Self> {
        let weight = vb.get_with_hints(size, "weight", Init::Const(1.0 - offset as f64))?;
        Ok(RmsNorm { weight, offset, eps: eps as f32 })
    }

    /// A norm with this weight (`[N]`), as `candle_nn::RmsNorm::new(weight, eps)`.
    pub fn from_weight(weight: Tensor, eps: f64) -> Self {
        RmsNorm { weight, offset: 0.0, eps: eps as f32 }
    }

    /// The same norm with the weight applied as `offset + w`.
    pub fn with_offset(mut self, offset: f32) -> Self {
        self.offset = offset;
        self
    }

    /// The weight tensor.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The fused residual add: `(y, h)` with `h = x + residual` and `y` the norm of `h`
    /// ([`crate::add_rms_norm_offset`]).
    pub fn forward_add(&self, x: &Tensor, residual: &Tensor) -> Result<(Tensor, Tensor)> {
        crate::add_rms_norm_offset(x, residual, &self.weight, self.offset, self.eps)
    }
}

impl Module for RmsNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        crate::rms_norm_offset(xs, &self.weight, self.offset, self.eps)
    }
}

/// LayerNorm with weight and bias over the last dimension, a drop-in for `candle_nn::LayerNorm`:
/// `candle_nn::layer_norm(size, eps, vb)` becomes `LayerNorm::new(size, eps, vb)`.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl LayerNorm {
    /// The norm of a `size`-wide last dimension, with `weight` (ones) and `bias` (zeros) taken
    /// from (or created in) `vb`.
    pub fn new(size: usize, eps: f64, vb: VarBuilder) -> Result<Self> {
        let weight = vb.get_with_hints(size, "weight", Init::Const(1.0))?;
        let bias = vb.get_with_hints(size, "bias", Init::Const(0.0))?;
        Ok(LayerNorm { weight, bias, eps: eps as f32 })
    }

    /// A norm with these tensors (`[N]` each), as `candle_nn::LayerNorm::new(weight, bias, eps)`.
    pub fn from_weights(weight: Tensor, bias: Tensor, eps: f64) -> Self {
        LayerNorm { weight, bias, eps: eps as f32 }
    }

    /// The weight tensor.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias tensor.
    pub fn bias(&self) -> &Tensor {
        &self.bias
    }
}

impl Module for LayerNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        crate::layer_norm(xs, &self.weight, &self.bias, self.eps)
    }
}
