//! The forward pass: one rayon task per group of rows, each row normalised through an `f32`
//! scratch row.

use rayon::prelude::*;

use super::convert::{round_slice, shift_for, stream_fence, Aligned, Ptr};
use super::reduce;
use super::HostMem;
use crate::{CastingMode, DType, Forward, ForwardPlan, Fp8ScalePlan, InOut, Layout, NormDesc, NormKind, FP8_ROW_AMAX_FLOOR};

/// Rows per rayon task are chosen so that a task covers about this many elements: enough to
/// amortise the task overhead, few enough to balance two to a few dozen threads on large `M`.
/// Grouping changes only which thread runs a row, never how the row is computed.
pub(super) const TASK_ELEMS: usize = 1 << 15;

/// Whether each row prefetches the next one while it finishes. Measured on 2 pinned threads of a
/// Xeon (8192×4096, against a 26 GiB/s memcpy): bf16 RMSNorm forward 13.0 → 17.8 GiB/s,
/// f32 LayerNorm forward 21.5 → 25.9 GiB/s, bf16 RMSNorm backward 10.7 → 13.3 GiB/s.
pub(super) const PREFETCH: bool = true;

/// How many rows ahead the prefetch reaches (2 measured the same as 1 within noise).
pub(super) const PREFETCH_AHEAD: usize = 1;

/// Elements per chunk of the output pass: a multiple of 16, so that chunks after the first start
/// on a cache line in every dtype.
pub(super) const OUT_CHUNK: usize = 256;

/// `(offset, len)` of the chunks of an output row of `n` elements whose first line boundary is
/// `lead` elements in: a short first chunk up to the boundary, then [`OUT_CHUNK`]s. Chunk starts
/// on line boundaries keep every streamed line whole; a line half written with streaming stores
/// and half with plain ones costs a read-for-ownership and a flush of the write-combining buffer
/// (the likely cause of a drop of bf16 forward from 14 to 8.5 GiB/s seen while chunk starts were
/// 16 bytes off a line).
pub(super) fn out_chunks(n: usize, lead: usize) -> impl Iterator<Item = (usize, usize)> {
    let lead = lead.min(n);
    let first = (lead > 0).then_some((0, lead));
    first.into_iter().chain((lead..n).step_by(OUT_CHUNK).map(move |off| (off, OUT_CHUNK.min(n - off))))
}

/// A row-major operand located in its buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rows {
    pub ptr: Ptr,
    pub layout: Layout,
}

impl Rows {
    /// Element index of the first element of row `i`.
    #[inline(always)]
    pub fn at(&self, i: usize) -> usize {
        self.layout.offset + i * self.layout.stride
    }
}

/// A vector operand (statistics) located in its buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub ptr: Ptr,
    pub offset: usize,
}

/// Stores an output row, streaming when `stream` is set.
///
/// # Safety
/// As [`Ptr::store`]; `stream` may be set only if the CPU supports AVX2.
#[inline(always)]
pub(super) unsafe fn store_row(ptr: Ptr, at: usize, src: &[f32], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream {
        // SAFETY: forwarded from the caller, who checked AVX2 before setting `stream`.
        unsafe { ptr.store_stream(at, src) };
        return;
    }
    let _ = stream;
    // SAFETY: forwarded from the caller.
    unsafe { ptr.store(at, src) }
}

/// Splits an `InOut` into its input and output row views (the same memory when in place).
pub(super) fn in_out<B: HostMem + ?Sized>(io: &mut InOut<'_, B>) -> (Rows, Rows) {
    match io {
        InOut::Separate { input, output } => {
            (Rows { ptr: input.buf.ptr(), layout: input.layout }, Rows { ptr: output.buf.ptr_mut(), layout: output.layout })
        }
        InOut::InPlace(m) => {
            let r = Rows { ptr: m.buf.ptr_mut(), layout: m.layout };
            (r, r)
        }
    }
}

/// Widens `len` elements of a host buffer from element `offset` (a span checked by validation).
pub(super) fn read_span<B: HostMem + ?Sized>(buf: &B, offset: usize, len: usize) -> Vec<f32> {
    let mut v = vec![0.0; len];
    // SAFETY: validation checked that `offset + len` elements lie in the buffer (`check_span`);
    // the buffer is borrowed (shared) by the caller for the whole call, so nothing writes it.
    unsafe { buf.ptr().load(offset, &mut v) };
    v
}

