// normkit kernels, vendor-neutral bodies. A platform's translation unit (kernels-cuda/norm.cu)
// defines the NK_CONST constants of kernels.def, includes this file and expands kernels.def into
// entry points that call these templates.
//
// Forward, two paths, chosen on the host by N, dtype and layout only (never by M), so a row's
// output is bitwise the same whatever the batch:
//   fwd_row          a group of G threads per row (G ≤ NK_ROW_MAX_THREADS, several groups per CTA
//                    for small N); the row is loaded once into registers (at most KC chunks of VEC
//                    elements per thread), reduced, and written from registers. One HBM read and
//                    one write per element. N ≤ G·KC·VEC.
//   fwd_split_*      any N: a row is cut into chunks of NK_SPLIT_THREADS·NK_SPLIT_ELEMS elements,
//                    one CTA per (row, chunk). `stats` writes per-chunk partials (sum of squares, or
//                    count/mean/M2 for LayerNorm, combined by Chan's formula in chunk order);
//                    `apply` combines them (every chunk CTA in the same order, so they agree
//                    bitwise) and writes y. x is read twice; used only where the row path cannot
//                    hold a row in registers.
// Backward (deterministic, no atomics): a persistent grid of CTAs walks rows; each keeps its dW/dB
// partial in shared memory (bwd_row) or registers (bwd_split_apply) and writes one fp32 partial
// row to a (parts × N) workspace; bwd_finalize sums the parts in index order.
//
// Statistics are fp32: RMSNorm rstd = 1/sqrt(Σx²/N + eps); LayerNorm mean, then Σ(x−mean)² in a
// second pass over the registers (never E[x²]−μ²). 64-bit indexing throughout; grids stride over
// rows, so any M up to 2^31−1 works with a bounded grid.
#pragma once
#include "nk_common.cuh"

namespace nk {

struct Flags {
    bool ln, w, b, res, stats;
    NK_DEVICE explicit Flags(int f)
        : ln(f & NK_F_LN), w(f & NK_F_WEIGHT), b(f & NK_F_BIAS), res(f & NK_F_RESIDUAL), stats(f & NK_F_STATS) {}
};

// ---------------------------------------------------------------------------------------------
// Forward, one row per group of threads.
template <int VEC>
NK_DEVICE void fwd_row(const NkFwdParams& p) {
    constexpr int KC = VEC == 8 ? NK_FWD_ROW_KC_V8 : NK_FWD_ROW_KC_V1;
    NK_SHARED float scratch[NK_ROW_MAX_THREADS / NK_WARP];
    const Flags f(p.flags);
    const int G = p.group, rpc = p.rpc, tid = nk_tid();
    const int t = tid % G, g = tid / G;
    const int64_t nvec = p.n / VEC;
    const int cdt = f.res ? p.dt_r : p.dt_x;  // dtype of h as stored
    const float nf = (float)p.n;
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += nk_nblocks() * rpc) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        Raw<VEC> h[KC], r[KC];
        // Every load of the row is issued before any is used.
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                load_raw<VEC>(row_ptr(p.x, row, p.sx, p.dt_x), p.dt_x, c * VEC, h[k]);
                if (f.res) load_raw<VEC>(row_ptr(p.r, row, p.sr, p.dt_r), p.dt_r, c * VEC, r[k]);
            }
        }
        float acc[1] = {0.f};
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                float v[VEC];
                unpack<VEC>(p.dt_x, h[k], v);
                if (f.res) {
                    float rv[VEC];
                    unpack<VEC>(p.dt_r, r[k], rv);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) v[j] = round_to(p.dt_r, nk_add_rn(v[j], rv[j]));
                    pack<VEC>(p.dt_r, v, h[k]);
                    store_raw<VEC>(row_ptr_mut(p.r_out, row, p.sro, p.dt_r), p.dt_r, c * VEC, h[k]);
                }
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc[0] += f.ln ? v[j] : v[j] * v[j];
            }
        }
        group_sum<1>(acc, G, scratch);
        float mean = 0.f, var;
        if (f.ln) {
            mean = nk_div_rn(acc[0], nf);
            float a2[1] = {0.f};
#pragma unroll
            for (int k = 0; k < KC; ++k) {
                const int64_t c = (int64_t)k * G + t;
                if (active && c < nvec) {
                    float v[VEC];
                    unpack<VEC>(cdt, h[k], v);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        const float d = v[j] - mean;
                        a2[0] += d * d;
                    }
                }
            }
            group_sum<1>(a2, G, scratch);
            var = nk_div_rn(a2[0], nf);
        } else {
            var = nk_div_rn(acc[0], nf);
        }
        const float rstd = nk_rsqrt_rn(nk_add_rn(var, p.eps));
        if (f.stats && active && t == 0) {
            reinterpret_cast<float*>(p.rstd)[row] = rstd;
            if (f.ln) reinterpret_cast<float*>(p.mean)[row] = mean;
        }
        const FwdConsts cst = fwd_consts(p, mean, rstd);
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                float v[VEC], w[VEC], b[VEC], y[VEC];
                unpack<VEC>(cdt, h[k], v);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, c * VEC, w);
                if (f.b) load<VEC>(reinterpret_cast<const void*>(p.b), p.dt_w, c * VEC, b);
