// Quantised (FP8) forward: y_q = saturate_rne(y · scale) in one of four FP8 formats, with the
// optional amax = max|y| (before scaling), 1/scale, per-row dynamic scales and the transposed
// output yT (N × M). y is computed exactly as the other forward kernels compute it (fwd_out, all
// casting modes); only the store differs. Included through nk_norm.cuh.
//
// Kernels (all take NkFwdParams; the FP8 fields at its end):
//   fwd_q_row          a group of G threads per row, the row's K ≤ KMAX chunks held in registers
//                      (one HBM read of x), tiles of `tm` rows per CTA. Per tensor: one pass over
//                      the registers; per row: a max pass, a group max, then the quantising pass.
//                      NK_Q_TFUSED: the quantised tile is also kept in shared memory (tm rows ×
//                      tpitch bytes) and written transposed, 4×4-byte blocks per thread, so every
//                      store to yT is a 4-byte word and a warp's words fill whole 32-byte sectors.
//   fwd_q_split_amax   long rows (after fwd_split_stats / fwd_split_reduce), per row only: the
//                      max |y| of each (row, chunk) into ws_q.
//   fwd_q_split_apply  long rows: y from the reduced statistics, the row's scale from its chunk
//                      maxima (per row), quantised and stored.
//   fwd_q_transpose    yT from the row-major y_q (yT's way wherever the quantised twin's own
//                      tiles, nk_reg.cuh's SPEC + 2048, do not run; measured faster than this
//                      file's fused row-kernel tile, kernels-cuda/NOTES.md v8): 64 × 256-byte
//                      tiles staged in shared memory, written as fwd_q_row's fused tile is.
// amax: each CTA folds its threads' max |y| (NaN ignored: fmaxf) into one atomicMax on the bits of
// a zeroed word of the backend's, and the last CTA to arrive writes amax (q_amax_commit) — an
// integer max over non-negative floats, exact and order-independent, so still deterministic, and
// no memset before the kernel.
#pragma once
#include "nk_base.cuh"

