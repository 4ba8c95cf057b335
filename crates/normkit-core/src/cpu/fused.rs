//! A fused AVX-512 forward row for bf16 in, bf16 out, no residual, `Gemma`/`Llama` casting: the
//! commonest bf16 call, which the generic row runs as five to seven passes over its f32 scratch.
//!
//! Here the row costs three passes over the bf16 row itself (8 KiB at N = 4096, it stays in L1/L2
//! once read) and no f32 scratch at all: (1) widen and Σx for LayerNorm (Σx² for RMSNorm);
//! (2) widen again and Σ(x − μ)² (LayerNorm only, still two-pass statistics); (3) widen,
//! normalise, affine, round to bf16 and store, all in registers, one 64-byte output line (32
//! elements) per step, streaming whole lines, while the next row is prefetched. Re-widening costs
//! two ops per 16 elements; an f32 scratch row beside `w` and `b` (48 KiB at N = 4096) overflowed
//! L1 in pass 3, and dropping it measured LayerNorm 65–69% → 70–80% of memcpy (below).
//! The reductions run four 1024-element blocks side by side (see `lanes512`), and the bf16
//! rounding takes seven ops per 16 lanes (an unordered compare and a masked or for NaN) plus a
//! two-shuffle pack per 32, against eleven and five before; neither showed above the noise alone.
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
//! avx512bf16; load average 1.5–5 from other builds, so noisy; ratio to the memcpy of the same
//! run, old and new binaries alternated), % of memcpy:
//! - generic row (before this file): LayerNorm fwd bf16 48, 53; RMSNorm fwd bf16 63, 76.
//! - fused, h scratch: LN 68, 68, 70, 69, 73, 67, 69; RMS 87, 94, 73, 78, 93, 94, 83.
//! - + block groups + cheaper rounding/pack: LN 74, 67, 68, 69, 66, 65; RMS 97, 85, 85, 94, 72, 92.
//! - + no scratch (this version): LN 70, 80, 72; RMS 96, 82, 86.
//!
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
    /// Elements in the row.
    pub n: usize,
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
    // Each block's inner lanes start from zero, so the blocks' inner sums are independent: run
    // `GROUP` full blocks side by side (8 accumulator chains instead of 2, the add latency no
    // longer bounds the pass), then add them to the outer lanes in block order, as one at a time.
    const GROUP: usize = 4;
    while start + GROUP * BLOCK <= n {
        let mut acc = [[_mm512_setzero_ps(); 2]; GROUP];
        let mut c = 0;
        while c < BLOCK {
            for (g, a) in acc.iter_mut().enumerate() {
                let i = start + g * BLOCK + c;
                a[0] = _mm512_add_ps(a[0], fv(load(i)));
                a[1] = _mm512_add_ps(a[1], fv(load(i + 16)));
            }
            c += LANES;
        }
        for a in acc {
            outer[0] = _mm512_add_ps(outer[0], a[0]);
            outer[1] = _mm512_add_ps(outer[1], a[1]);
        }
        start += GROUP * BLOCK;
    }
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

/// Elements `i..i + 16` of a bf16 row, widened.
///
/// # Safety
/// `x + i .. x + i + 16` must be readable.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn wide(x: *const u16, i: usize) -> __m512 {
    // SAFETY: forwarded from the caller.
    let u = unsafe { _mm256_loadu_si256(x.add(i).cast()) };
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(u)))
}

/// `convert::f32_to_bf16_bits` on 16 lanes, as 32-bit lanes (the bits in the low half). NaN
/// lanes (an unordered self-compare is exactly `(x & 0x7fff_ffff) > 0x7f80_0000`) take the
/// quieted `(x >> 16) | 0x40` through a masked or, in place of a compare of `|x|` and a blend.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
fn bf16_bits16(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let hi = _mm512_srli_epi32::<16>(x);
    let odd = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd));
    let is_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    _mm512_mask_or_epi32(rounded, is_nan, hi, _mm512_set1_epi32(0x0040))
}

/// `bf16_bits16(v) << 16` as f32 (round to bf16 and back), without the shifts: the rounded value
/// with its low half cleared, `(x | 0x0040_0000) & 0xffff_0000` for NaN.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
fn round_bf16_16(v: __m512) -> __m512 {
    let x = _mm512_castps_si512(v);
    let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
    let t = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd);
    let is_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let t = _mm512_mask_or_epi32(t, is_nan, x, _mm512_set1_epi32(0x0040_0000));
    _mm512_castsi512_ps(_mm512_and_si512(t, _mm512_set1_epi32(0xffff_0000u32 as i32)))
}

