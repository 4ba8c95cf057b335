//! A fused AVX-512 forward row for bf16 in, bf16 out, no residual, `Gemma`/`Llama` casting: the
//! commonest bf16 call, which the generic row runs as five to seven passes over its f32 scratch.
//!
//! Here the row costs three passes: (1) bf16 → f32 into scratch fused with the first reduction
//! (Σx for LayerNorm, Σx² for RMSNorm); (2) Σ(x − μ)² over scratch (LayerNorm only, still two-pass
//! statistics); (3) normalise, affine, round to bf16 and store, all in registers, 32 elements (one
//! output line) at a time, with streaming stores of whole lines.
//!
//! Every value is bitwise the generic row's: the reductions follow the order of
//! `reduce::lanes_portable` (blocks of `reduce::BLOCK`, element `i` of a block's full 32-chunks in
//! lane `i % 32`, leftovers in lanes `0..r`, lanes added to the outer lanes per block, then the
//! same scalar fold), each lane doing the same correctly rounded f32 operations; the output does
//! `((x − μ)·rstd [rounded to bf16 for Llama])·w + b`, exactly the generic row's operations (its
//! `− 0.0` and `· 1.0` of Llama's second affine are identities, NaN payloads included, on x86),
//! then the branch-free round to nearest even of `convert::f32_to_bf16_bits` done on 16 lanes.
//! `every_instruction_set_and_store_kind_gives_the_same_bits` compares this path with the AVX2 and
//! portable builds.
//!
//! Measured with the criterion bench (8192×4096, 2 threads of a 2-core AVX-512 Xeon without
//! avx512bf16, load average 3–5 from other builds, so noisy; ratio to the memcpy of the same run,
//! two alternating runs of old and new binaries): LayerNorm fwd bf16 48–53% → 68–68% of memcpy
//! (10.4–10.6 → 12.0–13.6 GiB/s), RMSNorm fwd bf16 63–76% → 87–94% (12.0–13.4 → 16.6–17.7 GiB/s).

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::convert::f32_to_bf16_bits;
use super::reduce::{fold, BLOCK, LANES};

/// 32 lanes = two zmm accumulators.
const _: () = assert!(LANES == 32);

/// The statistics and output of one row.
pub(super) struct RowArgs<'a> {
    /// The input row, `n` bf16 bit patterns.
    pub x: *const u16,
    /// The output row, `n` bf16 bit patterns.
    pub y: *mut u16,
    /// The next row's input, to prefetch while this one is finished (null for none).
    pub x_next: *const u16,
    /// f32 scratch of `n` elements, cache-line aligned from element `lead` on.
    pub h: &'a mut [f32],
    /// `w + offset` and `b`, `n` elements each.
    pub w: Option<&'a [f32]>,
    pub b: Option<&'a [f32]>,
    pub layer: bool,
    pub llama: bool,
    pub eps: f32,
    pub stream: bool,
}

/// `Σ f(v(i))` in the fixed order of `reduce::lanes_portable`, where `load(i)` gives elements
/// `i..i + 16` and `get(i)` element `i`.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
fn lanes512(
    n: usize,
    mut load: impl FnMut(usize) -> __m512,
    mut get: impl FnMut(usize) -> f32,
    fv: impl Fn(__m512) -> __m512,
    f: impl Fn(f32) -> f32,
) -> f32 {
    let mut outer = [_mm512_setzero_ps(); 2];
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let full = start + (end - start) / LANES * LANES;
        let (mut a0, mut a1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut i = start;
        while i < full {
            a0 = _mm512_add_ps(a0, fv(load(i)));
            a1 = _mm512_add_ps(a1, fv(load(i + 16)));
            i += LANES;
        }
        if full < end {
            let mut flat = [0.0f32; LANES];
            // SAFETY: `flat` holds 32 f32.
            unsafe {
                _mm512_storeu_ps(flat.as_mut_ptr(), a0);
                _mm512_storeu_ps(flat.as_mut_ptr().add(16), a1);
            }
            for (k, s) in flat.iter_mut().enumerate().take(end - full) {
                *s += f(get(full + k));
            }
            // SAFETY: as above.
            unsafe {
                a0 = _mm512_loadu_ps(flat.as_ptr());
                a1 = _mm512_loadu_ps(flat.as_ptr().add(16));
            }
        }
        outer[0] = _mm512_add_ps(outer[0], a0);
        outer[1] = _mm512_add_ps(outer[1], a1);
        start = end;
    }
    let mut flat = [0.0f32; LANES];
    // SAFETY: `flat` holds 32 f32.
    unsafe {
        _mm512_storeu_ps(flat.as_mut_ptr(), outer[0]);
        _mm512_storeu_ps(flat.as_mut_ptr().add(16), outer[1]);
    }
    fold(flat)
}

/// `convert::f32_to_bf16_bits` on 16 lanes, as 32-bit lanes (the bits in the low half).
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
fn bf16_bits16(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))));
    let quiet = _mm512_or_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(0x0040));
    let abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fff_ffff));
    // Both sides are below 2^31, so the signed compare is the unsigned one of the scalar code.
    let is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f80_0000));
    _mm512_mask_blend_epi32(is_nan, rounded, quiet)
}

