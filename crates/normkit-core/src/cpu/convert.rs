//! Row loads and stores between host tensors and `f32` scratch rows.
//!
//! bf16↔f32 is done branch-free here (a shift one way, round-to-nearest-even with a bit trick the
//! other way) so the loops auto-vectorise; f16 goes through `half`'s slice conversions, which use
//! F16C when the CPU has it.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// bf16 bits → f32: bf16 is the top half of an f32.
#[inline(always)]
pub(crate) fn bf16_bits_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// f32 → bf16 bits, round to nearest even; NaN stays NaN (quieted, sign and top payload kept,
/// exactly as `half::bf16::from_f32`). Written without branches so that slices vectorise.
#[inline(always)]
pub(crate) fn f32_to_bf16_bits(v: f32) -> u16 {
    let x = v.to_bits();
    // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
    // mantissa bumps the exponent, which is exactly the right rounding (up to Inf on overflow).
    let rounded = x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16;
    let quiet_nan = (x >> 16) | 0x0040;
    let is_nan = (x & 0x7fff_ffff) > 0x7f80_0000;
    (if is_nan { quiet_nan } else { rounded }) as u16
}

/// `dst[i] = src[i]` widened.
#[inline(always)]
pub(crate) fn bf16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = bf16_bits_to_f32(s);
    }
}

/// `dst[i] = round(src[i])`.
#[inline(always)]
pub(crate) fn f32_to_bf16_slice(src: &[f32], dst: &mut [u16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f32_to_bf16_bits(s);
    }
}

/// Rounds every element of `v` to bf16 and back.
#[inline(always)]
fn round_bf16_in_place(v: &mut [f32]) {
    for x in v.iter_mut() {
        *x = bf16_bits_to_f32(f32_to_bf16_bits(*x));
    }
}

/// Rounds every element of `v` to f16 and back.
fn round_f16_in_place(v: &mut [f32]) {
    let mut tmp = [f16::ZERO; 64];
    for c in v.chunks_mut(64) {
        let t = &mut tmp[..c.len()];
        t.convert_from_f32_slice(c);
        t.convert_to_f32_slice(c);
    }
}

/// Rounds every element of `v` to `dtype` and back (`round_to` over a slice).
#[inline(always)]
pub(crate) fn round_slice(dtype: crate::DType, v: &mut [f32]) {
    match dtype {
        crate::DType::F32 => {}
        crate::DType::F16 => round_f16_in_place(v),
        crate::DType::BF16 => round_bf16_in_place(v),
        // Never a rounding point of a casting mode (those round to x's dtype); kept exact here.
        d => {
            for x in v.iter_mut() {
                *x = crate::round_to(d, *x);
            }
        }
    }
}

/// One cache line of f32.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy)]
struct Line64([f32; 16]);

/// An f32 scratch buffer whose element 0 is cache-line aligned. `Vec<f32>` is only 16-byte
/// aligned, and 64-byte vector accesses that straddle two lines cost about double: in the AVX-512
/// output pass they were the hottest instruction of a bf16 forward row.
#[derive(Debug, Clone)]
pub(crate) struct Aligned {
    lines: Vec<Line64>,
    len: usize,
}

impl Aligned {
    pub(crate) fn zeros(len: usize) -> Self {
        Aligned { lines: vec![Line64([0.0; 16]); len.div_ceil(16)], len }
    }

    pub(crate) fn as_slice(&self) -> &[f32] {
        // SAFETY: `Line64` is `repr(C)` over `[f32; 16]`, 64 bytes with no padding, so the vector
        // holds `16 · lines.len() >= len` initialised, contiguous f32s; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<f32>(), self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        // SAFETY: as in `as_slice`, borrowed mutably from `self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<f32>(), self.len) }
    }
}

/// The element shift that puts element `lead` of a row at a cache-line boundary of an
/// [`Aligned`] buffer (`(shift + lead) % 16 == 0`).
#[inline(always)]
pub(crate) fn shift_for(lead: usize) -> usize {
    (16 - lead % 16) % 16
}

/// A typed base pointer into a [`crate::HostBuf`] or a [`crate::HostView`], shared between the rayon workers of one call.
///
/// It carries no lifetime: the call that builds it holds the borrow of the buffer (shared for
/// inputs, exclusive for outputs) for as long as any worker uses it, and every worker touches
/// only the rows it owns (see the `SAFETY` comments at the uses).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ptr {
    F32(*mut f32),
    F16(*mut f16),
    BF16(*mut bf16),
    /// One of the FP8 dtypes (the `DType`), one byte per element.
    F8(crate::DType, *mut u8),
}

// SAFETY: a `Ptr` is only a base address. The backend hands it to several threads only while the
// underlying buffer is borrowed by the call, and the threads read disjoint-or-shared-read-only
// and write disjoint element ranges (each output row or statistic belongs to exactly one task).
unsafe impl Send for Ptr {}
// SAFETY: as above.
unsafe impl Sync for Ptr {}

