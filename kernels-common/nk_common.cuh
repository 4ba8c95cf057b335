// normkit vendor-neutral device code: dtype conversion, 16-byte chunk loads/stores, group
// reductions templated on nothing but the platform's NK_WARP, the forward output formula of the
// three casting modes and the combination of split-row statistics.
//
// Include a platform header first (kernels-cuda/platform.cuh, kernels-hip/platform.h): it defines
// NK_DEVICE, NK_WARP, nk_u128, nk_shfl_xor, nk_sync, nk_tid/nk_bdim, the f16/bf16 conversions and
// the *_rn arithmetic. Nothing here names a vendor intrinsic, the literal warp width or a mask.
#pragma once
#ifndef NK_WARP
#error "include the platform header before nk_common.cuh"
#endif
#include "nk_params.h"

namespace nk {

NK_DEVICE float from16(int dt, uint32_t h) { return dt == NK_DT_BF16 ? nk_bf16_to_f32(h & 0xffffu) : nk_f16_to_f32(h & 0xffffu); }
NK_DEVICE uint32_t to16(int dt, float v) { return dt == NK_DT_BF16 ? nk_f32_to_bf16(v) : nk_f32_to_f16(v); }

// The value a tensor of dtype `dt` would hold for `v` (round to nearest even).
NK_DEVICE float round_to(int dt, float v) { return dt == NK_DT_F32 ? v : from16(dt, to16(dt, v)); }

NK_DEVICE int64_t esize(int dt) { return dt == NK_DT_F32 ? 4 : 2; }

// Address of element (row, 0) of a strided view of dtype dt.
NK_DEVICE const void* row_ptr(uint64_t base, int64_t row, int64_t stride, int dt) {
    return reinterpret_cast<const void*>(base + (uint64_t)(row * stride * esize(dt)));
}
NK_DEVICE void* row_ptr_mut(uint64_t base, int64_t row, int64_t stride, int dt) {
    return reinterpret_cast<void*>(base + (uint64_t)(row * stride * esize(dt)));
}

// A chunk: 8 consecutive elements of any dtype, as raw bits (one 16-byte vector for f16/bf16, two
// for f32). Every kernel assigns chunks to threads the same way whether the chunk is loaded with
// 16-byte accesses (ALIGNED: the host checked that N, the strides and the view starts allow it) or
// element by element (any layout; elements at or past N read as zero and are never stored), so the
// two paths add the same numbers in the same order and agree bit for bit.
// NARROW promises the dtype is f16/bf16: the f32 branch and the second register set disappear.
constexpr int CH = 8;
struct Raw {
    nk_u128 q[2];
};

template <bool ALIGNED, bool NARROW>
NK_DEVICE void load_chunk(const void* row, int dt, int64_t e, int64_t n, Raw& r) {
    if (!NARROW && dt == NK_DT_F32) {
        const float* p = static_cast<const float*>(row) + e;
        if (ALIGNED) {
            r.q[0] = nk_load_g128(p);
            r.q[1] = nk_load_g128(p + 4);
        } else {
            uint32_t w[CH];
#pragma unroll
            for (int j = 0; j < CH; ++j) w[j] = e + j < n ? nk_load_g32(p + j) : 0u;
            r.q[0].x = w[0]; r.q[0].y = w[1]; r.q[0].z = w[2]; r.q[0].w = w[3];
            r.q[1].x = w[4]; r.q[1].y = w[5]; r.q[1].z = w[6]; r.q[1].w = w[7];
        }
    } else {
        const uint16_t* p = static_cast<const uint16_t*>(row) + e;
        if (ALIGNED) {
            r.q[0] = nk_load_g128(p);
        } else {
            uint32_t h[CH];
#pragma unroll
            for (int j = 0; j < CH; ++j) h[j] = e + j < n ? nk_load_g16(p + j) : 0u;
            r.q[0].x = h[0] | (h[1] << 16); r.q[0].y = h[2] | (h[3] << 16);
            r.q[0].z = h[4] | (h[5] << 16); r.q[0].w = h[6] | (h[7] << 16);
        }
    }
}

template <bool ALIGNED, bool NARROW>
NK_DEVICE void store_chunk(void* row, int dt, int64_t e, int64_t n, const Raw& r) {
    if (!NARROW && dt == NK_DT_F32) {
        float* p = static_cast<float*>(row) + e;
        if (ALIGNED) {
            nk_store_g128(p, r.q[0]);
            nk_store_g128(p + 4, r.q[1]);
        } else {
            const uint32_t w[CH] = {r.q[0].x, r.q[0].y, r.q[0].z, r.q[0].w, r.q[1].x, r.q[1].y, r.q[1].z, r.q[1].w};
#pragma unroll
            for (int j = 0; j < CH; ++j)
                if (e + j < n) nk_store_g32(p + j, w[j]);
        }
    } else {
        uint16_t* p = static_cast<uint16_t*>(row) + e;
        if (ALIGNED) {
            nk_store_g128(p, r.q[0]);
        } else {
            const uint32_t w[4] = {r.q[0].x, r.q[0].y, r.q[0].z, r.q[0].w};
#pragma unroll
            for (int j = 0; j < CH; ++j)
                if (e + j < n) nk_store_g16(p + j, (w[j / 2] >> (16 * (j % 2))) & 0xffffu);
        }
    }
}

// Shared-memory staging of a chunk: `slot` holds 16 (NARROW) or 32 bytes. ALIGNED copies go
// asynchronously (complete them with nk_copy_async_wait); the others load element by element.
template <bool ALIGNED, bool NARROW>
NK_DEVICE void stage_chunk(void* slot, const void* row, int dt, int64_t e, int64_t n) {
    if (ALIGNED) {
        if (!NARROW && dt == NK_DT_F32) {
            const float* p = static_cast<const float*>(row) + e;
            nk_copy16_async(slot, p);
            nk_copy16_async(static_cast<nk_u128*>(slot) + 1, p + 4);
        } else {
            nk_copy16_async(slot, static_cast<const uint16_t*>(row) + e);
        }
    } else {
        Raw r;
        load_chunk<false, NARROW>(row, dt, e, n, r);
        static_cast<nk_u128*>(slot)[0] = r.q[0];
        if (!NARROW && dt == NK_DT_F32) static_cast<nk_u128*>(slot)[1] = r.q[1];
    }
}
template <bool NARROW>
NK_DEVICE void slot_read(const void* slot, int dt, Raw& r) {
    r.q[0] = static_cast<const nk_u128*>(slot)[0];
    if (!NARROW && dt == NK_DT_F32) r.q[1] = static_cast<const nk_u128*>(slot)[1];
}
template <bool NARROW>
NK_DEVICE void slot_write(void* slot, int dt, const Raw& r) {
    static_cast<nk_u128*>(slot)[0] = r.q[0];
    if (!NARROW && dt == NK_DT_F32) static_cast<nk_u128*>(slot)[1] = r.q[1];
}

template <bool NARROW>
NK_DEVICE void unpack(int dt, const Raw& r, float (&v)[CH]) {
    if (!NARROW && dt == NK_DT_F32) {
        v[0] = nk_u32_as_f32(r.q[0].x); v[1] = nk_u32_as_f32(r.q[0].y);
        v[2] = nk_u32_as_f32(r.q[0].z); v[3] = nk_u32_as_f32(r.q[0].w);
        v[4] = nk_u32_as_f32(r.q[1].x); v[5] = nk_u32_as_f32(r.q[1].y);
        v[6] = nk_u32_as_f32(r.q[1].z); v[7] = nk_u32_as_f32(r.q[1].w);
    } else {
        const uint32_t w[4] = {r.q[0].x, r.q[0].y, r.q[0].z, r.q[0].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v[2 * j] = from16(dt, w[j]);
            v[2 * j + 1] = from16(dt, w[j] >> 16);
        }
    }
}

template <bool NARROW>
NK_DEVICE void pack(int dt, const float (&v)[CH], Raw& r) {
    if (!NARROW && dt == NK_DT_F32) {
        r.q[0].x = nk_f32_as_u32(v[0]); r.q[0].y = nk_f32_as_u32(v[1]);
        r.q[0].z = nk_f32_as_u32(v[2]); r.q[0].w = nk_f32_as_u32(v[3]);
        r.q[1].x = nk_f32_as_u32(v[4]); r.q[1].y = nk_f32_as_u32(v[5]);
        r.q[1].z = nk_f32_as_u32(v[6]); r.q[1].w = nk_f32_as_u32(v[7]);
    } else {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = (to16(dt, v[2 * j]) & 0xffffu) | (to16(dt, v[2 * j + 1]) << 16);
        r.q[0].x = w[0]; r.q[0].y = w[1]; r.q[0].z = w[2]; r.q[0].w = w[3];
    }
}

template <bool ALIGNED, bool NARROW>
NK_DEVICE void load(const void* row, int dt, int64_t e, int64_t n, float (&v)[CH]) {
    Raw r;
    load_chunk<ALIGNED, NARROW>(row, dt, e, n, r);
    unpack<NARROW>(dt, r, v);
}
template <bool ALIGNED, bool NARROW>
NK_DEVICE void store(void* row, int dt, int64_t e, int64_t n, const float (&v)[CH]) {
    Raw r;
    pack<NARROW>(dt, v, r);
    store_chunk<ALIGNED, NARROW>(row, dt, e, n, r);
}

// One fp32 element (statistics, workspace, dW/dB): plain global accesses.
NK_DEVICE void store_one(void* p, int dt, int64_t i, float v) {
    if (dt == NK_DT_F32) nk_store_g32(static_cast<uint32_t*>(p) + i, nk_f32_as_u32(v));
    else nk_store_g16(static_cast<uint16_t*>(p) + i, to16(dt, v));
}

// Sums NV values over each group of G consecutive threads of the block (G a power of two, at most
// the block size); every thread gets its group's sums. Every thread of the block must call it with
// the same G (it synchronises the block when G > NK_WARP). `scratch` holds NV * blockDim / NK_WARP
// floats of shared memory.
//
// Order: a butterfly inside the warp (every lane ends with the bitwise same sum, since float
// addition is commutative), then the warps of a group in index order. It depends on G only, so a
// row's statistics never depend on how many rows share the block or the grid.
template <int NV>
NK_DEVICE void group_sum(float (&v)[NV], int G, float* scratch) {
    const int width = G < NK_WARP ? G : NK_WARP;
#pragma unroll
    for (int j = 0; j < NV; ++j)
        for (int o = width / 2; o > 0; o >>= 1) v[j] += nk_shfl_xor(v[j], o);
    if (G <= NK_WARP) return;
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP, nwarps = nk_bdim() / NK_WARP;
    if (lane == 0) {
#pragma unroll
        for (int j = 0; j < NV; ++j) scratch[j * nwarps + warp] = v[j];
    }
    nk_sync();
    const int wpg = G / NK_WARP, w0 = (tid / G) * wpg;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        float s = scratch[j * nwarps + w0];
        for (int i = 1; i < wpg; ++i) s += scratch[j * nwarps + w0 + i];
        v[j] = s;
    }
    nk_sync();
}