/// One output value, scalar (heads and tails), the same operations as the vector loop.
#[inline(always)]
fn out_scalar(v: f32, mu: f32, rstd: f32, llama: bool, w: Option<f32>, b: Option<f32>) -> u16 {
    let mut t = (v - mu) * rstd;
    if llama {
        t = f32::from_bits((f32_to_bf16_bits(t) as u32) << 16);
    }
    if let Some(w) = w {
        t *= w;
    }
    if let Some(b) = b {
        t += b;
    }
    f32_to_bf16_bits(t)
}

/// Normalises one row; returns `(μ, rstd)` (μ = 0 for RMSNorm).
///
/// # Safety
/// The CPU must support AVX-512 F/BW/VL; `x` must be valid for `h.len()` reads and `y` for
/// `h.len()` writes owned by this thread; `w`/`b` have `h.len()` elements.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn row(a: RowArgs<'_>) -> (f32, f32) {
    let n = a.h.len();
    let nf = n as f32;
    let h = a.h.as_mut_ptr();
    let x = a.x;
    // Soundness of the raw accesses: every index below is `< n` (vector accesses cover `i..i+16`
    // with `i + 16 <= n`), within `x`, `y` and `h` as the caller guarantees.
    // Pass 1: widen into scratch, fused with Σx (LayerNorm) or Σx² (RMSNorm).
    let load = |i: usize| {
        // SAFETY: as said above.
        unsafe {
            let u = _mm256_loadu_si256(x.add(i).cast());
            let v = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(u)));
            _mm512_storeu_ps(h.add(i), v);
            v
        }
    };
    let get = |i: usize| {
        // SAFETY: as said above.
        unsafe {
            let v = f32::from_bits((*x.add(i) as u32) << 16);
            *h.add(i) = v;
            v
        }
    };
    let (mu, rstd) = if a.layer {
        let mu = lanes512(n, load, get, |v| v, |v| v) / nf;
        let cv = _mm512_set1_ps(mu);
        // SAFETY: as said above.
        let ld = |i: usize| unsafe { _mm512_loadu_ps(h.add(i)) };
        // SAFETY: as said above.
        let gt = |i: usize| unsafe { *h.add(i) };
        let fv = |v: __m512| {
            let d = _mm512_sub_ps(v, cv);
            _mm512_mul_ps(d, d)
        };
        let ss = lanes512(n, ld, gt, fv, |v| (v - mu) * (v - mu));
        (mu, 1.0 / (ss / nf + a.eps).sqrt())
    } else {
        let ss = lanes512(n, load, get, |v| _mm512_mul_ps(v, v), |v| v * v);
        (0.0, 1.0 / (ss / nf + a.eps).sqrt())
    };

    // Pass 3: y, one 64-byte output line (32 elements) per step.
    let (w, b, llama) = (a.w, a.b, a.llama);
    let scalar = |i: usize| {
        // SAFETY: as said above.
        unsafe { out_scalar(*h.add(i), mu, rstd, llama, w.map(|w| w[i]), b.map(|b| b[i])) }
    };
    let (muv, rsv) = (_mm512_set1_ps(mu), _mm512_set1_ps(rstd));
    let vec16 = |i: usize| {
        // SAFETY: as said above (`w`, `b` have `n` elements).
        unsafe {
            let mut t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(h.add(i)), muv), rsv);
            if llama {
                t = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(bf16_bits16(t)));
            }
            if let Some(w) = w {
                t = _mm512_mul_ps(t, _mm512_loadu_ps(w.as_ptr().add(i)));
            }
            if let Some(b) = b {
                t = _mm512_add_ps(t, _mm512_loadu_ps(b.as_ptr().add(i)));
            }
            _mm512_cvtepi32_epi16(bf16_bits16(t))
        }
    };
    let y = a.y;
    let head = (((64 - (y as usize) % 64) % 64) / 2).min(n);
    let head = if (y as usize) % 2 != 0 { n } else { head };
    for i in 0..head {
        // SAFETY: as said above.
        unsafe { *y.add(i) = scalar(i) };
    }
    let mut i = head;
    while i + 32 <= n {
        if !a.x_next.is_null() {
            _mm_prefetch::<_MM_HINT_T1>(a.x_next.wrapping_add(i).cast());
        }
        let (lo, hi) = (vec16(i), vec16(i + 16));
        let line = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
        // SAFETY: as said above; `y + i` is 64-byte aligned here (`y + head` is a line boundary).
        unsafe {
            if a.stream {
                _mm512_stream_si512(y.add(i).cast(), line);
            } else {
                _mm512_store_si512(y.add(i).cast(), line);
            }
        }
        i += 32;
    }
    while i < n {
        // SAFETY: as said above.
        unsafe { *y.add(i) = scalar(i) };
        i += 1;
    }
    if a.stream {
        _mm_sfence();
    }
    (mu, rstd)
}
