// normkit kernels, vendor-neutral bodies. A platform's translation unit (kernels-cuda/norm.cu)
// defines the NK_CONST constants of kernels.def, includes this file and expands kernels.def into
// entry points that call these templates.
//
// Forward, two paths, chosen on the host by N and the dtypes (never by M or the layout), so a row's output
// is bitwise the same whatever the batch and however it is laid out. Each path has an ALIGNED
// variant (16-byte accesses) and an element-by-element one for any other layout; both assign the
// same 8-element chunks to the same threads and reduce in the same order (nk_common.cuh).
//   fwd_row          a group of G threads per row (G ≤ NK_ROW_MAX_THREADS, several groups per CTA
//                    for small N), persistent CTAs; the row is staged once into shared memory
//                    (cp.async on the aligned path), reduced, and written from there. One HBM read
//                    and one write per element. Used while the row (and weights) fit in shared memory.
//   fwd_split_*      any N: a row is cut into chunks of NK_SPLIT_THREADS·NK_SPLIT_ELEMS elements,
//                    one CTA per (row, chunk). `stats` writes per-chunk partials (sum of squares, or
//                    count/mean/M2 for LayerNorm, combined by Chan's formula in chunk order);
//                    `apply` combines them (every chunk CTA in the same order, so they agree
//                    bitwise) and writes y. x is read twice; used only where the row path cannot
//                    stage a row (and the weights) in shared memory.
// Backward (deterministic, no atomics): a persistent grid of CTAs walks rows; each keeps its dW/dB
// partial in shared memory (bwd_row) or registers (bwd_split_apply) and writes one fp32 partial
// row to a (parts × N) workspace; bwd_finalize sums the parts in index order.
//
// Statistics are fp32: RMSNorm rstd = 1/sqrt(Σx²/N + eps); LayerNorm mean, then Σ(x−mean)² in a
// second pass over the staged row (never E[x²]−μ²). 64-bit indexing throughout; grids stride over
// rows, so any M up to 2^31−1 works with a bounded grid.
#pragma once
#include "nk_common.cuh"

namespace nk {

struct Flags {
    bool ln, w, b, res, stats;
    NK_DEVICE explicit Flags(int f)
        : ln(f & NK_F_LN), w(f & NK_F_WEIGHT), b(f & NK_F_BIAS), res(f & NK_F_RESIDUAL), stats(f & NK_F_STATS) {}
};

// Compile-time specialisation of the hot variants. In a NARROW kernel every tensor has x's dtype
// (the contract allows only x's dtype or f32 for the others), so DT ≥ 0 fixes all of them and
// every dtype branch folds away; CAST ≥ 0 fixes the casting mode. The kernel entry dispatches on
// the runtime values once (NK_DISPATCH below), instead of every element paying for the branches.
template <int DT, int CAST>
NK_DEVICE NkFwdParams specialise(const NkFwdParams& p0) {
    NkFwdParams p = p0;
    if (DT >= 0) p.dt_x = p.dt_y = p.dt_r = p.dt_w = DT;
    if (CAST >= 0) p.casting = CAST;
    return p;
}
template <int DT>
NK_DEVICE NkBwdParams specialise(const NkBwdParams& p0) {
    NkBwdParams p = p0;
    if (DT >= 0) p.dt_x = p.dt_y = p.dt_w = DT;
    return p;
}

// Sum of squares (RMSNorm) or sum (LayerNorm) of a chunk's valid elements, added in index order.
// FULL: every element of the chunk is below N (the 16-byte kernels: the host sends them only N % 8 == 0),
// so no element needs a bounds check; otherwise one 32-bit compare per element against the chunk's
// valid length. Both add the same elements in the same order.
NK_DEVICE int chunk_len(int64_t e, int64_t n) {
    const int64_t r = n - e;
    return r >= CH ? CH : (int)r;
}
template <bool FULL>
NK_DEVICE void add_chunk(float& acc, const float (&v)[CH], bool ln, int64_t e, int64_t n) {
    const int lim = FULL ? CH : chunk_len(e, n);
#pragma unroll
    for (int j = 0; j < CH; ++j)
        if (FULL || j < lim) acc += ln ? v[j] : v[j] * v[j];
}
template <bool FULL>
NK_DEVICE void add_centred(float& acc, const float (&v)[CH], float mean, int64_t e, int64_t n) {
    const int lim = FULL ? CH : chunk_len(e, n);
#pragma unroll
    for (int j = 0; j < CH; ++j)
        if (FULL || j < lim) {
            const float d = v[j] - mean;
            acc += d * d;
        }
}

// ---------------------------------------------------------------------------------------------
// Forward, one row per group of G threads; thread t owns chunks t, t + G, ... The CTA is
// persistent: it stages the weight and bias once, then walks rows, staging each row's chunks into
// its threads' private shared-memory slots (asynchronous 16-byte copies on the aligned path, so
// occupancy rather than registers bounds the bytes in flight). Shared memory, in bytes (the host
// computes the same): SLOT·nch per present weight/bias, then per group (1 + residual)·K·G·SLOT,
// with SLOT = 16 when every tensor is 16-bit, else 32 (a dtype property, so the aligned and
// element-wise variants use the same amount and the host picks the same path for both),
// nch = ⌈N/8⌉, K = ⌈nch/G⌉.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void fwd_row_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST>(p0);
    const int SLOT = NARROW ? 16 : p.slot;
    NK_SHARED float scratch[NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(smem);
    const Flags f(p.flags);
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n, nch = (n + CH - 1) / CH;
    const int K = (int)((nch + G - 1) / G);
    const int64_t greg = (int64_t)K * G * SLOT;
    unsigned char* wsm = smem;
    unsigned char* bsm = wsm + (f.w ? nch * SLOT : 0);
    unsigned char* xs = bsm + (f.b ? nch * SLOT : 0) + (int64_t)g * (f.res ? 2 : 1) * greg;
    unsigned char* rs = xs + greg;
    const int cdt = f.res ? p.dt_r : p.dt_x;  // dtype of h as stored
    const float nf = (float)n;
    // The weight and bias copies fly together with the first row's; the first iteration's
    // barrier (every thread of the CTA runs it) publishes them to the whole CTA.
    for (int64_t c = tid; c < nch; c += bd) {
        if (f.w) stage_chunk<ALIGNED, NARROW>(wsm + c * SLOT, reinterpret_cast<const void*>(p.w), p.dt_w, c * CH, n);
        if (f.b) stage_chunk<ALIGNED, NARROW>(bsm + c * SLOT, reinterpret_cast<const void*>(p.b), p.dt_w, c * CH, n);
    }
    bool first = true;
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += nk_nblocks() * rpc) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        if (active) {
            const void* xrow = row_ptr(p.x, row, p.sx, p.dt_x);
            const void* rrow = row_ptr(p.r, row, p.sr, p.dt_r);
            for (int k = 0; k < K; ++k) {
                const int64_t c = (int64_t)k * G + t;
                if (c < nch) {
                    stage_chunk<ALIGNED, NARROW>(xs + c * SLOT, xrow, p.dt_x, c * CH, n);
                    if (f.res) stage_chunk<ALIGNED, NARROW>(rs + c * SLOT, rrow, p.dt_r, c * CH, n);
                }
            }
        }
        nk_copy_async_wait();  // the row slots are this thread's own: no barrier needed for them
        if (first) {
            nk_sync();
            first = false;
        }
        float acc[1] = {0.f};
        if (active) {
            void* rorow = row_ptr_mut(p.r_out, row, p.sro, p.dt_r);
            for (int k = 0; k < K; ++k) {
                const int64_t c = (int64_t)k * G + t;
                if (c >= nch) break;
                Raw h;
                float v[CH];
                slot_read<NARROW>(xs + c * SLOT, p.dt_x, h);
                unpack<NARROW>(p.dt_x, h, v);
                if (f.res) {
                    Raw r;
                    float rv[CH];
                    slot_read<NARROW>(rs + c * SLOT, p.dt_r, r);
                    unpack<NARROW>(p.dt_r, r, rv);
#pragma unroll
                    for (int j = 0; j < CH; ++j) v[j] = round_to(p.dt_r, nk_add_rn(v[j], rv[j]));
                    pack<NARROW>(p.dt_r, v, h);
                    slot_write<NARROW>(xs + c * SLOT, p.dt_r, h);
                    store_chunk<ALIGNED, NARROW>(rorow, p.dt_r, c * CH, n, h);
                }
                add_chunk<ALIGNED>(acc[0], v, f.ln, c * CH, n);
            }
        }
        group_sum<1>(acc, G, scratch);
        float mean = 0.f, var;
        if (f.ln) {
            mean = nk_div_rn(acc[0], nf);
            float a2[1] = {0.f};
            if (active) {
                for (int k = 0; k < K; ++k) {
                    const int64_t c = (int64_t)k * G + t;
                    if (c >= nch) break;
                    Raw h;
                    float v[CH];
                    slot_read<NARROW>(xs + c * SLOT, cdt, h);
                    unpack<NARROW>(cdt, h, v);
                    add_centred<ALIGNED>(a2[0], v, mean, c * CH, n);
                }
            }
            group_sum<1>(a2, G, scratch);
            var = nk_div_rn(a2[0], nf);
        } else {
            var = nk_div_rn(acc[0], nf);
        }
        const float rstd = nk_rsqrt_rn(nk_add_rn(var, p.eps));
        if (!active) continue;
        if (f.stats && t == 0) {
            store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
            if (f.ln) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
        }
        const FwdConsts cst = fwd_consts(p, mean, rstd);
        void* yrow = row_ptr_mut(p.y, row, p.sy, p.dt_y);
        for (int k = 0; k < K; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (c >= nch) break;
            Raw h, wr, br;
            float v[CH], w[CH], b[CH], y[CH];
            slot_read<NARROW>(xs + c * SLOT, cdt, h);
            unpack<NARROW>(cdt, h, v);
            if (f.w) {
                slot_read<NARROW>(wsm + c * SLOT, p.dt_w, wr);
                unpack<NARROW>(p.dt_w, wr, w);
            }
            if (f.b) {
                slot_read<NARROW>(bsm + c * SLOT, p.dt_w, br);
                unpack<NARROW>(p.dt_w, br, b);
            }
#pragma unroll
            for (int j = 0; j < CH; ++j) y[j] = fwd_out(cst, v[j], f.w ? w[j] : 0.f, f.b ? b[j] : 0.f);
            store<ALIGNED, NARROW>(yrow, p.dt_y, c * CH, n, y);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Forward, split rows: partial statistics per (row, chunk of NK_SPLIT_THREADS·NK_SPLIT_ELEMS).
// Thread t owns the 8-element chunks t, t + T, ... of the tile.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void fwd_split_stats_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float scratch[T / NK_WARP];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S, n = p.n;
    const int cdt = f.res ? p.dt_r : p.dt_x;
    float* ws = reinterpret_cast<float*>(p.ws);
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, base = (tile - row * S) * C;
        const void* xrow = row_ptr(p.x, row, p.sx, p.dt_x);
        const void* rrow = row_ptr(p.r, row, p.sr, p.dt_r);
        Raw h[KV], r[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                load_chunk<ALIGNED, NARROW>(xrow, p.dt_x, e, n, h[k]);
                if (f.res) load_chunk<ALIGNED, NARROW>(rrow, p.dt_r, e, n, r[k]);
            }
        }
        float acc[1] = {0.f};
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                float v[CH];
                unpack<NARROW>(p.dt_x, h[k], v);
                if (f.res) {
                    float rv[CH];
                    unpack<NARROW>(p.dt_r, r[k], rv);
#pragma unroll
                    for (int j = 0; j < CH; ++j) v[j] = round_to(p.dt_r, nk_add_rn(v[j], rv[j]));
                    pack<NARROW>(p.dt_r, v, h[k]);
                    store_chunk<ALIGNED, NARROW>(row_ptr_mut(p.r_out, row, p.sro, p.dt_r), p.dt_r, e, n, h[k]);
                }
                add_chunk<ALIGNED>(acc[0], v, f.ln, e, n);
            }
        }
        group_sum<1>(acc, T, scratch);
        float out0 = acc[0], out1 = 0.f;
        if (f.ln) {
            const int64_t cnt = n - base < C ? n - base : C;
            const float mean_c = nk_div_rn(acc[0], (float)cnt);
            float a2[1] = {0.f};
#pragma unroll
            for (int k = 0; k < KV; ++k) {
                const int64_t e = base + ((int64_t)k * T + t) * CH;
                if (e < n) {
                    float v[CH];
                    unpack<NARROW>(cdt, h[k], v);
                    add_centred<ALIGNED>(a2[0], v, mean_c, e, n);
                }
            }
            group_sum<1>(a2, T, scratch);
            out0 = mean_c;
            out1 = a2[0];
        }
        if (t == 0) {
            store_one(ws, NK_DT_F32, tile * 2, out0);
            store_one(ws, NK_DT_F32, tile * 2 + 1, out1);
        }
    }
}