// group_sum without the trailing barrier (same additions in the same order): callers alternate
// between two scratch buffers, so the next call's writes never meet this call's reads (the call in
// between synchronises the block).
// GC > 0 fixes the group size at compile time (G is then ignored): the same additions in the same
// order, but the NV values' butterflies are interleaved and every loop unrolled, so their shuffle
// and shared-memory chains overlap instead of running one after another (the row-batch backward,
// kernels-cuda/rows.cuh, reduces 2R values at once; with run-time loops its SASS showed ~40
// dependent shuffle steps and ~30 dependent shared loads behind every batch of rows).
// LAT (latency-bound callers, the decode twins): G stays a run-time value (a power of two, as
// everywhere) but the loops are unrolled to their bounds and predicated — the butterfly's steps
// by o < G, the cross-warp sum up to LAT_WPG warps (a loop past them) — instead of loops whose
// invariants are set up before the row's loads and that branch after every shuffle. The same
// additions in the same order.
// MAX1: v[1] is combined by max (nk_fmax) instead of summed, beside v[0]'s sum in the same steps
// (the quantised twin's per-row sum of squares and max |x·w|: one reduction where it took two);
// v[0]'s additions are the same, in the same order, as with NV = 1.
constexpr int LAT_WPG = 8;
template <int NV, int GC = 0, bool LAT = false, bool MAX1 = false>
NK_DEVICE void group_sum_nb(float (&v)[NV], int G, float* scratch) {
    static_assert(!MAX1 || NV == 2, "MAX1: a sum and a max");
    auto comb = [](int j, float a, float b) -> float { return MAX1 && j == 1 ? nk_fmax(a, b) : a + b; };
    if constexpr (LAT) {
#pragma unroll
        for (int o = NK_WARP / 2; o > 0; o >>= 1)
            if (o < G) {
#pragma unroll
                for (int j = 0; j < NV; ++j) v[j] = comb(j, v[j], nk_shfl_xor(v[j], o));
            }
    } else if constexpr (GC > 0) {
        constexpr int W = GC < NK_WARP ? GC : NK_WARP;
#pragma unroll
        for (int o = W / 2; o > 0; o >>= 1)
#pragma unroll
            for (int j = 0; j < NV; ++j) v[j] = comb(j, v[j], nk_shfl_xor(v[j], o));
        G = GC;
    } else {
        const int width = G < NK_WARP ? G : NK_WARP;
#pragma unroll
        for (int j = 0; j < NV; ++j)
            for (int o = width / 2; o > 0; o >>= 1) v[j] = comb(j, v[j], nk_shfl_xor(v[j], o));
    }
    if (G <= NK_WARP) return;
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP, nwarps = nk_bdim() / NK_WARP;
    if (lane == 0) {
#pragma unroll
        for (int j = 0; j < NV; ++j) scratch[j * nwarps + warp] = v[j];
    }
    nk_sync();
    const int wpg = G / NK_WARP, w0 = (LAT ? tid >> nk_ilog2(G) : tid / G) * wpg;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        float s = scratch[j * nwarps + w0];
        if constexpr (LAT) {
#pragma unroll
            for (int i = 1; i < LAT_WPG; ++i)
                if (i < wpg) s = comb(j, s, scratch[j * nwarps + w0 + i]);
            for (int i = LAT_WPG; i < wpg; ++i) s = comb(j, s, scratch[j * nwarps + w0 + i]);
        } else {
            for (int i = 1; i < wpg; ++i) s = comb(j, s, scratch[j * nwarps + w0 + i]);
        }
        v[j] = s;
    }
}