/// Packs two vectors of 16 bf16 patterns (in 32-bit lanes, each `< 2^16`) into one line of 32:
/// `packus` (exact, nothing saturates) interleaves per 128-bit lane, a qword permute restores
/// the order. Two shuffles for 32 elements, where two `vpmovdw` and an insert take five.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
#[inline]
fn pack32(lo: __m512i, hi: __m512i) -> __m512i {
    let p = _mm512_packus_epi32(lo, hi);
    _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), p)
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
/// The CPU must support AVX-512 F/BW/VL; `x` must be valid for `n` reads and `y` for `n` writes
/// owned by this thread; `w`/`b` have `n` elements.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn row(a: RowArgs<'_>) -> (f32, f32) {
    let n = a.n;
    let nf = n as f32;
    let x = a.x;
    // Soundness of the raw accesses: every index below is `< n` (vector accesses cover `i..i+16`
    // with `i + 16 <= n`), within `x`, `y`, `w` and `b` as the caller guarantees.
    // Pass 1: widen, fused with Σx (LayerNorm) or Σx² (RMSNorm).
    let load = |i: usize| {
        // SAFETY: as said above.
        unsafe {
            let u = _mm256_loadu_si256(x.add(i).cast());
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(u)))
        }
    };
    let get = |i: usize| {
        // SAFETY: as said above.
        unsafe { f32::from_bits((*x.add(i) as u32) << 16) }
    };
    let (mu, rstd) = if a.layer {
        let mu = lanes512(n, load, get, |v| v, |v| v) / nf;
        let cv = _mm512_set1_ps(mu);
        // SAFETY: as said above.
        let ld = |i: usize| unsafe { wide(x, i) };
        // SAFETY: as said above.
        let gt = |i: usize| unsafe { f32::from_bits((*x.add(i) as u32) << 16) };
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
        unsafe { out_scalar(f32::from_bits((*x.add(i) as u32) << 16), mu, rstd, llama, w.map(|w| w[i]), b.map(|b| b[i])) }
    };
    let (muv, rsv) = (_mm512_set1_ps(mu), _mm512_set1_ps(rstd));
    let vec16 = |i: usize| {
        // SAFETY: as said above (`w`, `b` have `n` elements).
        unsafe {
            let mut t = _mm512_mul_ps(_mm512_sub_ps(wide(x, i), muv), rsv);
            if llama {
                t = round_bf16_16(t);
            }
            if let Some(w) = w {
                t = _mm512_mul_ps(t, _mm512_loadu_ps(w.as_ptr().add(i)));
            }
            if let Some(b) = b {
                t = _mm512_add_ps(t, _mm512_loadu_ps(b.as_ptr().add(i)));
            }
            bf16_bits16(t)
        }
    };
    let y = a.y;
    let head = (((64 - (y as usize) % 64) % 64) / 2).min(n);
    let head = if !(y as usize).is_multiple_of(2) { n } else { head };
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
        let line = pack32(lo, hi);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::convert::bf16_bits_to_f32;

    /// The 16-lane roundings and the pack against the scalar conversion, over a stride through
    /// all f32 patterns plus ties, NaNs (quiet and signalling, both signs), infinities, zeros.
    #[test]
    fn vector_rounding_matches_scalar() {
        if !(std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl"))
        {
            return;
        }
        let mut pats: Vec<u32> = vec![
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7f80_0001,
            0xff80_0001,
            0x7fc0_0000,
            0xffc0_0000,
            0x7fbf_ffff,
            0x7fff_ffff,
            0xffff_ffff,
            0x7f7f_ffff,
            0x7f7f_8000,
            0x3f80_8000,
            0x3f81_8000,
            0x0000_8000,
            0x0001_8000,
            0x8000_7fff,
            0xffff_8000,
        ];
        let mut x = 0u32;
        for _ in 0..2_000_000 {
            pats.push(x);
            x = x.wrapping_add(2_147_483_647 / 1000 * 2 + 1);
        }
        while !pats.len().is_multiple_of(32) {
            pats.push(0x7f80_0002);
        }
        for c in pats.chunks_exact(32) {
            let mut out = [0u16; 32];
            let mut rt = [0.0f32; 32];
            // SAFETY: AVX-512 F/BW/VL checked above; every access is within the 32-element arrays.
            unsafe {
                let lo = _mm512_castsi512_ps(_mm512_loadu_si512(c.as_ptr().cast()));
                let hi = _mm512_castsi512_ps(_mm512_loadu_si512(c.as_ptr().add(16).cast()));
                _mm512_storeu_si512(out.as_mut_ptr().cast(), pack32(bf16_bits16(lo), bf16_bits16(hi)));
                _mm512_storeu_ps(rt.as_mut_ptr(), round_bf16_16(lo));
                _mm512_storeu_ps(rt.as_mut_ptr().add(16), round_bf16_16(hi));
            }
            for (k, &p) in c.iter().enumerate() {
                let want = f32_to_bf16_bits(f32::from_bits(p));
                assert_eq!(out[k], want, "{p:#010x}");
                assert_eq!(rt[k].to_bits(), bf16_bits_to_f32(want).to_bits(), "{p:#010x}");
            }
        }
    }
}