// Forward, split rows: y from the statistics fwd_split_reduce combined (and saved) per row.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void fwd_split_apply_pre_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float stat[2];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S, n = p.n;
    const int cdt = f.res ? p.dt_r : p.dt_x;
    const uint64_t hbase = f.res ? p.r_out : p.x;
    const int64_t hstride = f.res ? p.sro : p.sx;
    const float* ws = reinterpret_cast<const float*>(p.ws);
    for (int64_t it = nk_bid(); it < total; it += nk_nblocks()) {
        // Tiles from the last: the rows fwd_split_stats read last are still in L2.
        const int64_t tile = total - 1 - it;
        const int64_t row = tile / S, s = tile - row * S, base = s * C;
        const void* hrow = row_ptr(hbase, row, hstride, cdt);
        Raw h[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) load_chunk<ALIGNED, NARROW>(hrow, cdt, e, n, h[k]);
        }
        if (t < 2) stat[t] = ws[2 * p.m * S + 2 * row + t];
        nk_sync();
        const FwdConsts cst = fwd_consts(p, stat[0], stat[1]);
        nk_sync();
        void* yrow = row_ptr_mut(p.y, row, p.sy, p.dt_y);
        Raw wr[KV], br[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                if (f.w) load_chunk<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.w), p.dt_w, e, n, wr[k]);
                if (f.b) load_chunk<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.b), p.dt_w, e, n, br[k]);
            }
        }
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                float v[CH], w[CH], b[CH], y[CH];
                unpack<NARROW>(cdt, h[k], v);
                if (f.w) unpack<NARROW>(p.dt_w, wr[k], w);
                if (f.b) unpack<NARROW>(p.dt_w, br[k], b);
#pragma unroll
                for (int j = 0; j < CH; ++j) y[j] = fwd_out(cst, v[j], f.w ? w[j] : 0.f, f.b ? b[j] : 0.f);
                store<ALIGNED, NARROW>(yrow, p.dt_y, e, n, y);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Backward. x̂ = (x − mean)·rstd, g = dy·(w + offset) (dy without a weight);
// RMSNorm dx = rstd·(g − x̂·mean(g·x̂)); LayerNorm dx = rstd·(g − mean(g) − x̂·mean(g·x̂));
// plus d_residual_out; dw += dy·x̂, db += dy. All fp32, one rounding at each store. Elements past
// N load as zero, so they add exactly zero to every sum (dy = 0 makes g = 0).

struct BwdRow {
    float mean, rstd;
};

NK_DEVICE BwdRow bwd_row_stats(const NkBwdParams& p, int64_t row) {
    BwdRow r;
    r.rstd = reinterpret_cast<const float*>(p.rstd)[row];
    r.mean = (p.flags & NK_F_LN) ? reinterpret_cast<const float*>(p.mean)[row] : 0.f;
    return r;
}