// The sum over a group of 2G virtual threads that G threads hold two apiece (G a power of two):
// v[0] is virtual thread t's value, v[1] virtual thread G + t's. The additions of group_sum_nb
// over the 2G threads, in its order. G at least a warp: each virtual warp's butterfly (v[0]'s
// warps are the group's first G / 32, v[1]'s the next), then the left fold of the 2G / 32 warp
// sums from the first. SUB, G below a warp (2G ≤ 32 virtual threads, one butterfly): its first step
// (offset G) adds virtual threads t and G + t, the two values thread t holds (addition commutes:
// both virtual partners get the same bits), and the others run on the G threads. The half-thread
// forward (nk_reg.cuh, HALF) reduces a 4-chunk group's row with it: the same bits on half the
// threads.
template <bool SUB>
NK_DEVICE float group_sum_half(float (&v)[2], int G, float* scratch) {
    if constexpr (SUB) {
        float s = v[0] + v[1];
        for (int o = G / 2; o > 0; o >>= 1) s = s + nk_shfl_xor(s, o);
        return s;
    }
#pragma unroll
    for (int o = NK_WARP / 2; o > 0; o >>= 1) {
        v[0] = v[0] + nk_shfl_xor(v[0], o);
        v[1] = v[1] + nk_shfl_xor(v[1], o);
    }
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP, nwarps = nk_bdim() / NK_WARP;
    if (lane == 0) {
        scratch[warp] = v[0];
        scratch[nwarps + warp] = v[1];
    }
    nk_sync();
    const int wpg = G / NK_WARP, w0 = (tid >> nk_ilog2(G)) * wpg;
    float s = scratch[w0];
#pragma unroll
    for (int i = 1; i < LAT_WPG; ++i)
        if (i < wpg) s = s + scratch[w0 + i];
    for (int i = LAT_WPG; i < wpg; ++i) s = s + scratch[w0 + i];
#pragma unroll
    for (int i = 0; i < LAT_WPG; ++i)
        if (i < wpg) s = s + scratch[nwarps + w0 + i];
    for (int i = LAT_WPG; i < wpg; ++i) s = s + scratch[nwarps + w0 + i];
    return s;
}

