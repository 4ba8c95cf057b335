// Row kernels (fwd_row, bwd_row): one row per group of threads, rows staged in shared memory.
#pragma once
#include "nk_base.cuh"

namespace nk {

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

}  // namespace nk
