//! Element types.

use std::fmt;

/// The element type of a tensor.
///
/// Inputs, weights, biases, residuals and gradients are `F32`, `F16` or `BF16` ([`DType::ALL`]).
/// Statistics (mean, rstd) are always `F32`. The four FP8 formats ([`DType::FP8`]) are output
/// dtypes only: a forward `y` quantised with a scale ([`crate::Fp8`]); validation rejects them
/// anywhere else. The enum is `#[non_exhaustive]`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16 (`half::f16`): 10-bit mantissa, largest finite value 65504.
    F16,
    /// bfloat16 (`half::bf16`): f32's exponent range with a 7-bit mantissa.
    BF16,
    /// OCP FP8 E4M3FN (`float8::F8E4M3`): largest finite 448, NaN `0x7F`/`0xFF`, no infinities.
    /// NVIDIA sm_89+/sm_90/sm_100, AMD gfx950. Output only.
    F8E4M3,
    /// OCP FP8 E5M2 (`float8::F8E5M2`): largest finite 57344, IEEE-style infinities and NaNs.
    /// NVIDIA sm_89+/sm_90/sm_100, AMD gfx950. Output only.
    F8E5M2,
    /// AMD gfx942 FP8 E4M3FNUZ ([`crate::F8E4M3Fnuz`]): bias 8, largest finite 240, one NaN
    /// (`0x80`), no infinities, no negative zero. Output only.
    F8E4M3Fnuz,
    /// AMD gfx942 FP8 E5M2FNUZ ([`crate::F8E5M2Fnuz`]): bias 16, largest finite 57344, one NaN
    /// (`0x80`), no infinities, no negative zero. Output only.
    F8E5M2Fnuz,
}

impl DType {
    /// The compute dtypes, in a fixed order: every dtype an input, weight, residual or gradient
    /// may have (tests iterate over it). The FP8 output dtypes are in [`DType::FP8`], not here.
    pub const ALL: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

    /// The FP8 output dtypes, in a fixed order.
    pub const FP8: [DType; 4] = [DType::F8E4M3, DType::F8E5M2, DType::F8E4M3Fnuz, DType::F8E5M2Fnuz];

    /// Bytes per element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => 1,
        }
    }

    /// Short lowercase name used in reports and JSON (`"f32"`, `"f16"`, `"bf16"`, `"e4m3"`,
    /// `"e5m2"`, `"e4m3fnuz"`, `"e5m2fnuz"`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "e4m3",
            DType::F8E5M2 => "e5m2",
            DType::F8E4M3Fnuz => "e4m3fnuz",
            DType::F8E5M2Fnuz => "e5m2fnuz",
        }
    }

    /// Parses the names printed by [`DType::name`] (and a few common spellings).
    pub fn parse(s: &str) -> Option<DType> {
        match s {
            "f32" | "fp32" | "float32" => Some(DType::F32),
            "f16" | "fp16" | "float16" | "half" => Some(DType::F16),
            "bf16" | "bfloat16" => Some(DType::BF16),
            "e4m3" | "e4m3fn" | "f8e4m3" | "f8e4m3fn" | "float8_e4m3fn" => Some(DType::F8E4M3),
            "e5m2" | "f8e5m2" | "float8_e5m2" => Some(DType::F8E5M2),
            "e4m3fnuz" | "f8e4m3fnuz" | "float8_e4m3fnuz" => Some(DType::F8E4M3Fnuz),
            "e5m2fnuz" | "f8e5m2fnuz" | "float8_e5m2fnuz" => Some(DType::F8E5M2Fnuz),
            _ => None,
        }
    }

    /// Whether this is one of the FP8 output dtypes.
    pub const fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz)
    }

    /// The largest finite value of the format: f32's, 65504, bf16's, 448, 57344, 240, 57344.
    /// FP8 outputs saturate to it.
    pub const fn max_finite(self) -> f64 {
        match self {
            DType::F32 => f32::MAX as f64,
            DType::F16 => 65504.0,
            DType::BF16 => 3.389_531_389_251_535_5e38,
            DType::F8E4M3 => 448.0,
            DType::F8E5M2 | DType::F8E5M2Fnuz => 57344.0,
            DType::F8E4M3Fnuz => 240.0,
        }
    }

    /// Unit roundoff `u = 2^-p` of the format (half the distance from 1.0 to the next value).
    /// Tolerances in the test suite are written in multiples of it.
    pub const fn unit_roundoff(self) -> f64 {
        match self {
            DType::F32 => 5.960_464_477_539_063e-8,       // 2^-24
            DType::F16 => 4.882_812_5e-4,                 // 2^-11
            DType::BF16 => 3.906_25e-3,                   // 2^-8
            DType::F8E4M3 | DType::F8E4M3Fnuz => 6.25e-2, // 2^-4
            DType::F8E5M2 | DType::F8E5M2Fnuz => 0.125,   // 2^-3
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rounds an `f32` to `dtype` and back: the value a tensor of that dtype would hold. For the FP8
/// dtypes the conversion saturates to ±max finite (see [`DType::max_finite`]); NaN stays NaN.
#[inline]
pub fn round_to(dtype: DType, v: f32) -> f32 {
    match dtype {
        DType::F32 => v,
        DType::F16 => half::f16::from_f32(v).to_f32(),
        DType::BF16 => half::bf16::from_f32(v).to_f32(),
        DType::F8E4M3 | DType::F8E5M2 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => match crate::fp8::format(dtype) {
            Some(f) => crate::fp8::decode(f, crate::fp8::encode(f, v)),
            None => v,
        },
    }
}
