// Split-row kernels (any N): per-chunk partial statistics, a per-row reduce, then the apply;
// forward and backward.
#pragma once
#include "nk_base.cuh"

namespace nk {

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

}  // namespace nk
