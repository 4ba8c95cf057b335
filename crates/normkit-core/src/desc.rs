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
    /// Short name used in op names and reports: `"rms"` or `"ln"`.
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
    /// Elementwise arithmetic in the input dtype: every elementwise step (`x−μ`, `·rstd`,
    /// `w + offset`, `·w`, `+ b`) is rounded to the input dtype before the next.
    ///
    /// The statistics are *not* rounded: `μ`, `mean(x²)` / the variance, the `+ eps` and `rstd`
    /// are computed and kept in fp32, as in the other modes, and the saved `mean`/`rstd` are those
    /// fp32 values. So `eps` never underflows (1e-12 is 0 in f16) and `rstd` never overflows the
    /// input dtype (a row of zeros with eps = 1e-12 has `rstd = 1e6`, which is `+inf` in f16 and
    /// would turn the row into `0·inf = NaN`): a row of finite values whose fp32 statistics are
    /// finite never becomes NaN — a row of zeros (padding) comes out as `0·(w + offset) + b`.
    /// (Liger-Kernel's `none` mode rounds `eps` and `rstd` to the input dtype; normkit does not.)
    None,
}

impl CastingMode {
    /// Every mode, in declaration order.
    pub const ALL: [CastingMode; 3] = [CastingMode::Gemma, CastingMode::Llama, CastingMode::None];

    /// The mode's name as reports and error messages write it: `"gemma"`, `"llama"`, `"none"`.
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
    /// RMSNorm or LayerNorm.
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
    /// Where the forward pass rounds to the input dtype (ignored by the backward, which computes
    /// in fp32 and rounds once when it stores).
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

    /// With (`true`) or without a bias; the call then needs [`crate::Forward::bias`] and
    /// [`crate::Backward::db`].
    pub const fn with_bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }

    /// With (`true`) or without the fused residual add; the forward then needs
    /// [`crate::Forward::residual`] and the backward allows [`crate::Backward::d_residual_out`].
    pub const fn with_residual(mut self, residual: bool) -> Self {
        self.residual = residual;
        self
    }

    /// With the given casting mode (default [`CastingMode::Gemma`]).
    pub const fn with_casting(mut self, casting: CastingMode) -> Self {
        self.casting = casting;
        self
    }

    /// Whether the forward saves the statistics for the backward: then it needs
    /// [`crate::Forward::rstd`] and, for LayerNorm, [`crate::Forward::mean`].
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
    /// The forward pass, [`crate::NormKernel::forward`].
    Forward,
    /// The backward pass, [`crate::NormKernel::backward`].
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
    /// The input `x` (backward: the tensor that was normalised).
    pub x: DType,
    /// The output `y` (backward: every gradient, `dy`, `dx`, `d_residual_out`).
    pub y: DType,
    /// The weight and bias (backward: also `dw` and `db`).
    pub weight: DType,
    /// The residual and `residual_out` (forward only).
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
