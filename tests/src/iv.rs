//! Error intervals: how the oracle says what a correct kernel may return.
//!
//! # The tolerance model
//!
//! A kernel computes in fp32 (statistics always accumulated in fp32) and rounds to a narrower dtype
//! at the points its casting mode names. Instead of one "rtol/atol" pair per dtype, the oracle carries
//! every intermediate as an [`Iv`]: an interval `[lo, hi]` (f64) that contains every value a correct
//! fp32 kernel can hold there, plus `mid`, the exact value (rounded only where the contract rounds).
//!
//! - **fp32 elementwise operations** (`+ − ×`): the result interval is the exact interval image,
//!   widened by [`OP`]` = 2u₃₂` of its magnitude. One unit `u₃₂` is the rounding of the operation
//!   itself; the second allows one extra rounding from a reassociation (`x·(rstd·w)` instead of
//!   `(x·rstd)·w`, an FMA on one path and not the other). Errors of the operands propagate through the
//!   interval arithmetic, so cancellation (LayerNorm's `x − μ`, backward's `g − x̂·mean(g·x̂)`) is
//!   measured against the magnitude of what cancelled, not of the result.
//! - **Reductions** of `n` terms (the row statistics, `mean(g·x̂)`, `dw`/`db` over `M` rows): relative
//!   error [`acc_rel`]`(n) = (16 + 2√n)·u₃₂` of the sum of magnitudes. A tree, pairwise or blocked
//!   sum has error `~log₂(n)·u`, far inside; a sequential fp32 sum whose rounding errors behave like
//!   a random walk has standard deviation `≈ 0.58·√n·u`, so `2√n` is about 3.5 of those; 16 covers
//!   the division, the square root (`rsqrtf` is within 2 ulp) and the `eps` add. This is a
//!   *requirement*, not a bound every fp32 sum meets: a long sequential accumulation of same-sign
//!   terms (a sum of squares over a lane of tens of thousands of elements) can drift beyond it, and
//!   the suite then reports the statistic as inaccurate — deliberately, since pairwise or blocked
//!   summation costs nothing in bandwidth. dW/dB tolerances grow like `√M` for the same reason: they
//!   sum `M` products of rounded inputs.
//! - **Rounding points** (the store of every output, `x̂` in llama mode, every step of `none` mode):
//!   rounding to nearest is monotone, so a kernel whose fp32 value lies in `[lo, hi]` stores a value in
//!   `[R(lo), R(hi)]`. When `[lo, hi]` is far from a rounding boundary this is a single value, and the
//!   kernel must match the oracle *bitwise*; when the boundary is within the fp32 error, both
//!   neighbours are accepted — the "1-ulp flip at a rounding point", allowed exactly where it can
//!   happen and nowhere else. A kernel that rounds at the wrong point (or not at all) is therefore
//!   caught even in bf16, where a fixed "a few ulps" tolerance would hide it.
//!
//! The resulting allowance for an output stored in dtype `D` is thus "at most the rounding of `D`
//! (half an ulp, i.e. `u_D` relative, on each side of the exact value, compared *in* `D`) plus the
//! fp32 compute error, which is a few `u₃₂` relative to the row's scale (the magnitude of
//! `(x − μ)·rstd·w`, not of the result) plus the statistics' `acc_rel(N)` relative error".
//! For f32 outputs that is ~`(16 + 2√N)·u₃₂` relative; for f16/bf16 outputs it is in practice
//! one ulp of the output dtype (the stored value is `R(exact)` or, near a tie, its neighbour).
//!
//! What that comes to, per output dtype (`s` = the row's scale `|x̂|·|w + offset|`, `N` = 4096,
//! `M` = 4099):
//!
//! | output | allowed deviation from the exact value | why |
//! |---|---|---|
//! | y, dx in f32 | ≈ 150·u₃₂·s ≈ 9e-6·s | fp32 statistics over N terms (`acc_rel`), a few fp32 ops |
//! | y, dx in f16 | the exact value rounded to f16, or its neighbour only when the exact value is within ≈ 9e-6·s of a tie | rounding once to f16 (`u` = 4.9e-4) dominates the fp32 error |
//! | y, dx in bf16 | as f16, for bf16 (`u` = 3.9e-3) | likewise |
//! | llama / none modes | as above, but the intermediate roundings too: a flip allowed only where the fp32 value can fall on either side | the contract names those rounding points |
//! | residual_out | exact (bitwise) | one fp32 add rounded once; fp32 is wide enough that rounding twice (f32, then f16/bf16) equals rounding once (24 ≥ 2p + 2) |
//! | mean, rstd (f32) | ≈ 150·u₃₂ relative (mean: of `mean|x|`) | one fp32 reduction each |
//! | dw, db | ≈ (16 + 2√M)·u₃₂ ≈ 144·u₃₂ of `Σ|dy·x̂|` (or `Σ|dy|`), then the store's rounding | fp32 sum over M rows |

use normkit_core::{round_to, DType};

