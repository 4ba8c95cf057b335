// normkit row-batch backward (CUDA): 16-bit rows of 512 < N ≤ 2048 (one 8-element chunk per
// thread, N ≤ 8·G) at every batch size. The register kernels (bwd_reg) keep one row per group in
// flight there, and at small M their (grid × N) partial rows cost as much as the rows themselves.
//
// Mapping: a group of G threads (a power of two, G ≥ ⌈N/8⌉) takes R consecutive rows at a time,
// thread t owning chunk t of each: the R rows' loads are all issued before the first use (R times
// the bytes in flight of bwd_reg for the same registers), one group_sum of 2R values serves the R
// rows, then dx of the R rows is written and dy·x̂, dy are added to the thread's dW/dB partial in
// row order. Groups walk batches (persistent CTAs of `rpc` groups); at the end a CTA's groups are
// summed in group order through shared memory into one fp32 partial row of the (grid × N)
// workspace. Same per-row arithmetic and reduction order as bwd_reg at the same G (group_sum_nb
// with the group size fixed at compile time).
//
// Finalize: nk_bwd_finalize_wide after it, launched as a programmatic dependent launch (the host's
// `launch_pdl`): its grid is set up while this kernel's CTAs finish, and it waits for this grid's
// completion (griddepcontrol.wait) before reading a partial row. This kernel triggers it once a
// CTA has walked its rows. Tried and withdrawn (H100, 2026-11-22): summing the partial rows
// in-kernel after a grid barrier (cooperative launch, integer ticket) ran 4–5 points slower at
// 4096×1024 than the second kernel.
#pragma once

namespace nk {

// Rows per thread of a row-batch kernel: SPEC bits 7..10 (SPEC = DT + 4·LN + 8·RES + 128·R
// + 2048·(G = 256)); the group size is compile-time too: 128 threads (N ≤ 1024) or 256 (N ≤ 2048).
template <int SPEC>
constexpr int ROWS_R = (SPEC >> 7) & 15;
template <int SPEC>
constexpr int ROWS_G = (SPEC & 2048) ? 256 : 128;

template <bool ALIGNED, int SPEC>
NK_DEVICE void bwd_rows(const NkBwdParams& p0) {
    static_assert(ALIGNED, "row-batch kernels take 16-byte layouts only");
    constexpr int DT = SPEC & 3;
    static_assert(DT != NK_DT_F32, "row-batch kernels are 16-bit");
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr int R = ROWS_R<SPEC>;
    static_assert(R >= 1 && R <= 8, "rows per thread");
    const NkBwdParams p = specialise<DT>(p0);
    // Launched as a programmatic dependent (PDL): nothing is read or written before the
    // previous kernel of the stream has completed.
    nk_grid_dep_wait();
    NK_SHARED float scratch[2][2 * R * NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(smem);
    Flags f(p.flags);
    f.ln = LN;
    f.res = RES;
    constexpr int G = ROWS_G<SPEC>;
    const int rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n, m = p.m;
    const int nch = (int)(n / CH);
    const bool own = t < nch;
    const int64_t e = (int64_t)t * CH;
    const float nf = (float)n;
    float wo[CH];
#pragma unroll
    for (int j = 0; j < CH; ++j) wo[j] = 1.f;
    if (p.w != 0 && own) {
        Raw wr;
        load_chunk<true, true>(reinterpret_cast<const void*>(p.w), DT, e, n, wr);
        bwd_weight<true>(p, f, wr, wo);
    }
    float dwa[CH], dba[CH];
#pragma unroll
    for (int j = 0; j < CH; ++j) dwa[j] = dba[j] = 0.f;
    int par = 0;
    const int64_t step = nk_nblocks() * rpc;
    for (int64_t b0 = nk_bid() * rpc; b0 * R < m; b0 += step) {
        const int64_t r0 = (b0 + g) * R;
        Raw xr[R], dyr[R], drr[R];
        BwdRow st[R];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int64_t row = r0 + i;
            if (row < m && own) {
                load_chunk<true, true>(row_ptr(p.x, row, p.sx, DT), DT, e, n, xr[i]);
                load_chunk<true, true>(row_ptr(p.dy, row, p.sdy, DT), DT, e, n, dyr[i]);
                if (RES) load_chunk<true, true>(row_ptr(p.dres, row, p.sdres, DT), DT, e, n, drr[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
            st[i].mean = st[i].rstd = 0.f;
            if (r0 + i < m) st[i] = bwd_row_stats(p, r0 + i);
        }
        float a[2 * R];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            float ai[2] = {0.f, 0.f};
            if (r0 + i < m && own) bwd_chunk_sums_w<true>(p, f, st[i], xr[i], dyr[i], wo, ai);
            a[2 * i] = ai[0];
            a[2 * i + 1] = ai[1];
        }
        group_sum_nb<2 * R, G>(a, G, scratch[par]);
        par ^= 1;
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int64_t row = r0 + i;
            if (row < m && own) {
                const float c1 = nk_div_rn(a[2 * i], nf);
                const float c2 = LN ? nk_div_rn(a[2 * i + 1], nf) : 0.f;
                float dwv[CH], dbv[CH];
                bwd_chunk_dx_w<true, true>(p, f, st[i], xr[i], dyr[i], wo, drr[i], row, e, c1, c2, dwv, dbv);
#pragma unroll
                for (int j = 0; j < CH; ++j) {
                    dwa[j] += dwv[j];
                    if (LN) dba[j] += dbv[j];
                }
            }
        }
    }
    // Every row of this CTA is written: the finalize grid may be set up (it still waits for this
    // grid to complete before reading).
    nk_grid_dep_launch();
    // The CTA's partial rows: groups in group order through shared memory (rpc·N floats per
    // accumulator), written by group 0 with 16-byte stores.
    const bool want_b = LN && f.b;
    if (!f.w && !want_b) return;
    float* red = reinterpret_cast<float*>(smem);
    if (rpc > 1) {
        nk_sync();
        if (own) {
            float4* dw4 = reinterpret_cast<float4*>(red + (int64_t)g * n + e);
            float4* db4 = reinterpret_cast<float4*>(red + (int64_t)(rpc + g) * n + e);
            dw4[0] = make_float4(dwa[0], dwa[1], dwa[2], dwa[3]);
            dw4[1] = make_float4(dwa[4], dwa[5], dwa[6], dwa[7]);
            if (want_b) {
                db4[0] = make_float4(dba[0], dba[1], dba[2], dba[3]);
                db4[1] = make_float4(dba[4], dba[5], dba[6], dba[7]);
            }
        }
        nk_sync();
        if (g == 0 && own) {
            for (int gg = 1; gg < rpc; ++gg) {
#pragma unroll
                for (int j = 0; j < CH; ++j) {
                    dwa[j] += red[(int64_t)gg * n + e + j];
                    if (want_b) dba[j] += red[(int64_t)(rpc + gg) * n + e + j];
                }
            }
        }
    }
    if (g == 0 && own) {
        if (f.w) store<true, false>(reinterpret_cast<float*>(p.ws_dw) + nk_bid() * n, NK_DT_F32, e, n, dwa);
        if (want_b) store<true, false>(reinterpret_cast<float*>(p.ws_db) + nk_bid() * n, NK_DT_F32, e, n, dba);
    }
}

}  // namespace nk