/// Everything a row needs, shared by the workers.
struct Ctx {
    kind: NormKind,
    casting: CastingMode,
    eps: f32,
    m: usize,
    n: usize,
    /// The dtype `Llama` and `None` round to: x's dtype.
    xdt: DType,
    x: Rows,
    y: Rows,
    /// `(residual, residual_out, residual dtype)`.
    residual: Option<(Rows, Rows, DType)>,
    /// `w + offset` in fp32 (rounded to `xdt` in `None` mode), from element `vec_shift` on.
    w: Option<Aligned>,
    /// The bias in fp32, from element `vec_shift` on.
    b: Option<Aligned>,
    /// Where `w` and `b` start in their buffers: chosen so that the output chunks of every row
    /// laid out like row 0 read them line-aligned.
    vec_shift: usize,
    mean: Option<Stat>,
    rstd: Option<Stat>,
    /// The instruction set of the row kernel.
    isa: super::Isa,
    /// Whether outputs are written with streaming stores (AVX2 and a large output).
    stream: bool,
    /// Whether rows take the fused AVX-512 bf16 path (`fused.rs`): AVX-512, bf16 x and y, no
    /// residual, `Gemma` or `Llama` casting.
    fused: bool,
    /// An FP8 `y`: how it is scaled.
    fp8: Option<Fp8Row>,
}

/// The FP8 quantisation as each row needs it.
#[derive(Debug, Clone, Copy)]
struct Fp8Row {
    /// The per-tensor scale; `None` per row.
    scale: Option<f32>,
    /// The format's largest finite value (per-row scaling).
    max: f32,
    /// Per row: where `1/scale_r` goes.
    row_scale_inv: Option<Stat>,
}

/// Runs a validated forward call.
pub(super) fn run<B: HostMem + ?Sized>(desc: &NormDesc, plan: &ForwardPlan, mut args: Forward<'_, B>) {
    let (m, n) = (plan.m, plan.n);
    let (x, y) = in_out(&mut args.x);
    if m == 0 {
        if let Some(q) = args.fp8.as_mut() {
            fp8_finish(plan, q, y, 0.0);
        }
        return;
    }
    let xdt = plan.dtypes.x;
    let none = desc.casting == CastingMode::None;
    let vec_shift = shift_for(y.ptr.elems_to_line(y.at(0)));
    let aligned = |v: Vec<f32>| {
        let mut a = Aligned::zeros(vec_shift + v.len());
        a.as_mut_slice()[vec_shift..].copy_from_slice(&v);
        a
    };
    let w = match (&args.weight, plan.weight, desc.weight) {
        (Some(w), Some(s), Some(spec)) => {
            let mut v = read_span(w.buf, s.offset, s.len);
            for e in v.iter_mut() {
                *e += spec.offset;
            }
            if none {
                round_slice(xdt, &mut v);
            }
            Some(aligned(v))
        }
        _ => None,
    };
    let b = match (&args.bias, plan.bias) {
        (Some(b), Some(s)) => Some(aligned(read_span(b.buf, s.offset, s.len))),
        _ => None,
    };
    let residual = args.residual.as_mut().map(|r| {
        let dt = r.input_dtype();
        let (i, o) = in_out(r);
        (i, o, dt)
    });
    let stat = |v: &mut Option<crate::VecMut<'_, B>>| v.as_mut().map(|v| Stat { ptr: v.buf.ptr_mut(), offset: v.span.offset });
    let mean = if desc.has_mean() { stat(&mut args.mean) } else { None };
    let rstd = stat(&mut args.rstd);
    let isa = super::Isa::detect();
    let out_bytes = m * n * (plan.dtypes.y.size_bytes() + residual.map_or(0, |r| r.2.size_bytes()));
    // FP8 outputs are a quarter of an f32 row and are written with plain stores.
    let stream = super::use_stream(isa, out_bytes) && plan.fp8.is_none();
    let fp8 = plan.fp8.map(|p| {
        let scale = args.fp8.as_ref().and_then(|q| per_tensor_scale(plan, q));
        let q = args.fp8.as_mut();
        let row_scale_inv = match (p.scale, q.and_then(|q| q.scale_inv.as_mut()), p.scale_inv) {
            (Fp8ScalePlan::PerRow, Some(v), Some(sp)) => Some(Stat { ptr: v.buf.ptr_mut(), offset: sp.offset }),
            _ => None,
        };
        Fp8Row { scale, max: p.format.max_finite() as f32, row_scale_inv }
    });
    let fused = isa == super::Isa::Avx512
        && xdt == DType::BF16
        && matches!((x.ptr, y.ptr), (super::convert::Ptr::BF16(_), super::convert::Ptr::BF16(_)))
        && residual.is_none()
        && !none;
    let ctx = Ctx {
        kind: desc.kind,
        casting: desc.casting,
        eps: desc.eps,
        m,
        n,
        xdt,
        x,
        y,
        residual,
        w,
        b,
        mean,
        rstd,
        isa,
        stream,
        vec_shift,
        fused,
        fp8,
    };

    let min_rows = (TASK_ELEMS / n).max(1);
    let has_res = ctx.residual.is_some();
    // Each row returns its amax (0 unless FP8); `f32::max` ignores NaN and is exact, so the
    // reduction is the same in any order.
    let amax = (0..m)
        .into_par_iter()
        .with_min_len(min_rows)
        .map_init(
            || (Aligned::zeros(n + 16), Aligned::zeros(if has_res { n + 16 } else { 0 })),
            |(h, r), i| {
                // Scratch rows start where the row's output chunks fall on cache lines.
                let sh = shift_for(ctx.y.ptr.elems_to_line(ctx.y.at(i)));
                let r = if has_res { &mut r.as_mut_slice()[sh..sh + n] } else { &mut [][..] };
                ctx.row_dispatch(i, &mut h.as_mut_slice()[sh..sh + n], r)
            },
        )
        .reduce(|| 0.0, f32::max);
    if let Some(q) = args.fp8.as_mut() {
        fp8_finish(plan, q, ctx.y, amax);
    }
    // `args` holds the borrows behind every pointer in `ctx` until the function returns, after
    // the parallel loop has joined.
}

