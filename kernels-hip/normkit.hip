// normkit's HIP translation unit: the HIP platform header, the shared kernel bodies of
// kernels-common, and one extern "C" entry point per NK_KERNEL line of kernels.def.
// Compiled ahead of time once per target (gfx90a, gfx942, gfx950) by
// crates/normkit-hip/build.rs, with -I kernels-common.
#include "platform.h"

#define NK_CONST(name, value) constexpr int name = value;
#define NK_KERNEL(sym, impl, aligned, narrow, params, max_threads, min_blocks)
#include "kernels.def"
#undef NK_CONST
#undef NK_KERNEL

#include "nk_norm.cuh"

#define NK_CONST(name, value)
#define NK_KERNEL(sym, impl, aligned, narrow, params, max_threads, min_blocks) \
  NK_KERNEL_ATTR void NK_LAUNCH_BOUNDS(max_threads, min_blocks) sym(const params p) { nk::impl<aligned, narrow>(p); }
#include "kernels.def"
#undef NK_CONST
#undef NK_KERNEL

static_assert(NK_WARP_WIDTH == NK_WARP, "kernels.def's NK_WARP_WIDTH must match platform.h");