namespace nk {

// The floor of a row's amax in per-row scaling: 2^-40 (normkit_core::FP8_ROW_AMAX_FLOOR).
constexpr float Q_ROW_AMAX_FLOOR = 9.094947017729282e-13f;

struct Fp8Fmt {
    int man, bias, max_code;
    bool fnuz;
    float max_finite;
};

NK_DEVICE Fp8Fmt fp8_fmt(int dt) {
    Fp8Fmt f;
    switch (dt) {
        case NK_DT_E4M3: f = Fp8Fmt{3, 7, 0x7E, false, 448.f}; break;
        case NK_DT_E5M2: f = Fp8Fmt{2, 15, 0x7B, false, 57344.f}; break;
        case NK_DT_E4M3FNUZ: f = Fp8Fmt{3, 8, 0x7F, true, 240.f}; break;
        default: f = Fp8Fmt{2, 16, 0x7F, true, 57344.f}; break;
    }
    return f;
}

// v rounded to nearest even in format dt, saturating (±max finite for finite overflow and
// infinities), NaN to NaN (0x7F | sign, or 0x80 in the fnuz formats, which have no −0: a negative
// value that rounds to zero is +0). Exact integer work on the bits, as normkit-core's fp8::encode:
// the quantum is 2^(max(e, emin) − man); the significand is shifted to it with round to nearest
// even on the bits shifted out, and ((max(e, emin) + bias − 1) << man) + q is the code (right for
// subnormals, normals and a carry into the next binade); saturation is a min on the code.
#ifndef NK_NOINLINE
#define NK_NOINLINE __attribute__((noinline))
#endif
// Out of line: the formats without an instruction are the rare path, and inlined eight times per
// chunk its temporaries raised the register allocation of every kernel (the hot e4m3 path
// included) past the occupancy the row kernels need.
__device__ NK_NOINLINE uint32_t fp8_encode_sw(int dt, float v) {
    const Fp8Fmt f = fp8_fmt(dt);
    const uint32_t bits = nk_f32_as_u32(v);
    const uint32_t sign = (bits >> 24) & 0x80u, a = bits & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return f.fnuz ? 0x80u : (0x7Fu | sign);
    uint32_t code = 0;
    if (a >= 0x00800000u) {  // f32 subnormals are far below half the smallest FP8 subnormal
        const int e = (int)(a >> 23) - 127, emin = 1 - f.bias;
        const int eff = e > emin ? e : emin;
        const uint32_t sig = (a & 0x007FFFFFu) | 0x00800000u;
        const int shift = 23 - f.man + (eff - e);
        if (shift <= 25) {
            uint32_t q = sig >> shift;
            const uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
            if (rem > half || (rem == half && (q & 1u))) ++q;
            const int c = ((eff + f.bias - 1) << f.man) + (int)q;
            code = (uint32_t)(c < f.max_code ? c : f.max_code);
        }
    }
    return (code == 0 && f.fnuz) ? 0u : (code | sign);
}

// Two values into two bytes (a in the low byte): the platform's conversion instruction where the
// format has one (nk_cvt_fp8x2), else the exact software conversion. Both give the same bits.
NK_DEVICE uint32_t fp8_pack2(int dt, float a, float b) {
    uint32_t o;
    if (nk_cvt_fp8x2(dt, a, b, o)) return o & 0xFFFFu;
    return fp8_encode_sw(dt, a) | (fp8_encode_sw(dt, b) << 8);
}

// A chunk's 8 values into 8 bytes (element 0 in the lowest byte of w[0]).
NK_DEVICE void fp8_pack8(int dt, const float (&v)[CH], uint32_t (&w)[2]) {
    w[0] = fp8_pack2(dt, v[0], v[1]) | (fp8_pack2(dt, v[2], v[3]) << 16);
    w[1] = fp8_pack2(dt, v[4], v[5]) | (fp8_pack2(dt, v[6], v[7]) << 16);
}

// Stores a chunk's 8 bytes at byte e of a row: one 8-byte store (ALIGNED: the row start is 8-byte
// aligned and N % 8 == 0), else byte by byte below N.
template <bool ALIGNED>
NK_DEVICE void store_q8(unsigned char* row, int64_t e, int64_t n, const uint32_t (&w)[2]) {
    if (ALIGNED) {
        nk_store_g64(row + e, w[0], w[1]);
    } else {
#pragma unroll
        for (int j = 0; j < CH; ++j)
            if (e + j < n) nk_store_g8(row + e + j, (w[j / 4] >> (8 * (j % 4))) & 0xFFu);
    }
}

// The warp's max of v (butterfly): every lane gets it.
NK_DEVICE float warp_max(float v) {
    for (int o = NK_WARP / 2; o > 0; o >>= 1) v = nk_fmax(v, nk_shfl_xor(v, o));
    return v;
}

// Max over each group of G consecutive threads (as group_sum_nb: alternate two scratch buffers).
NK_DEVICE void group_max_nb(float& v, int G, float* scratch) {
    const int width = G < NK_WARP ? G : NK_WARP;
    for (int o = width / 2; o > 0; o >>= 1) v = nk_fmax(v, nk_shfl_xor(v, o));
    if (G <= NK_WARP) return;
    const int tid = nk_tid();
    const int warp = tid / NK_WARP, lane = tid % NK_WARP;
    if (lane == 0) scratch[warp] = v;
    nk_sync();
    const int wpg = G / NK_WARP, w0 = (tid / G) * wpg;
    float s = scratch[w0];
    for (int i = 1; i < wpg; ++i) s = nk_fmax(s, scratch[w0 + i]);
    v = s;
}

// The CTA's max of v (every thread calls it; `scratch` holds blockDim / NK_WARP floats); thread 0
// gets the result. Ends with a barrier, so `scratch` may be reused.
NK_DEVICE float block_max(float v, float* scratch) {
    v = warp_max(v);
    const int tid = nk_tid(), nw = nk_bdim() / NK_WARP;
    nk_sync();
    if (tid % NK_WARP == 0) scratch[tid / NK_WARP] = v;
    nk_sync();
    float s = scratch[0];
    if (tid == 0)
        for (int i = 1; i < nw; ++i) s = nk_fmax(s, scratch[i]);
    nk_sync();
    return s;
}

// amax: the CTA's max |y| folded into q_sync[0] (atomicMax on the bits of a non-negative float);
// the last CTA to arrive (q_sync[1], an arrival count) writes the result to p.amax and puts both
// words back to zero for the next launch (the backend zeroes them once, when it allocates them).
// Integer atomics only: the max is exact in any order, so the result is deterministic.
NK_DEVICE void q_amax_commit(const NkFwdParams& p, float amax_t, float* scratch) {
    if (!(p.q & NK_Q_AMAX)) return;
    const float m = block_max(amax_t, scratch);
    if (nk_tid() == 0) {
        uint32_t* s = reinterpret_cast<uint32_t*>(p.q_sync);
        nk_atomic_max_u32(s, nk_f32_as_u32(m));
        // The count releases this CTA's max and, for the last arriver, acquires every other's.
        if (nk_atomic_add_acq_rel_u32(s + 1, 1u) == (uint32_t)nk_nblocks() - 1u) {
            const uint32_t v = nk_atomic_max_u32_ret(s, 0u);
            nk_store_g32(reinterpret_cast<void*>(p.amax), v);
            nk_atomic_exch_u32(s, 0u);
            nk_atomic_exch_u32(s + 1, 0u);
        }
    }
}

// The per-tensor scale (0 per row) and, from CTA 0, 1/scale.
NK_DEVICE float q_tensor_scale(const NkFwdParams& p) {
    if (p.q & NK_Q_ROW) return 0.f;
    const float s = (p.q & NK_Q_DEVSCALE) ? *reinterpret_cast<const float*>(p.scale) : p.scale_host;
    if ((p.q & NK_Q_INV) && nk_bid() == 0 && nk_tid() == 0) store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, 0, nk_div_rn(1.f, s));
    return s;
}

