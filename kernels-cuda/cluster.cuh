// normkit cluster row kernels (CUDA, sm_90+): one row per thread-block cluster of C CTAs (C in
// 1..16, the launch's cluster dimension), x read from HBM exactly once.
//
// Mapping: a row's 8-element chunks are cut into C contiguous slices of K·T chunks (T threads per
// CTA, K = ⌈nch/(C·T)⌉ ≤ KMAX); CTA rank r owns slice r and its thread t the chunks
// r·K·T + k·T + t (k < K), held in registers like fwd_reg. Each CTA reduces its slice (thread:
// chunks in k order, elements in index order; warp butterfly; warps in index order), publishes
// the partial in its own shared memory, one cluster barrier, then every CTA reads the C partials
// through DSMEM (ld.shared::cluster) and combines them in rank order, so every CTA of the cluster
// computes bitwise the same statistics. Partial slots are double-buffered by row parity: a CTA
// writes slot (i+1)&1 only after the barrier of row i, which every peer reaches after reading row
// i−1's slots, so one cluster barrier per row suffices.
//   RMSNorm: the partial is the slice's Σx², summed in rank order.
//   LayerNorm: the partial is (mean, M2) of the slice (its own two-pass: Σx, then Σ(x − mean)²),
//   combined in rank order by Chan's formula (chan_combine): never E[x²] − μ².
// Persistent: clusters walk rows (row = cluster id, += cluster count).
// The order depends on N, C and T only (the host picks C and T by N and dtypes): a row's output
// never depends on M. ALIGNED (16-byte) and element-wise variants run the same body (same chunks,
// same order), so it never depends on the layout either.
//
// Backward: the same mapping; a CTA's columns never change, so its dW/dB partial stays in
// registers across all rows it walks; at the end the CTA writes its slice of partial row
// `cluster id` of the (clusters × N) fp32 workspace and bwd_finalize_wide sums the parts in a
// fixed order. No atomics: bitwise deterministic.
#pragma once

namespace nk {

// The platform header's cluster primitives (platform.cuh), as unsigned ranks.
NK_DEVICE unsigned cl_rank() { return (unsigned)nk_cluster_rank(); }
NK_DEVICE unsigned cl_size() { return (unsigned)nk_cluster_size(); }
NK_DEVICE unsigned cl_id() {
    unsigned r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
NK_DEVICE unsigned cl_count() {
    unsigned r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}
// Every thread of every CTA of the cluster: release this CTA's shared-memory writes, wait for
// all, acquire the others'.
NK_DEVICE void cl_sync() { nk_cluster_sync(); }
// The per-row exchange's barrier: the same, but only this CTA's shared-memory writes (the
// partials) are released, so the threads do not wait for the previous row's global stores to be
// acknowledged (the release form's MEMBAR.ALL.GPU + ERRBAR). The partners' reads of the partials
// are complete at their next barrier: every value read is combined before it.
NK_DEVICE void cl_sync_smem() { nk_cluster_sync_smem(); }
// Two floats at `local` (this CTA's shared memory) as CTA `rank` of the cluster holds them.
NK_DEVICE float2 cl_load2(const float* local, unsigned rank) {
    const unsigned ra = nk_cluster_map(local, (int)rank);
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(ra) : "memory");
    return v;
}

// The max over the C ranks of the float at `pair` (its second word with `second`) as each rank
// holds it, read through DSMEM by lane i = rank i; every lane gets it (a max: any order).
NK_DEVICE float cl_ranks_max(const float* pair, bool second, int C, int lane) {
    float v = 0.f;
    if (lane < C) {
        const float2 q = cl_load2(pair, (unsigned)lane);
        v = second ? q.y : q.x;
    }
    return warp_max(v);
}

// Hides a chunk's registers from the compiler, so that a later unpack of it is recomputed (a few
// integer operations) instead of the compiler keeping every unpacked float of the row alive
// across the reduction (which spilled at KMAX = 8).
template <bool NARROW>
NK_DEVICE void cl_opaque(Raw& r) {
    asm volatile("" : "+r"(r.q[0].x), "+r"(r.q[0].y), "+r"(r.q[0].z), "+r"(r.q[0].w));
    if (!NARROW) asm volatile("" : "+r"(r.q[1].x), "+r"(r.q[1].y), "+r"(r.q[1].z), "+r"(r.q[1].w));
}

// Element-wise variants only: a chunk's eight scalar loads occupy eight registers until packed;
// pinning the packed chunk here bounds how many are in flight (the 16-byte variants are untouched).
template <bool ALIGNED, bool NARROW, int>
NK_DEVICE void cl_pace(Raw& a, Raw& b) {
    if (!ALIGNED) {
        cl_opaque<NARROW>(a);
        cl_opaque<NARROW>(b);
    }
}

// One scratch slot per warp of the largest CTA (1024 threads).
constexpr int CL_MAX_WARPS = 1024 / NK_WARP;

// Sums NV values over the CTA (butterfly in the warp, then warps in index order); every thread
// gets the sums. `scratch` holds NV·CL_MAX_WARPS floats; it is reused only after a later barrier.
template <int NV>
NK_DEVICE void cl_block_sum(float (&v)[NV], float* scratch) {
#pragma unroll
    for (int j = 0; j < NV; ++j)
#pragma unroll
        for (int o = NK_WARP / 2; o > 0; o >>= 1) v[j] += nk_shfl_xor(v[j], o);
    const int tid = nk_tid(), warp = tid / NK_WARP, lane = tid % NK_WARP, nw = nk_bdim() / NK_WARP;
    if (lane == 0) {
#pragma unroll
        for (int j = 0; j < NV; ++j) scratch[j * CL_MAX_WARPS + warp] = v[j];
    }
    nk_sync();
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        float s = scratch[j * CL_MAX_WARPS];
        for (int i = 1; i < nw; ++i) s += scratch[j * CL_MAX_WARPS + i];
        v[j] = s;
    }
}

// Elements of rank r's slice (slices of `span` elements, the last one cut at N).
NK_DEVICE float cl_count_of(int64_t n, int64_t span, int r) {
    const int64_t c = n - (int64_t)r * span;
    return (float)(c <= 0 ? 0 : (c < span ? c : span));
}