/// The FP8 outputs of a whole call, after every row of `y_q` is written: `amax`, the per-tensor
/// `scale_inv`, and `yT`. Also run for `M = 0` (`amax = 0`).
pub(super) fn fp8_finish<B: HostMem + ?Sized>(plan: &ForwardPlan, q: &mut crate::Fp8<'_, B>, y: Rows, amax: f32) {
    let Some(p) = plan.fp8 else { return };
    if let (Some(v), Some(s)) = (q.amax.as_mut(), p.amax) {
        // SAFETY: validation checked the one-element span; the call borrows the buffer exclusively.
        unsafe { v.buf.ptr_mut().set(s.offset, amax) };
    }
    let scale = per_tensor_scale(plan, q);
    if let (Some(scale), Some(v), Some(s)) = (scale, q.scale_inv.as_mut(), p.scale_inv) {
        // SAFETY: as above.
        unsafe { v.buf.ptr_mut().set(s.offset, 1.0 / scale) };
    }
    if let (Some(t), Some(tl)) = (q.transposed.as_mut(), p.transposed) {
        let (super::convert::Ptr::F8(_, yp), super::convert::Ptr::F8(_, tp)) = (y.ptr, t.buf.ptr_mut()) else { return };
        let (m, n) = (plan.m, plan.n);
        let (yp, tp) = (SendPtr(yp), SendPtr(tp));
        // Blocks of 64 rows of yT (columns of y): each task reads a 64-byte strip of every row of
        // `y` and writes its own rows of yT, which stay in cache across the strip.
        (0..n.div_ceil(TRANSPOSE_BLOCK)).into_par_iter().for_each(|b| {
            let (yp, tp) = (yp, tp);
            let cols = b * TRANSPOSE_BLOCK..((b + 1) * TRANSPOSE_BLOCK).min(n);
            for i in 0..m {
                let yrow = y.layout.offset + i * y.layout.stride;
                for j in cols.clone() {
                    // SAFETY: validation checked that `y` (M × N) and `yT` (N × M) lie in their
                    // buffers; every row of `y` was written before the parallel loop above joined,
                    // and nothing writes `y` now; element (j, i) of yT is written by the task that
                    // owns row j only (blocks are disjoint); the call borrows both buffers
                    // exclusively, and they are distinct buffers.
                    unsafe { *tp.0.add(tl.offset + j * tl.stride + i) = *yp.0.add(yrow + j) };
                }
            }
        });
    }
}