// A chunk's weight as the backward uses it: w + offset in fp32 (unused without a weight).
template <bool NARROW>
NK_DEVICE void bwd_weight(const NkBwdParams& p, const Flags& f, const Raw& wr, float (&wo)[CH]) {
    if (f.w) {
        unpack<NARROW>(p.dt_w, wr, wo);
#pragma unroll
        for (int j = 0; j < CH; ++j) wo[j] = wo[j] + p.offset;
    }
}

// Adds a chunk's g·x̂ and g to a[0], a[1]; wo = w + offset (bwd_weight).
template <bool NARROW>
NK_DEVICE void bwd_chunk_sums_w(const NkBwdParams& p, const Flags& f, const BwdRow& st, const Raw& xr, const Raw& dyr,
                                const float (&wo)[CH], float (&a)[2]) {
    float xv[CH], dv[CH];
    unpack<NARROW>(p.dt_x, xr, xv);
    unpack<NARROW>(p.dt_y, dyr, dv);
#pragma unroll
    for (int j = 0; j < CH; ++j) {
        const float xh = (f.ln ? xv[j] - st.mean : xv[j]) * st.rstd;  // RMSNorm: mean = 0, x − 0 = x
        const float gg = f.w ? dv[j] * wo[j] : dv[j];
        a[0] += gg * xh;
        if (f.ln) a[1] += gg;  // Σg is LayerNorm's only (every caller gates its c2 on LN)
    }
}
template <bool NARROW>
NK_DEVICE void bwd_chunk_sums(const NkBwdParams& p, const Flags& f, const BwdRow& st, const Raw& xr, const Raw& dyr,
                              const Raw& wr, float (&a)[2]) {
    float wo[CH];
    bwd_weight<NARROW>(p, f, wr, wo);
    bwd_chunk_sums_w<NARROW>(p, f, st, xr, dyr, wo, a);
}

// dx of a chunk (stored), and its dy·x̂ and dy in dw[], db[]; wo = w + offset (bwd_weight).
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_chunk_dx_w(const NkBwdParams& p, const Flags& f, const BwdRow& st, const Raw& xr, const Raw& dyr,
                              const float (&wo)[CH], const Raw& drr, int64_t row, int64_t e, float c1, float c2,
                              float (&dwv)[CH], float (&dbv)[CH]) {
    float xv[CH], dv[CH], dr[CH], dx[CH];
    unpack<NARROW>(p.dt_x, xr, xv);
    unpack<NARROW>(p.dt_y, dyr, dv);
    if (f.res) unpack<NARROW>(p.dt_y, drr, dr);
#pragma unroll
    for (int j = 0; j < CH; ++j) {
        const float xh = (f.ln ? xv[j] - st.mean : xv[j]) * st.rstd;
        const float gg = f.w ? dv[j] * wo[j] : dv[j];
        float d = st.rstd * ((f.ln ? gg - c2 : gg) - xh * c1);  // RMSNorm: c2 = 0
        if (f.res) d += dr[j];
        dx[j] = d;
        dwv[j] = dv[j] * xh;
        dbv[j] = dv[j];
    }
    store<ALIGNED, NARROW>(row_ptr_mut(p.dx, row, p.sdx, p.dt_y), p.dt_y, e, p.n, dx);
}
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_chunk_dx(const NkBwdParams& p, const Flags& f, const BwdRow& st, const Raw& xr, const Raw& dyr,
                            const Raw& wr, const Raw& drr, int64_t row, int64_t e, float c1, float c2,
                            float (&dwv)[CH], float (&dbv)[CH]) {
    float wo[CH];
    bwd_weight<NARROW>(p, f, wr, wo);
    bwd_chunk_dx_w<ALIGNED, NARROW>(p, f, st, xr, dyr, wo, drr, row, e, c1, c2, dwv, dbv);
}

// Backward, one row per group of threads, persistent CTAs. The weight is staged once; each row's
// x, dy (and d_residual_out) chunks are staged into thread-private shared-memory slots as in
// fwd_row; each group's dW/dB partial lives in shared memory, laid out [acc][k][j][t] so that a
// warp's lanes touch consecutive words. Shared memory (bytes): SLOT·nch for the weight, then per
// group (2 + residual)·K·G·SLOT + nacc·K·G·8·4.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void bwd_row_body(const NkBwdParams& p0) {
    const NkBwdParams p = specialise<DT>(p0);
    const int SLOT = NARROW ? 16 : p.slot;
    NK_SHARED float scratch[2 * NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(smem);
    const Flags f(p.flags);
    const bool has_w = p.w != 0;
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n, nch = (n + CH - 1) / CH;
    const int K = (int)((nch + G - 1) / G);
    const int64_t greg = (int64_t)K * G * SLOT;
    const int64_t region = (int64_t)K * CH * G;  // floats per accumulator
    const int nacc = (f.w ? 1 : 0) + (f.b ? 1 : 0);
    const int nst = f.res ? 3 : 2;
    unsigned char* wsm = smem;
    unsigned char* gb = wsm + (has_w ? nch * SLOT : 0);
    const int64_t per_group = nst * greg + (int64_t)nacc * region * 4;
    unsigned char* xs = gb + (int64_t)g * per_group;
    unsigned char* dys = xs + greg;
    unsigned char* drs = dys + greg;
    float* accw = reinterpret_cast<float*>(xs + nst * greg);
    float* accb = accw + (f.w ? region : 0);
    for (int64_t i = t; i < nacc * region; i += G) accw[i] = 0.f;
    for (int64_t c = tid; c < nch; c += bd)
        if (has_w) stage_chunk<ALIGNED, NARROW>(wsm + c * SLOT, reinterpret_cast<const void*>(p.w), p.dt_w, c * CH, n);
    bool first = true;  // as in fwd_row: the first row's barrier publishes the staged weight
    const float nf = (float)n;
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += nk_nblocks() * rpc) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        BwdRow st = {0.f, 0.f};
        if (active) {
            st = bwd_row_stats(p, row);
            const void* xrow = row_ptr(p.x, row, p.sx, p.dt_x);
            const void* dyrow = row_ptr(p.dy, row, p.sdy, p.dt_y);
            const void* drow = row_ptr(p.dres, row, p.sdres, p.dt_y);
            for (int k = 0; k < K; ++k) {
                const int64_t c = (int64_t)k * G + t;
                if (c < nch) {
                    stage_chunk<ALIGNED, NARROW>(xs + c * SLOT, xrow, p.dt_x, c * CH, n);
                    stage_chunk<ALIGNED, NARROW>(dys + c * SLOT, dyrow, p.dt_y, c * CH, n);
                    if (f.res) stage_chunk<ALIGNED, NARROW>(drs + c * SLOT, drow, p.dt_y, c * CH, n);
                }
            }
        }
        nk_copy_async_wait();
        if (first) {
            nk_sync();
            first = false;
        }
        float a[2] = {0.f, 0.f};
        if (active) {
            for (int k = 0; k < K; ++k) {
                const int64_t c = (int64_t)k * G + t;
                if (c >= nch) break;
                Raw xr, dyr, wr;
                slot_read<NARROW>(xs + c * SLOT, p.dt_x, xr);
                slot_read<NARROW>(dys + c * SLOT, p.dt_y, dyr);
                if (has_w) slot_read<NARROW>(wsm + c * SLOT, p.dt_w, wr);
                bwd_chunk_sums<NARROW>(p, f, st, xr, dyr, wr, a);
            }
        }
        group_sum<2>(a, G, scratch);
        if (!active) continue;
        const float c1 = nk_div_rn(a[0], nf);
        const float c2 = f.ln ? nk_div_rn(a[1], nf) : 0.f;
        for (int k = 0; k < K; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (c >= nch) break;
            Raw xr, dyr, wr, drr;
            slot_read<NARROW>(xs + c * SLOT, p.dt_x, xr);
            slot_read<NARROW>(dys + c * SLOT, p.dt_y, dyr);
            if (has_w) slot_read<NARROW>(wsm + c * SLOT, p.dt_w, wr);
            if (f.res) slot_read<NARROW>(drs + c * SLOT, p.dt_y, drr);
            float dwv[CH], dbv[CH];
            bwd_chunk_dx<ALIGNED, NARROW>(p, f, st, xr, dyr, wr, drr, row, c * CH, c1, c2, dwv, dbv);
#pragma unroll
            for (int j = 0; j < CH; ++j) {
                const int64_t ai = ((int64_t)k * CH + j) * G + t;
                if (f.w) accw[ai] += dwv[j];
                if (f.b) accb[ai] += dbv[j];
            }
        }
    }
    if (nacc == 0) return;
    // The CTA's partial row: its groups summed in group order.
    nk_sync();
    for (int64_t e = tid; e < n; e += bd) {
        const int64_t c = e / CH, j = e - c * CH, k = c / G, tt = c - k * G;
        const int64_t ai = (k * CH + j) * G + tt;
        if (f.w) {
            float s = 0.f;
            for (int gg = 0; gg < rpc; ++gg)
                s += reinterpret_cast<const float*>(gb + gg * per_group + nst * greg)[ai];
            store_one(reinterpret_cast<void*>(p.ws_dw), NK_DT_F32, nk_bid() * n + e, s);
        }
        if (f.b) {
            float s = 0.f;
            const int64_t off = f.w ? region : 0;
            for (int gg = 0; gg < rpc; ++gg)
                s += reinterpret_cast<const float*>(gb + gg * per_group + nst * greg)[off + ai];
            store_one(reinterpret_cast<void*>(p.ws_db), NK_DT_F32, nk_bid() * n + e, s);
        }
    }
}