// The per-tensor scale (0 per row) without the store of 1/scale (q_scale_inv_store).
NK_DEVICE float q_scale_value(const NkFwdParams& p) {
    if (p.q & NK_Q_ROW) return 0.f;
    return (p.q & NK_Q_DEVSCALE) ? *reinterpret_cast<const float*>(p.scale) : p.scale_host;
}

// 1/scale from CTA 0 (per tensor, when asked), as q_tensor_scale stores it.
NK_DEVICE void q_scale_inv_store(const NkFwdParams& p, float s) {
    if (!(p.q & NK_Q_ROW) && (p.q & NK_Q_INV) && nk_bid() == 0 && nk_tid() == 0)
        store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, 0, nk_div_rn(1.f, s));
}

// A row's scale from its amax (per-row scaling): max_finite / max(amax, floor), one rounding.
NK_DEVICE float q_row_scale(int fmt, float amax) {
    return nk_div_rn(fp8_fmt(fmt).max_finite, nk_fmax(amax, Q_ROW_AMAX_FLOOR));
}

// Writes rows [0, vr) × columns [c0, c0 + nc) of a quantised tile (row r, column c at
// tile[r·pitch + c − c0]) transposed into yT: element (row0 + r, c) to yT[c·syt + row0 + r]. Each
// work item is a 4 × 4 block of bytes: four 4-byte shared-memory reads (rows r..r+3), a byte
// transpose, four 4-byte global stores (columns c..c+3), or byte stores where the block is cut by
// vr or yT's words are not 4-byte aligned. Items run along the rows first, so the TM/4 threads of
// a column fill a TM-byte run of one yT row. TM: a power of two ≥ 4 (rows of the tile).
NK_DEVICE void q_write_t(const NkFwdParams& p, const unsigned char* tile, int pitch, int64_t row0, int vr, int TM, int64_t c0, int nc) {
    int lg = 0;
    while ((4 << lg) < TM) ++lg;  // log2(TM / 4)
    const int nrb = 1 << lg, ncb = (nc + 3) / 4, items = ncb << lg;
    const bool vec = ((p.yt | (uint64_t)p.syt | (uint64_t)row0) & 3u) == 0;
    for (int i = nk_tid(); i < items; i += nk_bdim()) {
        const int r = (i & (nrb - 1)) * 4, cl = (i >> lg) * 4;
        if (r >= vr) continue;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = *reinterpret_cast<const uint32_t*>(tile + (int64_t)(r + k) * pitch + cl);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (cl + j >= nc) break;
            const uint32_t o = ((w[0] >> (8 * j)) & 0xFFu) | (((w[1] >> (8 * j)) & 0xFFu) << 8) |
                               (((w[2] >> (8 * j)) & 0xFFu) << 16) | (((w[3] >> (8 * j)) & 0xFFu) << 24);
            unsigned char* dst = reinterpret_cast<unsigned char*>(p.yt + (uint64_t)((c0 + cl + j) * p.syt + row0 + r));
            if (vec && r + 4 <= vr) {
                nk_store_g32(dst, o);
            } else {
                for (int k = 0; k < 4 && r + k < vr; ++k) nk_store_g8(dst + k, (o >> (8 * k)) & 0xFFu);
            }
        }
    }
}