/// The per-tensor scale of a validated FP8 call (the host value, or the element of the scale
/// buffer); `None` per row.
fn per_tensor_scale<B: HostMem + ?Sized>(plan: &ForwardPlan, q: &crate::Fp8<'_, B>) -> Option<f32> {
    match (plan.fp8?.scale, &q.scaling) {
        (Fp8ScalePlan::Host(s), _) => Some(s),
        (Fp8ScalePlan::Device(sp), crate::Fp8Scaling::PerTensor(crate::Scale::Device(v))) => {
            // SAFETY: validation checked that the one-element span lies in the scale buffer, which
            // the call borrows (shared) throughout, so nothing writes it.
            Some(unsafe { v.buf.ptr().get(sp.offset) })
        }
        _ => None,
    }
}

/// Rows of yT per task of the transpose.
const TRANSPOSE_BLOCK: usize = 64;

/// A byte pointer shared by the transpose's tasks (see the `SAFETY` comment at its use).
#[derive(Clone, Copy)]
struct SendPtr(*mut u8);
// SAFETY: used only as described at the transpose: disjoint writes, reads of memory nothing writes.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

/// `h[i] = (h[i] − mu)·rstd·w[i] + b[i]`, each operand optional (`w = 1`, `b = 0` when absent).
/// Multiplying by `1.0` and adding `0.0`/subtracting `0.0` are exact, so callers may pass neutral
/// values instead of skipping a step.
#[inline(always)]
fn affine(h: &mut [f32], mu: f32, rstd: f32, w: Option<&[f32]>, b: Option<&[f32]>) {
    match (w, b) {
        (Some(w), Some(b)) => h.iter_mut().zip(w).zip(b).for_each(|((v, &w), &b)| *v = (*v - mu) * rstd * w + b),
        (Some(w), None) => h.iter_mut().zip(w).for_each(|(v, &w)| *v = (*v - mu) * rstd * w),
        (None, Some(b)) => h.iter_mut().zip(b).for_each(|(v, &b)| *v = (*v - mu) * rstd + b),
        (None, None) => h.iter_mut().for_each(|v| *v = (*v - mu) * rstd),
    }
}

/// [`Ctx::row`] compiled for AVX2 (wider vectors for the same operations, hence the same bits).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_avx2(ctx: &Ctx, i: usize, h: &mut [f32], r: &mut [f32]) -> f32 {
    ctx.row(i, h, r)
}

/// [`Ctx::row`] compiled for AVX-512.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
unsafe fn row_avx512(ctx: &Ctx, i: usize, h: &mut [f32], r: &mut [f32]) -> f32 {
    ctx.row(i, h, r)
}

impl Ctx {
    /// `y` from `h` for a part of a row, with `w`/`b` the same part: `(h − μ)·rstd·(w + offset) + b`
    /// rounded as the casting mode says. Every step is one correctly rounded f32 operation (Rust
    /// never contracts a multiply and an add into an FMA), so the split into passes and chunks
    /// gives the same bits as one fused loop, on every instruction set.
    #[inline(always)]
    fn finish(&self, h: &mut [f32], mu: f32, rstd: f32, w: Option<&[f32]>, b: Option<&[f32]>) {
        match self.casting {
            // One pass (μ = 0 for RMSNorm: `h − 0` is exactly `h`).
            CastingMode::Gemma => affine(h, mu, rstd, w, b),
            CastingMode::Llama => {
                affine(h, mu, rstd, None, None);
                round_slice(self.xdt, h);
                affine(h, 0.0, 1.0, w, b);
            }
            CastingMode::None => {
                if self.kind == NormKind::Layer {
                    h.iter_mut().for_each(|v| *v -= mu);
                    round_slice(self.xdt, h);
                }
                h.iter_mut().for_each(|v| *v *= rstd);
                round_slice(self.xdt, h);
                if let Some(w) = w {
                    h.iter_mut().zip(w).for_each(|(v, &w)| *v *= w);
                    round_slice(self.xdt, h);
                }
                if let Some(b) = b {
                    h.iter_mut().zip(b).for_each(|(v, &b)| *v += b);
                    round_slice(self.xdt, h);
                }
            }
        }
    }