// LayerNorm's statistics behind one barrier (nk_reg.cuh's plain forwards, CHAN). Each warp of a
// row's group sums its units' sums by group_sum_nb's butterfly, centres its elements on the warp's
// own mean m_w = s_w / n_w, and sums the squared deviations q_w by the same butterfly; after the
// group's one barrier the warps' (s_w, q_w) are folded by lanes — a butterfly over s, the row's
// mean μ = s / N, a butterfly over q_w + n_w·(m_w − μ)² (the parallel-axis identity): the squared
// deviations from μ. One barrier per row where the mean, then the deviations from it, took two;
// never E[x²] − μ². Where one warp holds the row, m_w is the row's mean and the result the two
// reductions' bit for bit; across warps the sum's order is the butterfly's (other mean bits).
// EQ: every warp holds the same power-of-two count n_w (whole chunks, 16-byte layouts): m_w is
// s_w times 1/n_w, the same bits as the quotient.

// The row's mean and Σ(x − mean)².
struct ChanStats {
    float mean, m2;
};

// The sum over the lanes whose offsets are below G (a power of two), offsets 16 down to 1:
// group_sum_nb's butterfly.
NK_DEVICE float warp_butterfly(float v, int G) {
#pragma unroll
    for (int o = NK_WARP / 2; o > 0; o >>= 1)
        if (o < G) v = v + nk_shfl_xor(v, o);
    return v;
}