#pragma unroll
                for (int j = 0; j < VEC; ++j) y[j] = fwd_out(cst, v[j], f.w ? w[j] : 0.f, f.b ? b[j] : 0.f);
                store<VEC>(row_ptr_mut(p.y, row, p.sy, p.dt_y), p.dt_y, c * VEC, y);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Forward, split rows: partial statistics per (row, chunk).
template <int VEC>
NK_DEVICE void fwd_split_stats(const NkFwdParams& p) {
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / VEC;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float scratch[T / NK_WARP];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S;
    const int cdt = f.res ? p.dt_r : p.dt_x;
    float* ws = reinterpret_cast<float*>(p.ws);
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, base = (tile - row * S) * C;
        Raw<VEC> h[KV], r[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                load_raw<VEC>(row_ptr(p.x, row, p.sx, p.dt_x), p.dt_x, e, h[k]);
                if (f.res) load_raw<VEC>(row_ptr(p.r, row, p.sr, p.dt_r), p.dt_r, e, r[k]);
            }
        }
        float acc[1] = {0.f};
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                float v[VEC];
                unpack<VEC>(p.dt_x, h[k], v);
                if (f.res) {
                    float rv[VEC];
                    unpack<VEC>(p.dt_r, r[k], rv);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) v[j] = round_to(p.dt_r, nk_add_rn(v[j], rv[j]));
                    pack<VEC>(p.dt_r, v, h[k]);
                    store_raw<VEC>(row_ptr_mut(p.r_out, row, p.sro, p.dt_r), p.dt_r, e, h[k]);
                }
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc[0] += f.ln ? v[j] : v[j] * v[j];
            }
        }
        group_sum<1>(acc, T, scratch);
        float out0 = acc[0], out1 = 0.f;
        if (f.ln) {
            const int64_t cnt = p.n - base < C ? p.n - base : C;
            const float mean_c = nk_div_rn(acc[0], (float)cnt);
            float a2[1] = {0.f};
#pragma unroll
            for (int k = 0; k < KV; ++k) {
                const int64_t e = base + ((int64_t)k * T + t) * VEC;
                if (e < p.n) {
                    float v[VEC];
                    unpack<VEC>(cdt, h[k], v);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        const float d = v[j] - mean_c;
                        a2[0] += d * d;
                    }
                }
            }
            group_sum<1>(a2, T, scratch);
            out0 = mean_c;
            out1 = a2[0];
        }
        if (t == 0) {
            ws[tile * 2] = out0;
            ws[tile * 2 + 1] = out1;
        }
    }
}

// Combines a row's chunk partials in chunk order: (mean, rstd).
NK_DEVICE void split_row_stats(const NkFwdParams& p, const float* part, float& mean, float& rstd) {
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    const int64_t S = p.nsplit;
    const float nf = (float)p.n;
    if (!(p.flags & NK_F_LN)) {
        float ss = 0.f;
        for (int64_t i = 0; i < S; ++i) ss += part[2 * i];
        mean = 0.f;
        rstd = nk_rsqrt_rn(nk_add_rn(nk_div_rn(ss, nf), p.eps));
    } else {
        float na = (float)(p.n < C ? p.n : C), ma = part[0], m2 = part[1];
        for (int64_t i = 1; i < S; ++i) {
            const int64_t rest = p.n - i * C;
            chan_combine(na, ma, m2, (float)(rest < C ? rest : C), part[2 * i], part[2 * i + 1]);
        }
        mean = ma;
        rstd = nk_rsqrt_rn(nk_add_rn(nk_div_rn(m2, nf), p.eps));
    }
}