// yT of a supertile held by a cluster of CL CTAs (the FP8 twin's tile, SPEC + 2048): CTA q holds
// rows row0 + q·TM .. + TM − 1 in its shared memory (`tile`, rows of `pitch` bytes); vr rows of
// the supertile are below M. This CTA writes the column blocks (4 columns each) [cb0, cb1) of
// every row, reading each row from the CTA that holds it (DSMEM), so a yT row gets one run of
// up to CL·TM bytes from one CTA rather than a TM-byte piece from each (16-byte pieces from
// separate CTAs ran at a third of the separate transpose's speed on an H100: NOTES v16).
// Whole supertiles of 16-row blocks with yT 16-byte aligned: items of 16 rows × 4 columns, 16
// word reads, a byte transpose (8 permutes per 4 × 4 block), four 16-byte stores, the row
// blocks of a column block on adjacent lanes (a warp's store: 8 yT rows, a 64-byte run each at
// CL·TM = 64). Otherwise items of 4 × 4 bytes, rows first, with 4-byte stores where yT's words
// are aligned and the block whole, else bytes. Columns at or past nc are not written.
NK_DEVICE void q_tr4(const uint32_t (&w)[4], uint32_t (&o)[4]) {
    // t0: bytes 0, 1 of rows 0 and 1 interleaved, t1 the same of rows 2 and 3; t2, t3 bytes 2, 3.
    const uint32_t t0 = nk_prmt(w[0], w[1], 0x5140u), t1 = nk_prmt(w[2], w[3], 0x5140u);
    const uint32_t t2 = nk_prmt(w[0], w[1], 0x7362u), t3 = nk_prmt(w[2], w[3], 0x7362u);
    o[0] = nk_prmt(t0, t1, 0x5410u);
    o[1] = nk_prmt(t0, t1, 0x7632u);
    o[2] = nk_prmt(t2, t3, 0x5410u);
    o[3] = nk_prmt(t2, t3, 0x7632u);
}
NK_DEVICE void q_write_tc(const NkFwdParams& p, const unsigned char* tile, int pitch, int TM, int CL, int64_t row0, int vr, int cb0, int cb1, int nc) {
    const int STM = TM * CL;
    // Supertile row r: CTA r / TM, its row r % TM (TM a power of two).
    int lg = 0;
    while ((1 << lg) < TM) ++lg;
    auto word = [&](int r, int cl) -> uint32_t {
        return nk_load_cluster32(nk_cluster_map(reinterpret_cast<const float*>(tile), r >> lg) + (unsigned)((r & (TM - 1)) * pitch + cl));
    };
    if ((TM & 15) == 0 && vr == STM && ((p.yt | (uint64_t)p.syt | (uint64_t)row0) & 15u) == 0) {
        const int nrb = STM / 16, items = (cb1 - cb0) * nrb;
        for (int i = nk_tid(); i < items; i += nk_bdim()) {
            const int cbi = i / nrb, r0 = (i - cbi * nrb) * 16, cl = (cb0 + cbi) * 4;
            uint32_t o[4][4];  // o[j][q]: column cl + j, rows r0 + 4q .. r0 + 4q + 3
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                uint32_t w[4], t[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) w[k] = word(r0 + 4 * q + k, cl);
                q_tr4(w, t);
#pragma unroll
                for (int j = 0; j < 4; ++j) o[j][q] = t[j];
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (cl + j < nc) {
                    nk_u128 v;
                    v.x = o[j][0];
                    v.y = o[j][1];
                    v.z = o[j][2];
                    v.w = o[j][3];
                    nk_store_g128(reinterpret_cast<unsigned char*>(p.yt + (uint64_t)((cl + j) * p.syt + row0 + r0)), v);
                }
            }
        }
        return;
    }
    const bool vec = ((p.yt | (uint64_t)p.syt | (uint64_t)row0) & 3u) == 0;
    const int nq = STM / 4, items = (cb1 - cb0) * nq;
    for (int i = nk_tid(); i < items; i += nk_bdim()) {
        const int cbi = i / nq, r = (i - cbi * nq) * 4, cl = (cb0 + cbi) * 4;
        if (r >= vr) continue;
        uint32_t w[4], o[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = r + k < vr ? word(r + k, cl) : 0u;
        q_tr4(w, o);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (cl + j >= nc) break;
            unsigned char* dst = reinterpret_cast<unsigned char*>(p.yt + (uint64_t)((cl + j) * p.syt + row0 + r));
            if (vec && r + 4 <= vr) {
                nk_store_g32(dst, o[j]);
            } else {
                for (int k = 0; k < 4 && r + k < vr; ++k) nk_store_g8(dst + k, (o[j] >> (8 * k)) & 0xFFu);
            }
        }
    }
}

// y of one chunk (elements e..e+7) of h (x, or x + residual, in dtype cdt), as fwd_out computes it.
template <bool ALIGNED, bool NARROW>
NK_DEVICE void q_y(const NkFwdParams& p, const FwdConsts& cst, int cdt, const Raw& hk, int64_t e, float (&y)[CH]) {
    float v[CH], w[CH], b[CH];
    unpack<NARROW>(cdt, hk, v);
    if (cst.has_w) load<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.w), p.dt_w, e, p.n, w);
    if (cst.has_b) load<ALIGNED, NARROW>(reinterpret_cast<const void*>(p.b), p.dt_w, e, p.n, b);
#pragma unroll
    for (int j = 0; j < CH; ++j) y[j] = fwd_out(cst, v[j], cst.has_w ? w[j] : 0.f, cst.has_b ? b[j] : 0.f);
}