// Backward, split rows: per (row, chunk) partial sums of g·x̂ and g.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void bwd_split_stats_body(const NkBwdParams& p0) {
    const NkBwdParams p = specialise<DT>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float scratch[2 * T / NK_WARP];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S, n = p.n;
    float* ws = reinterpret_cast<float*>(p.ws_stats);
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, base = (tile - row * S) * C;
        const BwdRow st = bwd_row_stats(p, row);
        const void* xrow = row_ptr(p.x, row, p.sx, p.dt_x);
        const void* dyrow = row_ptr(p.dy, row, p.sdy, p.dt_y);
        Raw xr[KV], dyr[KV], wr[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                load_chunk<ALIGNED, NARROW>(xrow, p.dt_x, e, n, xr[k]);
                load_chunk<ALIGNED, NARROW>(dyrow, p.dt_y, e, n, dyr[k]);
                if (f.w) load_chunk<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.w), p.dt_w, e, n, wr[k]);
            }
        }
        float a[2] = {0.f, 0.f};
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) bwd_chunk_sums<NARROW>(p, f, st, xr[k], dyr[k], wr[k], a);
        }
        group_sum<2>(a, T, scratch);
        if (t == 0) {
            store_one(ws, NK_DT_F32, tile * 2, a[0]);
            store_one(ws, NK_DT_F32, tile * 2 + 1, a[1]);
        }
    }
}

// Backward, split rows: dx for chunk blockIdx.x of the rows it = blockIdx.y, blockIdx.y +
// gridDim.y, ... (row M − 1 − it), from each row's (c1, c2) = (Σg·x̂ / N, Σg / N), which
// bwd_split_reduce combined once per row; the chunk's dW/dB partial stays in registers and is
// written as partial row blockIdx.y.
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void bwd_split_apply_pre_body(const NkBwdParams& p0) {
    const NkBwdParams p = specialise<DT>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, s = nk_bid(), base = s * C, n = p.n;
    const float* ws = reinterpret_cast<const float*>(p.ws_stats);
    float dwa[KV][CH], dba[KV][CH];
#pragma unroll
    for (int k = 0; k < KV; ++k)
#pragma unroll
        for (int j = 0; j < CH; ++j) dwa[k][j] = dba[k][j] = 0.f;
    for (int64_t it = nk_bid_y(); it < p.m; it += nk_nblocks_y()) {
        // Rows from the last: those bwd_split_stats read last are still in L2.
        const int64_t row = p.m - 1 - it;
        const BwdRow st = bwd_row_stats(p, row);
        const void* xrow = row_ptr(p.x, row, p.sx, p.dt_x);
        const void* dyrow = row_ptr(p.dy, row, p.sdy, p.dt_y);
        const void* drow = row_ptr(p.dres, row, p.sdres, p.dt_y);
        Raw xr[KV], dyr[KV], wr[KV], drr[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                load_chunk<ALIGNED, NARROW>(xrow, p.dt_x, e, n, xr[k]);
                load_chunk<ALIGNED, NARROW>(dyrow, p.dt_y, e, n, dyr[k]);
                if (f.w) load_chunk<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.w), p.dt_w, e, n, wr[k]);
                if (f.res) load_chunk<ALIGNED, NARROW>(drow, p.dt_y, e, n, drr[k]);
            }
        }
        const float c1 = ws[2 * p.m * S + 2 * row];
        const float c2 = ws[2 * p.m * S + 2 * row + 1];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                float dwv[CH], dbv[CH];
                bwd_chunk_dx<ALIGNED, NARROW>(p, f, st, xr[k], dyr[k], wr[k], drr[k], row, e, c1, c2, dwv, dbv);
#pragma unroll
                for (int j = 0; j < CH; ++j) {
                    dwa[k][j] += dwv[j];
                    dba[k][j] += dbv[j];
                }
            }
        }
    }
    const int64_t part = nk_bid_y();
#pragma unroll
    for (int k = 0; k < KV; ++k) {
        const int64_t e = base + ((int64_t)k * T + t) * CH;
        if (e < n) {
            if (f.w) store<false, false>(reinterpret_cast<float*>(p.ws_dw) + part * n, NK_DT_F32, e, n, dwa[k]);
            if (f.b) store<false, false>(reinterpret_cast<float*>(p.ws_db) + part * n, NK_DT_F32, e, n, dba[k]);
        }
    }
}

// dw[j] = Σ_parts ws_dw[part][j] in part order (and db), converted to the weight's dtype.
// A CTA takes NK_WARP columns; its warps take interleaved parts, then warp sums add in warp order.
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_finalize(const NkBwdParams& p) {
    NK_SHARED float red[2][NK_SPLIT_THREADS];
    const Flags f(p.flags);
    const int tid = nk_tid(), lane = tid % NK_WARP, warp = tid / NK_WARP, nw = nk_bdim() / NK_WARP;
    const int64_t Q = p.nparts;
    const float* wsw = reinterpret_cast<const float*>(p.ws_dw);
    const float* wsb = reinterpret_cast<const float*>(p.ws_db);
    for (int64_t cb = nk_bid(); cb * NK_WARP < p.n; cb += nk_nblocks()) {
        const int64_t col = cb * NK_WARP + lane;
        float sw = 0.f, sb = 0.f;
        if (col < p.n) {
            for (int64_t q = warp; q < Q; q += nw) {
                if (f.w) sw += wsw[q * p.n + col];
                if (f.b) sb += wsb[q * p.n + col];
            }
        }
        red[0][tid] = sw;
        red[1][tid] = sb;
        nk_sync();
        if (warp == 0 && col < p.n) {
            float tw = red[0][lane], tb = red[1][lane];
            for (int i = 1; i < nw; ++i) {
                tw += red[0][i * NK_WARP + lane];
                tb += red[1][i * NK_WARP + lane];
            }
            if (f.w) store_one(reinterpret_cast<void*>(p.dw), p.dt_w, col, tw);
            if (f.b) store_one(reinterpret_cast<void*>(p.db), p.dt_w, col, tb);
        }
        nk_sync();
    }
}