    /// Row `i` on the widest instruction set available; returns the row's `amax` (0 unless FP8).
    #[inline]
    fn row_dispatch(&self, i: usize, h: &mut [f32], r: &mut [f32]) -> f32 {
        match self.isa {
            // SAFETY: `isa` comes from `Isa::detect`, which checked these features.
            #[cfg(target_arch = "x86_64")]
            super::Isa::Avx512 if self.fused => {
                // SAFETY: as above; `fused` implies AVX-512 (and bf16 `x`, `y`: never FP8).
                unsafe { self.row_fused(i) };
                0.0
            }
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            super::Isa::Avx512 => unsafe { row_avx512(self, i, h, r) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            super::Isa::Avx2 => unsafe { row_avx2(self, i, h, r) },
            _ => self.row(i, h, r),
        }
    }

    /// Row `i` through `fused::row`.
    ///
    /// # Safety
    /// `self.fused` must be set (so the CPU has AVX-512 F/BW/VL and `x`, `y` are bf16).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    unsafe fn row_fused(&self, i: usize) {
        use super::convert::Ptr;
        let (Ptr::BF16(xp), Ptr::BF16(yp)) = (self.x.ptr, self.y.ptr) else { unreachable!("fused needs bf16 x and y") };
        let vs = self.vec_shift;
        let (w, b) = (self.w.as_ref().map(|a| &a.as_slice()[vs..]), self.b.as_ref().map(|a| &a.as_slice()[vs..]));
        let ahead = i + PREFETCH_AHEAD;
        let x_next = if PREFETCH && ahead < self.m { xp.wrapping_add(self.x.at(ahead)).cast_const().cast() } else { std::ptr::null() };
        // Soundness as in `row`: row `i` of `x` lies in its buffer and is not written during the
        // call; row `i` of `y` is written by this call only; `w`/`b` hold `n` elements.
        // SAFETY: as just said; `fused` implies AVX-512 F/BW/VL (detected at run time).
        let (mu, rstd) = unsafe {
            super::fused::row(super::fused::RowArgs {
                x: xp.add(self.x.at(i)).cast_const().cast(),
                y: yp.add(self.y.at(i)).cast(),
                x_next,
                n: self.n,
                w,
                b,
                layer: self.kind == NormKind::Layer,
                llama: self.casting == CastingMode::Llama,
                eps: self.eps,
                stream: self.stream,
            })
        };
        if let Some(s) = &self.mean {
            // SAFETY: as above (element `i` of the mean span).
            unsafe { s.ptr.set(s.offset + i, mu) };
        }
        if let Some(s) = &self.rstd {
            // SAFETY: as above (element `i` of the rstd span).
            unsafe { s.ptr.set(s.offset + i, rstd) };
        }
    }

