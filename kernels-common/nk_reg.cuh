// Register-resident row kernels (fwd_reg, bwd_reg), the hot path: every tensor in x's dtype,
// Gemma casting, a row's chunks held in registers (or prefetched into shared-memory slots).
#pragma once
#include "nk_base.cuh"
#include "nk_fp8.cuh"

namespace nk {

// ---------------------------------------------------------------------------------------------
// Register-resident row kernels (the hot path): every tensor has x's dtype DT and casting is
// Gemma (the host checks). SPEC = DT + 4·LN + 8·RES (+ 16: KMAX = 2·REG_KMAX); LayerNorm and the fused residual are
// compile-time, so the element loops carry no flag or dtype branches. A group of G threads per
// row and thread t owns the 8-element chunks t, t + G, ... as fwd_row does (same table, same
// chunking, same group_sum; the forward's per-thread order, two accumulators, is fwd_reg_body's),
// with K = ⌈nch/G⌉ ≤ KMAX chunks held in registers: each thread issues
// all its 16-byte loads of a row at once, and nothing is staged in shared memory. The ALIGNED and
// element-wise variants run this same body, so a row's result never depends on the layout.
constexpr int REG_KMAX = 4;

// The plain 16-bit LayerNorm forward's weight and bias loads this many chunks ahead of their use
// (fwd_reg_body's WD; 0: each loaded right before its chunk). A macro for measurement builds
// (NORMKIT_NVCC_FLAGS=-DNK_FWD_WD_LN=2); the default is the measured one.
#ifndef NK_FWD_WD_LN
#define NK_FWD_WD_LN 1
#endif
// Chunks per thread of a forward register kernel: SPEC bit 16 doubles REG_KMAX, bit 32 quadruples
// it, bit 1024 (the decode twin in pairs; alone, the f32 two-chunk builds `nk_fwd_reg2_*`) halves
// it.
template <int SPEC>
constexpr int FWD_REG_KMAX = (SPEC & 1024) ? REG_KMAX / 2 : (SPEC & 32) ? 4 * REG_KMAX : (SPEC & 16) ? 2 * REG_KMAX : REG_KMAX;

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

// A compile-time integer as a value (a generic lambda's template argument).
template <int V>
struct NkConst {
    static constexpr int v = V;
};

// A chunk's 8 values into 8 bytes in e4m3 (else e5m2), by the conversion instruction: the two
// formats the hardware converts (the quantised twin's; fp8_pack8 serves every format).
NK_DEVICE void fp8_pack8_ocp(bool e4m3, const float (&v)[CH], uint32_t (&w)[2]) {
    auto two = [&](float a, float b) { return e4m3 ? fp8_pack2(NK_DT_E4M3, a, b) : fp8_pack2(NK_DT_E5M2, a, b); };
    w[0] = two(v[0], v[1]) | (two(v[2], v[3]) << 16);
    w[1] = two(v[4], v[5]) | (two(v[6], v[7]) << 16);
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
//
// SPEC + 256 (EW, `nk_fwd_regd_*`, the twin: decode sizes and the grids of TwinTuning): a
// thread's weight (and bias) chunks are loaded with the row, into registers, in the same basic
// block as the row's loads, so the two round trips overlap; the other kernels load them per
// chunk in the output pass, where each load waits for the previous chunk's store (the global
// accesses are volatile, kept in program order): one round trip per chunk, which a call of a few
// rows pays in full. The 256-thread launch bound leaves the registers for it (the 1024-thread
// kernels would spill). EW kernels are launched as programmatic dependents: with NK_F_TRIGGER
// they let the stream's next kernel launch at their entry, and they wait for the previous kernel
// right before their first load, so their index arithmetic (shifts: G is a power of two) overlaps
// its tail. Same arithmetic, same bits (NOTES v9, v11).
//
// SPEC + 128 (Q): the quantised twin (nk_fp8.cuh's FP8 outputs, per tensor or per row, amax and
// scale_inv; no yT): the same statistics and y, then y·scale rounded by the platform's FP8
// conversion and stored as 8 bytes per chunk. p0.dt_y is the FP8 format; the grid is persistent
// (the amax is one atomic per CTA). Per row, a pass over the registers finds the row's max |y|
// first (the per-row RMSNorm twin: with the sum of squares, QF below, and y = (x·(w +
// offset))·rstd; every other forward computes (x·rstd)·(w + offset)).
// SPEC + 128 + 256 (`nk_fwd_regqd_*`): the same with EW's registers (256-thread bound: the
// 1024-thread Q kernels spill) and PDL; its weight chunks and the device scale are loaded once,
// before the first row (every row of the persistent grid uses them), and the group's next row is
// loaded while the current one is reduced; + 512 (`nk_fwd_regqdr_*`) per-row scaling, else per
// tensor (compiled in, not read from the call); + 2048 (`nk_fwd_regqd{|r}t_*`, TF below) yT
// through the CTAs' own shared-memory tiles in clusters, instead of the separate transpose
// kernel. Same bits as SPEC + 128.
template <bool ALIGNED, int SPEC, bool FULL>
NK_DEVICE void fwd_reg_body(const NkFwdParams& p0) {
    constexpr int DT = SPEC & 3;
    constexpr bool LN = (SPEC & 4) != 0, RES = (SPEC & 8) != 0;
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int KMAX = FWD_REG_KMAX<SPEC>;
    constexpr bool PF = ALIGNED && (SPEC & 64) != 0;
    constexpr bool Q = (SPEC & 128) != 0;
    constexpr bool EW = (SPEC & 256) != 0 && !PF;
    // The quantised twin is compiled for one scaling mode (SPEC + 512: per row); the other
    // quantised kernels read it from the call.
    // QP: the quantised twin (SPEC + 128 + 256).
    constexpr bool QP = Q && EW;
    constexpr bool QROW = QP && (SPEC & 512) != 0;
    // TF (SPEC + 2048, `nk_fwd_regqd{|r}t_*`): yT through shared-memory tiles, launched in
    // clusters of CL CTAs (CL = 1 without a cluster launch). CTA b walks tiles of p0.tm
    // consecutive rows (tile b, b + grid, ..; the tile's rows rpc at a time) and puts each row's
    // quantised bytes into its tile (p0.tm rows of p0.tpitch bytes, dynamic shared memory) as
    // well as into y_q; the cluster's CL tiles are consecutive (a supertile of CL·tm rows) and,
    // once all are done, each CTA writes a CL-th of the supertile's columns transposed, reading
    // the rows through DSMEM (q_write_tc). Every CTA of a cluster walks the same number of tiles
    // (rows past M inactive), so the cluster barriers line up. The rows and their arithmetic are
    // the twin's; only which CTA takes a row changes.
    constexpr bool TF = QP && (SPEC & 2048) != 0;
    // QF: the per-row RMSNorm twin finds the row's max |y| with its sum of squares. It computes
    // y = (x·(w + offset))·rstd (every other forward: (x·rstd)·(w + offset), the same two
    // roundings): rounding is monotone and rstd ≥ 0 is the same for the whole row, so max |y| =
    // max |x·(w + offset)|·rstd, one rounding, exactly (rstd = 0 or inf, and NaN products, fold
    // alike; see the per-row block below). The max travels in the sum's reduction (group_sum_nb's
    // MAX1): no pass over y for its max, no max reduction. The planner therefore never chooses
    // between this twin and another kernel by M (batch invariance: the plain kernel would give
    // other bits), and gives it no bias (y would be p·rstd + b; a pass for the max compiled in
    // beside the fused one cost 26 registers): RMSNorm with a bias keeps the plain kernel.
    constexpr bool QF = QP && QROW && !LN;
    // QK: QF keeps its products for the output pass (pq below), except bf16 RMSNorm with the
    // residual, built at (256, 2): its 128 registers leave no room (24 bytes spilled, 1-3.5%
    // slower at 8-16384 rows of 4096-8192 on an H200, rowq/call7); and the yT tile kernels (TF,
    // 128 registers at their bound: 8 bytes spilled without the residual).
    constexpr bool QK = QF && !TF && !(RES && DT == NK_DT_BF16);
    // The reduction order of the 16-bit forwards (f32's is its own, a single accumulator; so is
    // that of the quantised ones except RMSNorm with the residual, the only quantised kernels
    // with pairs: two accumulators cost the per-row RMSNorm twin 1-3% at many rows and changed
    // the code of kernels the benchmark does not measure, NOTES v18): thread t of the group G sums its even chunks (0, 2,
    // ..) and its odd chunks (1, 3, ..) in two accumulators, in chunk order, and adds them (even +
    // odd) before the group sum — two independent dependency chains per thread. PAIR (SPEC + 256
    // + 1024, `nk_fwd_regp_*`; with Q, `nk_fwd_regqp{|r}_*`) runs
    // group G's rows with 2G threads of KMAX = 2 chunks launched as group 2G: thread t < G owns
    // G-thread t's even chunks, thread G + t its odd ones, so each holds one of the two
    // accumulators; the pair adds them through shared memory (addition commutes: both halves get
    // the same bits) and each half runs the group sum of G. The same bits as the group G kernels.
    // Every step's rounding is explicit (add_chunk_rn, add_centred_rn): contracted, the odd
    // accumulator's −0 start let the compiler fold it and pick another product for the FMA.
    constexpr bool TWO = NARROW && (!Q || (!LN && RES));
    constexpr bool PAIR = EW && (SPEC & 1024) != 0;
    static_assert(!(PAIR && TF) && (!PAIR || TWO), "pairs: two accumulators, no yT tiles");
    // HALF (SPEC + 256 + 16 + 8192, `nk_fwd_regh_*`): the pairs' converse, a row of the 4-chunk
    // table's group G run by G / 2 threads of 8 chunks, launched as group G / 2 (8 threads at least).
    // Chunk k of thread t is chunk k / 2 of G-thread t (k even) or of G-thread G / 2 + t (k odd),
    // so the thread keeps four accumulators — those two G-threads' even and odd chunks, each in
    // chunk order — adds each pair (even + odd) and hands both sums to group_sum_half, which adds
    // them in group_sum_nb's order over the G threads: the same bits as the 4-chunk kernels, with
    // twice the loads in flight per thread (the large batches; the decode rows keep the 4-chunk
    // twin, NOTES v27).
    constexpr bool HALF = EW && (SPEC & 8192) != 0;
    static_assert(!HALF || (TWO && !PAIR && !Q && KMAX == 8), "half: the 16-bit 8-chunk twin");
    constexpr int NA = HALF ? 4 : 2;
    // L2W: the 16-byte-aligned plain register forwards without the residual and the half-thread
    // kernels prefetch a later CTA's row into L2 (below). Not the twins and pairs (the decode
    // rows, whose grids are a wave at most), the quantised kernels (their twin has its own) nor
    // the residual's (slower with it, H200, l2w/call1; its code alone cost add + RMSNorm
    // 4096×1024 1.6%, call 4). The half-thread LayerNorm in a build of its own (SPEC + 16384,
    // `nk_fwd_regh_*_ln_l2`), which issues it before its loads: after them its 128 registers
    // spilled 16 bytes and the code cost 4-9% (call 3), and before them the code still cost
    // 1-3.4% below 2^25 elements, where the planner keeps the build without it (call 4).
    constexpr bool HL2 = HALF && LN && (SPEC & 16384) != 0;
    // SUBW (SPEC + 32768, `nk_fwd_regh_*_sw`): the half-thread kernels for groups G / 2 below a
    // warp (group_sum_half's one-butterfly form).
    constexpr bool SUBW = HALF && (SPEC & 32768) != 0;
    // CHAN (SPEC + 65536, `_1b`): the plain LayerNorm forwards (not the quantised ones, whose
    // twin must agree with nk_fp8.cuh's kernel) take the row's statistics behind one barrier
    // (nk_common.cuh, chan_put / chan_fold): each warp sums its units' sums (a unit: a thread of
    // the table's group, two per half-thread, the two halves of a pair), centres its elements on
    // the warp's own mean and sums the squared deviations; after one barrier the warps' (s, q)
    // fold around the row's mean by the parallel-axis identity. Other bits than the two
    // reductions (the sum's order across warps is the fold's butterfly), so the host takes it
    // by N (the CUDA planner's Tuning::fwd_ln_one_barrier: table groups of 256 threads and more,
    // rows of whole rounds of chunks), for every kernel of an N. Needs a group of more than a
    // warp. EQ: every warp holds the same power-of-two count (16-byte layouts, FULL), a
    // constant; else (the element-wise twins) the counts are summed per warp, the same values.
    constexpr bool CHAN = (SPEC & 65536) != 0;
    static_assert(!CHAN || (LN && !Q && !SUBW), "one barrier: the plain LayerNorm forwards");
    constexpr bool EQ = ALIGNED && FULL;
    constexpr int UK = HALF ? KMAX / 2 : PAIR ? 2 * KMAX : KMAX;  // chunks per unit
    constexpr bool L2W = ALIGNED && !Q && !PF && !RES && (!EW || (HALF && (!LN || HL2)));
    // WD: the plain 16-bit LayerNorm forward without the residual (16-byte layouts, rows of
    // whole chunks: not the twins, pairs, half-thread, quantised or cp.async-staged kernels, whose
    // weights come with the row) issues its output pass's weight and bias loads WD chunks ahead
    // of their use. They are volatile, so in program order: loaded right before their chunk,
    // chunk k + 1's waited for chunk k's store, one L2 round trip per chunk after the row's
    // reductions. The same values in the same arithmetic: no bit changes. H200, one build per
    // depth by NK_FWD_WD_LN against 5e64037 (bench/results/nvidia-h200-2026-11-28/wpre/call1):
    // D = 1 ln_fwd 16384×1024 −4.7%, 8192×2048 −4.5%, 8192×4096 f16 −2.4%, 65536×512 −1.2%,
    // 32768×4096 +0.6% (8 bytes spilled at the 1024-thread bound's 64 registers); D = 2 (16
    // bytes) +5-8.7% at 2^24 elements and up, D = 4 (56 bytes) +35-66%. RMSNorm with its weight
    // 4 chunks ahead (no spill): within ±0.2% but 8192×2048 −1.3%, and its residual kernel 2.5%
    // slower at 1024×4096; f32 1 or 2 ahead (no spill) 1-11% slower: both load where used.
    constexpr int WD = (ALIGNED && FULL && LN && !RES && NARROW && KMAX == REG_KMAX && !EW && !Q && !PF) ? NK_FWD_WD_LN : 0;
    static_assert(WD <= KMAX, "the weight loads ahead: at most the thread's chunks");
    // The accumulator of chunk k (TWO).
    auto acc_of = [](int k) -> int { return HALF ? ((k >> 1) & 1) | ((k & 1) << 1) : PAIR ? 0 : k & 1; };
    constexpr int NS = RES ? 2 : 1, SW = NARROW ? 1 : 2;
    if constexpr (EW) {
        if (p0.flags & NK_F_TRIGGER) nk_grid_dep_launch();
    }
    const NkFwdParams p = specialise<DT, NK_CAST_GEMMA>(p0);
    NK_SHARED float scratch[2][(CHAN ? 4 : 1) * NK_ROW_MAX_THREADS / NK_WARP];
    // PAIR: the halves' partial sums, two buffers (by `par`, as `scratch`): a group of at most
    // 32 threads sums without a barrier, so the next reduction's writes must not land in the
    // buffer a slower partner may still read (the pair kernels' launch bound is 256 threads).
    NK_SHARED float pairx[2][PAIR ? 256 : 1];
    // QF pairs: the halves' row maxima beside their sums.
    NK_SHARED float pairm[2][PAIR && QF ? 256 : 1];
    // CHAN pairs: the halves' counts (units of unequal counts) and centred sums.
    NK_SHARED float pairn[2][PAIR && CHAN && !EQ ? 256 : 1];
    NK_SHARED float pairq[2][PAIR && CHAN ? 256 : 1];
    const int qfmt = p0.dt_y;
    float qscale = 0.f, amax_t = 0.f;
    if constexpr (Q && !QP) qscale = q_tensor_scale(p0);
    NK_DYN_SMEM(smem);
    int par = 0, buf = 0;
    // QK is compiled without a bias: the planner never gives the per-row RMSNorm twin one (its row
    // max comes from x·(w + offset), which a bias would break), and the bias's load, unpack and
    // add, predicated off but issued, were 17 of the ~39 instructions of each output chunk
    // (rms_fwd_fp8_row 32768×4096 130.4 → 123.2 µs on an H200, rowq/call12). The other QF kernels
    // keep the code: without it, bf16 add + RMSNorm's twin at (256, 2) was 1.3-3.5% slower at
    // 16384-32768 rows of 4096 (call 12).
    const bool has_w = (p.flags & NK_F_WEIGHT) != 0, has_b = !QK && (p.flags & NK_F_BIAS) != 0;
    const bool stats = (p.flags & NK_F_STATS) != 0;
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    // EW: G is a power of two (every table's group), so shifts replace the divisions by it.
    const int lg = EW ? nk_ilog2(G) : 0;
    const int t = EW ? tid & (G - 1) : tid % G, g = EW ? tid >> lg : tid / G;
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = FULL ? KMAX : EW ? (nch + G - 1) >> lg : (nch + G - 1) / G;
    const float nf = (float)n, offset = p.offset;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const void* bp = reinterpret_cast<const void*>(p.b);
    const int64_t step = nk_nblocks() * rpc;
    const int TM = TF ? p0.tm : 1, tpitch = TF ? p0.tpitch : 0;
    // The CTA's first row group and the one after row0's (TF: the next in the tile, else the
    // first of the CTA's next tile).
    // (The other kernels keep their int index arithmetic, as before TF existed: the same code.)
    const int64_t first = TF ? (int64_t)nk_bid() * TM : (int64_t)(nk_bid() * rpc);
    const int CL = TF ? nk_cluster_size() : 1, crank = TF ? nk_cluster_rank() : 0;
    // TF: the cluster barrier after a supertile's write-out is split: every thread arrives once
    // it has read the other tiles, and waits only before its CTA next writes its own tile (the
    // next tile's first output pass, or the kernel's end), so the next rows' loads and
    // reductions overlap the partners' write-out.
    bool tile_wait = false;
    // TF: whether row0's supertile starts below M (every CTA of the cluster agrees).
    auto more = [&](int64_t r0) -> bool { return r0 - (r0 & (TM - 1)) - (int64_t)crank * TM < p.m; };
    auto next_row0 = [&](int64_t r0) -> int64_t {
        if constexpr (TF) {
            const int64_t in = r0 & (TM - 1);
            return in + rpc < TM ? r0 + rpc : r0 - in + (int64_t)nk_nblocks() * TM;
        } else {
            return r0 + step;
        }
    };
    // f(k, e, x row, residual row) for each of the thread's chunks k (elements e..) of `row`, if
    // the row exists (the prefetches of the next row).
    auto each_chunk = [&](int64_t row, auto&& f) {
        if (row < p.m) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* rrow = row_ptr(p.r, row, p.sr, DT);
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) f(k, (int64_t)c * CH, xrow, rrow);
            }
        }
    };
    // PF: queues the asynchronous copies of `row` into buffer b (none for rows past M) and closes
    // the group, so every iteration commits exactly one group.
    auto stage = [&](int64_t row, int b) {
        each_chunk(row, [&](int k, int64_t e, const void* xrow, const void* rrow) {
            pf_stage<NS, SW>(smem, b, 0, xrow, e, k, tid, bd, K);
            if (RES) pf_stage<NS, SW>(smem, b, 1, rrow, e, k, tid, bd, K);
        });
        nk_copy_async_commit();
    };
    if (PF) stage(nk_bid() * rpc + g, 0);
    Raw wreg[EW ? KMAX : 1], breg[EW && LN ? KMAX : 1];
    if constexpr (QP) {
        // The quantised twin (SPEC + 128 + 256) walks the rows of a persistent grid, so its
        // weight (and bias) chunks, the same for every row, are loaded once, after the wait for
        // the previous kernel and before anything else touches memory; the device scale's load
        // follows them, so its round trip overlaps theirs and the first row's, and 1/scale is
        // stored at the end (a store here would hold the row's loads behind the scale's).
        nk_grid_dep_wait();
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            const int c = k * G + t;
            if (FULL || (k < K && c < nch)) {
                if (has_w) load_chunk<ALIGNED, NARROW>(wp, DT, (int64_t)c * CH, n, wreg[k]);
                if (LN && has_b) load_chunk<ALIGNED, NARROW>(bp, DT, (int64_t)c * CH, n, breg[LN ? k : 0]);
            }
        }
        qscale = q_scale_value(p0);
    }
    // The quantised twin keeps its group's next row in flight: the row's x (and residual) chunks
    // are loaded into hq / rq one iteration ahead, right after the current row's arrived and
    // before its reductions, so a CTA of the persistent grid always has a row's loads
    // outstanding (without it, 4 CTAs per SM left the DRAM idle while rows were reduced and
    // written: NOTES v14).
    Raw hq[QP ? KMAX : 1], rq[QP && RES ? KMAX : 1];
    auto qload = [&](int64_t row) {
        each_chunk(row, [&](int k, int64_t e, const void* xrow, const void* rrow) {
            load_chunk<ALIGNED, NARROW>(xrow, DT, e, n, hq[k]);
            if (RES) load_chunk<ALIGNED, NARROW>(rrow, DT, e, n, rq[RES ? k : 0]);
        });
    };
    if constexpr (QP) qload(TF ? first + g : nk_bid() * rpc + g);
    // The other kernels' loop is written as it was before TF, so their code stays the same.
    for (int64_t row0 = TF ? first : nk_bid() * rpc; TF ? more(row0) : row0 < p.m; row0 = TF ? next_row0(row0) : row0 + step) {
        const int64_t row = row0 + g;
        const bool active = row < p.m;
        if constexpr (QP && (LN || QROW)) {
            // The weight's (and bias's) fp32 values are recomputed per row from the 16-bit
            // registers rather than kept across rows: 16-31 fewer registers, a CTA more per SM
            // for LayerNorm and per-row scaling (RMSNorm per tensor keeps them: the same CTAs per
            // SM either way, fewer instructions; H100, NOTES v14).
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                nk_opaque(wreg[k].q[0]);
                if (LN) nk_opaque(breg[LN ? k : 0].q[0]);
            }
        }
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
        // TWO: acc[0] the even chunks', acc[1] the odd chunks' (PAIR: acc[0] this half's). The odd
        // accumulator starts at −0, the identity of addition, so that "even + odd" is exactly the
        // even sum where a thread has no odd chunk (and both halves of a pair start alike).
        const float start0 = PAIR && t >= (G >> 1) ? -0.f : 0.f;
        // HALF: acc[2], acc[3] the second G-thread's even and odd chunks'.
        float acc[NA] = {start0, -0.f};
        if constexpr (HALF) {
            acc[NA - 2] = 0.f;
            acc[NA - 1] = -0.f;
        }
        // QF: the thread's max |x·(w + offset)| (0: the identity for magnitudes); QK: the
        // products themselves, kept for the output pass (y = p·rstd), which reads them instead of
        // unpacking x and the weight and multiplying again (the same values, so the same bits).
        float mxp = 0.f;
        float pq[QK ? KMAX : 1][CH];
        // The row's sum: the thread's even + odd, then the group sum of G (PAIR: G / 2). QF: mxp
        // travels beside it (a pair exchanges both; group_sum_nb's MAX1) and holds the row's max
        // after.
        auto row_sum = [&](float (&a)[NA]) -> float {
            if constexpr (HALF) {
                float s2[2] = {a[0] + a[1], a[NA - 2] + a[NA - 1]};
                return group_sum_half<SUBW>(s2, G, scratch[par]);
            }
            constexpr int NV = QF ? 2 : 1;
            float s[NV];
            s[0] = a[0];
            if constexpr (QF) s[NV - 1] = mxp;
            if constexpr (PAIR) {
                pairx[par][tid] = a[0];
                if constexpr (QF) pairm[par][tid] = mxp;
                nk_sync();
                s[0] = a[0] + pairx[par][tid ^ (G >> 1)];
                if constexpr (QF) s[NV - 1] = nk_fmax(mxp, pairm[par][tid ^ (G >> 1)]);
            } else if constexpr (TWO) {
                s[0] = a[0] + a[1];
            }
            group_sum_nb<NV, 0, EW, QF>(s, PAIR ? G >> 1 : G, scratch[par]);
            if constexpr (QF) mxp = s[NV - 1];
            return s[0];
        };
        // L2W (Tuning::fwd_l2_ahead, p0.pf = D rows > 0): once the row's own loads are issued,
        // the group's first thread sends the row D further on (that of a CTA about half a wave
        // later, on the planner's count) to L2 by one bulk copy, so that CTA's loads find it
        // there: more of the DRAM's requests in flight. A hint: nothing waits for it, no bit
        // changes. After the loads, its address from the row's pointer: issued before them, with
        // the prefetch on, 2048 rows of 4096 and 1024 of 8192 were 7-13% slower (H200,
        // l2w/call3, `summary-v1.md`).
        auto l2_ahead = [&](const void* xrow) {
            if constexpr (L2W) {
                if (p0.pf > 0 && t == 0 && p0.pf < p.m - row) {
                    constexpr int ES = NARROW ? 2 : 4;
                    const unsigned bytes = ((unsigned)n * (unsigned)ES) & ~15u;
                    nk_bulk_prefetch_l2(static_cast<const char*>(xrow) + (int64_t)p0.pf * p.sx * ES, bytes);
                }
            }
        };
        // WD: the weight and bias chunks ahead of the output pass, loaded without a branch (x's
        // own chunk stands in for an absent one, and is not used).
        Raw wq[WD > 0 ? KMAX : 1], bq[WD > 0 ? KMAX : 1];
        auto wfetch = [&](int k) {
            if constexpr (WD > 0) {
                if (k < KMAX) {
                    const int64_t e = (int64_t)(k * G + t) * CH;
                    const void* xs = reinterpret_cast<const void*>(p.x);
                    load_chunk<ALIGNED, NARROW>(has_w ? wp : xs, DT, e, n, wq[k < KMAX ? k : 0]);
                    load_chunk<ALIGNED, NARROW>(has_b ? bp : xs, DT, e, n, bq[k < KMAX ? k : 0]);
                }
            }
        };
        if (active) {
            const void* xrow = row_ptr(p.x, row, p.sx, DT);
            const void* rrow = row_ptr(p.r, row, p.sr, DT);
            void* rorow = row_ptr_mut(p.r_out, row, p.sro, DT);
            if constexpr (!PF) {
                Raw r[RES ? KMAX : 1];
                if constexpr (EW && !Q) {
                    // The wait for the previous kernel sits here, right before the first memory
                    // access (rows past M never touch memory), so the index arithmetic above runs
                    // while that kernel finishes instead of after the wait. Then the weight (and
                    // bias) chunks first, without a branch (x's own chunk stands
                    // in for an absent one, and is not used): the row's loads follow in program
                    // order (the accesses are volatile), so every load is issued before the first
                    // instruction that waits for one, and the two round trips overlap.
                    nk_grid_dep_wait();
                    if constexpr (HL2) l2_ahead(xrow);
                    const void* ws = has_w ? wp : xrow;
                    const void* bs = has_b ? bp : xrow;
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (FULL || (k < K && c < nch)) {
                            load_chunk<ALIGNED, NARROW>(ws, DT, (int64_t)c * CH, n, wreg[k]);
                            if (LN) load_chunk<ALIGNED, NARROW>(bs, DT, (int64_t)c * CH, n, breg[LN ? k : 0]);
                        }
                    }
                }
                if constexpr (QP) {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        h[k] = hq[k];
                        if (RES) r[k] = rq[RES ? k : 0];
                    }
                    qload(TF ? next_row0(row0) + g : row + step);
                    // Fp8Tuning::twin_l2_ahead (p0.pf = K > 0): the row K walks past the one just
                    // asked for goes to L2 by one bulk copy from the group's first thread (16-byte
                    // layouts: rows of whole 16-byte words), so that its loads find it there.
                    // RMSNorm without the residual only: with the residual's row as well, K = 1
                    // made add + RMSNorm 4-15% slower, and the code alone (K = 0) cost its decode
                    // rows 2-5% (H200, rowq/call15); LayerNorm's twins were not measured.
                    // The yT tile kernels (TF): the row p0.pf tile walks past the one just asked
                    // for (Fp8Tuning::tile_l2_ahead), so that the loads of the rows after a
                    // supertile's write-out are on their way during it.
                    if constexpr (!RES && !LN) {
                        int64_t ahead;
                        if constexpr (TF) {
                            ahead = next_row0(row0);
                            for (int i = 0; i < p0.pf; ++i) ahead = next_row0(ahead);
                            ahead += g;
                        } else {
                            ahead = row + (int64_t)(1 + p0.pf) * step;
                        }
                        if (p0.pf > 0 && t == 0 && ahead < p.m) {
                            const unsigned bytes = (unsigned)n * (unsigned)(NARROW ? 2 : 4);
                            nk_bulk_prefetch_l2(row_ptr(p.x, ahead, p.sx, DT), bytes);
                        }
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (FULL || (k < K && c < nch)) {
                            load_chunk<ALIGNED, NARROW>(xrow, DT, (int64_t)c * CH, n, h[k]);
                            if (RES) load_chunk<ALIGNED, NARROW>(rrow, DT, (int64_t)c * CH, n, r[k]);
                        }
                    }
                    if constexpr (!HL2) l2_ahead(xrow);
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
                            if constexpr (TWO) add_chunk_rn<ALIGNED>(acc[acc_of(k)], v, false, (int64_t)c * CH, n);
                            else add_chunk<ALIGNED>(acc[0], v, false, (int64_t)c * CH, n);
                            if constexpr (QF) {
                                // ycalc's product before rstd (the weight from the registers).
                                float w[CH];
                                if (has_w) unpack<NARROW>(DT, wreg[k], w);
                                const int lim = FULL ? CH : chunk_len((int64_t)c * CH, n);
#pragma unroll
                                for (int j = 0; j < CH; ++j) {
                                    const float pj = has_w ? nk_mul_rn(v[j], nk_add_rn(w[j], offset)) : v[j];
                                    if constexpr (QK) pq[QK ? k : 0][j] = pj;
                                    if (j < lim) mxp = nk_fmax(mxp, nk_fabs(pj));
                                }
                            }
                        }
                    }
                }
            }
        }
        float mean = 0.f, var;
        if (LN) {
            // The mean, then the squared deviations from it (never E[x²] − μ²): in two
            // reductions, or (CHAN) behind one barrier.
            if (active) {
#pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    const int c = k * G + t;
                    if (FULL || (k < K && c < nch)) {
                        Raw hk;
                        float v[CH];
                        get(k, hk);
                        unpack<NARROW>(DT, hk, v);
                        if constexpr (TWO) add_chunk_rn<ALIGNED>(acc[acc_of(k)], v, true, (int64_t)c * CH, n);
                        else add_chunk<ALIGNED>(acc[0], v, true, (int64_t)c * CH, n);
                    }
                }
            }
            float a2[NA] = {start0, -0.f};
            if constexpr (HALF) {
                a2[NA - 2] = 0.f;
                a2[NA - 1] = -0.f;
            }
            // The centred pass around `ma` (HALF: `mb` for the second unit's chunks, k odd).
            auto centred = [&](float ma, float mb) {
                if (active) {
#pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (FULL || (k < K && c < nch)) {
                            Raw hk;
                            float v[CH];
                            get(k, hk);
                            unpack<NARROW>(DT, hk, v);
                            const float m = HALF && (k & 1) ? mb : ma;
                            if constexpr (TWO) add_centred_rn<ALIGNED>(a2[acc_of(k)], v, m, (int64_t)c * CH, n);
                            else add_centred<ALIGNED>(a2[0], v, m, (int64_t)c * CH, n);
                        }
                    }
                }
            };
            // Two reductions: the row's mean, then the squared deviations from it.
            auto two_pass = [&]() {
                const float sum = row_sum(acc);
                par ^= 1;
                mean = nk_div_rn(sum, nf);
                centred(mean, mean);
                var = nk_div_rn(row_sum(a2), nf);
            };
            auto one_barrier = [&]() {
                // One barrier (nk_common.cuh, chan_fold): each warp's units centred on the warp's
                // own mean. The units' counts (!EQ): the elements of the thread's chunks (HALF: per
                // unit), summed over the warp by the same butterfly; EQ: a constant.
                constexpr float NW = (float)(UK * CH * NK_WARP), INW = 1.f / NW;
                float ca = 0.f, cb = 0.f;
                if constexpr (!EQ) {
                    int ia = 0, ib = 0;
                    if (active) {
#pragma unroll
                        for (int k = 0; k < KMAX; ++k) {
                            const int c = k * G + t;
                            if (FULL || (k < K && c < nch)) {
                                const int l = ALIGNED ? CH : chunk_len((int64_t)c * CH, n);
                                if (HALF && (k & 1)) ib += l;
                                else ia += l;
                            }
                        }
                    }
                    ca = (float)ia;
                    cb = (float)ib;
                }
                if constexpr (HALF) {
                    float sa = warp_butterfly(acc[0] + acc[1], NK_WARP), sb = warp_butterfly(acc[NA - 2] + acc[NA - 1], NK_WARP);
                    if constexpr (!EQ) {
                        ca = warp_butterfly(ca, NK_WARP);
                        cb = warp_butterfly(cb, NK_WARP);
                    }
                    const float mv[2] = {chan_mean<EQ>(sa, ca, INW), chan_mean<EQ>(sb, cb, INW)};
                    const float sv[2] = {sa, sb}, nv[2] = {ca, cb};
                    chan_put<EQ, 2>(sv, mv, nv, scratch[par]);
                    centred(mv[0], mv[1]);
                    const float qv[2] = {warp_butterfly(a2[0] + a2[1], NK_WARP), warp_butterfly(a2[NA - 2] + a2[NA - 1], NK_WARP)};
                    const ChanStats st = chan_fold<EQ, 2>(qv, NW, G, nf, scratch[par]);
                    mean = st.mean;
                    var = nk_div_rn(st.m2, nf);
                } else {
                    // PAIR: the unit's sum (and count) from the two halves through shared memory,
                    // as row_sum does; each half centres its own chunks, and the pair adds the two.
                    const int GU = PAIR ? G >> 1 : G;
                    const int mate = tid ^ (G >> 1);
                    float su;
                    if constexpr (PAIR) {
                        pairx[par][tid] = acc[0];
                        if constexpr (!EQ) pairn[par][tid] = ca;
                        nk_sync();
                        su = acc[0] + pairx[par][mate];
                        if constexpr (!EQ) ca = ca + pairn[par][mate];
                    } else {
                        su = TWO ? acc[0] + acc[1] : acc[0];
                    }
                    su = warp_butterfly(su, NK_WARP);
                    if constexpr (!EQ) ca = warp_butterfly(ca, NK_WARP);
                    const float mw = chan_mean<EQ>(su, ca, INW);
                    const float sv[1] = {su}, mv[1] = {mw}, nv[1] = {ca};
                    chan_put<EQ, 1>(sv, mv, nv, scratch[par]);
                    centred(mw, mw);
                    float qu = TWO && !PAIR ? a2[0] + a2[1] : a2[0];
                    if constexpr (PAIR) {
                        pairq[par][tid] = qu;
                        nk_sync();
                        qu = qu + pairq[par][mate];
                    }
                    const float qv[1] = {warp_butterfly(qu, NK_WARP)};
                    const ChanStats st = chan_fold<EQ, 1>(qv, NW, GU, nf, scratch[par]);
                    mean = st.mean;
                    var = nk_div_rn(st.m2, nf);
                }
            };
            if constexpr (CHAN) one_barrier();
            else two_pass();
        } else {
            var = nk_div_rn(row_sum(acc), nf);
        }
        par ^= 1;
        const float rstd = nk_rsqrt_rn(nk_add_rn(var, p.eps));
        // The quantised twin computes y twice per row when scaling per row, so it keeps the formula in
        // a lambda; the plain kernels keep theirs inline below (the same operations: sharing the
        // lambda changed their SASS scheduling, and their measured speed is the reference).
        if constexpr (Q) {
            // y of chunk k (elements e..): x̂·(w + offset) + b; an absent weight multiplies by 1 and
            // an absent bias adds −0, both exact, so they are skipped (no instruction per element).
            auto ycalc = [&](int k, int64_t e, float (&y)[CH]) {
                if constexpr (QK) {
                    // The kept products p = x·(w + offset): y = p·rstd.
    #pragma unroll
                    for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(pq[QK ? k : 0][j], rstd);
                } else {
                    float v[CH];
                    Raw hk;
                    get(k, hk);
                    unpack<NARROW>(DT, hk, v);
                    // x̂ = (x − mean)·rstd, then ·(w + offset); QF: (x·(w + offset))·rstd, so that
                    // the row's max |y| follows from max |x·(w + offset)|.
                    if constexpr (QF) {
    #pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = v[j];
                    } else {
    #pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(LN ? nk_sub_rn(v[j], mean) : v[j], rstd);
                    }
                    if (has_w) {
                        Raw wr;
                        float w[CH];
                        if constexpr (EW) wr = wreg[k];
                        else load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr);
                        unpack<NARROW>(DT, wr, w);
    #pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], nk_add_rn(w[j], offset));
                    }
                    if constexpr (QF) {
    #pragma unroll
                        for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], rstd);
                    }
                }
                if (has_b) {
                    Raw br;
                    float b[CH];
                    if constexpr (EW && LN) br = breg[LN ? k : 0];
                    else load_chunk<ALIGNED, NARROW>(bp, DT, e, n, br);
                    unpack<NARROW>(DT, br, b);
    #pragma unroll
                    for (int j = 0; j < CH; ++j) y[j] = nk_add_rn(y[j], b[j]);
                }
            };
            float qs = qscale;
            if constexpr (Q) {
                if (QP ? QROW : (p0.q & NK_Q_ROW) != 0) {
                    float mx = 0.f;
                    if constexpr (QF) {
                        // max_j fl(|p_j|·rstd) = fl(max_j |p_j|·rstd) for rstd ≥ 0 (rounding is
                        // monotone; NaN products were skipped by both maxes). rstd = 0 (an infinite
                        // sum of squares) makes every y 0 or NaN (inf·0) and rstd = inf (every
                        // square underflowed) makes y ±inf or NaN (0·inf): the NaN-ignoring max
                        // from 0 gives the same 0 or inf here.
                        mx = nk_fmax(0.f, nk_mul_rn(mxp, rstd));
                    } else if (active) {
    #pragma unroll
                        for (int k = 0; k < KMAX; ++k) {
                            const int c = k * G + t;
                            if (FULL || (k < K && c < nch)) {
                                const int64_t e = (int64_t)c * CH;
                                float y[CH];
                                ycalc(k, e, y);
                                const int lim = FULL ? CH : chunk_len(e, n);
    #pragma unroll
                                for (int j = 0; j < CH; ++j)
                                    if (j < lim) mx = nk_fmax(mx, nk_fabs(y[j]));
                            }
                        }
                    }
                    if constexpr (!QF) {
                        group_max_nb(mx, G, scratch[par]);
                        par ^= 1;
                    }
                    qs = q_row_scale(qfmt, mx);
                    // The quantised twin per row: the tensor's amax is the max of its rows' max |y|
                    // (max is exact in any order), one max per row instead of one per element.
                    if constexpr (QP) {
                        if (active) amax_t = nk_fmax(amax_t, mx);
                    }
                    if (active && t == 0) store_one(reinterpret_cast<void*>(p0.scale_inv), NK_DT_F32, row, nk_div_rn(1.f, qs));
                }
            }
            if constexpr (TF) {
                if (tile_wait) {
                    nk_cluster_wait();
                    tile_wait = false;
                }
            }
            if (active) {
                if (stats && t == 0) {
                    store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
                    if (LN) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
                }
                // The output pass. The per-row RMSNorm twin (QF) runs it for its format, chosen once
                // per row by a uniform branch (FMT 1: e4m3, 2: e5m2), so that each pair of values
                // takes one conversion instead of two predicated ones; the other kernels choose per
                // pair (0: qfmt at run time; a pass per format raised LayerNorm's per-row twin from
                // 128 to 160 registers).
                auto out_pass = [&](auto fmt) {
                    constexpr int FMT = decltype(fmt)::v;
        #pragma unroll
                    for (int k = 0; k < KMAX; ++k) {
                        const int c = k * G + t;
                        if (FULL || (k < K && c < nch)) {
                            const int64_t e = (int64_t)c * CH;
                            float y[CH];
                            ycalc(k, e, y);
                            const int lim = FULL ? CH : chunk_len(e, n);
                            float qv[CH];
        #pragma unroll
                            for (int j = 0; j < CH; ++j) {
                                if (!(QP && QROW) && j < lim) amax_t = nk_fmax(amax_t, nk_fabs(y[j]));
                                qv[j] = nk_mul_rn(y[j], qs);
                            }
                            uint32_t w2[2];
                            // The twin converts by instruction only (the planner gives it e4m3 and
                            // e5m2 outputs): no per-pair branch or call (FMT 0: a predicated choice).
                            if constexpr (EW) fp8_pack8_ocp(FMT != 0 ? FMT == 1 : qfmt == NK_DT_E4M3, qv, w2);
                            else fp8_pack8(qfmt, qv, w2);
                            store_q8<ALIGNED>(reinterpret_cast<unsigned char*>(p0.y + (uint64_t)(row * p0.sy)), e, n, w2);
                            if constexpr (TF) nk_store_s64(smem + (int)(row & (TM - 1)) * tpitch + e, w2[0], w2[1]);
                        }
                    }
                };
                if constexpr (QF) {
                    if (qfmt == NK_DT_E4M3) out_pass(NkConst<1>{});
                    else out_pass(NkConst<2>{});
                } else {
                    out_pass(NkConst<0>{});
                }
            }
            if constexpr (TF) {
                // The tile's last row group: once every CTA of the cluster has its tile in shared
                // memory, this CTA writes its columns of the supertile; the arrival after it (and
                // the wait before this CTA's next tile store) keeps the tiles until every CTA has
                // read them. Neither barrier orders the global stores (y_q's, yT's): with the
                // release forms every thread waited at both for all its stores to be acknowledged
                // (the arrival after the write-out: 6% of the stall samples, one ERRBAR, H200
                // ncu, tpf/call1).
                const int64_t in = row0 & (TM - 1);
                if (in + rpc >= TM) {
                    const int64_t srow0 = row0 - in - (int64_t)crank * TM;
                    const int STM = CL * TM, ncb = (int)((n + 3) / 4);
                    const int vr = p.m - srow0 < STM ? (int)(p.m - srow0) : STM;
                    nk_cluster_sync_smem();
                    q_write_tc(p0, smem, tpitch, TM, CL, srow0, vr, ncb * crank / CL, ncb * (crank + 1) / CL, (int)n);
                    nk_cluster_arrive_relaxed();
                    tile_wait = true;
                }
            }
        } else {
            if (active) {
                if (stats && t == 0) {
                    store_one(reinterpret_cast<void*>(p.rstd), NK_DT_F32, row, rstd);
                    if (LN) store_one(reinterpret_cast<void*>(p.mean), NK_DT_F32, row, mean);
                }
                void* yrow = row_ptr_mut(p.y, row, p.sy, DT);
    #pragma unroll
                for (int k = 0; k < WD; ++k) wfetch(k);
    #pragma unroll
                for (int k = 0; k < KMAX; ++k) {
                    if constexpr (WD > 0) wfetch(k + WD);
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
                            if constexpr (EW) wr = wreg[k];
                            else if constexpr (WD > 0) wr = wq[k];
                            else load_chunk<ALIGNED, NARROW>(wp, DT, e, n, wr);
                            unpack<NARROW>(DT, wr, w);
    #pragma unroll
                            for (int j = 0; j < CH; ++j) y[j] = nk_mul_rn(y[j], nk_add_rn(w[j], offset));
                        }
                        if (has_b) {
                            Raw br;
                            float b[CH];
                            if constexpr (EW && LN) br = breg[LN ? k : 0];
                            else if constexpr (WD > 0) br = bq[k];
                            else load_chunk<ALIGNED, NARROW>(bp, DT, e, n, br);
                            unpack<NARROW>(DT, br, b);
    #pragma unroll
                            for (int j = 0; j < CH; ++j) y[j] = nk_add_rn(y[j], b[j]);
                        }
                        store<ALIGNED, NARROW>(yrow, DT, e, n, y);
                    }
                }
            }
        }
        buf ^= 1;
    }
    if (PF) nk_copy_async_wait_all();
    // TF: no CTA leaves while a partner may still read its tile.
    if constexpr (TF) {
        if (tile_wait) nk_cluster_wait();
    }
    if constexpr (Q) {
        if constexpr (QP) q_scale_inv_store(p0, qscale);
        NK_SHARED float qred[NK_ROW_MAX_THREADS / NK_WARP];
        q_amax_commit(p0, amax_t, qred);
    }
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