impl Ptr {
    /// The base pointer of a buffer that will only be read.
    pub(crate) fn of(buf: &crate::HostBuf) -> Ptr {
        match buf {
            crate::HostBuf::F32(v) => Ptr::F32(v.as_ptr().cast_mut()),
            crate::HostBuf::F16(v) => Ptr::F16(v.as_ptr().cast_mut()),
            crate::HostBuf::BF16(v) => Ptr::BF16(v.as_ptr().cast_mut()),
            other => Ptr::F8(crate::Buffer::dtype(other), other.as_bytes().as_ptr().cast_mut()),
        }
    }

    /// The base pointer of a buffer that will be written.
    pub(crate) fn of_mut(buf: &mut crate::HostBuf) -> Ptr {
        match buf {
            crate::HostBuf::F32(v) => Ptr::F32(v.as_mut_ptr()),
            crate::HostBuf::F16(v) => Ptr::F16(v.as_mut_ptr()),
            crate::HostBuf::BF16(v) => Ptr::BF16(v.as_mut_ptr()),
            other => Ptr::F8(crate::Buffer::dtype(other), other.as_bytes_mut().as_mut_ptr()),
        }
    }

    /// Widens `dst.len()` elements starting at element `at` into `dst`.
    ///
    /// # Safety
    /// `at + dst.len()` elements must lie inside the buffer, the buffer must be alive, and no
    /// other thread may write those elements during the call.
    #[inline(always)]
    pub(crate) unsafe fn load(self, at: usize, dst: &mut [f32]) {
        let n = dst.len();
        // SAFETY: the caller guarantees the range is in bounds, live and not written concurrently.
        unsafe {
            match self {
                Ptr::F32(p) => dst.copy_from_slice(std::slice::from_raw_parts(p.add(at), n)),
                Ptr::F16(p) => std::slice::from_raw_parts(p.add(at), n).convert_to_f32_slice(dst),
                Ptr::BF16(p) => bf16_to_f32_slice(std::slice::from_raw_parts(p.add(at), n).reinterpret_cast(), dst),
                Ptr::F8(d, p) => {
                    if let Some(f) = crate::fp8::format(d) {
                        crate::fp8::decode_slice(f, std::slice::from_raw_parts(p.add(at), n), dst)
                    }
                }
            }
        }
    }

    /// Rounds `src` to the buffer's dtype and writes it from element `at`.
    ///
    /// # Safety
    /// `at + src.len()` elements must lie inside the buffer, the buffer must be alive and
    /// exclusively borrowed by the call, and no other thread may read or write those elements
    /// during the call.
    #[inline(always)]
    pub(crate) unsafe fn store(self, at: usize, src: &[f32]) {
        let n = src.len();
        // SAFETY: the caller guarantees the range is in bounds, live and owned by this thread.
        unsafe {
            match self {
                Ptr::F32(p) => std::slice::from_raw_parts_mut(p.add(at), n).copy_from_slice(src),
                Ptr::F16(p) => std::slice::from_raw_parts_mut(p.add(at), n).convert_from_f32_slice(src),
                Ptr::BF16(p) => f32_to_bf16_slice(src, std::slice::from_raw_parts_mut(p.add(at), n).reinterpret_cast_mut()),
                Ptr::F8(d, p) => {
                    if let Some(f) = crate::fp8::format(d) {
                        crate::fp8::encode_slice(f, src, std::slice::from_raw_parts_mut(p.add(at), n))
                    }
                }
            }
        }
    }