    /// Normalises row `i`. `h` has length `n`; `r` too when there is a residual. Returns the row's
    /// `amax = max |y|` before scaling for an FP8 `y` (NaN ignored), 0 otherwise.
    #[inline(always)]
    fn row(&self, i: usize, h: &mut [f32], r: &mut [f32]) -> f32 {
        // Soundness of all the loads and stores below: validation checked that every row view lies
        // inside its buffer (`check_mat`) and every statistic span too (`check_span`); the
        // buffers are borrowed by `run` for the whole parallel loop; row `i` of each output and
        // element `i` of each statistic are written only by this call, and distinct rows never
        // share elements because `stride >= cols`. An in-place output is the same memory as its
        // input; its row is fully loaded into scratch before it is stored.
        // SAFETY: as just said.
        unsafe { self.x.ptr.load(self.x.at(i), h) };
        if let Some((res, res_out, rdt)) = &self.residual {
            // SAFETY: as above.
            unsafe { res.ptr.load(res.at(i), r) };
            for (a, &b) in h.iter_mut().zip(r.iter()) {
                *a += b;
            }
            // The norm reads `h` as stored in the residual's dtype.
            round_slice(*rdt, h);
            // SAFETY: as above.
            unsafe { store_row(res_out.ptr, res_out.at(i), h, self.stream) };
        }

        let nf = self.n as f32;
        // The statistics and eps stay in fp32 in every casting mode (in `None` mode too: rounding
        // rstd to f16 overflows to +inf for a row of zeros with eps = 1e-12, and 0·inf = NaN).
        let (mu, rstd) = match self.kind {
            NormKind::Rms => (0.0, 1.0 / (reduce::sum_sq(h) / nf + self.eps).sqrt()),
            NormKind::Layer => {
                let mu = reduce::sum(h) / nf;
                (mu, 1.0 / (reduce::sum_sq_dev(h, mu) / nf + self.eps).sqrt())
            }
        };

        // y, rounded as the casting mode says, chunk by chunk: each chunk is finished and stored
        // while the same part of the next row is prefetched. The hardware prefetcher only runs
        // ahead of demand loads, so without this the memory would idle while a row is finished;
        // spreading the prefetches keeps few misses in flight at a time.
        let vs = self.vec_shift;
        let (w, b) = (self.w.as_ref().map(|a| &a.as_slice()[vs..]), self.b.as_ref().map(|a| &a.as_slice()[vs..]));
        let ahead = i + PREFETCH_AHEAD;
        let next = (PREFETCH && ahead < self.m).then(|| (self.x.at(ahead), self.residual.as_ref().map(|(r, _, _)| (r.ptr, r.at(ahead)))));
        let y_at = self.y.at(i);
        let mut amax = 0.0f32;
        if let Some(q) = &self.fp8 {
            // FP8: `y` in fp32 for the whole row first (the per-row scale needs the row's amax),
            // then scaled (one f32 multiply) and converted (saturating round to nearest even).
            for (off, len) in out_chunks(self.n, 0) {
                if let Some((x_next, r_next)) = next {
                    self.x.ptr.prefetch(x_next + off, len);
                    if let Some((rp, r_next)) = r_next {
                        rp.prefetch(r_next + off, len);
                    }
                }
                self.finish(&mut h[off..off + len], mu, rstd, w.map(|w| &w[off..off + len]), b.map(|b| &b[off..off + len]));
            }
            amax = h.iter().fold(0.0f32, |a, &v| a.max(v.abs()));
            let scale = q.scale.unwrap_or_else(|| q.max / amax.max(FP8_ROW_AMAX_FLOOR));
            if let Some(s) = &q.row_scale_inv {
                // SAFETY: as above (element `i` of the scale_inv span).
                unsafe { s.ptr.set(s.offset + i, 1.0 / scale) };
            }
            h.iter_mut().for_each(|v| *v *= scale);
            // SAFETY: as above (row `i` of `y`, an FP8 buffer).
            unsafe { self.y.ptr.store(y_at, h) };
        }
        for (off, len) in out_chunks(if self.fp8.is_some() { 0 } else { self.n }, self.y.ptr.elems_to_line(y_at)) {
            let hc = &mut h[off..off + len];
            if let Some((x_next, r_next)) = next {
                self.x.ptr.prefetch(x_next + off, len);
                if let Some((rp, r_next)) = r_next {
                    rp.prefetch(r_next + off, len);
                }
            }
            self.finish(hc, mu, rstd, w.map(|w| &w[off..off + len]), b.map(|b| &b[off..off + len]));
            // SAFETY: as above (a part of row `i` of `y`).
            unsafe { store_row(self.y.ptr, y_at + off, hc, self.stream) };
        }
        if self.stream {
            stream_fence();
        }
        if let Some(s) = &self.mean {
            // SAFETY: as above (element `i` of the mean span).
            unsafe { s.ptr.set(s.offset + i, mu) };
        }
        if let Some(s) = &self.rstd {
            // SAFETY: as above (element `i` of the rstd span).
            unsafe { s.ptr.set(s.offset + i, rstd) };
        }
        amax
    }
}