// A warp's mean s / n (0 for a warp without elements); EQ: n is the constant count, a power of
// two, and the quotient the product by inv = 1 / n.
template <bool EQ>
NK_DEVICE float chan_mean(float s, float n, float inv) {
    if constexpr (EQ) return nk_mul_rn(s, inv);
    else return n > 0.f ? nk_div_rn(s, n) : 0.f;
}

// The fold across a group of G threads (more than a warp) of each warp's V units' (s, m, q, n),
// m = chan_mean(s, n): chan_put stores s and m (and n) from lane 0 of each warp — before the
// warp's centred pass, so that they leave the registers — chan_fold stores q, waits at the
// group's one barrier, and each warp folds the group's warps by lanes (lane j: unit warp j; V = 2:
// the half-thread forward's virtual warps, the first units' warps first, as group_sum_half
// numbers them) with two butterflies: the sum, then each warp's term around the row's mean. EQ: every warp holds `nweq` elements, not stored. No trailing barrier (callers alternate
// scratch buffers, as with group_sum_nb); scratch holds (EQ ? 3 : 4)·V·blockDim / NK_WARP floats:
// virtual warp u = v·nwarps + warp has s at [u], q at [V·nwarps + u], m at [2·V·nwarps + u], n at
// [3·V·nwarps + u].
template <bool EQ, int V>
NK_DEVICE void chan_put(const float (&s)[V], const float (&m)[V], const float (&n)[V], float* scratch) {
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP, nwarps = nk_bdim() / NK_WARP;
    if (lane == 0) {
#pragma unroll
        for (int v = 0; v < V; ++v) {
            scratch[v * nwarps + warp] = s[v];
            scratch[(2 * V + v) * nwarps + warp] = m[v];
            if constexpr (!EQ) scratch[(3 * V + v) * nwarps + warp] = n[v];
        }
    }
}
template <bool EQ, int V>
NK_DEVICE ChanStats chan_fold(const float (&q)[V], float nweq, int G, float nf, float* scratch) {
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP, nwarps = nk_bdim() / NK_WARP;
    if (lane == 0) {
#pragma unroll
        for (int v = 0; v < V; ++v) scratch[(V + v) * nwarps + warp] = q[v];
    }
    nk_sync();
    // By lanes: lane j < V·G / 32 takes the group's unit warp j (the first units' warps, then,
    // V = 2, the second units'), the others +0; a butterfly over the warp sums s, then the terms.
    const int lw = nk_ilog2(G) - nk_ilog2(NK_WARP), wpg = G / NK_WARP, w0 = (tid >> nk_ilog2(G)) * wpg;
    const bool mine = lane < V * wpg;
    const int u = (lane >> lw) * nwarps + w0 + (lane & (wpg - 1));
    const float sj = mine ? scratch[u] : 0.f;
    const float st = warp_butterfly(sj, NK_WARP);
    const float mu = nk_div_rn(st, nf);
    float tj = 0.f;
    if (mine) {
        const float nw = EQ ? nweq : scratch[3 * V * nwarps + u];
        const float e = nk_sub_rn(scratch[2 * V * nwarps + u], mu);
        tj = nk_add_rn(scratch[V * nwarps + u], nk_mul_rn(nk_mul_rn(e, e), nw));
    }
    return ChanStats{mu, warp_butterfly(tj, NK_WARP)};
}

