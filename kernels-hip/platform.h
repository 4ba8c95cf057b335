// normkit HIP platform layer: the vendor-specific half of the kernels, for AMD CDNA
// (gfx90a, gfx942 = MI300X, gfx950 = MI355X).
//
// Everything here is a clang AMDGPU builtin, so the same source builds two ways:
//   - freestanding (Debian clang-22, `-nogpuinc -nogpulib`): no HIP headers, no device libraries;
//     this header supplies the HIP keywords itself;
//   - ROCm's `hipcc --genco`: the HIP headers are pre-included by the driver and already define
//     `__device__` & co., so the fallbacks below are skipped.
//
// The wavefront size is a compile-time constant of the target (`__AMDGCN_WAVEFRONT_SIZE__` where
// the compiler still defines it, else 64: every CDNA part normkit targets runs wave64 only).
// Reductions are templated on it (`nk::WAVE`); the host checks it against
// `hipDeviceAttributeWarpSize` before launching anything.
#pragma once

#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif

#if !defined(__AMDGCN__)
#error "kernels-hip/platform.h is for AMDGPU device compilation only"
#endif

#define NK_DEVICE __device__ __attribute__((always_inline)) inline
// Every kernel is launched with one-dimensional workgroups of 64..1024 work-items. Stating the
// range lets the compiler budget registers for 1024 (16 waves per CU, at most 128 VGPRs each).
#define NK_KERNEL(name) extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(64, 1024))) void name

namespace nk {

#if defined(__AMDGCN_WAVEFRONT_SIZE__)
constexpr int WAVE = __AMDGCN_WAVEFRONT_SIZE__;
#else
constexpr int WAVE = 64;
#endif
static_assert(WAVE == 64, "normkit's HIP kernels are built for wave64 (CDNA); the host checks the device agrees");

// Upper bound on waves in a workgroup: 1024 work-items / wavefront size.
constexpr int MAX_WAVES = 1024 / WAVE;

typedef long long i64;
typedef unsigned int u32;
typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));
typedef float f32x4 __attribute__((ext_vector_type(4)));

// ---- work-item geometry -------------------------------------------------------------------
NK_DEVICE int thread_idx() { return (int)__builtin_amdgcn_workitem_id_x(); }
NK_DEVICE int block_dim() { return (int)__builtin_amdgcn_workgroup_size_x(); }
NK_DEVICE i64 block_idx_x() { return (i64)__builtin_amdgcn_workgroup_id_x(); }
NK_DEVICE i64 block_idx_y() { return (i64)__builtin_amdgcn_workgroup_id_y(); }

// Lane within the wavefront: mbcnt counts the set bits of an all-ones mask below this lane.
NK_DEVICE int lane_id() {
  return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
NK_DEVICE int wave_id() { return thread_idx() / WAVE; }

// ---- cross-lane ---------------------------------------------------------------------------
// `v` of lane `lane ^ mask`. ds_bpermute addresses lanes in bytes (lane * 4) and wraps within
// the wavefront, so this works for any mask < WAVE.
NK_DEVICE float shfl_xor(float v, int mask) {
  const int src = (lane_id() ^ mask) << 2;
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src, __builtin_bit_cast(int, v)));
}

// Workgroup barrier with LDS visibility: release fence, s_barrier, acquire fence (what
// __syncthreads() expands to in HIP).
NK_DEVICE void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// ---- math ---------------------------------------------------------------------------------
// v_rsq_f32: 1 ulp; inputs here are var + eps > 0, so no denormal / zero special cases matter.
NK_DEVICE float rsqrt(float v) { return __builtin_amdgcn_rsqf(v); }

// ---- element types ------------------------------------------------------------------------
// Storage types. bf16 is a distinct struct so that kernel pointer types cannot be confused.
struct bf16 {
  unsigned short bits;
};
typedef _Float16 f16;
typedef float f32;

template <class T> NK_DEVICE float to_f32(T v);
template <> NK_DEVICE float to_f32<float>(float v) { return v; }
template <> NK_DEVICE float to_f32<f16>(f16 v) { return (float)v; }
template <> NK_DEVICE float to_f32<bf16>(bf16 v) { return __builtin_bit_cast(float, (u32)v.bits << 16); }

// Round to nearest even. gfx950 has v_cvt_pk_bf16_f32; on gfx942/gfx90a clang emits the
// integer RNE sequence (with NaN kept quiet).
template <class T> NK_DEVICE T from_f32(float v);
template <> NK_DEVICE float from_f32<float>(float v) { return v; }
template <> NK_DEVICE f16 from_f32<f16>(float v) { return (f16)v; }
template <> NK_DEVICE bf16 from_f32<bf16>(float v) { return bf16{__builtin_bit_cast(unsigned short, (__bf16)v)}; }

// The value a tensor of dtype T would hold.
template <class T> NK_DEVICE float round_to(float v) { return to_f32<T>(from_f32<T>(v)); }

// ---- 16-byte vector memory ----------------------------------------------------------------
// Moving bytes through a 4 x u32 vector is what makes the backend emit global_load_dwordx4 /
// global_store_dwordx4 (the ISA test checks it).
NK_DEVICE u32x4 load16(const void* p) { return *reinterpret_cast<const u32x4*>(p); }
NK_DEVICE void store16(void* p, u32x4 v) { *reinterpret_cast<u32x4*>(p) = v; }

}  // namespace nk
