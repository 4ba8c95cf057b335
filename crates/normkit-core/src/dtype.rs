//! Element types.

use std::fmt;

/// The element type of a tensor.
///
/// Inputs, weights, biases, residuals and gradients are `F32`, `F16` or `BF16`. Statistics
/// (mean, rstd) are always `F32`. The enum is `#[non_exhaustive]` so that FP8 output types
/// (`e4m3fn` on NVIDIA and gfx950, `e4m3fnuz` on gfx942) can join on the output side without
/// a breaking change.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16 (`half::f16`): 10-bit mantissa, largest finite value 65504.
    F16,
    /// bfloat16 (`half::bf16`): f32's exponent range with a 7-bit mantissa.
    BF16,
}

impl DType {
    /// Every dtype this version knows, in a fixed order (tests iterate over it).
    pub const ALL: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

    /// Bytes per element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// Short lowercase name used in reports and JSON (`"f32"`, `"f16"`, `"bf16"`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }

    /// Parses the names printed by [`DType::name`].
    pub fn parse(s: &str) -> Option<DType> {
        match s {
            "f32" | "fp32" | "float32" => Some(DType::F32),
            "f16" | "fp16" | "float16" | "half" => Some(DType::F16),
            "bf16" | "bfloat16" => Some(DType::BF16),
            _ => None,
        }
    }

    /// Unit roundoff `u = 2^-p` of the format (half the distance from 1.0 to the next value).
    /// Tolerances in the test suite are written in multiples of it.
    pub const fn unit_roundoff(self) -> f64 {
        match self {
            DType::F32 => 5.960_464_477_539_063e-8, // 2^-24
            DType::F16 => 4.882_812_5e-4,           // 2^-11
            DType::BF16 => 3.906_25e-3,             // 2^-8
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rounds an `f32` to `dtype` and back: the value a tensor of that dtype would hold.
#[inline]
pub fn round_to(dtype: DType, v: f32) -> f32 {
    match dtype {
        DType::F32 => v,
        DType::F16 => half::f16::from_f32(v).to_f32(),
        DType::BF16 => half::bf16::from_f32(v).to_f32(),
    }
}