    /// Asks the cache hierarchy for elements `at..at + len` (into L2), so that a later
    /// [`Ptr::load`] finds them there. A hint only: it reads nothing and never faults.
    #[inline(always)]
    pub(crate) fn prefetch(self, at: usize, len: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
            let (base, es) = match self {
                Ptr::F32(p) => (p.cast::<u8>(), 4),
                Ptr::F16(p) => (p.cast::<u8>(), 2),
                Ptr::BF16(p) => (p.cast::<u8>(), 2),
                Ptr::F8(_, p) => (p, 1),
            };
            let start = base.wrapping_add(at * es) as usize & !63;
            let end = base.wrapping_add((at + len) * es) as usize;
            for line in (start..end).step_by(64) {
                // SAFETY: a prefetch is a hint with no architectural effect; it never faults,
                // whatever the address.
                unsafe { _mm_prefetch::<_MM_HINT_T1>(line as *const i8) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (at, len);
    }

    /// How many elements from element `at` to the next 64-byte (cache line) boundary.
    #[inline(always)]
    pub(crate) fn elems_to_line(self, at: usize) -> usize {
        let (addr, es) = match self {
            Ptr::F32(p) => (p.wrapping_add(at) as usize, 4),
            Ptr::F16(p) => (p.wrapping_add(at) as usize, 2),
            Ptr::BF16(p) => (p.wrapping_add(at) as usize, 2),
            Ptr::F8(_, p) => (p.wrapping_add(at) as usize, 1),
        };
        ((64 - addr % 64) % 64) / es
    }

    /// Reads one element, widened.
    ///
    /// # Safety
    /// As [`Ptr::load`] for one element.
    #[inline(always)]
    pub(crate) unsafe fn get(self, at: usize) -> f32 {
        let mut v = [0.0f32];
        // SAFETY: forwarded to the caller.
        unsafe { self.load(at, &mut v) };
        v[0]
    }

    /// Writes one element, rounded.
    ///
    /// # Safety
    /// As [`Ptr::store`] for one element.
    #[inline(always)]
    pub(crate) unsafe fn set(self, at: usize, v: f32) {
        // SAFETY: forwarded to the caller.
        unsafe { self.store(at, &[v]) };
    }
}

/// Orders this thread's streaming stores before its later stores (an `sfence`): called after a
/// row written with [`Ptr::store_stream`], before rayon can signal the task's completion.
#[inline(always)]
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no preconditions (SSE, part of x86_64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// 32 bytes of output, aligned for a 256-bit streaming store.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(32))]
struct Line<T, const K: usize>([T; K]);

#[cfg(target_arch = "x86_64")]
impl Ptr {
    /// [`Ptr::store`] with non-temporal (streaming) stores for the 32-byte-aligned body of the
    /// range. The caller must call [`stream_fence`] before the stores may be observed by another
    /// thread (before its task completes). Streaming stores skip the read-for-ownership of the destination
    /// lines and leave the cache alone, as a large memcpy does: without them a large output costs
    /// an extra read of itself. The values stored are bitwise those of [`Ptr::store`].
    ///
    /// # Safety
    /// As [`Ptr::store`], and the CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn store_stream(self, at: usize, src: &[f32]) {
        use std::arch::x86_64::{__m256i, _mm256_load_si256, _mm256_stream_si256};

        /// Stores `src` at `dst`: plain stores up to the first 32-byte boundary and for the
        /// tail, streaming stores of `K` elements (32 bytes) in between. `conv` converts a slice,
        /// `conv_line` one line (a fixed length, so the compiler vectorises it fully; a slice loop
        /// over 16 elements would run entirely in its scalar epilogue).
        ///
        /// # Safety
        /// `dst..dst + src.len()` is valid for writes and owned by the caller's thread; `T` is
        /// 32/K bytes; the CPU supports AVX2.
        #[target_feature(enable = "avx2")]
        #[inline]
        unsafe fn run<T: Copy + Default, const K: usize>(
            dst: *mut T,
            src: &[f32],
            conv: impl Fn(&[f32], &mut [T]),
            conv_line: impl Fn(&[f32; K], &mut [T; K]),
        ) {
            let es = std::mem::size_of::<T>();
            let n = src.len();
            // Stream whole 64-byte lines only: a line written partly with streaming and partly
            // with plain stores (here, or by the neighbouring row) costs a read-for-ownership
            // and a write-combining flush.
            let head = ((64 - (dst as usize) % 64) % 64) / es;
            // Soundness of the blocks below: every write lies in `dst..dst + n`, valid and owned by
            // this thread per the caller; `p` is 32-byte aligned at each streaming store because
            // `dst + head` is (element addresses are multiples of `es`, which divides 64).
            if head >= n || !(dst as usize).is_multiple_of(es) {
                // SAFETY: as just said.
                let out = unsafe { std::slice::from_raw_parts_mut(dst, n) };
                conv(src, out);
                return;
            }
            let (first, rest) = src.split_at(head);
            let (body, tail) = rest.split_at(rest.len() / (2 * K) * (2 * K));
            // SAFETY: as above.
            conv(first, unsafe { std::slice::from_raw_parts_mut(dst, head) });
            let chunks = body.chunks_exact(K);
            // SAFETY: `head < n`, so `dst + head` is inside the range.
            let mut p = unsafe { dst.add(head) };
            let mut line = Line([T::default(); K]);
            for c in chunks {
                let c: &[f32; K] = c.try_into().expect("chunks_exact yields K elements");
                conv_line(c, &mut line.0);
                // SAFETY: as above; `line` is 32-byte aligned and 32 bytes long.
                unsafe {
                    _mm256_stream_si256(p.cast::<__m256i>(), _mm256_load_si256((&raw const line).cast::<__m256i>()));
                    p = p.add(K);
                }
            }
            // SAFETY: as above.
            conv(tail, unsafe { std::slice::from_raw_parts_mut(p, tail.len()) });
        }

        // SAFETY: forwarded from the caller (range in bounds, owned, AVX2 present).
        unsafe {
            match self {
                Ptr::F32(p) => run::<f32, 8>(p.add(at), src, |s, d| d.copy_from_slice(s), |s, d| *d = *s),
                Ptr::F16(p) => run::<f16, 16>(p.add(at), src, |s, d| d.convert_from_f32_slice(s), |s, d| d.convert_from_f32_slice(s)),
                Ptr::BF16(p) => run::<u16, 16>(p.add(at).cast::<u16>(), src, f32_to_bf16_slice, |s, d| {
                    for j in 0..16 {
                        d[j] = f32_to_bf16_bits(s[j]);
                    }
                }),
                // FP8 outputs are never streamed (`forward::run`); plain stores, same bits.
                Ptr::F8(..) => self.store(at, src),
            }
        }
    }
}