// Loads row ftl·TM + frl's chunks of x (and the residual) into px (pr), if that row exists.
template <bool ALIGNED, bool NARROW, int KMAX, bool RES>
NK_DEVICE void q_fetch(const NkFwdParams& p, int64_t ftl, int frl, int TM, int64_t ntiles, int G, int t, int K, int nch, Raw (&px)[KMAX],
                       Raw (&pr)[RES ? KMAX : 1]) {
    const int64_t frow = ftl * TM + frl;
    if (ftl < ntiles && frl < TM && frow < p.m) {
        const void* xrow = row_ptr(p.x, frow, p.sx, p.dt_x);
        const void* rrow = row_ptr(p.r, frow, p.sr, p.dt_r);
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            const int c = k * G + t;
            if (k < K && c < nch) {
                load_chunk<ALIGNED, NARROW>(xrow, p.dt_x, (int64_t)c * CH, p.n, px[k]);
                if (RES) load_chunk<ALIGNED, NARROW>(rrow, p.dt_r, (int64_t)c * CH, p.n, pr[RES ? k : 0]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The row kernel. Thread t of a group owns the chunks t, t + G, ... (K ≤ KMAX) of its row, as
// fwd_reg; the statistics are reduced in the same order (chunk order per thread, then group_sum).
// Dynamic shared memory: tm · tpitch bytes with NK_Q_TFUSED, else none.
template <bool ALIGNED, bool NARROW, int DT, int CAST, int KMAX, bool RES, bool STRIDED>
NK_DEVICE void fwd_q_row_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST, true>(p0);
    NK_SHARED float scratch[2][NK_ROW_MAX_THREADS / NK_WARP];
    NK_SHARED float red[NK_ROW_MAX_THREADS / NK_WARP];
    NK_DYN_SMEM(tile);
    Flags f(p.flags);
    f.res = RES;
    const int G = p.group, rpc = p.rpc, tid = nk_tid();
    const int t = tid % G, g = tid / G;
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = (nch + G - 1) / G;
    const float nf = (float)n;
    const int cdt = f.res ? p.dt_r : p.dt_x;
    const int fmt = p.dt_y;
    const bool per_row = (p.q & NK_Q_ROW) != 0, fused = !STRIDED && (p.q & NK_Q_TFUSED) != 0;
    const float tscale = q_tensor_scale(p);
    const int TM = fused ? p.tm : rpc;
    const int64_t ntiles = (p.m + TM - 1) / TM;
    float amax_t = 0.f;
    int par = 0;
    // The group's rows, in order: tile tl (its TM rows, rpc at a time: pass i), tiles strided by
    // the grid. The next row's x is loaded into registers before the current one is reduced and
    // written, so every thread keeps two rows' loads in flight.
    const int ipt = (TM + rpc - 1) / rpc;
    int64_t tl = nk_bid();
    int pi = 0;
    Raw px[KMAX], pr[RES ? KMAX : 1];
    // Without the residual only: with it, the second row's registers (x and residual) pushed the
    // kernel into spills, slower than loading each row when it is reached (H100, NOTES.md).
    constexpr bool PREFETCH = !RES;
    if (PREFETCH) q_fetch<ALIGNED, NARROW, KMAX, RES>(p, tl, pi * rpc + g, TM, ntiles, G, t, K, nch, px, pr);
    while (tl < ntiles) {
        const int64_t row0 = tl * TM;
        const int i0 = pi * rpc;
        if (!PREFETCH) q_fetch<ALIGNED, NARROW, KMAX, RES>(p, tl, pi * rpc + g, TM, ntiles, G, t, K, nch, px, pr);
        {
            const int rl = i0 + g;
            const int64_t row = row0 + rl;
            const bool active = rl < TM && row < p.m;
            Raw h[KMAX];
            Raw r[RES ? KMAX : 1];
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                h[k] = px[k];
                if (RES) r[RES ? k : 0] = pr[RES ? k : 0];
            }
            // Advance, and prefetch the next row of this group.
            if (++pi == ipt) {
                pi = 0;
                tl += nk_nblocks();
            }
            if (PREFETCH) q_fetch<ALIGNED, NARROW, KMAX, RES>(p, tl, pi * rpc + g, TM, ntiles, G, t, K, nch, px, pr);
            float acc[1] = {0.f};
            if (active) {
                void* rorow = row_ptr_mut(p.r_out, row, p.sro, p.dt_r);
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (k < K && c < nch) {
                        const int64_t e = (int64_t)c * CH;
                        float v[CH];
                        unpack<NARROW>(p.dt_x, h[k], v);
                        if (RES) {
                            float rv[CH];
                            unpack<NARROW>(p.dt_r, r[RES ? k : 0], rv);
#pragma unroll
                            for (int j = 0; j < CH; ++j) v[j] = round_to(p.dt_r, nk_add_rn(v[j], rv[j]));
                            pack<NARROW>(p.dt_r, v, h[k]);
                            store_chunk<ALIGNED, NARROW>(rorow, p.dt_r, e, n, h[k]);
                        }
                        add_chunk<ALIGNED>(acc[0], v, f.ln, e, n);
                    }
                }
            }
            float mean = 0.f, var;
            group_sum_nb<1>(acc, G, scratch[par]);
            par ^= 1;
            if (f.ln) {
                // The mean, then the squared deviations from it (never E[x²] − μ²).
                mean = nk_div_rn(acc[0], nf);
                float a2[1] = {0.f};
                if (active) {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (k < K && c < nch) {
                            float v[CH];
                            unpack<NARROW>(cdt, h[k], v);
                            add_centred<ALIGNED>(a2[0], v, mean, (int64_t)c * CH, n);
                        }
                    }
                }
                group_sum_nb<1>(a2, G, scratch[par]);
                par ^= 1;
                var = nk_div_rn(a2[0], nf);
            } else {
                var = nk_div_rn(acc[0], nf);
            }
            const float rstd = nk_rsqrt_rn(nk_add_rn(var, p.eps));
            const FwdConsts cst = fwd_consts(p, mean, rstd);
            float s = tscale;
            if (per_row) {
                float mx = 0.f;
                if (active) {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (k < K && c < nch) {
                            const int64_t e = (int64_t)c * CH;
                            float y[CH];
                            q_y<ALIGNED, NARROW>(p, cst, cdt, h[k], e, y);
                            const int lim = chunk_len(e, n);
#pragma unroll
                            for (int j = 0; j < CH; ++j)
                                if (j < lim) mx = nk_fmax(mx, nk_fabs(y[j]));
                        }
                    }
                }
                group_max_nb(mx, G, scratch[par]);
                par ^= 1;
                s = q_row_scale(fmt, mx);
                if (active && t == 0) store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, row, nk_div_rn(1.f, s));
            }
            if (active) {
                if ((p.flags & NK_F_STATS) && t == 0) {
                    store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
                    if (f.ln) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
                }
                unsigned char* yrow = reinterpret_cast<unsigned char*>(p.y + (uint64_t)(row * p.sy));
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (k < K && c < nch) {
                        const int64_t e = (int64_t)c * CH;
                        float y[CH], qv[CH];
                        q_y<ALIGNED, NARROW>(p, cst, cdt, h[k], e, y);
                        const int lim = chunk_len(e, n);
#pragma unroll
                        for (int j = 0; j < CH; ++j) {
                            if (j < lim) amax_t = nk_fmax(amax_t, nk_fabs(y[j]));
                            qv[j] = nk_mul_rn(y[j], s);
                        }
                        uint32_t w2[2];
                        fp8_pack8(fmt, qv, w2);
                        store_q8<ALIGNED>(yrow, e, n, w2);
                        if (fused) {
                            uint32_t* sp = reinterpret_cast<uint32_t*>(tile + (int64_t)rl * p.tpitch + e);
                            sp[0] = w2[0];
                            sp[1] = w2[1];
                        }
                        if (STRIDED) {
#pragma unroll
                            for (int j = 0; j < CH; ++j)
                                if (j < lim)
                                    nk_store_g8(reinterpret_cast<unsigned char*>(p.yt + (uint64_t)((e + j) * p.syt + row)),
                                            (w2[j / 4] >> (8 * (j % 4))) & 0xFFu);
                        }
                    }
                }
            }
        }
        // pi == 0: the pass just done was the tile's last.
        if (fused && pi == 0) {
            nk_sync();
            const int64_t left = p.m - row0;
            q_write_t(p, tile, p.tpitch, row0, left < TM ? (int)left : TM, TM, 0, (int)n);
            nk_sync();
        }
    }
    q_amax_commit(p, amax_t, red);
}