// Everything the forward output formula needs besides the element, its weight and its bias.
struct FwdConsts {
    float mean, rstd;       // fp32 statistics (mean = 0 for RMSNorm), in every casting mode
    float offset;
    int casting, dt_in;
    bool ln, has_w, has_b;
};

NK_DEVICE FwdConsts fwd_consts(const NkFwdParams& p, float mean, float rstd) {
    FwdConsts c;
    c.mean = mean;
    c.rstd = rstd;
    c.offset = p.offset;
    c.casting = p.casting;
    c.dt_in = p.dt_x;
    c.ln = (p.flags & NK_F_LN) != 0;
    c.has_w = (p.flags & NK_F_WEIGHT) != 0;
    c.has_b = (p.flags & NK_F_BIAS) != 0;
    return c;
}

// y for one element h (the normalised input as stored), per the casting modes of desc.rs:
//   gemma: y = x̂·(w + offset) + b, all fp32, one rounding at the store;
//   llama: x̂ rounded to the input dtype before the weight multiply;
//   none:  every elementwise step rounded to the input dtype; the statistics stay fp32 (rounding
//          rstd to f16 overflows for a zero row with eps = 1e-12, and 0·inf = NaN).
// Explicit _rn operations keep the compiler from fusing steps the contract rounds separately.
NK_DEVICE float fwd_out(const FwdConsts& c, float h, float w, float b) {
    if (c.casting == NK_CAST_NONE) {
        const float d = c.ln ? round_to(c.dt_in, nk_sub_rn(h, c.mean)) : h;
        float y = round_to(c.dt_in, nk_mul_rn(d, c.rstd));
        if (c.has_w) y = round_to(c.dt_in, nk_mul_rn(y, round_to(c.dt_in, nk_add_rn(w, c.offset))));
        if (c.has_b) y = round_to(c.dt_in, nk_add_rn(y, b));
        return y;
    }
    float xh = nk_mul_rn(c.ln ? nk_sub_rn(h, c.mean) : h, c.rstd);
    if (c.casting == NK_CAST_LLAMA) xh = round_to(c.dt_in, xh);
    float y = c.has_w ? nk_mul_rn(xh, nk_add_rn(w, c.offset)) : xh;
    if (c.has_b) y = nk_add_rn(y, b);
    return y;
}

// Chan et al.'s pairwise combination of (count, mean, M2) partial statistics: exact in exact
// arithmetic and free of the cancellation of E[x²] − μ².
NK_DEVICE void chan_combine(float& n_a, float& mean_a, float& m2_a, float n_b, float mean_b, float m2_b) {
    const float n = n_a + n_b;
    const float delta = mean_b - mean_a;
    const float fb = n_b / n;
    mean_a = mean_a + delta * fb;
    m2_a = m2_a + m2_b + delta * delta * n_a * fb;
    n_a = n;
}

}  // namespace nk
