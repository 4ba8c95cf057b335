//! The FP8 output formats: their parameters, and the one conversion normkit uses to write them.
//!
//! | dtype | format | exponent bias | largest finite | NaN | ±Inf | −0 |
//! |---|---|---|---|---|---|---|
//! | `e4m3` | OCP E4M3FN (NVIDIA sm_89+, AMD gfx950) | 7 | 448 (`0x7E`) | `0x7F`, `0xFF` | no | yes |
//! | `e5m2` | OCP E5M2 (IEEE-like) | 15 | 57344 (`0x7B`) | `0x7D..=0x7F` (and negatives) | `0x7C` | yes |
//! | `e4m3fnuz` | AMD gfx942 | 8 | 240 (`0x7F`) | `0x80` only | no | no |
//! | `e5m2fnuz` | AMD gfx942 | 16 | 57344 (`0x7F`) | `0x80` only | no | no |
//!
//! The conversion ([`encode`]) is round to nearest, ties to even, **saturating**: a finite value (or
//! an infinity) beyond the largest finite magnitude becomes ±max finite, as PTX `cvt.satfinite` and
//! AMD's `v_cvt_pk_fp8_f32` with clamping do; NaN stays NaN (`0x7F | sign` in the OCP formats, `0x80`
//! in the fnuz ones). The fnuz formats have no negative zero (its bit pattern is their NaN), so a
//! negative value that rounds to zero is written as `+0` (`0x00`).
//!
//! The `float8` crate's `F8E4M3`/`F8E5M2` are the element types of the OCP formats in
//! [`crate::HostBuf`]; its own `from_f32` agrees with [`encode`] on every non-NaN `f32` (tested
//! below), but writes a different NaN payload for `e5m2`, so normkit builds its elements from
//! [`encode`]'s bits. The fnuz formats, which `float8` lacks, get the two small types here.

use crate::dtype::DType;

/// The parameters of one FP8 format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    /// Mantissa (fraction) bits: 3 or 2.
    man: u32,
    /// Exponent bias.
    bias: i32,
    /// The bit pattern of the largest finite positive value.
    max_code: u8,
    /// No negative zero, a single NaN (`0x80`), no infinities.
    fnuz: bool,
    /// Whether the all-ones exponent holds ±Inf (mantissa 0) and NaNs (e5m2).
    ieee_specials: bool,
}

pub(crate) const E4M3: Format = Format { man: 3, bias: 7, max_code: 0x7E, fnuz: false, ieee_specials: false };
pub(crate) const E5M2: Format = Format { man: 2, bias: 15, max_code: 0x7B, fnuz: false, ieee_specials: true };
pub(crate) const E4M3_FNUZ: Format = Format { man: 3, bias: 8, max_code: 0x7F, fnuz: true, ieee_specials: false };
pub(crate) const E5M2_FNUZ: Format = Format { man: 2, bias: 16, max_code: 0x7F, fnuz: true, ieee_specials: false };

/// The format of an FP8 dtype; `None` for the others.
pub(crate) const fn format(d: DType) -> Option<Format> {
    match d {
        DType::F8E4M3 => Some(E4M3),
        DType::F8E5M2 => Some(E5M2),
        DType::F8E4M3Fnuz => Some(E4M3_FNUZ),
        DType::F8E5M2Fnuz => Some(E5M2_FNUZ),
        DType::F32 | DType::F16 | DType::BF16 => None,
    }
}

impl Format {
    /// The canonical NaN with the sign of the input where the format has a signed NaN.
    #[inline(always)]
    const fn nan(self, sign: u8) -> u8 {
        if self.fnuz {
            0x80
        } else {
            0x7F | sign
        }
    }
}

/// `v` rounded to nearest (ties to even) in `f`, saturating to ±max finite; NaN stays NaN.
///
/// Exact: it works on the bits of `v`, never through another rounding. With the significand
/// `sig` (24 bits, the implicit one included) and the exponent `e` of `v`, the result's quantum is
/// `2^(max(e, emin) − man)`; `sig` is shifted right to it with round-to-nearest-even on the bits
/// shifted out, and the code is `((max(e, emin) + bias − 1) << man) + q`, which is right for
/// subnormals (`q < 2^man`, exponent field 0), normals (`q ≥ 2^man` adds the exponent's 1) and a
/// rounding that carries into the next binade. Codes of positive values grow with the value, so
/// saturation is a `min` with the largest finite code.
#[inline(always)]
pub(crate) fn encode(f: Format, v: f32) -> u8 {
    let bits = v.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let abs = bits & 0x7FFF_FFFF;
    if abs > 0x7F80_0000 {
        return f.nan(sign);
    }
    let e = (abs >> 23) as i32 - 127;
    let emin = 1 - f.bias;
    let code = if abs < 0x0080_0000 {
        // Zero or an f32 subnormal (< 2^-126): far below half the smallest FP8 subnormal (2^-17 at
        // least), so zero.
        0
    } else {
        let eff = e.max(emin);
        let sig = ((abs & 0x007F_FFFF) | 0x0080_0000) as u64;
        // Bits of `sig` below the quantum: at least 23 − 3 = 20.
        let shift = (23 - f.man as i32 + (eff - e)) as u32;
        if shift > 25 {
            // v < 2^(e+1) ≤ a quarter of the quantum: rounds to zero.
            0
        } else {
            let mut q = sig >> shift;
            let rem = sig & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            if rem > half || (rem == half && q & 1 == 1) {
                q += 1;
            }
            let code = (((eff + f.bias - 1) as i64) << f.man) + q as i64;
            code.min(f.max_code as i64) as u8
        }
    };
    if code == 0 && f.fnuz {
        0
    } else {
        code | sign
    }
}