// ---------------------------------------------------------------------------------------------
// Long rows (after fwd_split_stats and fwd_split_reduce, whose statistics sit at ws[2·M·S + 2·row]).
// Loads tile (row, s)'s h (x, or the residual_out fwd_split_stats wrote) and the row's statistics.
template <bool ALIGNED, bool NARROW>
NK_DEVICE FwdConsts q_split_load(const NkFwdParams& p, int64_t row, int64_t base, int t, Raw (&h)[NK_SPLIT_ELEMS / CH], float* stat) {
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    const Flags f(p.flags);
    const int cdt = f.res ? p.dt_r : p.dt_x;
    const void* hrow = row_ptr(f.res ? p.r_out : p.x, row, f.res ? p.sro : p.sx, cdt);
#pragma unroll
    for (int k = 0; k < KV; ++k) {
        const int64_t e = base + ((int64_t)k * T + t) * CH;
        if (e < p.n) load_chunk<ALIGNED, NARROW>(hrow, cdt, e, p.n, h[k]);
    }
    const float* ws = reinterpret_cast<const float*>(p.ws);
    if (t < 2) stat[t] = ws[2 * p.m * p.nsplit + 2 * row + t];
    nk_sync();
    const FwdConsts cst = fwd_consts(p, stat[0], stat[1]);
    nk_sync();
    return cst;
}

