// Finalize kernels: dW / dB from the backward's fp32 partial rows, summed in a fixed order.
#pragma once
#include "nk_base.cuh"

namespace nk {

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

}  // namespace nk