// The column CTAs of the few-row backward in one launch (SPEC + 256 + 4096, `nk_bwd_smc*`): CTAs
// 0 .. p.nsplit − 1 are the twin's row CTAs (dx only), the rest compute dW (and LayerNorm's dB)
// from the inputs: dW[j] = Σ_rows dy·x̂, x̂ = (x − mean)·rstd, dB[j] = Σ_rows dy, the same terms
// the row kernels add (nk_base.cuh's bwd_chunk_dx_w), with no partial rows, no workspace and no
// second kernel. A CTA takes CB = blockDim / RP consecutive 8-element chunks (RP = p.slot row
// lanes, a power of two); lane (r, c) adds rows r, r + RP, .. of chunk c in row order, four rows'
// loads in flight (their indices clamped to a valid row, only the additions guarded), then the RP
// lanes' sums add in lane order through shared memory (blockDim · 8 floats per output). The order
// is fixed by M, N, blockDim and RP: bitwise repeatable.
template <int DT, bool LN>
NK_DEVICE void bwd_cols(const NkBwdParams& p0) {
    constexpr bool NARROW = DT != NK_DT_F32;
    constexpr int RB = 4;  // rows in flight per lane
    const NkBwdParams p = specialise<DT>(p0);
    const Flags f(p.flags);
    NK_DYN_SMEM(smem);
    float* red = reinterpret_cast<float*>(smem);
    const int tid = nk_tid(), bd = nk_bdim(), RP = p.slot, CB = bd / RP;
    const int cl = tid % CB, rl = tid / CB;
    const int64_t n = p.n, m = p.m, nch = (n + CH - 1) / CH;
    const int64_t c = (int64_t)(nk_bid() - p.nsplit) * CB + cl;
    const bool want_b = LN && f.b;
    float sw[CH], sb[CH];
#pragma unroll
    for (int j = 0; j < CH; ++j) sw[j] = sb[j] = 0.f;
    nk_grid_dep_wait();
    if (c < nch && rl < m) {
        const int64_t e = c * CH;
        for (int64_t r0 = rl; r0 < m; r0 += (int64_t)RB * RP) {
            Raw xr[RB], dyr[RB];
            BwdRow st[RB];
#pragma unroll
            for (int i = 0; i < RB; ++i) {
                const int64_t rq = r0 + (int64_t)i * RP, row = rq < m ? rq : m - 1;
                load_chunk<true, NARROW>(row_ptr(p.x, row, p.sx, DT), DT, e, n, xr[i]);
                load_chunk<true, NARROW>(row_ptr(p.dy, row, p.sdy, DT), DT, e, n, dyr[i]);
                st[i].rstd = reinterpret_cast<const float*>(p.rstd)[row];
                st[i].mean = LN ? reinterpret_cast<const float*>(p.mean)[row] : 0.f;
            }
#pragma unroll
            for (int i = 0; i < RB; ++i) {
                if (r0 + (int64_t)i * RP < m) {
                    float xv[CH], dv[CH];
                    unpack<NARROW>(DT, xr[i], xv);
                    unpack<NARROW>(DT, dyr[i], dv);
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        const float xh = (LN ? xv[j] - st[i].mean : xv[j]) * st[i].rstd;
                        sw[j] += dv[j] * xh;
                        if (LN) sb[j] += dv[j];
                    }
                }
            }
        }
    }
