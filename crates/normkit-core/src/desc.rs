//! The op descriptor: what a call computes, independent of where the data lives.

use crate::dtype::DType;

/// RMSNorm or LayerNorm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// `rstd = 1/sqrt(mean(x²) + eps)`, `x̂ = x·rstd`.
    Rms,
    /// `μ = mean(x)`, `rstd = 1/sqrt(mean((x−μ)²) + eps)`, `x̂ = (x−μ)·rstd`.
    Layer,
}

impl NormKind {
    pub const fn name(self) -> &'static str {
        match self {
            NormKind::Rms => "rms",
            NormKind::Layer => "ln",
        }
    }
}

/// Where the forward pass rounds (the casting modes of Liger-Kernel).
///
/// Statistics are always accumulated in fp32. For `F32` inputs the three modes give the same
/// result. The backward pass always computes in fp32 and rounds once when it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CastingMode {
    /// Everything in fp32, one rounding at the store: `y = round(x̂·(w + offset) + b)`.
    /// This is what QuACK and TransformerEngine compute.
    #[default]
    Gemma,
    /// `x̂` is rounded to the input dtype before the weight multiply:
    /// `y = round(round_x(x̂)·(w + offset) + b)`, with the product and bias in fp32.
    Llama,
    /// Arithmetic in the input dtype, accumulation in fp32: `rstd` (and `μ`) are rounded to the
    /// input dtype, and every elementwise step (`x−μ`, `·rstd`, `w + offset`, `·w`, `+ b`) is
    /// rounded to the input dtype before the next.
    None,
}

impl CastingMode {
    pub const ALL: [CastingMode; 3] = [CastingMode::Gemma, CastingMode::Llama, CastingMode::None];

    pub const fn name(self) -> &'static str {
        match self {
            CastingMode::Gemma => "gemma",
            CastingMode::Llama => "llama",
            CastingMode::None => "none",
        }
    }
}

/// The affine weight of a norm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightSpec {
    /// Added to every weight element in fp32 before use: `1.0` is Gemma's zero-centred weight
    /// (TransformerEngine `zero_centered_gamma`, Liger `offset`, QuACK `weight_offset`).
    pub offset: f32,
}

/// What a norm call computes.
///
/// The descriptor says which operands exist; the argument structs ([`crate::Forward`],
/// [`crate::Backward`]) must then carry exactly those operands, or validation fails with
/// [`crate::NormError::Missing`] / [`crate::NormError::Unexpected`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormDesc {
    pub kind: NormKind,
    /// Added to the variance (or mean square) before the square root; finite and `> 0`.
    pub eps: f32,
    /// `Some` if the norm has an affine weight.
    pub weight: Option<WeightSpec>,
    /// Whether a bias is added after the weight (LayerNorm; some RMSNorm models too).
    pub bias: bool,
    /// Fused residual add: `h = x + residual`, `residual_out = h` stored in the residual's dtype,
    /// and the norm computed from `h` *as stored*, so a backward reading `residual_out` sees exactly
    /// what the forward normalised.
    pub residual: bool,
    pub casting: CastingMode,
    /// Whether the forward pass writes `rstd` (and `mean` for LayerNorm) for the backward pass.
    pub save_stats: bool,
}

impl NormDesc {
    /// RMSNorm with a weight (offset 0), no bias, no residual, Gemma casting, no saved stats.
    pub const fn rms(eps: f32) -> Self {
        NormDesc {
            kind: NormKind::Rms,
            eps,
            weight: Some(WeightSpec { offset: 0.0 }),
            bias: false,
            residual: false,
            casting: CastingMode::Gemma,
            save_stats: false,
        }
    }

    /// LayerNorm with a weight and a bias, no residual, Gemma casting, no saved stats.
    pub const fn layer(eps: f32) -> Self {
        NormDesc {
            kind: NormKind::Layer,
            eps,
            weight: Some(WeightSpec { offset: 0.0 }),
            bias: true,
            residual: false,
            casting: CastingMode::Gemma,
            save_stats: false,
        }
    }

    /// Without an affine weight.
    pub const fn without_weight(mut self) -> Self {
        self.weight = None;
        self
    }

    /// With a weight whose elements are offset by `offset` (1.0 for Gemma).
    pub const fn with_weight_offset(mut self, offset: f32) -> Self {
        self.weight = Some(WeightSpec { offset });
        self
    }

    pub const fn with_bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }

    pub const fn with_residual(mut self, residual: bool) -> Self {
        self.residual = residual;
        self
    }

    pub const fn with_casting(mut self, casting: CastingMode) -> Self {
        self.casting = casting;
        self
    }

    pub const fn with_save_stats(mut self, save: bool) -> Self {
        self.save_stats = save;
        self
    }

    /// Whether this norm has a mean statistic (LayerNorm).
    pub const fn has_mean(&self) -> bool {
        matches!(self.kind, NormKind::Layer)
    }

    /// Short name of the forward op, as used in benchmark results (`rms_fwd`, `addrms_fwd`, ...).
    pub fn op_name(&self, backward: bool) -> String {
        format!("{}{}_{}", if self.residual { "add" } else { "" }, self.kind.name(), if backward { "bwd" } else { "fwd" })
    }
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Forward,
    Backward,
}

/// The dtypes of a call, for [`crate::NormKernel::supports`].
///
/// Forward: `x` input, `y` output, `weight` (also the bias's dtype), `residual` (also
/// `residual_out`'s). Backward: `x` is the dtype of the tensor that was normalised (`residual_out`
/// with the fused add), `y` the dtype of every gradient (`dy`, `dx`, `d_residual_out`), `weight`
/// that of the weight and of `dw`/`db`; `residual` is unused.
///
/// Allowed everywhere: `x ∈ {f32, f16, bf16}`; `weight`, `residual`, `y` each either `x`'s dtype
/// or `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DTypes {
    pub x: DType,
    pub y: DType,
    pub weight: DType,
    pub residual: DType,
}

impl DTypes {
    /// Every tensor in one dtype.
    pub const fn uniform(dtype: DType) -> Self {
        DTypes { x: dtype, y: dtype, weight: dtype, residual: dtype }
    }

    /// Activations in `x`, weight in `f32` (the usual mixed-precision layout).
    pub const fn f32_weight(x: DType) -> Self {
        DTypes { x, y: x, weight: DType::F32, residual: x }
    }
}