/// Unit roundoff of f32, `2⁻²⁴`.
pub const U32: f64 = 5.960_464_477_539_063e-8;

/// Relative widening of each fp32 elementwise operation: its own rounding plus one reassociation.
pub const OP: f64 = 2.0 * U32;

/// Relative error of an fp32 reduction of `n` terms, relative to the sum of their magnitudes.
/// See the module documentation for why `16 + 2√n`.
pub fn acc_rel(n: usize) -> f64 {
    (16.0 + 2.0 * (n as f64).sqrt()) * U32
}

/// `v` (f64) rounded to `dtype` the way a kernel's fp32 value would be: first to f32, then to the
/// dtype. Applied to interval endpoints this is safe: a kernel's f32 value `k ≥ lo` satisfies
/// `k ≥ f32(lo)`, and rounding to the narrower dtype is monotone.
pub fn round_f64(dtype: DType, v: f64) -> f64 {
    round_to(dtype, v as f32) as f64
}

/// An interval containing every value a correct kernel may hold at one point of the computation,
/// with the exact value `mid` (rounded where the contract rounds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iv {
    pub lo: f64,
    pub hi: f64,
    pub mid: f64,
}

impl Iv {
    /// An exactly known value (an input).
    pub fn exact(v: f64) -> Iv {
        Iv { lo: v, hi: v, mid: v }
    }

    /// `mid ± e`.
    pub fn around(mid: f64, e: f64) -> Iv {
        Iv { lo: mid - e, hi: mid + e, mid }
    }

    /// The largest magnitude in the interval.
    pub fn mag(&self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }

    fn widened(lo: f64, hi: f64, mid: f64) -> Iv {
        let r = OP * lo.abs().max(hi.abs());
        Iv { lo: lo - r, hi: hi + r, mid }
    }

    /// fp32 `self + o`.
    pub fn add32(self, o: Iv) -> Iv {
        Iv::widened(self.lo + o.lo, self.hi + o.hi, self.mid + o.mid)
    }

    /// fp32 `self − o`.
    pub fn sub32(self, o: Iv) -> Iv {
        Iv::widened(self.lo - o.hi, self.hi - o.lo, self.mid - o.mid)
    }

    /// fp32 `self · o`.
    pub fn mul32(self, o: Iv) -> Iv {
        let p = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi];
        let lo = p.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Iv::widened(lo, hi, self.mid * o.mid)
    }

    /// Rounded to `dtype` (a rounding point of the casting mode).
    pub fn round(self, dtype: DType) -> Iv {
        Iv { lo: round_f64(dtype, self.lo), hi: round_f64(dtype, self.hi), mid: round_f64(dtype, self.mid) }
    }

    /// The values a kernel may store in `dtype`: `[R(lo), R(hi)]`.
    pub fn stored(&self, dtype: DType) -> (f64, f64) {
        (round_f64(dtype, self.lo), round_f64(dtype, self.hi))
    }

    /// How far `got` (a stored value of `dtype`) lies outside the allowed range, in units of the
    /// range's width (0 inside; `inf` for NaN or an unexpected infinity). Used to pick the worst
    /// element of a failing case.
    pub fn violation(&self, dtype: DType, got: f64) -> f64 {
        let (lo, hi) = self.stored(dtype);
        if got.is_nan() {
            return f64::INFINITY;
        }
        if got >= lo && got <= hi {
            return 0.0;
        }
        if !got.is_finite() {
            return f64::INFINITY;
        }
        let dist = if got < lo { lo - got } else { got - hi };
        let scale = (hi - lo).max(self.mid.abs() * dtype.unit_roundoff()).max(f64::MIN_POSITIVE);
        dist / scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_point_allows_a_flip_only_near_a_boundary() {
        // bf16 has 8 significant bits: the values next to 1 are 1 and 1 + 2^-7, the tie 1 + 2^-8.
        let tie = 1.0 + 2f64.powi(-8);
        let near = Iv::around(tie, 1e-6).round(DType::BF16);
        assert!(near.hi > near.lo, "both neighbours of a tie are allowed");
        let far = Iv::around(1.0 + 2f64.powi(-10), 1e-6).round(DType::BF16);
        assert_eq!(far.lo, far.hi, "far from a tie exactly one value is allowed");
        assert_eq!(far.lo, 1.0);
    }

    #[test]
    fn cancellation_keeps_the_error_of_the_operands() {
        let a = Iv::around(1000.5, 1e-3);
        let b = Iv::exact(1000.0);
        let d = a.sub32(b);
        assert!(d.hi - d.lo >= 2e-3);
        assert!((d.mid - 0.5).abs() < 1e-12);
    }

    #[test]
    fn nan_is_an_infinite_violation() {
        assert_eq!(Iv::exact(1.0).violation(DType::F32, f64::NAN), f64::INFINITY);
        assert_eq!(Iv::exact(1.0).violation(DType::F32, 1.0), 0.0);
    }
}