// ---------------------------------------------------------------------------------------------
// Register-resident row kernels (the hot path): every tensor has x's dtype DT and casting is
// Gemma (the host checks). SPEC = DT + 4·LN + 8·RES (+ 16: KMAX = 2·REG_KMAX); LayerNorm and the fused residual are
// compile-time, so the element loops carry no flag or dtype branches. A group of G threads per
// row and thread t owns the 8-element chunks t, t + G, ... exactly as fwd_row (same table, same
// chunking, same group_sum), with K = ⌈nch/G⌉ ≤ KMAX chunks held in registers: each thread issues
// all its 16-byte loads of a row at once, and nothing is staged in shared memory. The ALIGNED and
// element-wise variants run this same body, so a row's result never depends on the layout.
constexpr int REG_KMAX = 4;
// Chunks per thread of a forward register kernel: SPEC bit 16 doubles REG_KMAX, bit 32 quadruples it.
template <int SPEC>
constexpr int FWD_REG_KMAX = (SPEC & 32) ? 4 * REG_KMAX : (SPEC & 16) ? 2 * REG_KMAX : REG_KMAX;

// Thread-private 16-byte slots of the prefetch buffers (dynamic shared memory): buffer b, tensor
// s, chunk k, 16-byte half q (two for f32), thread tid; a warp's lanes touch consecutive vectors.
// K is the chunks per thread of the launch (the host sizes the buffers with it).
template <int NS, int SW>
NK_DEVICE nk_u128* pf_slot(unsigned char* smem, int b, int s, int k, int q, int tid, int bd, int K) {
    return reinterpret_cast<nk_u128*>(smem) + ((((int64_t)(b * NS + s) * K + k) * SW + q) * bd + tid);
}
template <int NS, int SW>
NK_DEVICE void pf_stage(unsigned char* smem, int b, int s, const void* row, int64_t e, int k, int tid, int bd, int K) {
    const unsigned char* src = static_cast<const unsigned char*>(row) + e * (SW == 2 ? 4 : 2);
#pragma unroll
    for (int q = 0; q < SW; ++q) nk_copy16_async(pf_slot<NS, SW>(smem, b, s, k, q, tid, bd, K), src + 16 * q);
}
template <int NS, int SW>
NK_DEVICE void pf_read(unsigned char* smem, int b, int s, int k, int tid, int bd, int K, Raw& r) {
#pragma unroll
    for (int q = 0; q < SW; ++q) r.q[q] = *pf_slot<NS, SW>(smem, b, s, k, q, tid, bd, K);
}

// h = x + r rounded to DT, as stored (the fused residual add).
template <int DT, bool NARROW>
NK_DEVICE void residual_add(Raw& h, const Raw& r) {
    float v[CH], rv[CH];
    unpack<NARROW>(DT, h, v);
    unpack<NARROW>(DT, r, rv);
#pragma unroll
    for (int j = 0; j < CH; ++j) v[j] = round_to(DT, nk_add_rn(v[j], rv[j]));
    pack<NARROW>(DT, v, h);
}

// Forward, register-resident rows. SPEC = DT + 4·LN + 8·RES (+ 16: KMAX = 2·REG_KMAX, + 32: KMAX =
// 4·REG_KMAX) (+ 64: PF,
// prefetch). Without PF a thread loads its K chunks of a row into registers at once. With PF
// (16-byte layouts) the next row's chunks are copied asynchronously (cp.async) into
// thread-private shared-memory slots (two buffers) while the current row is reduced and written,
// and each pass re-reads the current row from its slots instead of holding it in registers: loads
// stay in flight across the reduction, and occupancy is not bounded by a row's registers. Both
// forms (and the element-wise twin) perform the same arithmetic in the same order, bit for bit.
// Dynamic shared memory with PF: 2·(1 + RES)·K·blockDim·16·SW bytes (SW = 2 for f32, else 1).
template <bool ALIGNED, int SPEC, bool FULL>
NK_DEVICE void fwd_reg_body(const NkFwdParams& p0) {
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int KMAX = FWD_REG_KMAX<SPEC>;
    constexpr bool PF = ALIGNED && (SPEC & 64) != 0;
    constexpr int NS = RES ? 2 : 1, SW = NARROW ? 1 : 2;
    const NkFwdParams p = specialise<DT, NK_CAST_GEMMA>(p0);
    NK_SHARED float scratch[2][NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(smem);
    int par = 0, buf = 0;
    const bool has_w = (p.flags & NK_F_WEIGHT) != 0, has_b = (p.flags & NK_F_BIAS) != 0;
    const bool stats = (p.flags & NK_F_STATS) != 0;
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = FULL ? KMAX : (nch + G - 1) / G;
    const float nf = (float)n, offset = p.offset;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const void* bp = reinterpret_cast<const void*>(p.b);
    const int64_t step = nk_nblocks() * rpc;
    // PF: queues the asynchronous copies of `row` into buffer b (none for rows past M) and closes
    // the group, so every iteration commits exactly one group.
    auto stage = [&](int64_t row, int b) {
        if (row < p.m) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* rrow = row_ptr(p.r, row, p.sr, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    pf_stage<NS, SW>(smem, b, 0, xrow, (int64_t)c * CH, k, tid, bd, K);
                    if (RES) pf_stage<NS, SW>(smem, b, 1, rrow, (int64_t)c * CH, k, tid, bd, K);
                }
            }
        }
        nk_copy_async_commit();
    };
    if (PF) stage(nk_bid() * rpc + g, 0);
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += step) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        if (PF) {
            stage(row + step, buf ^ 1);
            nk_copy_async_wait_prior();
        }
        // Chunk k of h (x, or x + r as stored): from registers, or re-read from the slots.
        Raw h[PF ? 1 : KMAX];
        auto get = [&](int k, Raw& o) {
            if constexpr (PF) {
                pf_read<NS, SW>(smem, buf, 0, k, tid, bd, K, o);
                if (RES) {
                    Raw r;
                    pf_read<NS, SW>(smem, buf, 1, k, tid, bd, K, r);
                    residual_add<DT, NARROW>(o, r);
                }
            } else {
                o = h[k];
            }
        };
        float acc[1] = {0.f};
        if (active) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* rrow = row_ptr(p.r, row, p.sr, DT);
            void* rorow = row_ptr_mut(p.r_out, row, p.sro, DT);
            if constexpr (!PF) {
                Raw r[RES ? KMAX : 1];
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        load_chunk<ALIGNED, NARROW>(xrow, DT, (int64_t)c * CH, n, h[k]);
                        if (RES) load_chunk<ALIGNED, NARROW>(rrow, DT, (int64_t)c * CH, n, r[k]);
                    }
                }
                if (RES) {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (FULL || (k < K && c < nch)) residual_add<DT, NARROW>(h[k], r[k]);
                    }
                }
            }
            if (RES || !LN) {
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        Raw hk;
                        get(k, hk);
                        if (RES) store_chunk<ALIGNED, NARROW>(rorow, DT, (int64_t)c * CH, n, hk);
                        if (!LN) {
                            float v[CH];
                            unpack<NARROW>(DT, hk, v);
                            add_chunk<ALIGNED>(acc[0], v, false, (int64_t)c * CH, n);
                        }
                    }
                }
            }
        }
        float mean = 0.f, var;
        if (LN) {
            // Two reductions: the mean, then the squared deviations from it (never E[x²] − μ²).
            if (active) {
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        Raw hk;
                        float v[CH];
                        get(k, hk);
                        unpack<NARROW>(DT, hk, v);
                        add_chunk<ALIGNED>(acc[0], v, true, (int64_t)c * CH, n);
                    }
                }
            }
            group_sum_nb<1>(acc, G, scratch[par]);
            par ^= 1;
            mean = nk_div_rn(acc[0], nf);
            float a2[1] = {0.f};
            if (active) {
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        Raw hk;
                        float v[CH];
                        get(k, hk);
                        unpack<NARROW>(DT, hk, v);
                        add_centred<ALIGNED>(a2[0], v, mean, (int64_t)c * CH, n);
                    }
                }
            }
            group_sum_nb<1>(a2, G, scratch[par]);
            var = nk_div_rn(a2[0], nf);
        } else {
            group_sum_nb<1>(acc, G, scratch[par]);
            var = nk_div_rn(acc[0], nf);
        }
        par ^= 1;
        const float rstd = nk_rsqrt_rn(nk_add_rn(var, p.eps));
        if (active) {
            if (stats && t == 0) {
                store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
                if (LN) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
            }
            void* yrow = row_ptr_mut(p.y, row, p.sy, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    const int64_t e = (int64_t)c * CH;
                    float v[CH], y[CH];
                    Raw hk;
                    get(k, hk);
                    unpack<NARROW>(DT, hk, v);
#pragma unroll
                    for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(LN ? nk_sub_rn(v[j], mean) : v[j], rstd);
                    // y = x̂·(w + offset) + b; an absent weight multiplies by 1 and an absent bias
                    // adds −0, both exact, so they are skipped (no instruction per element).
                    if (has_w) {
                        Raw wr;
                        float w[CH];
                        load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr);
                        unpack<NARROW>(DT, wr, w);
#pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], nk_add_rn(w[j], offset));
                    }
                    if (has_b) {
                        Raw br;
                        float b[CH];
                        load_chunk<ALIGNED, NARROW>(bp, DT, e, n, br);
                        unpack<NARROW>(DT, br, b);
#pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = nk_add_rn(y[j], b[j]);
                    }
                    store<ALIGNED, NARROW>(yrow, DT, e, n, y);
                }
            }
        }
        buf ^= 1;
    }
    if (PF) nk_copy_async_wait_all();
}