// Forward, split rows: y from the combined statistics.
template <int VEC>
NK_DEVICE void fwd_split_apply(const NkFwdParams& p) {
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / VEC;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float stat[2];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S;
    const int cdt = f.res ? p.dt_r : p.dt_x;
    const uint64_t hbase = f.res ? p.r_out : p.x;
    const int64_t hstride = f.res ? p.sro : p.sx;
    const float* ws = reinterpret_cast<const float*>(p.ws);
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, s = tile - row * S, base = s * C;
        Raw<VEC> h[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) load_raw<VEC>(row_ptr(hbase, row, hstride, cdt), cdt, e, h[k]);
        }
        if (t == 0) {
            float mean, rstd;
            split_row_stats(p, ws + row * S * 2, mean, rstd);
            stat[0] = mean;
            stat[1] = rstd;
            if (f.stats && s == 0) {
                reinterpret_cast<float*>(p.rstd)[row] = rstd;
                if (f.ln) reinterpret_cast<float*>(p.mean)[row] = mean;
            }
        }
        nk_sync();
        const FwdConsts cst = fwd_consts(p, stat[0], stat[1]);
        nk_sync();
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                float v[VEC], w[VEC], b[VEC], y[VEC];
                unpack<VEC>(cdt, h[k], v);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, e, w);
                if (f.b) load<VEC>(reinterpret_cast<const void*>(p.b), p.dt_w, e, b);
#pragma unroll
                for (int j = 0; j < VEC; ++j) y[j] = fwd_out(cst, v[j], f.w ? w[j] : 0.f, f.b ? b[j] : 0.f);
                store<VEC>(row_ptr_mut(p.y, row, p.sy, p.dt_y), p.dt_y, e, y);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Backward. x̂ = (x − mean)·rstd, g = dy·(w + offset) (dy without a weight);
// RMSNorm dx = rstd·(g − x̂·mean(g·x̂)); LayerNorm dx = rstd·(g − mean(g) − x̂·mean(g·x̂));
// plus d_residual_out; dw += dy·x̂, db += dy. All fp32, one rounding at each store.

struct BwdRow {
    float mean, rstd;
};

NK_DEVICE BwdRow bwd_row_stats(const NkBwdParams& p, int64_t row) {
    BwdRow r;
    r.rstd = reinterpret_cast<const float*>(p.rstd)[row];
    r.mean = (p.flags & NK_F_LN) ? reinterpret_cast<const float*>(p.mean)[row] : 0.f;
    return r;
}

