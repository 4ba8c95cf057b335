//! The backward pass, with dW/dB that are bitwise deterministic whatever the thread count.
//!
//! Rows are cut into blocks of [`BLOCK_ROWS`] (a constant, never derived from the thread count).
//! Each block computes its rows' `dx` and accumulates one fp32 partial row of `dw` (and `db`),
//! adding its rows in index order. The block partials are then summed by a fixed pairwise tree
//! over the block index (`reduce_blocks` splits `[lo, hi)` at `lo + (hi − lo)/2`), run with
//! `rayon::join` so the halves proceed in parallel but are always added left + right. The bits
//! of `dw`/`db` therefore depend on `M`, `N` and the data only. Memory stays bounded: a partial
//! lives only until its parent adds it, so at most about `threads × depth` partials exist.

use super::convert::{shift_for, stream_fence, Aligned};
use super::forward::{in_out, out_chunks, read_span, store_row, Rows, Stat};
use super::reduce;
use super::HostMem;
use crate::{Backward, BackwardPlan, NormDesc, NormKind, VecMut};

/// Rows per dW/dB block. Fixed: changing it changes the bits of dw/db (not of dx).
pub(super) const BLOCK_ROWS: usize = 64;

struct Ctx {
    kind: NormKind,
    n: usize,
    m: usize,
    x: Rows,
    dy: Rows,
    dx: Rows,
    d_residual_out: Option<Rows>,
    /// `w + offset` in fp32.
    w: Option<Aligned>,
    /// Where `w` and the dW/dB partials start in their aligned buffers (see `forward.rs`).
    vec_shift: usize,
    mean: Option<Stat>,
    rstd: Stat,
    want_dw: bool,
    want_db: bool,
    /// The instruction set of the block kernel.
    isa: super::Isa,
    /// Whether `dx` is written with streaming stores (AVX2 and a large output).
    stream: bool,
}

/// The fp32 partial sums of a range of blocks (empty vectors for gradients not asked for).
struct Partial {
    dw: Aligned,
    db: Aligned,
}

#[inline(always)]
fn add_into(acc: &mut [f32], other: &[f32]) {
    for (a, &b) in acc.iter_mut().zip(other) {
        *a += b;
    }
}

/// Rounds `v` to the buffer's dtype and stores it at `span.offset`.
fn write_span<B: HostMem + ?Sized>(out: &mut VecMut<'_, B>, v: &[f32]) {
    debug_assert_eq!(v.len(), out.span.len);
    // SAFETY: validation checked that the span lies in the buffer (`check_span`, with
    // `span.len == v.len() == N`) and that the buffer is writable; `out` borrows it exclusively
    // and the parallel part of the call has joined, so no other thread touches it.
    unsafe { out.buf.ptr_mut().store(out.span.offset, v) };
}

/// Runs a validated backward call.
pub(super) fn run<B: HostMem + ?Sized>(desc: &NormDesc, plan: &BackwardPlan, mut args: Backward<'_, B>) {
    let (m, n) = (plan.m, plan.n);
    let w = match (&args.weight, plan.weight, desc.weight) {
        (Some(w), Some(s), Some(spec)) => {
            let mut v = read_span(w.buf, s.offset, s.len);
            for e in v.iter_mut() {
                *e += spec.offset;
            }
            Some(v)
        }
        _ => None,
    };
    let (dy, dx) = in_out(&mut args.dy);
    let vec_shift = if m > 0 { shift_for(dx.ptr.elems_to_line(dx.at(0))) } else { 0 };
    let w = w.map(|v| {
        let mut a = Aligned::zeros(vec_shift + v.len());
        a.as_mut_slice()[vec_shift..].copy_from_slice(&v);
        a
    });
    let isa = super::Isa::detect();
    let ctx = Ctx {
        kind: desc.kind,
        n,
        m,
        x: Rows { ptr: args.x.buf.ptr(), layout: args.x.layout },
        dy,
        dx,
        d_residual_out: args.d_residual_out.map(|d| Rows { ptr: d.buf.ptr(), layout: d.layout }),
        w,
        vec_shift,
        mean: if desc.has_mean() { args.mean.map(|v| Stat { ptr: v.buf.ptr(), offset: v.span.offset }) } else { None },
        rstd: Stat { ptr: args.rstd.buf.ptr(), offset: args.rstd.span.offset },
        want_dw: args.dw.is_some(),
        want_db: args.db.is_some(),
        isa,
        stream: super::use_stream(isa, m * n * plan.dtypes.y.size_bytes()),
    };

    let blocks = m.div_ceil(BLOCK_ROWS);
    let total = if blocks == 0 { ctx.empty_partial() } else { ctx.reduce_blocks(0, blocks) };
    if let Some(dw) = args.dw.as_mut() {
        write_span(dw, &total.dw.as_slice()[vec_shift..]);
    }
    if let Some(db) = args.db.as_mut() {
        write_span(db, &total.db.as_slice()[vec_shift..]);
    }
    // `args` holds the borrows behind every pointer in `ctx` until the function returns, after
    // the reduction has joined.
}