// Backward, register-resident (16-byte accesses only; other layouts take bwd_row): every tensor
// has x's dtype DT. SPEC = DT + 4·LN + 8·RES (d_residual_out) + 16 (KMAX = 1) or 32 (KMAX = 4)
// (+ 64: PF, the next row's x, dy (and d_residual_out) prefetched by cp.async into two buffers of
// thread-private shared-memory slots, as in fwd_reg; same arithmetic). Groups of G threads walk the rows
// of a persistent grid; thread t owns the chunks t, t + G, ... (K ≤ KMAX) of every row it visits,
// so its dW/dB partial stays in registers across rows. At the end the CTA's groups are summed in
// group order through shared memory (rpc·N floats, dynamic; none when rpc = 1) and the CTA writes
// one fp32 partial row; bwd_finalize sums the partial rows in a fixed order. Dynamic shared
// memory: max(rpc > 1 ? rpc·N·4 : 0, PF ? (2·(2 + RES)·16·SW + 32·W)·K·blockDim : 0) bytes, W = 1 with
// a weight in shared memory (its fp32 slots follow the row buffers; NK_F_WGLOBAL: none).
constexpr int BREG_KMAX = 2;

// Chunks per thread of a backward register kernel: SPEC bit 16 one, bit 32 2·BREG_KMAX.
template <int SPEC>
constexpr int BWD_REG_KMAX = (SPEC & 16) ? 1 : (SPEC & 32) ? 2 * BREG_KMAX : BREG_KMAX;

// FULL: every thread of a group owns exactly KMAX whole chunks of every row (N = 8·KMAX·G, the
// tables' usual case), so the per-chunk guards fold away; the arithmetic is the same either way.
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_reg(const NkFwdParams& p) {
    constexpr int KMAX = FWD_REG_KMAX<SPEC>;
    if constexpr (NK_REG_FULL) {
        if ((p.n + CH - 1) / CH == (int64_t)KMAX * p.group && !(p.flags & NK_F_NOFULL)) {
            fwd_reg_body<ALIGNED, SPEC, true>(p);
            return;
        }
    }
    fwd_reg_body<ALIGNED, SPEC, false>(p);
}

template <bool ALIGNED, int SPEC, bool FULL, bool WG>
NK_DEVICE void bwd_reg_body(const NkBwdParams& p0) {
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int KMAX = BWD_REG_KMAX<SPEC>;
    constexpr bool PF = ALIGNED && (SPEC & 64) != 0;
    constexpr int NS = RES ? 3 : 2, SW = NARROW ? 1 : 2;
    constexpr int KR = PF ? 1 : KMAX;  // chunks held in registers across the reduction
    const NkBwdParams p = specialise<DT>(p0);
    NK_SHARED float scratch[2][2 * NK_ROW_MAX_THREADS / NK_WARP];
    int par = 0, buf = 0;
    NK_DYN_SMEM(smem);
    Flags f(p.flags);
    f.ln = LN;
    f.res = RES;
    const bool has_w = p.w != 0;
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = FULL ? KMAX : (nch + G - 1) / G;
    const float nf = (float)n;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const int64_t step = nk_nblocks() * rpc;
    float dwa[KMAX][CH], dba[KMAX][CH];
#pragma unroll
    for (int k = 0; k < KMAX; ++k)
#pragma unroll
        for (int j = 0; j < CH; ++j) dwa[k][j] = dba[k][j] = 0.f;
    auto stage = [&](int64_t row, int b) {
        if (row < p.m) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* dyrow = row_ptr(p.dy, row, p.sdy, DT);
            const void* drow = row_ptr(p.dres, row, p.sdres, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    const int64_t e = (int64_t)c * CH;
                    pf_stage<NS, SW>(smem, b, 0, xrow, e, k, tid, bd, K);
                    pf_stage<NS, SW>(smem, b, 1, dyrow, e, k, tid, bd, K);
                    if (RES) pf_stage<NS, SW>(smem, b, 2, drow, e, k, tid, bd, K);
                }
            }
        }
        nk_copy_async_commit();
    };
    // PF: the weight as the arithmetic uses it, w + offset in fp32, written once into this
    // thread's own 32-byte slots after the two row buffers (the CTA walks many rows, and each row
    // then reads 8 floats instead of converting and offsetting 8 weights twice).
    // WG (NK_F_WGLOBAL): the host found no room for the slots; the weight is then read from
    // global memory and offset per use (the same values). A compile-time variant: the run-time
    // branch cost the other kernels registers (spills).
    constexpr bool wsm = !WG;
    nk_u128* wslots = reinterpret_cast<nk_u128*>(smem) + (int64_t)2 * NS * K * SW * bd;
    auto wslot = [&](int k, int q) { return wslots + (int64_t)(2 * k + q) * bd + tid; };
    auto get_w = [&](int k, float (&wo)[CH]) {
        if (!wsm) {
            Raw wr;
            load_chunk<ALIGNED, NARROW>(wp, DT, (int64_t)(k * G + t) * CH, n, wr);
            bwd_weight<NARROW>(p, f, wr, wo);
            return;
        }
        Raw wf;
        wf.q[0] = *wslot(k, 0);
        wf.q[1] = *wslot(k, 1);
        unpack<false>(NK_DT_F32, wf, wo);
    };
    if (PF) {
        if (has_w && wsm) {
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    Raw wr, wf;
                    float wo[CH];
                    load_chunk<ALIGNED, NARROW>(wp, DT, (int64_t)c * CH, n, wr);
                    bwd_weight<NARROW>(p, f, wr, wo);
                    pack<false>(NK_DT_F32, wo, wf);
                    *wslot(k, 0) = wf.q[0];
                    *wslot(k, 1) = wf.q[1];
                }
            }
        }
        stage(nk_bid() * rpc + g, 0);
    }
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += step) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        if (PF) {
            stage(row + step, buf ^ 1);
            nk_copy_async_wait_prior();
        }
        Raw xr[KR], dyr[KR], drr[KR], wr[KR];
        // Chunk k's x, dy (and d_residual_out): from registers, or re-read from the slots.
        auto get = [&](int k, Raw& xo, Raw& dyo, Raw& dro) {
            if constexpr (PF) {
                pf_read<NS, SW>(smem, buf, 0, k, tid, bd, K, xo);
                pf_read<NS, SW>(smem, buf, 1, k, tid, bd, K, dyo);
                if (RES) pf_read<NS, SW>(smem, buf, 2, k, tid, bd, K, dro);
            } else {
                xo = xr[k];
                dyo = dyr[k];
                if (RES) dro = drr[k];
            }
        };
        BwdRow st = {0.f, 0.f};
        float a[2] = {0.f, 0.f};
        if (active) {
            st = bwd_row_stats(p, row);
            if constexpr (!PF) {
                const void* xrow = row_ptr(p.x, row, p.sx, DT);
                const void* dyrow = row_ptr(p.dy, row, p.sdy, DT);
                const void* drow = row_ptr(p.dres, row, p.sdres, DT);
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        const int64_t e = (int64_t)c * CH;
                        load_chunk<ALIGNED, NARROW>(xrow, DT, e, n, xr[k]);
                        load_chunk<ALIGNED, NARROW>(dyrow, DT, e, n, dyr[k]);
                        if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr[k]);
                        if (RES) load_chunk<ALIGNED, NARROW>(drow, DT, e, n, drr[k]);
                    }
                }
            }
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    Raw xk, dyk, drk;
                    float wo[CH];
                    get(k, xk, dyk, drk);
                    if (!has_w) {
                    } else if constexpr (PF) {
                        get_w(k, wo);
                    } else {
                        bwd_weight<NARROW>(p, f, wr[k], wo);
                    }
                    bwd_chunk_sums_w<NARROW>(p, f, st, xk, dyk, wo, a);
                }
            }
        }
        group_sum_nb<2>(a, G, scratch[par]);
        par ^= 1;
        if (active) {
            const float c1 = nk_div_rn(a[0], nf);
            const float c2 = LN ? nk_div_rn(a[1], nf) : 0.f;
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    Raw xk, dyk, drk;
                    float wo[CH];
                    get(k, xk, dyk, drk);
                    if (!has_w) {
                    } else if constexpr (PF) {
                        get_w(k, wo);
                    } else {
                        bwd_weight<NARROW>(p, f, wr[k], wo);
                    }
                    float dwv[CH], dbv[CH];
                    bwd_chunk_dx_w<ALIGNED, NARROW>(p, f, st, xk, dyk, wo, drk, row, (int64_t)c * CH, c1, c2, dwv, dbv);
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        dwa[k][j] += dwv[j];
                        if (LN) dba[k][j] += dbv[j];
                    }
                }
            }
        }
        buf ^= 1;
    }
    if (PF) nk_copy_async_wait_all();
    // The CTA's partial row(s) (dB only for LayerNorm: the host sends RMSNorm with db elsewhere).
