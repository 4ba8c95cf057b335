//! Row reductions in fp32 with independent lanes.
//!
//! One serial sum per row is bound by the add latency (candle's weakness, see ANCHORS.md). Here
//! a row is summed into [`LANES`] independent accumulators (element `i` goes to lane `i % LANES`),
//! which the compiler turns into vector adds, then the lanes are folded by a fixed pairwise tree.
//! The order of every addition depends only on the row length `N`: this is what makes the forward
//! pass batch-invariant (the same row gives the same bits whatever `M`, the thread count or the
//! rows around it). Long rows are summed in blocks (see [`BLOCK`]) to keep the error small.

/// Independent accumulators per row: two AVX-512 / four AVX2 / eight SSE registers.
pub(crate) const LANES: usize = 32;

#[inline(always)]
pub(super) fn fold(mut flat: [f32; LANES]) -> f32 {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            flat[j] += flat[j + w];
        }
    }
    flat[0]
}

/// Elements per inner block. A lane sums at most `BLOCK / LANES` terms before its partial is added
/// to the lane's outer accumulator, so no accumulator sees long runs of same-sign terms: a flat
/// 32-lane sum of squares over N = 2^20 drifts ~1e-4 relative (32768 sequential terms per lane),
/// beyond what the conformance suite requires of a reduction; blocked, it stays ~1e-6.
pub(super) const BLOCK: usize = 1024;

/// The reduction order every path follows: the row is cut into blocks of [`BLOCK`] elements (the
/// last one shorter); within a block, element `i` of the full `LANES`-chunks goes to inner lane
/// `i % LANES` and the `r` leftover elements to inner lanes `0..r`; each block's inner lanes are
/// added to the outer lanes, lane by lane, in block order; then [`fold`]. Portable version.
#[inline(always)]
fn lanes_portable(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut outer = [0.0f32; LANES];
    for (ba, bb) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        let mut acc = [0.0f32; LANES];
        let mut ca = ba.chunks_exact(LANES);
        let mut cb = bb.chunks_exact(LANES);
        for (x, y) in (&mut ca).zip(&mut cb) {
            for j in 0..LANES {
                acc[j] += f(x[j], y[j]);
            }
        }
        for ((s, &x), &y) in acc.iter_mut().zip(ca.remainder()).zip(cb.remainder()) {
            *s += f(x, y);
        }
        for (o, a) in outer.iter_mut().zip(acc) {
            *o += a;
        }
    }
    fold(outer)
}

/// The same order with AVX2 accumulators (LLVM's SLP vectoriser splits a `[f32; 32]`
/// accumulator into 2-wide pieces, so this one is written with intrinsics). Each lane does the
/// same correctly rounded operations in the same order as [`lanes_portable`], hence the same bits.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lanes_avx2(
    a: &[f32],
    b: &[f32],
    fv: impl Fn(std::arch::x86_64::__m256, std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    f: impl Fn(f32, f32) -> f32,
) -> f32 {
    use std::arch::x86_64::{_mm256_add_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps};
    let mut outer = [0.0f32; LANES];
    for (ba, bb) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        let mut acc = [_mm256_setzero_ps(); LANES / 8];
        let mut ca = ba.chunks_exact(LANES);
        let mut cb = bb.chunks_exact(LANES);
        for (x, y) in (&mut ca).zip(&mut cb) {
            for (k, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `x` and `y` hold `LANES` elements, so `8k..8k + 8` is in bounds.
                let (xv, yv) = unsafe { (_mm256_loadu_ps(x.as_ptr().add(8 * k)), _mm256_loadu_ps(y.as_ptr().add(8 * k))) };
                *acc = _mm256_add_ps(*acc, fv(xv, yv));
            }
        }
        let mut flat = [0.0f32; LANES];
        for (k, acc) in acc.iter().enumerate() {
            // SAFETY: `flat` holds `LANES` elements, so `8k..8k + 8` is in bounds.
            unsafe { _mm256_storeu_ps(flat.as_mut_ptr().add(8 * k), *acc) };
        }
        for ((s, &x), &y) in flat.iter_mut().zip(ca.remainder()).zip(cb.remainder()) {
            *s += f(x, y);
        }
        for (o, a) in outer.iter_mut().zip(flat) {
            *o += a;
        }
    }
    fold(outer)
}

