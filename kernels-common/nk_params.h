// normkit kernel parameters: one struct per direction, passed by value as the only kernel argument.
// The Rust side (crates/normkit-gpu-host/src/params.rs, used by both the CUDA and the HIP crate)
// declares the same structs #[repr(C)] with the fields in the same order; both sides check the
// size (static_assert here, a const assertion there; the Rust side also asserts every offset). All pointers are already advanced to element 0 of their view.
#pragma once
#include <stdint.h>

// Element types, as the `dt_*` fields carry them.
#define NK_DT_F32 0
#define NK_DT_F16 1
#define NK_DT_BF16 2
// FP8 output formats (`dt_y` of a quantised forward only; see nk_fp8.cuh).
#define NK_DT_E4M3 3       // OCP E4M3FN, max 448
#define NK_DT_E5M2 4       // OCP E5M2, max 57344
#define NK_DT_E4M3FNUZ 5   // AMD gfx942, max 240
#define NK_DT_E5M2FNUZ 6   // AMD gfx942, max 57344

// Casting modes (see normkit-core desc.rs).
#define NK_CAST_GEMMA 0
#define NK_CAST_LLAMA 1
#define NK_CAST_NONE 2

// `flags` bits.
#define NK_F_LN 1          // LayerNorm (else RMSNorm)
#define NK_F_WEIGHT 2      // affine weight present
#define NK_F_BIAS 4        // bias present (forward) / db wanted (backward)
#define NK_F_RESIDUAL 8    // fused residual add (forward) / d_residual_out given (backward)
#define NK_F_STATS 16      // forward writes mean (LN) and rstd
#define NK_F_NOFULL 32     // measurement knob: register kernels skip their FULL specialisation
#define NK_F_WGLOBAL 64    // prefetching register backward: weight read from global (its fp32 slots do not fit)
#define NK_F_TRIGGER 128   // register forward: trigger the stream's next kernel at entry (programmatic dependent launch)

// `q` bits of a quantised (FP8) forward.
#define NK_Q_ROW 1         // per-row dynamic scaling (else one scale for the tensor)
#define NK_Q_DEVSCALE 2    // per tensor: the scale is read from `scale` (else `scale_host`)
#define NK_Q_AMAX 4        // write max|y| to `amax` (through q_sync: see nk_fp8.cuh)
#define NK_Q_INV 8         // write 1/scale to `scale_inv` (per row: always)
#define NK_Q_TFUSED 16     // write yT through the shared-memory tile (the row kernel)
#define NK_Q_TSTRIDED 32   // measurement baseline: write yT with one byte store per element

struct NkFwdParams {
    uint64_t x, y, r, r_out, w, b, mean, rstd, ws;
    int64_t m, n;                 // rows, hidden size
    int64_t sx, sy, sr, sro;      // row strides in elements
    int64_t nsplit;               // split path: chunks per row
    float eps, offset;
    int32_t dt_x, dt_y, dt_r, dt_w;
    int32_t flags, casting;
    int32_t group, rpc;           // row path: threads per row, rows per CTA
    int32_t slot;                 // row path: bytes per staged chunk (16 if every tensor is 16-bit, else 32)
    int32_t lag;                  // staged cluster forward: the next row's pass 1 this many stages behind its refills
    // FP8 output (dt_y an NK_DT_E* code; zero otherwise). y's and yT's strides are in bytes.
    uint64_t scale, amax, scale_inv, yt, ws_q;  // ws_q: the split path's per-(row, chunk) row maxima
    int64_t syt;                  // row stride of yT (N × M)
    float scale_host;
    int32_t q;                    // NK_Q_* bits
    int32_t tm;                   // transposed tile: rows per tile
    int32_t tpitch;               // transposed tile: bytes per shared-memory row
    uint64_t q_sync;              // amax: two zeroed words of the backend's (running max, CTAs arrived)
    int32_t pf;                   // staged cluster forward: stages of a later row's slice prefetched into L2 (0: none); re-reading cluster forward: KB of the next row's slice
    int32_t pfd;                  // staged cluster forward: which later row (1: the next, 2: the one after)
};

struct NkBwdParams {
    uint64_t x, dy, dx, dres, w, mean, rstd, ws_stats, ws_dw, ws_db, dw, db;
    int64_t m, n;
    int64_t sx, sdy, sdx, sdres;
    int64_t nsplit;               // split path: chunks per row
    int64_t nparts;               // partial dW/dB rows in the workspace
    float offset;
    int32_t dt_x, dt_y, dt_w;
    int32_t flags;
    int32_t group, rpc;
    int32_t slot;                 // row path: bytes per staged chunk (16 if every tensor is 16-bit, else 32)
};

#ifdef __cplusplus
static_assert(sizeof(NkFwdParams) == 256, "NkFwdParams layout is shared with Rust");
static_assert(sizeof(NkBwdParams) == 192, "NkBwdParams layout is shared with Rust");
#endif