// The row's statistics from the C ranks' partials at `slot` (this CTA's shared memory; every
// rank's copy read through DSMEM by lane i = rank i), combined in rank order by every lane:
// RMSNorm sums Σx²; LayerNorm combines the
// slices' (mean, M2) by Chan's formula (slices of `span` elements). Returns (mean, rstd). The
// caller's cluster size C, lane and (float)N are passed in (the cluster registers are
// read by volatile asm, which the compiler would not merge with the caller's reads).
template <bool LN>
NK_DEVICE float2 cl_combine(const NkFwdParams& p, float2 q, int64_t span, int C, float nf);
template <bool LN>
NK_DEVICE float2 cl_row_stats(const NkFwdParams& p, const float* slot, int64_t span, int C, int lane, float nf) {
    float2 q = make_float2(0.f, 0.f);
    if (lane < C) q = cl_load2(slot, (unsigned)lane);
    return cl_combine<LN>(p, q, span, C, nf);
}
// cl_row_stats' combination, lane i holding rank i's partial in `q`.
template <bool LN>
NK_DEVICE float2 cl_combine(const NkFwdParams& p, float2 q, int64_t span, int C, float nf) {
    const int64_t n = p.n;
    float mean = 0.f, var;
    if (LN) {
        float na = cl_count_of(n, span, 0), ma = __shfl_sync(NK_FULL_MASK, q.x, 0), m2 = __shfl_sync(NK_FULL_MASK, q.y, 0);
        for (int j = 1; j < C; ++j) {
            const float mb = __shfl_sync(NK_FULL_MASK, q.x, j), m2b = __shfl_sync(NK_FULL_MASK, q.y, j);
            const float nb = cl_count_of(n, span, j);
            if (nb > 0.f) chan_combine(na, ma, m2, nb, mb, m2b);
        }
        mean = ma;
        var = nk_div_rn(m2, nf);
    } else {
        float ss = __shfl_sync(NK_FULL_MASK, q.x, 0);
        for (int j = 1; j < C; ++j) ss += __shfl_sync(NK_FULL_MASK, q.x, j);
        var = nk_div_rn(ss, nf);
    }
    return make_float2(mean, nk_rsqrt_rn(nk_add_rn(var, p.eps)));
}

// One chunk of the forward output, Gemma casting, every tensor in `dt`: y = x̂·(w + offset) + b
// from the chunk h as stored, its weight and bias chunks; an absent weight (× 1) or bias (+ −0)
// is exact: skipped. In fp32 (the staged FP8 forward scales and quantises it). QF (per-row FP8
// RMSNorm without a bias): y = (x·(w + offset))·rstd instead, as nk_reg.cuh's QF twin computes it.
template <bool NARROW, bool LN>
NK_DEVICE void cl_y(int dt, const Raw& h, const Raw& wr, const Raw& br, bool has_w, bool has_b, float mean, float rstd, float offset,
                    float (&y)[CH], bool qf = false) {
    float v[CH];
    unpack<NARROW>(dt, h, v);
#pragma unroll
    for (int j = 0; j < CH; ++j) y[j] = qf ? v[j] : nk_mul_rn(LN ? nk_sub_rn(v[j], mean) : v[j], rstd);
    if (has_w) {
        float w[CH];
        unpack<NARROW>(dt, wr, w);
#pragma unroll
        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], nk_add_rn(w[j], offset));
    }
    if (qf) {
#pragma unroll
        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], rstd);
    }
    if (has_b) {
        float b[CH];
        unpack<NARROW>(dt, br, b);
#pragma unroll
        for (int j = 0; j < CH; ++j) y[j] = nk_add_rn(y[j], b[j]);
    }
}

// cl_y's chunk stored at element e of yrow in `dt`.
template <bool ALIGNED, bool NARROW, bool LN>
NK_DEVICE void cl_store_y(void* yrow, int dt, int64_t e, int64_t n, const Raw& h, const Raw& wr, const Raw& br, bool has_w, bool has_b, float mean,
                          float rstd, float offset) {
    float y[CH];
    cl_y<NARROW, LN>(dt, h, wr, br, has_w, has_b, mean, rstd, offset, y);
    store<ALIGNED, NARROW>(yrow, dt, e, n, y);
}

// SPEC bits of the staged forward (fwd_cstage, `nk_fwd_cs_*`) and of its FP8 output
// (`nk_fwd_csq_*`); of the re-reading cluster forward (fwd_cluster's REREAD form, `nk_fwd_clr_*`).
constexpr int CL_REREAD = 32;
constexpr int CS_STAGED = 64;
constexpr int CS_Q = 128;
constexpr int CS_QF = 256;
// The staged forward's pipeline: a stage is NK_CS_KS16 (16-bit) / NK_CS_KS32 (f32) chunks per
// thread, one mbarrier per stage; a CTA's slice has at most NK_CS_MAX_STAGES stages (the host
// sizes it). The constants come from kernels-cuda/variants.rs, which the planner reads too.

// ---------------------------------------------------------------------------------------------
// Forward. SPEC = DT + 4·LN + 8·RES + 16·WIDE (1024-thread CTAs); every tensor in x's dtype, Gemma casting (the host checks).
// KMAX: 8 chunks per thread for 16-bit dtypes, 4 for f32.
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_cstage(const NkFwdParams& p0);