// Backward, one row per group of threads; dW/dB partials of each group in shared memory.
template <int VEC>
NK_DEVICE void bwd_row(const NkBwdParams& p) {
    constexpr int KC = VEC == 8 ? NK_BWD_ROW_KC_V8 : NK_BWD_ROW_KC_V1;
    NK_SHARED float scratch[2 * NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(smem);
    const Flags f(p.flags);
    const int G = p.group, rpc = p.rpc, tid = nk_tid();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n, nvec = n / VEC;
    const int K = (int)((nvec + G - 1) / G);
    // Accumulator layout per group: [acc][k][j][t], so a warp's lanes touch consecutive words.
    const int64_t region = (int64_t)K * VEC * G;
    const int nacc = (f.w ? 1 : 0) + (f.b ? 1 : 0);
    float* accw = reinterpret_cast<float*>(smem) + (int64_t)g * nacc * region;
    float* accb = accw + (f.w ? region : 0);
    for (int i = t; i < nacc * region; i += G) accw[i] = 0.f;
    const float nf = (float)n;
    for (int64_t row0 = nk_bid() * rpc; row0 < p.m; row0 += nk_nblocks() * rpc) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        BwdRow st = {0.f, 0.f};
        Raw<VEC> xr[KC], dyr[KC];
        if (active) st = bwd_row_stats(p, row);
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                load_raw<VEC>(row_ptr(p.x, row, p.sx, p.dt_x), p.dt_x, c * VEC, xr[k]);
                load_raw<VEC>(row_ptr(p.dy, row, p.sdy, p.dt_y), p.dt_y, c * VEC, dyr[k]);
            }
        }
        float a[2] = {0.f, 0.f};
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                float xv[VEC], dv[VEC], w[VEC];
                unpack<VEC>(p.dt_x, xr[k], xv);
                unpack<VEC>(p.dt_y, dyr[k], dv);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, c * VEC, w);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    const float xh = (xv[j] - st.mean) * st.rstd;
                    const float gg = f.w ? dv[j] * (w[j] + p.offset) : dv[j];
                    a[0] += gg * xh;
                    a[1] += gg;
                }
            }
        }
        group_sum<2>(a, G, scratch);
        const float c1 = nk_div_rn(a[0], nf);
        const float c2 = f.ln ? nk_div_rn(a[1], nf) : 0.f;
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int64_t c = (int64_t)k * G + t;
            if (active && c < nvec) {
                float xv[VEC], dv[VEC], w[VEC], dr[VEC], dx[VEC];
                unpack<VEC>(p.dt_x, xr[k], xv);
                unpack<VEC>(p.dt_y, dyr[k], dv);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, c * VEC, w);
                if (f.res) load<VEC>(row_ptr(p.dres, row, p.sdres, p.dt_y), p.dt_y, c * VEC, dr);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    const float xh = (xv[j] - st.mean) * st.rstd;
                    const float gg = f.w ? dv[j] * (w[j] + p.offset) : dv[j];
                    float d = st.rstd * (gg - c2 - xh * c1);
                    if (f.res) d += dr[j];
                    dx[j] = d;
                    const int64_t ai = ((int64_t)k * VEC + j) * G + t;
                    if (f.w) accw[ai] += dv[j] * xh;
                    if (f.b) accb[ai] += dv[j];
                }
                store<VEC>(row_ptr_mut(p.dx, row, p.sdx, p.dt_y), p.dt_y, c * VEC, dx);
            }
        }
    }
    if (nacc == 0) return;
    // The CTA's partial row: its groups summed in group order.
    nk_sync();
    const int bd = nk_bdim();
    const int64_t stride_g = (int64_t)nacc * region;
    for (int64_t e = tid; e < n; e += bd) {
        const int64_t c = e / VEC, j = e - c * VEC, k = c / G, tt = c - k * G;
        const int64_t ai = (k * VEC + j) * G + tt;
        const float* base = reinterpret_cast<const float*>(smem);
        if (f.w) {
            float s = 0.f;
            for (int gg = 0; gg < rpc; ++gg) s += base[gg * stride_g + ai];
            reinterpret_cast<float*>(p.ws_dw)[nk_bid() * n + e] = s;
        }
        if (f.b) {
            float s = 0.f;
            const int64_t off = f.w ? region : 0;
            for (int gg = 0; gg < rpc; ++gg) s += base[gg * stride_g + off + ai];
            reinterpret_cast<float*>(p.ws_db)[nk_bid() * n + e] = s;
        }
    }
}

// Backward, split rows: per (row, chunk) partial sums of g·x̂ and g.
template <int VEC>
NK_DEVICE void bwd_split_stats(const NkBwdParams& p) {
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / VEC;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float scratch[2 * T / NK_WARP];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S;
    float* ws = reinterpret_cast<float*>(p.ws_stats);
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, base = (tile - row * S) * C;
        const BwdRow st = bwd_row_stats(p, row);
        Raw<VEC> xr[KV], dyr[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                load_raw<VEC>(row_ptr(p.x, row, p.sx, p.dt_x), p.dt_x, e, xr[k]);
                load_raw<VEC>(row_ptr(p.dy, row, p.sdy, p.dt_y), p.dt_y, e, dyr[k]);
            }
        }
        float a[2] = {0.f, 0.f};
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                float xv[VEC], dv[VEC], w[VEC];
                unpack<VEC>(p.dt_x, xr[k], xv);
                unpack<VEC>(p.dt_y, dyr[k], dv);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, e, w);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    const float xh = (xv[j] - st.mean) * st.rstd;
                    const float gg = f.w ? dv[j] * (w[j] + p.offset) : dv[j];
                    a[0] += gg * xh;
                    a[1] += gg;
                }
            }
        }
        group_sum<2>(a, T, scratch);
        if (t == 0) {
            ws[tile * 2] = a[0];
            ws[tile * 2 + 1] = a[1];
        }
    }
}