/// The value of the bit pattern `b` in `f` (exact in `f32`).
#[inline(always)]
pub(crate) fn decode(f: Format, b: u8) -> f32 {
    if f.fnuz && b == 0x80 {
        return f32::NAN;
    }
    let neg = b & 0x80 != 0;
    let exp = ((b & 0x7F) >> f.man) as i32;
    let mant = (b & ((1 << f.man) - 1)) as i32;
    let all_ones = (1 << (7 - f.man)) - 1;
    if !f.fnuz {
        if f.ieee_specials && exp == all_ones {
            return match (mant, neg) {
                (0, false) => f32::INFINITY,
                (0, true) => f32::NEG_INFINITY,
                _ => f32::NAN,
            };
        }
        if !f.ieee_specials && exp == all_ones && mant == (1 << f.man) - 1 {
            return f32::NAN;
        }
    }
    // value = sig · 2^(e − man) with sig = mant (subnormal, e = emin) or 2^man + mant.
    let (sig, e) = if exp == 0 { (mant, 1 - f.bias) } else { (mant + (1 << f.man), exp - f.bias) };
    let v = sig as f32 * pow2(e - f.man as i32);
    if neg {
        -v
    } else {
        v
    }
}

/// `2^k` for the small exponents of FP8 (|k| < 127), exact.
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// Rounds every element of `src` into the bit patterns of `f`.
#[inline(always)]
pub(crate) fn encode_slice(f: Format, src: &[f32], dst: &mut [u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = encode(f, s);
    }
}

/// Widens every bit pattern of `src` in `f`.
#[inline(always)]
pub(crate) fn decode_slice(f: Format, src: &[u8], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = decode(f, s);
    }
}

macro_rules! fnuz_type {
    ($(#[$doc:meta])* $name:ident, $fmt:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The element with this bit pattern.
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }
            /// The bit pattern.
            pub const fn to_bits(self) -> u8 {
                self.0
            }
            /// `v` rounded to nearest even, saturating to ±max finite; NaN becomes the NaN `0x80`; a
            /// negative value that rounds to zero becomes `+0`.
            pub fn from_f32(v: f32) -> Self {
                $name(encode($fmt, v))
            }
            /// The value, exactly (`0x80` is NaN).
            pub fn to_f32(self) -> f32 {
                decode($fmt, self.0)
            }
        }

        impl PartialEq for $name {
            /// As floats compare: NaN equals nothing.
            fn eq(&self, o: &Self) -> bool {
                self.to_f32() == o.to_f32()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:?}", self.to_f32())
            }
        }
    };
}