#pragma unroll
    for (int acc = 0; acc < 2; ++acc) {
        const bool want = acc == 0 ? f.w : (LN && f.b);
        if (!want) continue;
        float* dst = reinterpret_cast<float*>(acc == 0 ? p.ws_dw : p.ws_db) + nk_bid() * n;
        if (rpc == 1) {
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) store<ALIGNED, false>(dst, NK_DT_F32, (int64_t)c * CH, n, acc == 0 ? dwa[k] : dba[k]);
            }
        } else {
            float* red = reinterpret_cast<float*>(smem);
            nk_sync();
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch))
#pragma unroll
                    for (int j = 0; j < CH; ++j)
                        if ((int64_t)c * CH + j < n) red[(int64_t)g * n + c * CH + j] = acc == 0 ? dwa[k][j] : dba[k][j];
            }
            nk_sync();
            for (int64_t e = tid; e < n; e += bd) {
                float s = red[e];
                for (int gg = 1; gg < rpc; ++gg) s += red[(int64_t)gg * n + e];
                store_one(dst, NK_DT_F32, e, s);
            }
        }
    }
}

// FULL: every thread of a group owns exactly KMAX whole chunks of every row (N = 8·KMAX·G, the
// tables' usual case), so the per-chunk guards fold away; the arithmetic is the same either way.
template <bool ALIGNED, int SPEC>
NK_DEVICE void bwd_reg(const NkBwdParams& p) {
    constexpr int KMAX = BWD_REG_KMAX<SPEC>;
    const bool full = NK_REG_FULL && (p.n + CH - 1) / CH == (int64_t)KMAX * p.group && !(p.flags & NK_F_NOFULL);
    if constexpr (ALIGNED && (SPEC & 64) && (SPEC & 8)) {
        if (p.flags & NK_F_WGLOBAL) {
            if constexpr (NK_REG_FULL) {
                if (full) {
                    bwd_reg_body<ALIGNED, SPEC, true, true>(p);
                    return;
                }
            }
            bwd_reg_body<ALIGNED, SPEC, false, true>(p);
            return;
        }
    }
    if constexpr (NK_REG_FULL) {
        if (full) {
            bwd_reg_body<ALIGNED, SPEC, true, false>(p);
            return;
        }
    }
    bwd_reg_body<ALIGNED, SPEC, false, false>(p);
}

// Forward, split rows, three-kernel form: fwd_split_reduce combines each row's chunk partials once
// into (mean, rstd) at ws[2·M·S + 2·row] and writes the saved statistics; fwd_split_apply_pre then
// reads the pair. One warp per row: lane l folds chunks l, l + W, ... in chunk order, then the
// lanes combine by a butterfly in which the lower lane's value is always the left operand, so
// every lane ends with the same bits (a thread per row, folding S partials serially from L2, took
// 26 µs of 327 at 128×1M on an H100). The order depends on N only: a row never depends on M.
NK_DEVICE void split_chunk_fold(const NkFwdParams& p, const float* part, int lane, float& na, float& ma, float& m2) {
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    na = ma = m2 = 0.f;
    const bool ln = p.flags & NK_F_LN;
    for (int64_t i = lane; i < p.nsplit; i += NK_WARP) {
        if (!ln) {
            ma += part[2 * i];
            continue;
        }
        const int64_t rest = p.n - i * C;
        const float nb = (float)(rest < C ? rest : C);
        if (na == 0.f) {
            na = nb;
            ma = part[2 * i];
            m2 = part[2 * i + 1];
        } else {
            chan_combine(na, ma, m2, nb, part[2 * i], part[2 * i + 1]);
        }
    }
    for (int o = 1; o < NK_WARP; o <<= 1) {
        const float ob = nk_shfl_xor(na, o), mb = nk_shfl_xor(ma, o), vb = nk_shfl_xor(m2, o);
        if (!ln) {
            ma += mb;  // addition commutes: both lanes of a pair get the same bits
            continue;
        }
        // (lower, upper) = (mine, partner) or (partner, mine); empty sides pass the other through.
        float n0 = na, m0 = ma, v0 = m2, n1 = ob, m1 = mb, v1 = vb;
        if (lane & o) {
            n0 = ob, m0 = mb, v0 = vb;
            n1 = na, m1 = ma, v1 = m2;
        }
        if (n1 == 0.f) {
        } else if (n0 == 0.f) {
            n0 = n1, m0 = m1, v0 = v1;
        } else {
            chan_combine(n0, m0, v0, n1, m1, v1);
        }
        na = n0, ma = m0, m2 = v0;
    }
}

template <bool ALIGNED, bool NARROW>
NK_DEVICE void fwd_split_reduce(const NkFwdParams& p) {
    float* ws = reinterpret_cast<float*>(p.ws);
    const int64_t S = p.nsplit;
    float* out = ws + 2 * p.m * S;
    const int lane = nk_tid() % NK_WARP;
    const int64_t wpb = nk_bdim() / NK_WARP;
    const float nf = (float)p.n;
    for (int64_t row = nk_bid() * wpb + nk_tid() / NK_WARP; row < p.m; row += nk_nblocks() * wpb) {
        float na, ma, m2;
        split_chunk_fold(p, ws + row * S * 2, lane, na, ma, m2);
        const bool ln = p.flags & NK_F_LN;
        const float mean = ln ? ma : 0.f;
        const float rstd = nk_rsqrt_rn(nk_add_rn(nk_div_rn(ln ? m2 : ma, nf), p.eps));
        if (lane == 0) {
            out[2 * row] = mean;
            out[2 * row + 1] = rstd;
            if (p.flags & NK_F_STATS) {
                store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
                if (ln) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
            }
        }
    }
}