// Backward, split rows: dx for chunk blockIdx.x of rows blockIdx.y, blockIdx.y + gridDim.y, ...;
// the chunk's dW/dB partial stays in registers and is written as partial row blockIdx.y.
template <int VEC>
NK_DEVICE void bwd_split_apply(const NkBwdParams& p) {
    constexpr int T = NK_SPLIT_THREADS, E = NK_SPLIT_ELEMS, KV = NK_SPLIT_ELEMS / VEC;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float cs[2];
    const Flags f(p.flags);
    const int t = nk_tid();
    const int64_t S = p.nsplit, s = nk_bid(), base = s * C;
    const float nf = (float)p.n;
    const float* ws = reinterpret_cast<const float*>(p.ws_stats);
    float dwa[E], dba[E];
#pragma unroll
    for (int i = 0; i < E; ++i) dwa[i] = dba[i] = 0.f;
    for (int64_t row = nk_bid_y(); row < p.m; row += nk_nblocks_y()) {
        const BwdRow st = bwd_row_stats(p, row);
        Raw<VEC> xr[KV], dyr[KV];
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                load_raw<VEC>(row_ptr(p.x, row, p.sx, p.dt_x), p.dt_x, e, xr[k]);
                load_raw<VEC>(row_ptr(p.dy, row, p.sdy, p.dt_y), p.dt_y, e, dyr[k]);
            }
        }
        if (t == 0) {
            const float* part = ws + row * S * 2;
            float s1 = 0.f, s2 = 0.f;
            for (int64_t i = 0; i < S; ++i) {
                s1 += part[2 * i];
                s2 += part[2 * i + 1];
            }
            cs[0] = nk_div_rn(s1, nf);
            cs[1] = f.ln ? nk_div_rn(s2, nf) : 0.f;
        }
        nk_sync();
        const float c1 = cs[0], c2 = cs[1];
        nk_sync();
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * VEC;
            if (e < p.n) {
                float xv[VEC], dv[VEC], w[VEC], dr[VEC], dx[VEC];
                unpack<VEC>(p.dt_x, xr[k], xv);
                unpack<VEC>(p.dt_y, dyr[k], dv);
                if (f.w) load<VEC>(reinterpret_cast<const void*>(p.w), p.dt_w, e, w);
                if (f.res) load<VEC>(row_ptr(p.dres, row, p.sdres, p.dt_y), p.dt_y, e, dr);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    const float xh = (xv[j] - st.mean) * st.rstd;
                    const float gg = f.w ? dv[j] * (w[j] + p.offset) : dv[j];
                    float d = st.rstd * (gg - c2 - xh * c1);
                    if (f.res) d += dr[j];
                    dx[j] = d;
                    dwa[k * VEC + j] += dv[j] * xh;
                    dba[k * VEC + j] += dv[j];
                }
                store<VEC>(row_ptr_mut(p.dx, row, p.sdx, p.dt_y), p.dt_y, e, dx);
            }
        }
    }
    const int64_t part = nk_bid_y();
#pragma unroll
    for (int k = 0; k < KV; ++k) {
        const int64_t e = base + ((int64_t)k * T + t) * VEC;
        if (e < p.n) {
            float vw[VEC], vb[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                vw[j] = dwa[k * VEC + j];
                vb[j] = dba[k * VEC + j];
            }
            if (f.w) store<VEC>(reinterpret_cast<float*>(p.ws_dw) + part * p.n, NK_DT_F32, e, vw);
            if (f.b) store<VEC>(reinterpret_cast<float*>(p.ws_db) + part * p.n, NK_DT_F32, e, vb);
        }
    }
}

// dw[j] = Σ_parts ws_dw[part][j] in part order (and db), converted to the weight's dtype.
// A CTA takes NK_WARP columns; its warps take interleaved parts, then warp sums add in warp order.
template <int VEC>
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
            float one[1];
            if (f.w) {
                one[0] = tw;
                store<1>(reinterpret_cast<void*>(p.dw), p.dt_w, col, one);
            }
            if (f.b) {
                one[0] = tb;
                store<1>(reinterpret_cast<void*>(p.db), p.dt_w, col, one);
            }
        }
        nk_sync();
    }
}

}  // namespace nk
