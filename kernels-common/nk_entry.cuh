// Kernel entries of the row and split families: the NARROW entries dispatch once to bodies
// specialised on the 16-bit dtype (and, forward, on the Gemma casting mode).
#pragma once
#include "nk_row.cuh"
#include "nk_split.cuh"
#include "nk_fp8.cuh"

namespace nk {

// Kernel entries: NARROW kernels run a body specialised on the 16-bit dtype (and, forward, on the
// Gemma casting mode, the common one); the others run the fully run-time body.
#define NK_FWD_ENTRY(name)                                                                      \
    template <bool ALIGNED, bool NARROW>                                                        \
    NK_DEVICE void name(const NkFwdParams& p) {                                                 \
        if constexpr (NARROW) {                                                                 \
            const bool bf = p.dt_x == NK_DT_BF16;                                               \
            if (p.casting == NK_CAST_GEMMA) {                                                   \
                if (bf) name##_body<ALIGNED, true, NK_DT_BF16, NK_CAST_GEMMA>(p);               \
                else name##_body<ALIGNED, true, NK_DT_F16, NK_CAST_GEMMA>(p);                   \
            } else {                                                                            \
                if (bf) name##_body<ALIGNED, true, NK_DT_BF16, -1>(p);                          \
                else name##_body<ALIGNED, true, NK_DT_F16, -1>(p);                              \
            }                                                                                   \
        } else {                                                                                \
            name##_body<ALIGNED, false, -1, -1>(p);                                             \
        }                                                                                       \
    }
#define NK_BWD_ENTRY(name)                                                                      \
    template <bool ALIGNED, bool NARROW>                                                        \
    NK_DEVICE void name(const NkBwdParams& p) {                                                 \
        if constexpr (NARROW) {                                                                 \
            if (p.dt_x == NK_DT_BF16) name##_body<ALIGNED, true, NK_DT_BF16, -1>(p);            \
            else name##_body<ALIGNED, true, NK_DT_F16, -1>(p);                                  \
        } else {                                                                                \
            name##_body<ALIGNED, false, -1, -1>(p);                                             \
        }                                                                                       \
    }
NK_FWD_ENTRY(fwd_row)
NK_FWD_ENTRY(fwd_split_stats)
// The split apply reads the statistics fwd_split_reduce combined (the three-kernel form).
NK_FWD_ENTRY(fwd_split_apply_pre)
// The quantised (FP8) split passes (nk_fp8.cuh).
NK_FWD_ENTRY(fwd_q_split_amax)
NK_FWD_ENTRY(fwd_q_split_apply)
NK_BWD_ENTRY(bwd_row)
NK_BWD_ENTRY(bwd_split_stats)
// The split apply reads the (c1, c2) bwd_split_reduce combined (the three-kernel form).
NK_BWD_ENTRY(bwd_split_apply_pre)

}  // namespace nk