// Per row: the max |y| of each (row, chunk) tile into ws_q[tile].
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void fwd_q_split_amax_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST, true>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float stat[2];
    NK_SHARED float red[T / NK_WARP];
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S, n = p.n;
    const int cdt = (p.flags & NK_F_RESIDUAL) ? p.dt_r : p.dt_x;
    for (int64_t tile = nk_bid(); tile < total; tile += nk_nblocks()) {
        const int64_t row = tile / S, base = (tile - row * S) * C;
        Raw h[KV];
        const FwdConsts cst = q_split_load<ALIGNED, NARROW>(p, row, base, t, h, stat);
        float mx = 0.f;
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                float y[CH];
                q_y<ALIGNED, NARROW>(p, cst, cdt, h[k], e, y);
                const int lim = chunk_len(e, n);
#pragma unroll
                for (int j = 0; j < CH; ++j)
                    if (j < lim) mx = nk_fmax(mx, nk_fabs(y[j]));
            }
        }
        mx = block_max(mx, red);
        if (t == 0) reinterpret_cast<float*>(p.ws_q)[tile] = mx;
    }
}

// y_q of each (row, chunk) tile; per row, the scale from the row's chunk maxima (chunk 0's CTA
// writes 1/scale).
template <bool ALIGNED, bool NARROW, int DT, int CAST>
NK_DEVICE void fwd_q_split_apply_body(const NkFwdParams& p0) {
    const NkFwdParams p = specialise<DT, CAST, true>(p0);
    constexpr int T = NK_SPLIT_THREADS, KV = NK_SPLIT_ELEMS / CH;
    constexpr int64_t C = (int64_t)NK_SPLIT_THREADS * NK_SPLIT_ELEMS;
    NK_SHARED float stat[2];
    NK_SHARED float red[T / NK_WARP];
    const int t = nk_tid();
    const int64_t S = p.nsplit, total = p.m * S, n = p.n;
    const int cdt = (p.flags & NK_F_RESIDUAL) ? p.dt_r : p.dt_x;
    const int fmt = p.dt_y;
    const bool per_row = (p.q & NK_Q_ROW) != 0;
    const float tscale = q_tensor_scale(p);
    float amax_t = 0.f;
    for (int64_t it = nk_bid(); it < total; it += nk_nblocks()) {
        // Tiles from the last: the rows read last are still in L2.
        const int64_t tile = total - 1 - it;
        const int64_t row = tile / S, s = tile - row * S, base = s * C;
        Raw h[KV];
        const FwdConsts cst = q_split_load<ALIGNED, NARROW>(p, row, base, t, h, stat);
        float sc = tscale;
        if (per_row) {
            const float* part = reinterpret_cast<const float*>(p.ws_q) + row * S;
            float mx = 0.f;
            for (int64_t i = t; i < S; i += T) mx = nk_fmax(mx, part[i]);
            mx = block_max(mx, red);
            if (t == 0) red[0] = mx;
            nk_sync();
            sc = q_row_scale(fmt, red[0]);
            nk_sync();
            if (s == 0 && t == 0) store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, row, nk_div_rn(1.f, sc));
        }
        unsigned char* yrow = reinterpret_cast<unsigned char*>(p.y + (uint64_t)(row * p.sy));
#pragma unroll
        for (int k = 0; k < KV; ++k) {
            const int64_t e = base + ((int64_t)k * T + t) * CH;
            if (e < n) {
                float y[CH], qv[CH];
                q_y<ALIGNED, NARROW>(p, cst, cdt, h[k], e, y);
                const int lim = chunk_len(e, n);
#pragma unroll
                for (int j = 0; j < CH; ++j) {
                    if (j < lim) amax_t = nk_fmax(amax_t, nk_fabs(y[j]));
                    qv[j] = nk_mul_rn(y[j], sc);
                }
                uint32_t w2[2];
                fp8_pack8(fmt, qv, w2);
                store_q8<ALIGNED>(yrow, e, n, w2);
            }
        }
    }
    q_amax_commit(p, amax_t, red);
}