/// [`Ctx::block_body`] compiled for AVX2 (wider vectors, the same operations in the same order).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2(ctx: &Ctx, blk: usize) -> Partial {
    ctx.block_body(blk)
}

/// [`Ctx::block_body`] compiled for AVX-512.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
unsafe fn block_avx512(ctx: &Ctx, blk: usize) -> Partial {
    ctx.block_body(blk)
}

impl Ctx {
    fn empty_partial(&self) -> Partial {
        let z = |want: bool| Aligned::zeros(if want { self.vec_shift + self.n } else { 0 });
        Partial { dw: z(self.want_dw), db: z(self.want_db) }
    }

    /// Sum of the partials of blocks `[lo, hi)`, `hi > lo`, by a fixed pairwise tree.
    fn reduce_blocks(&self, lo: usize, hi: usize) -> Partial {
        if hi - lo == 1 {
            return self.block(lo);
        }
        let mid = lo + (hi - lo) / 2;
        let (mut a, b) = rayon::join(|| self.reduce_blocks(lo, mid), || self.reduce_blocks(mid, hi));
        add_into(a.dw.as_mut_slice(), b.dw.as_slice());
        add_into(a.db.as_mut_slice(), b.db.as_slice());
        a
    }

    /// [`Ctx::block_body`] on the widest instruction set available.
    fn block(&self, blk: usize) -> Partial {
        match self.isa {
            // SAFETY: `isa` comes from `Isa::detect`, which checked these features.
            #[cfg(target_arch = "x86_64")]
            super::Isa::Avx512 => unsafe { block_avx512(self, blk) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            super::Isa::Avx2 => unsafe { block_avx2(self, blk) },
            _ => self.block_body(blk),
        }
    }

    /// `dx` of the rows of block `blk`, and the block's dW/dB partial (rows added in order).
    #[inline(always)]
    fn block_body(&self, blk: usize) -> Partial {
        let n = self.n;
        let mut part = self.empty_partial();
        let mut xh_buf = Aligned::zeros(n + 16);
        let mut g_buf = Aligned::zeros(n + 16);
        let mut t_buf = Aligned::zeros(if self.d_residual_out.is_some() { n + 16 } else { 0 });
        let vs = self.vec_shift;
        let (pdw, pdb) = (&mut part.dw.as_mut_slice()[..], &mut part.db.as_mut_slice()[..]);
        let pdw = if self.want_dw { &mut pdw[vs..] } else { pdw };
        let pdb = if self.want_db { &mut pdb[vs..] } else { pdb };
        let nf = n as f32;
        let end = ((blk + 1) * BLOCK_ROWS).min(self.m);
        for i in blk * BLOCK_ROWS..end {
            // Scratch rows start where this row's dx chunks fall on cache lines.
            let dx_at = self.dx.at(i);
            let sh = shift_for(self.dx.ptr.elems_to_line(dx_at));
            let xh = &mut xh_buf.as_mut_slice()[sh..sh + n];
            let g = &mut g_buf.as_mut_slice()[sh..sh + n];
            let t = if self.d_residual_out.is_some() { &mut t_buf.as_mut_slice()[sh..sh + n] } else { &mut [][..] };
            // Soundness of all the loads and stores here: validation checked that every row view and
            // statistic span lies inside its buffer; `run` holds the borrows of all buffers for
            // the whole call; row `i` of `dx` is written only by this block (blocks partition the
            // rows, and rows never share elements since `stride >= cols`). With `dx` over `dy`
            // the row of `dy` is fully loaded before `dx` is stored.
            // SAFETY: as just said.
            let (mu, rs) = unsafe { (self.mean.map_or(0.0, |s| s.ptr.get(s.offset + i)), self.rstd.ptr.get(self.rstd.offset + i)) };
            // SAFETY: as above.
            unsafe {
                self.x.ptr.load(self.x.at(i), xh);
                self.dy.ptr.load(self.dy.at(i), g);
            }
            // x̂ from x and the saved statistics; the dW/dB partials; g = dy·(w + offset).
            let mu = if self.kind == NormKind::Layer { mu } else { 0.0 };
            // One pass: x̂, and the partials dw += dy·x̂, db += dy (`g` holds dy here).
            let xs = xh.iter_mut().zip(g.iter());
            match (self.want_dw, self.want_db) {
                (true, true) => xs.zip(pdw.iter_mut().zip(pdb.iter_mut())).for_each(|((x, &dy), (dw, db))| {
                    *x = (*x - mu) * rs;
                    *dw += dy * *x;
                    *db += dy;
                }),
                (true, false) => xs.zip(pdw.iter_mut()).for_each(|((x, &dy), dw)| {
                    *x = (*x - mu) * rs;
                    *dw += dy * *x;
                }),
                (false, true) => xs.zip(pdb.iter_mut()).for_each(|((x, &dy), db)| {
                    *x = (*x - mu) * rs;
                    *db += dy;
                }),
                (false, false) => xs.for_each(|(x, _)| *x = (*x - mu) * rs),
            }
            if let Some(w) = &self.w {
                let w = &w.as_slice()[vs..];
                g.iter_mut().zip(w).for_each(|(g, &w)| *g *= w);
            }
            let mgx = reduce::dot(g, xh) / nf;
            // RMSNorm: mean(g) does not enter; `g − 0` is exactly `g`.
            let mg = if self.kind == NormKind::Layer { reduce::sum(g) / nf } else { 0.0 };
            // dx, chunk by chunk, while the same part of the next row of the block is prefetched
            // (see `forward.rs`: the memory would otherwise idle during this pass).
            let ahead = i + super::forward::PREFETCH_AHEAD;
            let next = super::forward::PREFETCH && ahead < self.m;
            for (off, len) in out_chunks(n, self.dx.ptr.elems_to_line(dx_at)) {
                let (gc, xc) = (&mut g[off..off + len], &xh[off..off + len]);
                if next {
                    self.x.ptr.prefetch(self.x.at(ahead) + off, len);
                    self.dy.ptr.prefetch(self.dy.at(ahead) + off, len);
                    if let Some(d) = &self.d_residual_out {
                        d.ptr.prefetch(d.at(ahead) + off, len);
                    }
                }
                gc.iter_mut().zip(xc).for_each(|(g, &xh)| *g = rs * ((*g - mg) - xh * mgx));
                if let Some(d) = &self.d_residual_out {
                    let tc = &mut t[off..off + len];
                    // SAFETY: as above (a part of row `i`).
                    unsafe { d.ptr.load(d.at(i) + off, tc) };
                    add_into(gc, tc);
                }
                // SAFETY: as above (a part of row `i` of `dx`).
                unsafe { store_row(self.dx.ptr, dx_at + off, gc, self.stream) };
            }
            if self.stream {
                stream_fence();
            }
        }
        part
    }
}