// Forward, re-reading (SPEC + 32, `nk_fwd_clr_*`, sm_90+; fwd_cluster's REREAD form, sharing its
// set-up and row exchange): one row per cluster of C CTAs like the register form (same slices,
// same chunks per thread, same reduction order), for rows that fit
// neither the registers nor the staged slices (N = 1M at 16 bits). Nothing of the slice is held:
// pass 1 streams it U1 chunks at a time (RES: x + r rounded, written to residual_out) and sums
// it in k order; LayerNorm's centred pass and the output pass read it again — x, or the
// residual_out this thread wrote — from L2, where pass 1 has just left it. A cluster of C CTAs
// of 512 threads per row and one CTA per SM keep about SMs / C rows in flight (C = 8: ~16 rows,
// 32 MB at N = 1M 16-bit). Any K (a loop, not registers). The element-wise twin (ALIGNED false)
// runs the same body: the same bits.
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_cluster(const NkFwdParams& p0) {
    if constexpr ((SPEC & CS_STAGED) != 0) {
        fwd_cstage<ALIGNED, SPEC>(p0);
        return;
    }
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int KMAX = NARROW ? 8 : 4;
    constexpr bool WIDE = (SPEC & 16) != 0;  // 1024-thread CTAs (64 registers)
    constexpr bool REREAD = (SPEC & CL_REREAD) != 0;  // the re-reading form (below)
    // Chunks in flight per thread in pass 1 (x, and r) and in the passes that read from L2 (with
    // the weight and bias in the output pass): what fits 128 registers (512 threads, one CTA per
    // SM). 1024-thread CTAs at 64 registers, one or two chunks in flight, ran 5-60% slower at
    // N = 1M (bench/results/nvidia-h200-2026-11-29/rr/call1, `summary-w.md`).
    constexpr int U1 = NARROW ? (RES ? 4 : 8) : (RES || LN ? 2 : 4);
    constexpr int U2 = NARROW ? 4 : 2;
    const NkFwdParams p = specialise<DT, NK_CAST_GEMMA>(p0);
    NK_SHARED float scratch[2][CL_MAX_WARPS];
    NK_SHARED __align__(8) float part[2][2];
    const bool has_w = (p.flags & NK_F_WEIGHT) != 0, has_b = (p.flags & NK_F_BIAS) != 0;
    const bool stats = (p.flags & NK_F_STATS) != 0;
    const int T = nk_bdim(), t = nk_tid(), lane = t % NK_WARP;
    const int C = (int)cl_size(), r = (int)cl_rank();
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = (nch + C * T - 1) / (C * T);
    const int c0 = r * K * T + t;  // this thread's first chunk
    const int64_t span = (int64_t)K * T * CH;
    const float cnt = cl_count_of(n, span, r);
    const float nf = (float)n, offset = p.offset;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const void* bp = reinterpret_cast<const void*>(p.b);
    int par = 0;
    // The row's exchange: this CTA's partial (the sum, or LayerNorm's mean and centred sum) into
    // its slot, `before()` (the register form's first weight loads, to fly during the barrier), a
    // cluster barrier, then lane i fetches rank i's partial and every lane combines them in rank
    // order; rank 0 stores the statistics. (mean, rstd).
    auto exchange = [&](int64_t row, float out0, float out1, auto&& before) -> float2 {
        if (t == 0) {
            part[par][0] = out0;
            part[par][1] = out1;
        }
        before();
        cl_sync_smem();
        const float2 st = cl_row_stats<LN>(p, &part[par][0], span, C, lane, nf);
        par ^= 1;
        if (stats && r == 0 && t == 0) {
            store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, st.y);
            if (LN) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, st.x);
        }
        return st;
    };
    if constexpr (REREAD) {
        for (int64_t row = cl_id(); row < p.m; row += cl_count()) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            void* rorow = RES ? row_ptr_mut(p.r_out, row, p.sro, DT) : nullptr;
            const void* hrow = RES ? const_cast<const void*>(rorow) : xrow;
            float acc[1] = {0.f};
            for (int k0 = 0; k0 < K; k0 += U1) {
                Raw h[U1], rr[U1];
#pragma unroll
                for (int g = 0; g < U1; ++g) {
                    const int c = c0 + (k0 + g) * T;
                    if (k0 + g < K && c < nch) {
                        load_chunk<ALIGNED, NARROW>(xrow, DT, (int64_t)c * CH, n, h[g]);
                        if (RES) load_chunk<ALIGNED, NARROW>(row_ptr(p.r, row, p.sr, DT), DT, (int64_t)c * CH, n, rr[g]);
                    }
                }
#pragma unroll
                for (int g = 0; g < U1; ++g) {
                    const int c = c0 + (k0 + g) * T;
                    if (k0 + g < K && c < nch) {
                        float v[CH];
                        unpack<NARROW>(DT, h[g], v);
                        if (RES) {
                            float rv[CH];
                            unpack<NARROW>(DT, rr[g], rv);
#pragma unroll
                            for (int j = 0; j < CH; ++j) v[j] = round_to(DT, nk_add_rn(v[j], rv[j]));
                            pack<NARROW>(DT, v, h[g]);
                            store_chunk<ALIGNED, NARROW>(rorow, DT, (int64_t)c * CH, n, h[g]);
                        }
                        add_chunk<ALIGNED>(acc[0], v, LN, (int64_t)c * CH, n);
                    }
                }
            }
            // The first p.pf KB of this CTA's slice of its next row (x, and r) on their way to L2 while
            // this row's statistics and output run: a hint, no bit changes.
            if (ALIGNED && p.pf > 0 && t == 0 && row + cl_count() < p.m) {
                const int64_t nrow = row + cl_count(), e0 = (int64_t)r * span;
                constexpr int64_t ES = NARROW ? 2 : 4;  // bytes per element
                const int64_t left = n - e0 < span ? n - e0 : span;
                int64_t bytes = left > 0 ? left * ES : 0;
                bytes = (bytes < (int64_t)p.pf * 1024 ? bytes : (int64_t)p.pf * 1024) & ~(int64_t)15;
                const char* xs = reinterpret_cast<const char*>(row_ptr(p.x, nrow, p.sx, DT)) + e0 * ES;
                const char* rs = RES ? reinterpret_cast<const char*>(row_ptr(p.r, nrow, p.sr, DT)) + e0 * ES : nullptr;
                for (int64_t o = 0; o < bytes; o += 32768) {
                    const unsigned b = (unsigned)(bytes - o < 32768 ? bytes - o : 32768);
                    nk_bulk_prefetch_l2(xs + o, b);
                    if (RES) nk_bulk_prefetch_l2(rs + o, b);
                }
            }
            cl_block_sum<1>(acc, scratch[0]);
            float out0 = acc[0], out1 = 0.f;
            if (LN) {
                const float mr = cnt > 0.f ? nk_div_rn(acc[0], cnt) : 0.f;
                float a2[1] = {0.f};
                for (int k0 = 0; k0 < K; k0 += U1) {
                    Raw h[U1];
#pragma unroll
                    for (int g = 0; g < U1; ++g) {
                        const int c = c0 + (k0 + g) * T;
                        if (k0 + g < K && c < nch) load_chunk<ALIGNED, NARROW>(hrow, DT, (int64_t)c * CH, n, h[g]);
                    }
#pragma unroll
                    for (int g = 0; g < U1; ++g) {
                        const int c = c0 + (k0 + g) * T;
                        if (k0 + g < K && c < nch) {
                            float v[CH];
                            unpack<NARROW>(DT, h[g], v);
                            add_centred<ALIGNED>(a2[0], v, mr, (int64_t)c * CH, n);
                        }
                    }
                }
                cl_block_sum<1>(a2, scratch[1]);
                out0 = mr;
                out1 = a2[0];
            }
            const float2 st = exchange(row, out0, out1, [] {});
            const float mean = st.x, rstd = st.y;
            void* yrow = row_ptr_mut(p.y, row, p.sy, DT);
            for (int k0 = 0; k0 < K; k0 += U2) {
                Raw h[U2], wr[U2], br[U2];
#pragma unroll
                for (int g = 0; g < U2; ++g) {
                    const int c = c0 + (k0 + g) * T;
                    if (k0 + g < K && c < nch) {
                        load_chunk<ALIGNED, NARROW>(hrow, DT, (int64_t)c * CH, n, h[g]);
                        if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, (int64_t)c * CH, n, wr[g]);
                        if (has_b) load_chunk<ALIGNED, NARROW>(bp, DT, (int64_t)c * CH, n, br[g]);
                    }
                }
#pragma unroll
                for (int g = 0; g < U2; ++g) {
                    const int c = c0 + (k0 + g) * T;
                    if (k0 + g < K && c < nch) cl_store_y<ALIGNED, NARROW, LN>(yrow, DT, (int64_t)c * CH, n, h[g], wr[g], br[g], has_w, has_b, mean, rstd, offset);
                }
            }
        }
    } else {
        for (int64_t row = cl_id(); row < p.m; row += cl_count()) {
            Raw h[KMAX];
            float acc[1] = {0.f};
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            if (RES) {
                const void* rrow = row_ptr(p.r, row, p.sr, DT);
                Raw rr[KMAX];
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = c0 + k * T;
                    if (k < K && c < nch) {
                        load_chunk<ALIGNED, NARROW>(xrow, DT, (int64_t)c * CH, n, h[k]);
                        load_chunk<ALIGNED, NARROW>(rrow, DT, (int64_t)c * CH, n, rr[k]);
                        cl_pace<ALIGNED, NARROW, 1>(h[k], rr[k]);
                    }
                }
                void* rorow = row_ptr_mut(p.r_out, row, p.sro, DT);
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = c0 + k * T;
                    if (k < K && c < nch) {
                        float v[CH], rv[CH];
                        unpack<NARROW>(DT, h[k], v);
                        unpack<NARROW>(DT, rr[k], rv);
#pragma unroll
                        for (int j = 0; j < CH; ++j) v[j] = round_to(DT, nk_add_rn(v[j], rv[j]));
                        pack<NARROW>(DT, v, h[k]);
                        store_chunk<ALIGNED, NARROW>(rorow, DT, (int64_t)c * CH, n, h[k]);
                        add_chunk<ALIGNED>(acc[0], v, LN, (int64_t)c * CH, n);
                    }
                }
            } else {
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = c0 + k * T;
                    if (k < K && c < nch) {
                        load_chunk<ALIGNED, NARROW>(xrow, DT, (int64_t)c * CH, n, h[k]);
                        if (k % 2 == 1) cl_pace<ALIGNED, NARROW, 1>(h[k], h[k - 1]);
                    }
                }
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = c0 + k * T;
                    if (k < K && c < nch) {
                        float v[CH];
                        unpack<NARROW>(DT, h[k], v);
                        add_chunk<ALIGNED>(acc[0], v, LN, (int64_t)c * CH, n);
                    }
                }
            }
            cl_block_sum<1>(acc, scratch[0]);
            float out0 = acc[0], out1 = 0.f;
            if (LN) {
                const float mr = cnt > 0.f ? nk_div_rn(acc[0], cnt) : 0.f;
                float a2[1] = {0.f};
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = c0 + k * T;
                    if (k < K && c < nch) {
                        float v[CH];
                        cl_opaque<NARROW>(h[k]);
                        unpack<NARROW>(DT, h[k], v);
                        add_centred<ALIGNED>(a2[0], v, mr, (int64_t)c * CH, n);
                    }
                }
                cl_block_sum<1>(a2, scratch[1]);
                out0 = mr;
                out1 = a2[0];
            }
            // The output phase reads the weight and bias in groups of GO chunks, every load of a group
            // issued before its first store (the accesses are volatile, so they keep program order: one
            // chunk at a time would cost a round trip per chunk). The first group's loads fly during
            // the cluster barrier.
            // GO: 4 chunks (16-bit) / 2 (f32), halved with the residual; 1 in the 64-register WIDE kernels.
            constexpr int GO = WIDE ? 1 : (NARROW ? 4 : 2) / (RES ? 2 : 1);
            // Row-invariant weight/bias addresses, recomputed per row rather than held across rows
            // (hoisting them spilled).
            Raw wr[GO], br[GO];
            auto load_wb = [&](int k0) {
                const void* wq = wp;
                const void* bq = bp;
                asm volatile("" : "+l"(wq), "+l"(bq));
#pragma unroll
                for (int g = 0; g < GO; ++g) {
                    const int k = k0 + g, c = c0 + k * T;
                    if (k < K && c < nch) {
                        if (has_w) load_chunk<ALIGNED, NARROW>(wq, DT, (int64_t)c * CH, n, wr[g]);
                        if (has_b) load_chunk<ALIGNED, NARROW>(bq, DT, (int64_t)c * CH, n, br[g]);
                    }
                }
            };
            const float2 st = exchange(row, out0, out1, [&] {
                if (!WIDE) load_wb(0);
            });
            const float mean = st.x, rstd = st.y;
            void* yrow = row_ptr_mut(p.y, row, p.sy, DT);