// yT from y_q: tiles of Q_TR rows × Q_TC bytes staged in shared memory (rows read as 16-byte
// vectors where y's rows allow it, else 4-byte words, else bytes), then q_write_t: 64-byte runs
// per yT row (two full sectors). Row-major tiles, persistent CTAs.
// The pitch in words is odd: q_write_t's reads of a warp (16 row blocks × 2 column words at 64
// rows) meet at most 2-way bank conflicts.
constexpr int Q_TR = 64, Q_TC = 256, Q_TPITCH = Q_TC + 4;
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_q_transpose(const NkFwdParams& p) {
    NK_SHARED uint32_t tile_w[Q_TR * Q_TPITCH / 4];
    unsigned char* tile = reinterpret_cast<unsigned char*>(tile_w);
    const int64_t m = p.m, n = p.n;
    const int64_t tr = (m + Q_TR - 1) / Q_TR, tc = (n + Q_TC - 1) / Q_TC;
    const bool v16 = ((p.y | (uint64_t)p.sy | (uint64_t)n) & 15u) == 0;
    const bool words = ((p.y | (uint64_t)p.sy | (uint64_t)n) & 3u) == 0;
    for (int64_t it = nk_bid(); it < tr * tc; it += nk_nblocks()) {
        const int64_t rt = it / tc, ct = it - rt * tc;
        const int64_t row0 = rt * Q_TR, c0 = ct * Q_TC;
        const int vr = (int)(m - row0 < Q_TR ? m - row0 : Q_TR), nc = (int)(n - c0 < Q_TC ? n - c0 : Q_TC);
        if (v16) {
            // n % 16 == 0: whole vectors; a row's 16-byte pieces land at pitch offsets that are
            // 4-byte aligned, so they are stored as four words.
            const int vpr = nc / 16;
            for (int i = nk_tid(); i < vr * vpr; i += nk_bdim()) {
                const int r = i / vpr, vi = i - r * vpr;
                const nk_u128 v = nk_load_g128(reinterpret_cast<const unsigned char*>(p.y + (uint64_t)((row0 + r) * p.sy + c0 + 16 * vi)));
                uint32_t* d = reinterpret_cast<uint32_t*>(tile + r * Q_TPITCH + 16 * vi);
                d[0] = v.x;
                d[1] = v.y;
                d[2] = v.z;
                d[3] = v.w;
            }
        } else if (words) {
            const int wpr = nc / 4;  // n % 4 == 0: whole words
            for (int i = nk_tid(); i < vr * wpr; i += nk_bdim()) {
                const int r = i / wpr, wd = i - r * wpr;
                const unsigned char* src = reinterpret_cast<const unsigned char*>(p.y + (uint64_t)((row0 + r) * p.sy + c0 + 4 * wd));
                *reinterpret_cast<uint32_t*>(tile + r * Q_TPITCH + 4 * wd) = nk_load_g32(src);
            }
        } else {
            for (int i = nk_tid(); i < vr * nc; i += nk_bdim()) {
                const int r = i / nc, c = i - r * nc;
                tile[r * Q_TPITCH + c] = (unsigned char)nk_load_g8(reinterpret_cast<const unsigned char*>(p.y + (uint64_t)((row0 + r) * p.sy + c0 + c)));
            }
        }
        nk_sync();
        q_write_t(p, tile, Q_TPITCH, row0, vr, Q_TR, c0, nc);
        nk_sync();
    }
}

// fwd_q_row's SPEC: bit 0 NARROW (every tensor but y 16-bit, Gemma casting), bits 1..3 KMAX / 4 (1, 2 or 4), bit 4 the fused residual add,
// bit 5 the strided-store baseline (yT written one byte per element from the row's registers: the
// uncoalesced form a fused transpose replaces; a measurement kernel, never planned by default).
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_q_row(const NkFwdParams& p) {
    constexpr bool NARROW = (SPEC & 1) != 0, RES = (SPEC & 16) != 0, ST = (SPEC & 32) != 0;
    constexpr int KMAX = 4 * ((SPEC >> 1) & 7);
    if constexpr (NARROW) {
        // Gemma casting only (the host sends the other modes to the generic kernels): one body
        // per 16-bit dtype, so the hot path's register allocation is its own.
        if (p.dt_x == NK_DT_BF16) fwd_q_row_body<ALIGNED, true, NK_DT_BF16, NK_CAST_GEMMA, KMAX, RES, ST>(p);
        else fwd_q_row_body<ALIGNED, true, NK_DT_F16, NK_CAST_GEMMA, KMAX, RES, ST>(p);
    } else {
        fwd_q_row_body<ALIGNED, false, -1, -1, KMAX, RES, ST>(p);
    }
}
// The split kernels' entries are nk_entry.cuh's NK_FWD_ENTRY (the same NARROW dispatch as the
// other split forwards).

}  // namespace nk
