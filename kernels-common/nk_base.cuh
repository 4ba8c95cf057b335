// Shared by every kernel family: operand flags, the compile-time specialisation of the hot
// variants, the chunk statistics helpers, and the backward chunk math (the row, split and
// register backward all use it). Included through nk_norm.cuh.
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
// KEEP_Y: y keeps its own dtype code (a quantised forward's FP8 format, nk_fp8.cuh).
template <int DT, int CAST, bool KEEP_Y = false>
NK_DEVICE NkFwdParams specialise(const NkFwdParams& p0) {
    NkFwdParams p = p0;
    if (DT >= 0) {
        p.dt_x = p.dt_r = p.dt_w = DT;
        if (!KEEP_Y) p.dt_y = DT;
    }
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
// The same sums with every step's rounding fixed (explicit FMAs; fwd_reg_body's two-accumulator
// order): a contraction may pick either product of `acc + a·a + b·b` once the compiler folds the
// odd accumulator's −0 start, and two kernels meant to agree bit for bit then differ.
template <bool FULL>
NK_DEVICE void add_chunk_rn(float& acc, const float (&v)[CH], bool ln, int64_t e, int64_t n) {
    const int lim = FULL ? CH : chunk_len(e, n);
#pragma unroll
    for (int j = 0; j < CH; ++j)
        if (FULL || j < lim) acc = ln ? nk_add_rn(acc, v[j]) : nk_fma_rn(v[j], v[j], acc);
}
template <bool FULL>
NK_DEVICE void add_centred_rn(float& acc, const float (&v)[CH], float mean, int64_t e, int64_t n) {
    const int lim = FULL ? CH : chunk_len(e, n);
#pragma unroll
    for (int j = 0; j < CH; ++j)
        if (FULL || j < lim) {
            const float d = nk_sub_rn(v[j], mean);
            acc = nk_fma_rn(d, d, acc);
        }
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

}  // namespace nk