fnuz_type!(
    /// An AMD gfx942 `e4m3fnuz` element: 4 exponent bits (bias 8), 3 mantissa bits, largest finite
    /// 240, a single NaN (`0x80`), no infinities, no negative zero.
    F8E4M3Fnuz,
    E4M3_FNUZ
);
fnuz_type!(
    /// An AMD gfx942 `e5m2fnuz` element: 5 exponent bits (bias 16), 2 mantissa bits, largest finite
    /// 57344, a single NaN (`0x80`), no infinities, no negative zero.
    F8E5M2Fnuz,
    E5M2_FNUZ
);

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [(DType, Format); 4] =
        [(DType::F8E4M3, E4M3), (DType::F8E5M2, E5M2), (DType::F8E4M3Fnuz, E4M3_FNUZ), (DType::F8E5M2Fnuz, E5M2_FNUZ)];

    /// The finite non-negative values of `f`, ascending, by code.
    fn positives(f: Format) -> Vec<f32> {
        (0..=f.max_code).map(|c| decode(f, c)).collect()
    }

    #[test]
    fn largest_finite_values_and_specials() {
        assert_eq!(decode(E4M3, 0x7E), 448.0);
        assert!(decode(E4M3, 0x7F).is_nan() && decode(E4M3, 0xFF).is_nan());
        assert_eq!(decode(E5M2, 0x7B), 57344.0);
        assert_eq!(decode(E5M2, 0x7C), f32::INFINITY);
        assert_eq!(decode(E5M2, 0xFC), f32::NEG_INFINITY);
        assert!(decode(E5M2, 0x7D).is_nan());
        assert_eq!(decode(E4M3_FNUZ, 0x7F), 240.0);
        assert_eq!(decode(E5M2_FNUZ, 0x7F), 57344.0);
        assert!(decode(E4M3_FNUZ, 0x80).is_nan() && decode(E5M2_FNUZ, 0x80).is_nan());
        // Smallest subnormals.
        assert_eq!(decode(E4M3, 1), 2f32.powi(-9));
        assert_eq!(decode(E5M2, 1), 2f32.powi(-16));
        assert_eq!(decode(E4M3_FNUZ, 1), 2f32.powi(-10));
        assert_eq!(decode(E5M2_FNUZ, 1), 2f32.powi(-17));
        for (d, f) in ALL {
            assert_eq!(decode(f, f.max_code) as f64, d.max_finite(), "{d}");
            let p = positives(f);
            assert!(p.windows(2).all(|w| w[0] < w[1]), "{d}: codes ascend with the value");
        }
    }

    #[test]
    fn every_value_round_trips() {
        for (d, f) in ALL {
            for c in 0..=255u8 {
                let v = decode(f, c);
                if v.is_nan() {
                    assert!(decode(f, encode(f, v)).is_nan(), "{d} {c:#x}");
                } else if v.is_infinite() {
                    assert_eq!(encode(f, v), f.max_code | (c & 0x80), "{d}: infinities saturate");
                } else {
                    assert_eq!(encode(f, v), c, "{d} {c:#x} = {v}");
                }
            }
        }
    }

    #[test]
    fn midpoints_round_to_even_and_overflow_saturates() {
        for (d, f) in ALL {
            let p = positives(f);
            for (k, w) in p.windows(2).enumerate() {
                let mid = (w[0] + w[1]) / 2.0; // exact in f32
                let even = if k % 2 == 0 { k } else { k + 1 } as u8;
                assert_eq!(encode(f, mid), even, "{d}: tie between {} and {}", w[0], w[1]);
                assert_eq!(encode(f, f32::from_bits(mid.to_bits() - 1)), k as u8, "{d}: just below the tie");
                assert_eq!(encode(f, f32::from_bits(mid.to_bits() + 1)), k as u8 + 1, "{d}: just above the tie");
                let neg = encode(f, -f32::from_bits(mid.to_bits() + 1));
                assert_eq!(decode(f, neg), -w[1], "{d}: negative side");
            }
            let max = *p.last().unwrap();
            for big in [max * 1.01, max * 2.0, 1e30, f32::MAX, f32::INFINITY] {
                assert_eq!(encode(f, big), f.max_code, "{d}: {big} saturates");
                assert_eq!(decode(f, encode(f, -big)), -max, "{d}: -{big} saturates");
            }
            assert!(decode(f, encode(f, f32::NAN)).is_nan() && decode(f, encode(f, -f32::NAN)).is_nan());
        }
    }

    #[test]
    fn fnuz_has_no_negative_zero() {
        for f in [E4M3_FNUZ, E5M2_FNUZ] {
            for v in [-0.0f32, -1e-30, -f32::from_bits(1), -(decode(f, 1) / 2.0)] {
                assert_eq!(encode(f, v), 0, "{v} must become +0, not the NaN 0x80");
            }
            assert_eq!(decode(f, encode(f, -(decode(f, 1) * 0.75))), -decode(f, 1));
        }
        assert_eq!(encode(E4M3, -0.0), 0x80, "e4m3 keeps its negative zero");
    }

    /// `float8`'s conversion is round to nearest even with saturation too: the same bits on every
    /// non-NaN input (a stride through all of f32, plus every tie), NaN for NaN.
    #[test]
    fn agrees_with_the_float8_crate() {
        let check = |v: f32| {
            let (a, b) = (encode(E4M3, v), float8::F8E4M3::from_f32(v).to_bits());
            let (c, d) = (encode(E5M2, v), float8::F8E5M2::from_f32(v).to_bits());
            if v.is_nan() {
                assert!(decode(E4M3, b).is_nan() && decode(E5M2, d).is_nan());
            } else {
                assert_eq!(a, b, "e4m3 of {v:e}");
                assert_eq!(c, d, "e5m2 of {v:e}");
            }
        };
        let mut b = 0u32;
        while let Some(next) = b.checked_add(4099) {
            check(f32::from_bits(b));
            b = next;
        }
        for f in [E4M3, E5M2] {
            for w in positives(f).windows(2) {
                let mid = (w[0] + w[1]) / 2.0;
                for v in [mid, -mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1)] {
                    check(v);
                }
            }
        }
        // And the decodings agree.
        for c in 0..=255u8 {
            let (a, b) = (decode(E4M3, c), float8::F8E4M3::from_bits(c).to_f32());
            assert!(a == b || (a.is_nan() && b.is_nan()), "e4m3 {c:#x}");
            let (a, b) = (decode(E5M2, c), float8::F8E5M2::from_bits(c).to_f32());
            assert!(a == b || (a.is_nan() && b.is_nan()), "e5m2 {c:#x}");
        }
    }
}
