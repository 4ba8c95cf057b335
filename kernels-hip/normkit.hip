// normkit's HIP kernels: one extern "C" kernel per entry of kernels.def.
//
// Compiled ahead of time by crates/normkit-hip/build.rs, once per target (gfx90a, gfx942,
// gfx950), either by ROCm's hipcc --genco or freestanding by clang-22; see README.md.
#include "platform.h"
#include "params.h"
#include "norm.h"

namespace nk {
// Elements per thread on the row paths, compile-time so rows stay in registers; a chunk is
// 16 bytes of x (8 f16/bf16 or 4 f32), so the chunk count is ELEMS / chunk width.
// Forward: 4 chunks (h only): 32 f16/bf16 or 16 f32 elements -> a 1024-thread workgroup holds a
// row of 32768 / 16384; 71-111 VGPRs (8 f32 chunks reached 127 of the 128 allowed: too close).
// Backward: 8 elements: x, dy, w + offset, dw and db partials all live in registers across the
// row reduction; 16 elements needed > 128 VGPRs and spilled (seen with clang-22 on gfx942), so
// the row path stops at 8192 and larger rows take the split path.
// Must match FWD_CHUNKS / BWD_ELEMS in crates/normkit-hip/src/config.rs.
constexpr int FWD_CHUNKS = 4;
constexpr int BWD_ELEMS = 8;
template <class T> constexpr int chunks(int elems) { return elems / (16 / (int)sizeof(T)); }
}  // namespace nk

#define NK_FWD(X, W, R, Y)                                                                     \
  NK_KERNEL(nk_fwd_row_##X##_##W##_##R##_##Y)(nk::FwdParams p) {                               \
    nk::fwd_row<nk::X, nk::W, nk::R, nk::Y, nk::FWD_CHUNKS>(p);                                     \
  }                                                                                            \
  NK_KERNEL(nk_fwd_split_stats_##X##_##W##_##R##_##Y)(nk::FwdParams p) {                       \
    nk::fwd_split_stats<nk::X, nk::W, nk::R, nk::Y, nk::FWD_CHUNKS>(p);                             \
  }                                                                                            \
  NK_KERNEL(nk_fwd_split_apply_##X##_##W##_##R##_##Y)(nk::FwdParams p) {                       \
    nk::fwd_split_apply<nk::X, nk::W, nk::R, nk::Y, nk::FWD_CHUNKS>(p);                             \
  }
#define NK_BWD(X, W, Y)                                                                        \
  NK_KERNEL(nk_bwd_row_##X##_##W##_##Y)(nk::BwdParams p) { nk::bwd_row<nk::X, nk::W, nk::Y, nk::chunks<nk::X>(nk::BWD_ELEMS)>(p); } \
  NK_KERNEL(nk_bwd_split_sums_##X##_##W##_##Y)(nk::BwdParams p) {                              \
    nk::bwd_split_sums<nk::X, nk::W, nk::Y, nk::chunks<nk::X>(nk::BWD_ELEMS)>(p);                                     \
  }                                                                                            \
  NK_KERNEL(nk_bwd_split_apply_##X##_##W##_##Y)(nk::BwdParams p) {                             \
    nk::bwd_split_apply<nk::X, nk::W, nk::Y, nk::chunks<nk::X>(nk::BWD_ELEMS)>(p);                                    \
  }
#define NK_FIN(W) \
  NK_KERNEL(nk_bwd_finalize_##W)(nk::BwdParams p) { nk::bwd_finalize<nk::W>(p); }

#include "kernels.def"