// Backward split: bwd_split_reduce combines each row's chunk partials once into (c1, c2) at
// ws_stats[2·M·S + 2·row]; bwd_split_apply_pre reads the pair. One warp per row, lane-strided
// sums then a butterfly (as fwd_split_reduce; addition commutes, so every lane agrees).
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_split_reduce(const NkBwdParams& p) {
    float* ws = reinterpret_cast<float*>(p.ws_stats);
    const int64_t S = p.nsplit;
    const int lane = nk_tid() % NK_WARP;
    const int64_t wpb = nk_bdim() / NK_WARP;
    const float nf = (float)p.n;
    for (int64_t row = nk_bid() * wpb + nk_tid() / NK_WARP; row < p.m; row += nk_nblocks() * wpb) {
        const float* part = ws + row * S * 2;
        float s1 = 0.f, s2 = 0.f;
        for (int64_t i = lane; i < S; i += NK_WARP) {
            s1 += part[2 * i];
            s2 += part[2 * i + 1];
        }
        for (int o = 1; o < NK_WARP; o <<= 1) {
            s1 += nk_shfl_xor(s1, o);
            s2 += nk_shfl_xor(s2, o);
        }
        if (lane == 0) {
            ws[2 * p.m * S + 2 * row] = nk_div_rn(s1, nf);
            ws[2 * p.m * S + 2 * row + 1] = (p.flags & NK_F_LN) ? nk_div_rn(s2, nf) : 0.f;
        }
    }
}

// dw[j] = Σ_parts ws_dw[part][j] (and db) in a fixed order, converted to the weight's dtype. A CTA
// takes COLS = p.group columns (8, 16 or 32: the host picks fewer for small N, so that the grid
// still covers the device); lane l of a warp reads column l % COLS of part sub-row l / COLS, so a
// warp reads L = 32 / COLS parts at once. Warp w's lanes take parts w·L + s, w·L + s + W·L, ... into
// four interleaved accumulators (four loads in flight), combined as (s0 + s1) + (s2 + s3); the
// L sub-rows of a warp are added by a fixed butterfly, then warp sums add in warp order. Launched
// with up to NK_ROW_MAX_THREADS threads.
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_finalize_wide(const NkBwdParams& p) {
    nk_grid_dep_wait();  // may be launched as a programmatic dependent of the row kernel
    NK_SHARED float red[2][NK_ROW_MAX_THREADS / NK_WARP][NK_WARP];
    const Flags f(p.flags);
    const int tid = nk_tid(), lane = tid % NK_WARP, warp = tid / NK_WARP, nw = nk_bdim() / NK_WARP;
    const int cols = p.group, L = NK_WARP / cols, sub = lane / cols, cl = lane % cols;
    const int64_t Q = p.nparts, step = (int64_t)nw * L;
    const float* wsw = reinterpret_cast<const float*>(p.ws_dw);
    const float* wsb = reinterpret_cast<const float*>(p.ws_db);
    for (int64_t cb = nk_bid(); cb * cols < p.n; cb += nk_nblocks()) {
        const int64_t col = cb * cols + cl;
        float sw[4] = {0.f, 0.f, 0.f, 0.f}, sb[4] = {0.f, 0.f, 0.f, 0.f};
        if (col < p.n) {
            int64_t q = (int64_t)warp * L + sub;
            for (; q + 3 * step < Q; q += 4 * step) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if (f.w) sw[i] += wsw[(q + i * step) * p.n + col];
                    if (f.b) sb[i] += wsb[(q + i * step) * p.n + col];
                }
            }
            for (; q < Q; q += step) {
                if (f.w) sw[0] += wsw[q * p.n + col];
                if (f.b) sb[0] += wsb[q * p.n + col];
            }
        }
        float tw = (sw[0] + sw[1]) + (sw[2] + sw[3]);
        float tb = (sb[0] + sb[1]) + (sb[2] + sb[3]);
        for (int o = NK_WARP / 2; o >= cols; o >>= 1) {
            tw += nk_shfl_xor(tw, o);
            tb += nk_shfl_xor(tb, o);
        }
        red[0][warp][lane] = tw;
        red[1][warp][lane] = tb;
        nk_sync();
        if (warp == 0 && lane < cols && col < p.n) {
            tw = red[0][0][lane];
            tb = red[1][0][lane];
            for (int i = 1; i < nw; ++i) {
                tw += red[0][i][lane];
                tb += red[1][i][lane];
            }
            if (f.w) store_one(reinterpret_cast<void*>(p.dw), p.dt_w, col, tw);
            if (f.b) store_one(reinterpret_cast<void*>(p.db), p.dt_w, col, tb);
        }
        nk_sync();
    }
}

// dw (and db) from a few partial rows (the split and cluster paths: 9–16 parts at N up to 1M,
// where bwd_finalize_wide's column blocks left most of each CTA idle: 47 µs for 9 × 1M floats on
// an H100). One column per thread (coalesced 4-byte loads), its parts added in part order; the
// part loop is unrolled so that eight loads are in flight per thread.
template <bool ALIGNED, bool NARROW>
NK_DEVICE void bwd_finalize_cols(const NkBwdParams& p) {
    nk_grid_dep_wait();  // may be launched as a programmatic dependent of the row kernel
    const Flags f(p.flags);
    const int64_t Q = p.nparts, n = p.n;
    const float* wsw = reinterpret_cast<const float*>(p.ws_dw);
    const float* wsb = reinterpret_cast<const float*>(p.ws_db);
    for (int64_t c = nk_bid() * nk_bdim() + nk_tid(); c < n; c += nk_nblocks() * nk_bdim()) {
        float sw = 0.f, sb = 0.f;
#pragma unroll 8
        for (int64_t q = 0; q < Q; ++q) {
            if (f.w) sw += wsw[q * n + c];
            if (f.b) sb += wsb[q * n + c];
        }
        if (f.w) store_one(reinterpret_cast<void*>(p.dw), p.dt_w, c, sw);
        if (f.b) store_one(reinterpret_cast<void*>(p.db), p.dt_w, c, sb);
    }
}

// Kernel entries: NARROW kernels run a body specialised on the 16-bit dtype (and, forward, on the
// Gemma casting mode, the common one); the others run the fully run-time body.
#define NK_FWD_ENTRY(name)                                                                      \
    template <bool ALIGNED, bool NARROW>                                                        \
    NK_DEVICE void name(const NkFwdParams& p) {                                                 \
        if constexpr (NARROW) {                                                                 \
            const bool bf = p.dt_x == NK_DT_BF16;                                               \
            if (p.casting == NK_CAST_GEMMA) {                                                   \
                if (bf) name##_body<ALIGNED, true, NK_DT_BF16, NK_CAST_GEMMA>(p);               \
                else name##_body<ALIGNED, true, NK_DT_F16, NK_CAST_GEMMA>(p);                   \
            } else {                                                                            \
                if (bf) name##_body<ALIGNED, true, NK_DT_BF16, -1>(p);                          \
                else name##_body<ALIGNED, true, NK_DT_F16, -1>(p);                              \
            }                                                                                   \
        } else {                                                                                \
            name##_body<ALIGNED, false, -1, -1>(p);                                             \
        }                                                                                       \
    }
#define NK_BWD_ENTRY(name)                                                                      \
    template <bool ALIGNED, bool NARROW>                                                        \
    NK_DEVICE void name(const NkBwdParams& p) {                                                 \
        if constexpr (NARROW) {                                                                 \
            if (p.dt_x == NK_DT_BF16) name##_body<ALIGNED, true, NK_DT_BF16, -1>(p);            \
            else name##_body<ALIGNED, true, NK_DT_F16, -1>(p);                                  \
        } else {                                                                                \
            name##_body<ALIGNED, false, -1, -1>(p);                                             \
        }                                                                                       \
    }
NK_FWD_ENTRY(fwd_row)
NK_FWD_ENTRY(fwd_split_stats)
// The split apply reads the statistics fwd_split_reduce combined (the three-kernel form).
NK_FWD_ENTRY(fwd_split_apply_pre)
NK_BWD_ENTRY(bwd_row)
NK_BWD_ENTRY(bwd_split_stats)
// The split apply reads the (c1, c2) bwd_split_reduce combined (the three-kernel form).
NK_BWD_ENTRY(bwd_split_apply_pre)

}  // namespace nk