/// `Σ f(a[i], b[i])` in the fixed order of [`lanes_portable`], on AVX2 when the CPU has it.
/// `fv` is `f` on eight lanes.
#[inline(always)]
fn lanes2(
    a: &[f32],
    b: &[f32],
    #[cfg(target_arch = "x86_64")] fv: impl Fn(std::arch::x86_64::__m256, std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    f: impl Fn(f32, f32) -> f32,
) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above; the check is a cached load).
        return unsafe { lanes_avx2(a, b, fv, f) };
    }
    lanes_portable(a, b, f)
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::_mm256_add_ps as add;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256, _mm256_mul_ps as mul, _mm256_set1_ps as splat, _mm256_sub_ps as sub};

// The vector closures below call AVX2 intrinsics; they only ever run inside `lanes_avx2`, whose
// caller checked AVX2. `#[inline(always)]` closures cannot carry `target_feature`, so each is a
// safe wrapper over intrinsics that are themselves safe on x86_64 once AVX2 is enabled.

/// `Σ x[i]`.
#[inline(always)]
pub(crate) fn sum(x: &[f32]) -> f32 {
    lanes2(
        x,
        x,
        #[cfg(target_arch = "x86_64")]
        |v, _| v,
        |v, _| v,
    )
}

/// `Σ (x[i] − c)²`.
#[inline(always)]
pub(crate) fn sum_sq_dev(x: &[f32], c: f32) -> f32 {
    lanes2(
        x,
        x,
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only called from `lanes_avx2` (AVX2 present); SSE/AVX arithmetic on registers.
        |v: __m256, _| unsafe {
            let d = sub(v, splat(c));
            mul(d, d)
        },
        |v, _| (v - c) * (v - c),
    )
}

/// `Σ x[i]²` (no subtraction, for RMSNorm).
#[inline(always)]
pub(crate) fn sum_sq(x: &[f32]) -> f32 {
    lanes2(
        x,
        x,
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only called from `lanes_avx2` (AVX2 present).
        |v: __m256, _| unsafe { mul(v, v) },
        |v, _| v * v,
    )
}

/// `Σ a[i]·b[i]`.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    lanes2(
        a,
        b,
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only called from `lanes_avx2` (AVX2 present).
        |x: __m256, y: __m256| unsafe { mul(x, y) },
        |x, y| x * y,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 and portable paths give the same bits for every length around the lane width.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_matches_portable() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let a: Vec<f32> = (0..3000).map(|i| ((i * 7919) % 1000) as f32 * 1.37e-3 - 0.61).collect();
        let b: Vec<f32> = (0..3000).map(|i| ((i * 104_729) % 997) as f32 * 2.1e-3 - 1.1).collect();
        for n in (0..80).chain([255, 256, 257, 300, 1023, 1024, 1025, 2100, 3000]) {
            let (a, b) = (&a[..n], &b[..n]);
            // SAFETY: AVX2 checked above.
            let v = unsafe { lanes_avx2(a, b, |x, y| mul(x, y), |x, y| x * y) };
            assert_eq!(v.to_bits(), lanes_portable(a, b, |x, y| x * y).to_bits(), "n = {n}");
            // SAFETY: AVX2 checked above.
            let v = unsafe { lanes_avx2(a, a, |x, _| add(x, splat(0.0)), |x, _| x + 0.0) };
            assert_eq!(v.to_bits(), lanes_portable(a, a, |x, _| x + 0.0).to_bits(), "n = {n}");
        }
    }
}