#pragma unroll
            for (int k0 = 0; k0 < KMAX; k0 += GO) {
                if (k0 > 0 || WIDE) load_wb(k0);
#pragma unroll
                for (int g = 0; g < GO; ++g) {
                    const int k = k0 + g, c = c0 + k * T;
                    if (k < K && c < nch) {
                        const int64_t e = (int64_t)c * CH;
                        cl_opaque<NARROW>(h[k]);
                        cl_store_y<ALIGNED, NARROW, LN>(yrow, DT, e, n, h[k], wr[g], br[g], has_w, has_b, mean, rstd, offset);
                    }
                }
            }
        }
    }
    cl_sync();  // no CTA leaves while a peer may still read its partials
}

// ---------------------------------------------------------------------------------------------
// Forward, staged (SPEC + 64, `nk_fwd_cs_*`, sm_90+): one row per cluster of C CTAs like
// fwd_cluster, but each CTA stages its slice of the row in shared memory instead of registers,
// so x is read from HBM once at any N the slice fits and several clusters share an SM.
//   Slices: the row's nch chunks in C contiguous slices of kc = ⌈nch/C⌉ chunks (rank r: chunks
//   r·kc ...). A slice is cut into stages of sc = KS·T chunks (NK_CS_KS16 / NK_CS_KS32); thread t owns chunks
//   s·sc + k·T + t of stage s (k < CS_KS), in that order for every pass.
//   Pipeline (16-byte layouts): one mbarrier per stage; thread 0 arms it and starts one bulk copy
//   per stage (two with the residual). Pass 1 waits stage by stage and accumulates (RES: x + r
//   rounded, written back over x's bytes and to residual_out). After the exchange, the output
//   pass reads a stage into registers, and once every thread has (a CTA barrier), thread 0
//   refills that stage with the cluster's next row; `lag` stages later (p.lag, the host's
//   choice) the same loop runs the next row's pass 1 on it. So HBM streams the next row in while
//   this one is written, and only the statistics' chain (block sums, the partials' exchange) and
//   the last `lag` stages of pass 1 sit between two rows' outputs.
//   Exchange: a cluster barrier per row, then each CTA reads the C partials through DSMEM; or
//   (PUSH: RMSNorm with the residual, per-row FP8 RMSNorm, f32 RMSNorm) no cluster barrier per
//   row: lane i of warp 0 pushes the CTA's partial into rank i's slot for this rank (st.async,
//   completing 8 bytes of rank i's barrier for the row's parity), and each CTA waits on its own
//   barrier for the C partials and reads them from its own shared memory. Same values, same
//   order: the same bits either way. The weight and bias chunks of
//   stage s + 1 are loaded before stage s's stores.
//   Element-wise layouts stage the row with scalar loads between the rows (no pipeline): the
//   same chunks, the same arithmetic, the same order, so the same bits.
// Reduction order: thread's chunks in (stage, k) order, warp butterfly, warps in index order,
// ranks in rank order (Chan for LayerNorm, each slice's own two-pass (mean, M2) read back from
// shared memory). It depends on N, C and T only: never on M or the layout.
// Dynamic shared memory: (1 + RES)·nst·sc·CB bytes, nst = ⌈kc/sc⌉, CB = 16 (16-bit) or 32 (f32).
// Q (SPEC + 128, `nk_fwd_csq_*`): y quantised to FP8 as the other FP8 kernels do it (nk_fp8.cuh:
// y in fp32, · scale, saturated, round to nearest even), stored one byte per element; amax
// through q_amax_commit. Per row (p.q & NK_Q_ROW, chosen at run time): after the statistics a
// pass over the staged slice finds the slice's max |y| (the same y the output pass computes), a
// CTA max, one more cluster barrier, and every CTA takes the max of the C ranks' maxima through
// DSMEM (a max: exact in any order), so every CTA scales the row alike. The slots are read before
// the output pass refills any stage, so the pipeline is unchanged. Per-row RMSNorm without a bias
// (QF, as nk_reg.cuh's per-row twin): y = (x·(w + offset))·rstd, so max |y| = max |x·(w +
// offset)|·rstd exactly (rounding is monotone, rstd ≥ 0 one number per row); pass 1 takes that
// max beside the sum of squares (the weight loaded there too), it travels in the partials'
// second word (unused by RMSNorm) through the row's one exchange: no pass over y for its
// max and no second barrier. Compiled apart (SPEC + 256, `nk_fwd_csqr_*`: in the kernels that
// choose the mode at run time its registers spilled in the stage loops), launched per row only
// and never with a bias (the host's rule).
template <bool ALIGNED, int SPEC>
NK_DEVICE void fwd_cstage(const NkFwdParams& p0) {
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int CB = NARROW ? 16 : 32;  // bytes per chunk
    constexpr int KS = NARROW ? NK_CS_KS16 : NK_CS_KS32;
    constexpr bool Q = (SPEC & CS_Q) != 0;
    constexpr bool QF = Q && !LN && (SPEC & CS_QF) != 0;
    // The partials' exchange by DSMEM pushes (below) where it measured faster: RMSNorm with the
    // residual, per-row FP8 RMSNorm (QF) and f32 RMSNorm; LayerNorm and 16-bit RMSNorm alone keep
    // the cluster barrier (NOTES v24).
    constexpr bool PUSH = !LN && (RES || QF || DT == NK_DT_F32);
    // The L2 prefetch of the next row's first p.pf stages (below) where it measured faster: 16-bit
    // add + RMSNorm, LayerNorm without the residual, per-row FP8 RMSNorm without it (NOTES v25).
    // The other kernels carry no code for it (in 16-bit RMSNorm alone it spilled at the 64-register
    // bound and cost 3%).
    constexpr bool L2PF = NARROW && ((!Q && RES != LN) || (QF && !RES));
    const NkFwdParams p = specialise<DT, NK_CAST_GEMMA, Q>(p0);
    NK_DYN_SMEM(smem);
    NK_SHARED float scratch[2][CL_MAX_WARPS];
    // The row's partials, pushed by every rank into every rank's copy (xpart[row parity][rank],
    // completing xbar[row parity]): each CTA waits on its own barrier and reads them locally.
    NK_SHARED __align__(8) float xpart[2][16][2];
    NK_SHARED __align__(8) uint64_t xbar[2];
    // Without PUSH: each CTA's partial in its own slot, read by the peers after a cluster barrier.
    NK_SHARED __align__(8) float part[2][2];
    // Per-row FP8 scaling: this CTA's max |y| of the row (written after the row's first cluster
    // barrier, read by the peers after its second, before they reach the next row's first).
    NK_SHARED __align__(8) float qmx[2];
    NK_SHARED __align__(8) uint64_t full[NK_CS_MAX_STAGES];
    const bool has_w = (p.flags & NK_F_WEIGHT) != 0, has_b = (p.flags & NK_F_BIAS) != 0;
    const bool stats = (p.flags & NK_F_STATS) != 0;
    const int T = nk_bdim(), t = nk_tid(), lane = t % NK_WARP;
    const int C = (int)cl_size(), r = (int)cl_rank();
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int kc = (nch + C - 1) / C;                            // chunks per slice
    const int c_lo = r * kc;                                     // this slice's first chunk
    const int kv = nch - c_lo < 0 ? 0 : (nch - c_lo < kc ? nch - c_lo : kc);  // its chunks within N
    const int sc = KS * T;                                       // chunks per stage
    const int nst = (kc + sc - 1) / sc;                          // stages of a full slice (smem)
    const int nsv = (kv + sc - 1) / sc;                          // stages holding chunks of this slice
    const float cnt = cl_count_of(n, (int64_t)kc * CH, r);
    const float nf = (float)n, offset = p.offset;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const void* bp = reinterpret_cast<const void*>(p.b);
    unsigned char* xs = smem;
    unsigned char* rs = smem + (size_t)nst * sc * CB;
    const int64_t stride_clusters = cl_count();
    const int lag = p.lag > 1 ? p.lag : 1;  // the host's; at least one stage

    // Thread 0: arm stage s's barrier and start its copies of `row`.
    auto issue = [&](int64_t row, int s) {
        const int q0 = s * sc;
        const int q1 = q0 + sc < kv ? q0 + sc : kv;
        const unsigned bytes = (unsigned)(q1 - q0) * CB;
        const int64_t off = (int64_t)(c_lo + q0) * CB;
        nk_mbar_expect_tx(&full[s], RES ? 2 * bytes : bytes);
        nk_bulk_copy_g2s(xs + (size_t)q0 * CB, static_cast<const unsigned char*>(row_ptr(p.x, row, p.sx, DT)) + off, bytes, &full[s]);
        if (RES) nk_bulk_copy_g2s(rs + (size_t)q0 * CB, static_cast<const unsigned char*>(row_ptr(p.r, row, p.sr, DT)) + off, bytes, &full[s]);
    };
    // Thread 0 initialises the stages' barriers (16-byte layouts) and, with PUSH, the exchange's,
    // each armed for its first row (thread 0's arrival and C partials' bytes) and visible to the
    // cluster before any rank pushes: every thread arrives at a cluster barrier here and waits on
    // it after the first row's pass 1.
    if (ALIGNED || PUSH) {
        if (t == 0) {
            if (PUSH) {
                nk_mbar_init(&xbar[0], 1);
                nk_mbar_init(&xbar[1], 1);
            }
            if (ALIGNED)
                for (int s = 0; s < nsv; ++s) nk_mbar_init(&full[s], 1);
            nk_mbar_init_fence();
            if (PUSH) {
                nk_mbar_expect_tx(&xbar[0], (unsigned)C * 8u);
                nk_mbar_expect_tx(&xbar[1], (unsigned)C * 8u);
            }
        }
        nk_sync();
        if (PUSH) nk_cluster_arrive();
        if (ALIGNED && t == 0 && (int64_t)cl_id() < p.m)
            for (int s = 0; s < nsv; ++s) issue(cl_id(), s);
    }
    // Element-wise layouts: the row's slice staged with scalar loads (elements past N as zero),
    // between two CTA barriers.
    auto stage_u = [&](int64_t row) {
        nk_sync();
        const void* xrow = row_ptr(p.x, row, p.sx, DT);
        const void* rrow = RES ? row_ptr(p.r, row, p.sr, DT) : nullptr;
        for (int q = t; q < kv; q += T) {
            Raw h;
            load_chunk<false, NARROW>(xrow, DT, (int64_t)(c_lo + q) * CH, n, h);
            slot_write<NARROW>(xs + (size_t)q * CB, DT, h);
            if (RES) {
                load_chunk<false, NARROW>(rrow, DT, (int64_t)(c_lo + q) * CH, n, h);
                slot_write<NARROW>(rs + (size_t)q * CB, DT, h);
            }
        }
        nk_sync();
    };
    // Pass 1 over stage s of the row in the slots: Σx² (RMSNorm) or Σx (LayerNorm); with the
    // residual, x + r rounded is written back over x's bytes and to residual_out.
    auto pass1 = [&](int s, unsigned phase, void* rorow, float& acc, float& mxa) {
        if (ALIGNED) nk_mbar_wait(&full[s], phase);
#pragma unroll
        for (int k = 0; k < KS; ++k) {
            const int q = s * sc + k * T + t;
            if (q < kv) {
                const int64_t e = (int64_t)(c_lo + q) * CH;
                Raw h;
                slot_read<NARROW>(xs + (size_t)q * CB, DT, h);
                if (RES) {
                    Raw rr;
                    slot_read<NARROW>(rs + (size_t)q * CB, DT, rr);
                    residual_add<DT, NARROW>(h, rr);
                    slot_write<NARROW>(xs + (size_t)q * CB, DT, h);
                    store_chunk<ALIGNED, NARROW>(rorow, DT, e, n, h);
                }
                float v[CH];
                unpack<NARROW>(DT, h, v);
                add_chunk<ALIGNED>(acc, v, LN, e, n);
                if constexpr (QF) {
                    // FP8 per-row RMSNorm without a bias: the row's max |x·(w + offset)|.
                    float w[CH];
                    if (has_w) {
                        Raw wr;
                        load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr);
                        unpack<NARROW>(DT, wr, w);
                    }
                    const int lim = chunk_len(e, n);
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        const float pj = has_w ? nk_mul_rn(v[j], nk_add_rn(w[j], offset)) : v[j];
                        if (j < lim) mxa = nk_fmax(mxa, nk_fabs(pj));
                    }
                }
            }
        }
    };
    auto ro_row = [&](int64_t row) { return RES ? row_ptr_mut(p.r_out, row, p.sro, DT) : nullptr; };
    int par = 0;
    unsigned ph = 0, xph = 0;  // xph: the phase parity of xbar[par] (it flips every second row)
    // A row's pass 1 runs before its statistics: the cluster's first row here; every later row's
    // inside the previous row's output pass, `lag` stages behind its refills (the same stages in
    // the same order, so the same sums).
    float acc[1] = {0.f};
    // FP8: the per-tensor scale (0 per row; CTA 0 writes 1/scale), this thread's max |y| and (QF)
    // its max |x·(w + offset)| of the row in pass 1.
    const bool per_row = Q && (p.q & NK_Q_ROW) != 0;
    const float tscale = Q ? q_tensor_scale(p) : 0.f;
    float amax_t = 0.f, mxa = 0.f;
    if ((int64_t)cl_id() < p.m) {
        if (!ALIGNED) stage_u(cl_id());
        for (int s = 0; s < nsv; ++s) pass1(s, 0u, ro_row(cl_id()), acc[0], mxa);
    }
    if (PUSH) nk_cluster_wait();
    for (int64_t row = cl_id(); row < p.m; row += stride_clusters, ph ^= 1u) {
        const int64_t next = row + stride_clusters;
        // L2 prefetch (L2PF, p.pf stages, 16-byte layouts): the first stages of a later row's
        // slice (p.pfd = 1: the next row's, whose bulk copies start in this row's output pass),
        // so HBM keeps streaming through this row's statistics chain. A hint: nothing waits for it.
        if (L2PF && ALIGNED && p.pf > 0 && t == 0) {
            const int64_t ahead = row + (int64_t)(p.pfd > 1 ? 2 : 1) * stride_clusters;
            if (ahead < p.m) {
                const int q1 = p.pf * sc < kv ? p.pf * sc : kv;
                const int64_t off = (int64_t)c_lo * CB;
                if (q1 > 0) {
                    nk_bulk_prefetch_l2(static_cast<const unsigned char*>(row_ptr(p.x, ahead, p.sx, DT)) + off, (unsigned)q1 * CB);
                    if (RES) nk_bulk_prefetch_l2(static_cast<const unsigned char*>(row_ptr(p.r, ahead, p.sr, DT)) + off, (unsigned)q1 * CB);
                }
            }
        }
        if constexpr (QF) {
            // The CTA's max beside the sum: each warp's in scratch[1] before cl_block_sum's barrier.
            mxa = warp_max(mxa);
            if (lane == 0) scratch[1][t / NK_WARP] = mxa;
        }
        cl_block_sum<1>(acc, scratch[0]);
        float out0 = acc[0], out1 = 0.f;
        if constexpr (QF) {
            for (int i = 0; i < T / NK_WARP; ++i) out1 = nk_fmax(out1, scratch[1][i]);
        }
        if (LN) {
            const float mr = cnt > 0.f ? nk_div_rn(acc[0], cnt) : 0.f;
            float a2[1] = {0.f};
            for (int s = 0; s < nsv; ++s) {
#pragma unroll
                for (int k = 0; k < KS; ++k) {
                    const int q = s * sc + k * T + t;
                    if (q < kv) {
                        Raw h;
                        float v[CH];
                        slot_read<NARROW>(xs + (size_t)q * CB, DT, h);
                        unpack<NARROW>(DT, h, v);
                        add_centred<ALIGNED>(a2[0], v, mr, (int64_t)(c_lo + q) * CH, n);
                    }
                }
            }
            cl_block_sum<1>(a2, scratch[1]);
            out0 = mr;
            out1 = a2[0];
        }
        if (PUSH) {
            // Lane i of warp 0 pushes this CTA's partial to rank i.
            if (t < C) nk_cluster_push2(&xpart[par][r][0], &xbar[par], t, out0, out1);
        } else if (t == 0) {
            part[par][0] = out0;
            part[par][1] = out1;
        }
        // The weight and bias of a stage, into registers (issued a stage ahead of their use).
        Raw wa[KS], ba[KS], wb[KS], bb[KS];
        auto load_wb = [&](int s, Raw (&w)[KS], Raw (&b)[KS]) {
#pragma unroll
            for (int k = 0; k < KS; ++k) {
                const int q = s * sc + k * T + t;
                if (q < kv) {
                    const int64_t e = (int64_t)(c_lo + q) * CH;
                    if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, e, n, w[k]);
                    if (has_b) load_chunk<ALIGNED, NARROW>(bp, DT, e, n, b[k]);
                }
            }
        };
        if (nsv > 0) load_wb(0, wa, ba);
        float2 st;
        // QF: the row's max |x·(w + offset)|, the max of the ranks' second words.
        float pmax = 0.f;
        if constexpr (PUSH) {
            nk_mbar_wait(&xbar[par], xph);
            // Lane i reads rank i's partial; every lane combines them in rank order (the order
            // of cl_row_stats).
            const float2 q = lane < C ? make_float2(xpart[par][lane][0], xpart[par][lane][1]) : make_float2(0.f, 0.f);
            // Thread 0 arms this barrier for the row after next: every rank's push for it follows
            // that rank's wait for the next row, which needs this CTA's next push, which follows
            // every thread's reads above (the next row's block sums are CTA barriers).
            if (t == 0) nk_mbar_expect_tx(&xbar[par], (unsigned)C * 8u);
            st = cl_combine<LN>(p, q, (int64_t)kc * CH, C, nf);
            if constexpr (QF) pmax = warp_max(lane < C ? q.y : 0.f);
            xph ^= (unsigned)par;
        } else {
            cl_sync_smem();
            // Lane i fetches rank i's partial; every lane combines them in rank order.
            st = cl_row_stats<LN>(p, &part[par][0], (int64_t)kc * CH, C, lane, nf);
            if constexpr (QF) pmax = cl_ranks_max(&part[par][0], true, C, lane);
        }
        par ^= 1;
        const float mean = st.x, rstd = st.y;
        if (stats && r == 0 && t == 0) {
            store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
            if (LN) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
        }
        float qs = tscale;
        if constexpr (QF) {
            // max_j fl(|p_j|·rstd) = fl(max_j |p_j|·rstd) for rstd ≥ 0; rstd = 0 or inf and NaN
            // products fold as in nk_reg.cuh's QF twin.
            qs = q_row_scale(p.dt_y, nk_fmax(0.f, nk_mul_rn(pmax, rstd)));
            if (r == 0 && t == 0) store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, row, nk_div_rn(1.f, qs));
        } else if (Q && per_row) {
            float mx = 0.f;
            for (int s = 0; s < nsv; ++s) {
#pragma unroll
                for (int k = 0; k < KS; ++k) {
                    const int q = s * sc + k * T + t;
                    if (q < kv) {
                        const int64_t e = (int64_t)(c_lo + q) * CH;
                        Raw h, wr, br;
                        slot_read<NARROW>(xs + (size_t)q * CB, DT, h);
                        if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr);
                        if (has_b) load_chunk<ALIGNED, NARROW>(bp, DT, e, n, br);
                        float y[CH];
                        cl_y<NARROW, LN>(DT, h, wr, br, has_w, has_b, mean, rstd, offset, y);
                        const int lim = chunk_len(e, n);
#pragma unroll
                        for (int j = 0; j < CH; ++j)
                            if (j < lim) mx = nk_fmax(mx, nk_fabs(y[j]));
                    }
                }
            }
            mx = block_max(mx, scratch[1]);
            if (t == 0) qmx[0] = mx;
            cl_sync_smem();
            qs = q_row_scale(p.dt_y, cl_ranks_max(qmx, false, C, lane));
            if (r == 0 && t == 0) store_one(reinterpret_cast<void*>(p.scale_inv), NK_DT_F32, row, nk_div_rn(1.f, qs));
        }
        // Pass 2: y, stage by stage; each stage refilled with the next row once every thread has
        // read it, and the next row's pass 1 `lag` stages behind.
        void* yrow = row_ptr_mut(p.y, row, p.sy, DT);
        unsigned char* yq = reinterpret_cast<unsigned char*>(p.y + (uint64_t)(row * p.sy));
        const bool fuse = ALIGNED && next < p.m;
        void* ro_next = fuse ? ro_row(next) : nullptr;
        acc[0] = 0.f;
        mxa = 0.f;
        auto out_stage = [&](int s, Raw (&w)[KS], Raw (&b)[KS], Raw (&wn)[KS], Raw (&bn)[KS]) {
            Raw h[KS];
#pragma unroll
            for (int k = 0; k < KS; ++k) {
                const int q = s * sc + k * T + t;
                if (q < kv) slot_read<NARROW>(xs + (size_t)q * CB, DT, h[k]);
            }
            if (s + 1 < nsv) load_wb(s + 1, wn, bn);
            if (ALIGNED) {
                nk_sync();
                if (t == 0 && next < p.m) {
                    nk_fence_proxy_async();
                    issue(next, s);
                }
            }
#pragma unroll
            for (int k = 0; k < KS; ++k) {
                const int q = s * sc + k * T + t;
                if (q < kv) {
                    const int64_t e = (int64_t)(c_lo + q) * CH;
                    if constexpr (Q) {
                        float y[CH], qv[CH];
                        cl_y<NARROW, LN>(DT, h[k], w[k], b[k], has_w, has_b, mean, rstd, offset, y, QF);
                        const int lim = chunk_len(e, n);
#pragma unroll
                        for (int j = 0; j < CH; ++j) {
                            if (j < lim) amax_t = nk_fmax(amax_t, nk_fabs(y[j]));
                            qv[j] = nk_mul_rn(y[j], qs);
                        }
                        uint32_t w2[2];
                        fp8_pack8(p.dt_y, qv, w2);
                        store_q8<ALIGNED>(yq, e, n, w2);
                    } else {
                        cl_store_y<ALIGNED, NARROW, LN>(yrow, DT, e, n, h[k], w[k], b[k], has_w, has_b, mean, rstd, offset);
                    }
                }
            }
            if (fuse && s >= lag) pass1(s - lag, ph ^ 1u, ro_next, acc[0], mxa);
        };
        for (int s = 0; s < nsv; s += 2) {
            out_stage(s, wa, ba, wb, bb);
            if (s + 1 < nsv) out_stage(s + 1, wb, bb, wa, ba);
        }
        if (next < p.m) {
            if (!ALIGNED) stage_u(next);
            const int lagged = fuse ? (nsv > lag ? nsv - lag : 0) : 0;
            for (int s = lagged; s < nsv; ++s) pass1(s, ph ^ 1u, ro_row(next), acc[0], mxa);
        }
    }
    // No CTA leaves while a peer may still read its partials or its per-row FP8 max through
    // DSMEM (with PUSH every push into a CTA is waited for by that CTA).
    cl_sync();
    if constexpr (Q) q_amax_commit(p, amax_t, scratch[0]);
}