#pragma unroll
    for (int acc = 0; acc < 2; ++acc) {
        const bool want = acc == 0 ? f.w : want_b;
        if (!want) continue;
        void* out = reinterpret_cast<void*>(acc == 0 ? p.dw : p.db);
        if (RP == 1) {
            // One lane per chunk: its sum is the column's (0 + sum, as the other one-part paths).
            if (c < nch) {
#pragma unroll
                for (int j = 0; j < CH; ++j) {
                    const int64_t e = c * CH + j;
                    if (e < n) store_one(out, p0.dt_w, e, nk_add_rn(0.f, acc == 0 ? sw[j] : sb[j]));
                }
            }
            continue;
        }
        nk_sync();
#pragma unroll
        for (int j = 0; j < CH; ++j) red[(int64_t)rl * CB * CH + cl * CH + j] = acc == 0 ? sw[j] : sb[j];
        nk_sync();
        const int64_t e0 = (int64_t)(nk_bid() - p.nsplit) * CB * CH;
        for (int o = tid; o < CB * CH; o += bd) {
            float s = red[o];
            for (int r = 1; r < RP; ++r) s += red[(int64_t)r * CB * CH + o];
            if (e0 + o < n) store_one(out, p0.dt_w, e0 + o, nk_add_rn(0.f, s));
        }
    }
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
    constexpr bool SM = (SPEC & 256) != 0 && !PF;
    // COLS (SPEC + 4096, `nk_bwd_smc*`): dW/dB from the column CTAs (bwd_cols); these rows write
    // dx only.
    constexpr bool COLS = SM && (SPEC & 4096) != 0;
    if constexpr (SM) {
        if (p0.flags & NK_F_TRIGGER) nk_grid_dep_launch();
    }
    if constexpr (COLS) {
        if (nk_bid() >= p0.nsplit) {
            bwd_cols<DT, LN>(p0);
            return;
        }
    }
    const NkBwdParams p = specialise<DT>(p0);
    NK_SHARED float scratch[2][2 * NK_ROW_MAX_THREADS / NK_WARP];
    int par = 0, buf = 0;
    NK_DYN_SMEM(smem);
    Flags f(p.flags);
    f.ln = LN;
    f.res = RES;
    const bool has_w = p.w != 0;
    const int G = p.group, rpc = p.rpc, tid = nk_tid(), bd = nk_bdim();
    // SM: shifts for the power-of-two G, as in fwd_reg's EW twin.
    const int lg = SM ? nk_ilog2(G) : 0;
    const int t = SM ? tid & (G - 1) : tid % G, g = SM ? tid >> lg : tid / G;
    const int64_t n = p.n;
    const int nch = (int)((n + CH - 1) / CH);
    const int K = FULL ? KMAX : SM ? (nch + G - 1) >> lg : (nch + G - 1) / G;
    const float nf = (float)n;
    const void* wp = reinterpret_cast<const void*>(p.w);
    const int64_t step = (COLS ? p.nsplit : nk_nblocks()) * rpc;
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
            // SM: the wait right before the first memory access (fwd_reg's EW twin says why).
            if constexpr (SM) nk_grid_dep_wait();
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
        group_sum_nb<2, 0, SM>(a, G, scratch[par]);
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
                    if constexpr (!COLS) {
#pragma unroll
                        for (int j = 0; j < CH; ++j) {
                            dwa[k][j] += dwv[j];
                            if (LN) dba[k][j] += dbv[j];
                        }
                    }
                }
            }
        }
        buf ^= 1;
    }
    if (PF) nk_copy_async_wait_all();
    if constexpr (COLS) return;
    if constexpr (SM) {
        // SM (SPEC + 256, `nk_bwd_sm*`): one row per CTA. Without partial rows (M = 1: p.nparts
        // = 0) the CTA writes dW (and dB) itself, as 0 + term (the finalize's first addition), in
        // the weight's dtype (p0's: with no weight, dB's dtype need not be x's, which `p`
        // assumes). With them (a few rows) its row's terms are partial row `bid`, as the register
        // kernels' below, and the finalize adds the rows in row order: the same bits either way.
        if (p.nparts == 0) {
            const bool want_b = LN && f.b;
            // A chunk per 16-byte store where dW (dB) has x's dtype and a 16-byte-aligned start
            // (an ALIGNED launch has N a multiple of 8); element by element otherwise.
            const bool vec = ALIGNED && p0.dt_w == DT && ((p.dw | (want_b ? p.db : 0)) & 15) == 0;
#pragma unroll
            for (int k = 0; k < KMAX; ++k) {
                const int c = k * G + t;
                if (FULL || (k < K && c < nch)) {
                    float dv[CH], bv[CH];
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        dv[j] = nk_add_rn(0.f, dwa[k][j]);
                        bv[j] = nk_add_rn(0.f, dba[k][j]);
                    }
                    if (vec) {
                        if (f.w) store<true, NARROW>(reinterpret_cast<void*>(p.dw), DT, (int64_t)c * CH, n, dv);
                        if (want_b) store<true, NARROW>(reinterpret_cast<void*>(p.db), DT, (int64_t)c * CH, n, bv);
                        continue;
                    }
#pragma unroll
                    for (int j = 0; j < CH; ++j) {
                        const int64_t e = (int64_t)c * CH + j;
                        if (FULL || e < n) {
                            if (f.w) store_one(reinterpret_cast<void*>(p.dw), p0.dt_w, e, dv[j]);
                            if (want_b) store_one(reinterpret_cast<void*>(p.db), p0.dt_w, e, bv[j]);
                        }
                    }
                }
            }
            return;
        }
    }
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

}  // namespace nk
