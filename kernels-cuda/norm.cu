// normkit's CUDA translation unit: the CUDA platform header, the shared kernel bodies of
// kernels-common, and one extern "C" entry point per NK_KERNEL line of nk_kernels.inc, which
// crates/normkit-cuda/build.rs generates into OUT_DIR from the typed list kernels-cuda/variants.rs
// (NK_KERNEL(symbol, template, ALIGNED, NARROW or SPEC, params, max threads, min CTAs)).
// Compiled once by nvcc into a fatbin (sm_90a, sm_100a, compute_90 PTX).
#include "platform.cuh"

// Built twice: the main unit (nk_kernels.inc) and, with NK_UNIT_FP8T, the kernels that
// variants.rs's own_unit() keeps apart (nk_kernels_fp8t.inc).
#ifdef NK_UNIT_FP8T
#define NK_KERNELS_INC "nk_kernels_fp8t.inc"
#else
#define NK_KERNELS_INC "nk_kernels.inc"
#endif

#define NK_CONST(name, value) constexpr int name = value;
#define NK_KERNEL(sym, impl, aligned, spec, params, max_threads, min_blocks)
#include NK_KERNELS_INC
#undef NK_CONST
#undef NK_KERNEL

#include "nk_norm.cuh"
#include "cluster.cuh"
#include "rows.cuh"

#define NK_CONST(name, value)
#define NK_KERNEL(sym, impl, aligned, spec, params, max_threads, min_blocks) \
    NK_KERNEL_ATTR void NK_LAUNCH_BOUNDS(max_threads, min_blocks) sym(const params p) { nk::impl<aligned, spec>(p); }
#include NK_KERNELS_INC
#undef NK_CONST
#undef NK_KERNEL

static_assert(NK_WARP_WIDTH == NK_WARP, "variants.rs's NK_WARP_WIDTH must match the platform header");