// ---------------------------------------------------------------------------------------------
// Backward. SPEC = DT + 4·LN + 8·RES (d_residual_out) + 16·SACC + 32·PF; every tensor in x's
// dtype, dB only for LayerNorm (the host checks). KMAX: 4 chunks per thread for 16-bit dtypes, 2
// for f32.
// SACC: the dW/dB partials live in dynamic shared memory instead of registers (each thread owns
// its words, laid out [acc][k][j][t]; nacc·K·8·T floats), for CTAs of 512 threads.
// PF (16-bit, register accumulators): the cluster's next row (row + cluster count) is copied by
// cp.async into thread-private shared-memory slots (two buffers, pf_slot) while the current row is
// reduced, exchanged and written, and both passes read the current row from its slots; the weight
// + offset is converted once per CTA into fp32 slots after the buffers. Without it a cluster has
// one row in flight and nothing overlaps the per-row chain (loads → block sums → cluster barrier →
// dx). Same chunks, same arithmetic, same order as the plain kernel. Dynamic shared memory:
// (2·(2 + RES)·16 + 32·W)·K·T bytes, W = 1 with a weight.
template <bool ALIGNED, int SPEC>
NK_DEVICE void bwd_cluster(const NkBwdParams& p0) {
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int KMAX = NARROW ? 4 : 2;
    constexpr bool SACC = (SPEC & 16) != 0;
    constexpr bool PF = (SPEC & 32) != 0;
    static_assert(!(PF && (SACC || !NARROW || !ALIGNED)), "PF: 16-bit, 16-byte, register accumulators");
    constexpr int NS = RES ? 3 : 2;
    constexpr int KR = SACC ? 1 : KMAX;  // register accumulators
    const NkBwdParams p = specialise<DT>(p0);
    NK_DYN_SMEM(smem);
    NK_SHARED float scratch[2 * CL_MAX_WARPS];
    NK_SHARED __align__(8) float part[2][2];
    Flags f(p.flags);
    f.ln = LN;
    f.res = RES;
    const bool has_w = p.w != 0;
    const int T = nk_bdim(), t = nk_tid(), lane = t % NK_WARP;
    const int C = (int)cl_size(), r = (int)cl_rank();
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = (nch + C * T - 1) / (C * T);
    const int c0 = r * K * T + t;
    const float nf = (float)n;
    const void* wp = reinterpret_cast<const void*>(p.w);
    float dwa[KR][CH], dba[KR][CH];
#pragma unroll
    for (int k = 0; k < KR; ++k)
#pragma unroll
        for (int j = 0; j < CH; ++j) dwa[k][j] = dba[k][j] = 0.f;
    float* sw = reinterpret_cast<float*>(smem);
    float* sb = sw + (f.w ? K * CH * T : 0);
    if (SACC) {
        for (int i = t; i < K * CH * T; i += T) {
            if (f.w) sw[i] = 0.f;
            if (LN && f.b) sb[i] = 0.f;
        }
    }
    // PF: row buffers, then the fp32 weight slots (two 16-byte slots per chunk).
    const int64_t step = cl_count();
    int buf = 0;
    nk_u128* wslots = reinterpret_cast<nk_u128*>(smem) + (int64_t)2 * NS * K * T;
    auto wslot = [&](int k, int q) { return wslots + (int64_t)(2 * k + q) * T + t; };
    auto stage = [&](int64_t row, int b) {
        if (row < p.m) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* dyrow = row_ptr(p.dy, row, p.sdy, DT);
            const void* drow = row_ptr(p.dres, row, p.sdres, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = c0 + k * T;
                if (k < K && c < nch) {
                    const int64_t e = (int64_t)c * CH;
                    pf_stage<NS, 1>(smem, b, 0, xrow, e, k, t, T, K);
                    pf_stage<NS, 1>(smem, b, 1, dyrow, e, k, t, T, K);
                    if (RES) pf_stage<NS, 1>(smem, b, 2, drow, e, k, t, T, K);
                }
            }
        }
        nk_copy_async_commit();
    };
    if constexpr (PF) {
        if (has_w) {
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = c0 + k * T;
                if (k < K && c < nch) {
                    Raw wraw, wf;
                    float wo[CH];
                    load_chunk<ALIGNED, NARROW>(wp, DT, (int64_t)c * CH, n, wraw);
                    bwd_weight<NARROW>(p, f, wraw, wo);
                    pack<false>(NK_DT_F32, wo, wf);
                    *wslot(k, 0) = wf.q[0];
                    *wslot(k, 1) = wf.q[1];
                }
            }
        }
        stage(cl_id(), 0);
    }
    int par = 0;
    for (int64_t row = cl_id(); row < p.m; row += step) {
        constexpr int KL = PF ? 1 : KMAX;  // chunks loaded into registers
        Raw xr[KL], dyr[KL], wr[KL], drr[KL];
        if constexpr (PF) {
            stage(row + step, buf ^ 1);
            nk_copy_async_wait_prior();
        }
        // Chunk k's x, dy, (d_residual_out) and w + offset: from registers or from the slots
        // (`hide`: the registers pass cl_opaque first, in the dx pass).
        auto get = [&](int k, bool hide, Raw& xo, Raw& dyo, Raw& dro, float (&wo)[CH]) {
            if constexpr (PF) {
                pf_read<NS, 1>(smem, buf, 0, k, t, T, K, xo);
                pf_read<NS, 1>(smem, buf, 1, k, t, T, K, dyo);
                if (RES) pf_read<NS, 1>(smem, buf, 2, k, t, T, K, dro);
                if (has_w) {
                    Raw wf;
                    wf.q[0] = *wslot(k, 0);
                    wf.q[1] = *wslot(k, 1);
                    unpack<false>(NK_DT_F32, wf, wo);
                }
            } else {
                if (hide) {
                    cl_opaque<NARROW>(xr[k % KL]);
                    cl_opaque<NARROW>(dyr[k % KL]);
                    if (has_w) cl_opaque<NARROW>(wr[k % KL]);
                }
                xo = xr[k % KL];
                dyo = dyr[k % KL];
                if constexpr (RES) dro = drr[k % KL];
                bwd_weight<NARROW>(p, f, wr[k % KL], wo);
            }
        };
        const BwdRow st = bwd_row_stats(p, row);
        if constexpr (!PF) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* dyrow = row_ptr(p.dy, row, p.sdy, DT);
            const void* drow = row_ptr(p.dres, row, p.sdres, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = c0 + k * T;
                if (k < K && c < nch) {
                    const int64_t e = (int64_t)c * CH;
                    load_chunk<ALIGNED, NARROW>(xrow, DT, e, n, xr[k]);
                    load_chunk<ALIGNED, NARROW>(dyrow, DT, e, n, dyr[k]);
                    if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr[k]);
                    if (RES) load_chunk<ALIGNED, NARROW>(drow, DT, e, n, drr[k]);
                }
            }
        }
        float a[2] = {0.f, 0.f};
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            const int c = c0 + k * T;
            if (k < K && c < nch) {
                Raw xk, dyk, drk;
                float wo[CH];
                get(k, false, xk, dyk, drk, wo);
                bwd_chunk_sums_w<NARROW>(p, f, st, xk, dyk, wo, a);
            }
        }
        cl_block_sum<2>(a, scratch);
        if (t == 0) {
            part[par][0] = a[0];
            part[par][1] = a[1];
        }
        cl_sync_smem();
        float2 q = make_float2(0.f, 0.f);
        if (lane < C) q = cl_load2(&part[par][0], (unsigned)lane);
        par ^= 1;
        float s1 = __shfl_sync(NK_FULL_MASK, q.x, 0), s2 = __shfl_sync(NK_FULL_MASK, q.y, 0);
        for (int j = 1; j < C; ++j) {
            s1 += __shfl_sync(NK_FULL_MASK, q.x, j);
            s2 += __shfl_sync(NK_FULL_MASK, q.y, j);
        }
        const float c1 = nk_div_rn(s1, nf);
        const float c2 = LN ? nk_div_rn(s2, nf) : 0.f;
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            const int c = c0 + k * T;
            if (k < K && c < nch) {
                float dwv[CH], dbv[CH];
                Raw xk, dyk, drk;
                float wo[CH];
                get(k, true, xk, dyk, drk, wo);
                bwd_chunk_dx_w<ALIGNED, NARROW>(p, f, st, xk, dyk, wo, drk, row, (int64_t)c * CH, c1, c2, dwv, dbv);
                if (SACC) {
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        const int ai = (k * CH + j) * T + t;
                        if (f.w) sw[ai] += dwv[j];
                        if (LN && f.b) sb[ai] += dbv[j];
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        dwa[k % KR][j] += dwv[j];
                        if (LN) dba[k % KR][j] += dbv[j];
                    }
                }
            }
        }
        buf ^= 1;
    }
    if (PF) nk_copy_async_wait_all();
    cl_sync();  // no CTA leaves while a peer may still read its partials
    // This CTA's slice of partial row `cluster id`.
    const int64_t prow = cl_id();
#pragma unroll
    for (int acc = 0; acc < 2; ++acc) {
        const bool want = acc == 0 ? f.w : (LN && f.b);
        if (!want) continue;
        float* dst = reinterpret_cast<float*>(acc == 0 ? p.ws_dw : p.ws_db) + prow * n;
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            const int c = c0 + k * T;
            if (k < K && c < nch) {
                float v[CH];
#pragma unroll
                for (int j = 0; j < CH; ++j)
                    v[j] = SACC ? (acc == 0 ? sw : sb)[(k * CH + j) * T + t] : (acc == 0 ? dwa[k % KR][j] : dba[k % KR][j]);
                store<ALIGNED, false>(dst, NK_DT_F32, (int64_t)c * CH, n, v);
            }
        }
    }
}

}  // namespace nk
