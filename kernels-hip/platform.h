// normkit HIP platform header: the AMD half of the platform interface of kernels-common
// (see kernels-common/README.md), for CDNA: gfx90a (MI200), gfx942 (MI300X), gfx950 (MI355X).
//
// The only HIP file that names vendor builtins and the wavefront width. Everything is a clang
// AMDGPU builtin, so the same source builds two ways:
//   - freestanding (Debian clang-22, `-nogpuinc -nogpulib`): no HIP headers, no device
//     libraries; the HIP keywords are defined below;
//   - ROCm's `hipcc --genco`: the HIP headers are pre-included by the driver and already define
//     `__device__` & co., so the fallbacks are skipped.
#pragma once

#if !defined(__AMDGCN__)
#error "kernels-hip/platform.h is for AMDGPU device compilation only"
#endif

#include <stdint.h>
#include "nk_params.h"

#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif

#define NK_DEVICE __device__ __attribute__((always_inline)) inline
#define NK_KERNEL_ATTR extern "C" __global__
// Workgroups of 1..t work-items: the compiler budgets registers so a t-thread workgroup fits a
// CU (t = 1024: 16 waves, 4 per SIMD, at most 128 VGPRs each). A second argument (minimum
// resident workgroups, CUDA's __launch_bounds__ minBlocks) is accepted and not used: on CDNA the
// flat workgroup size already fixes the register budget, and amdgpu_waves_per_eu would force
// spills rather than lower occupancy.
#define NK_LAUNCH_BOUNDS(t, ...) __attribute__((amdgpu_flat_work_group_size(1, t)))
#define NK_SHARED __shared__
#define NK_DYN_SMEM(name) extern __shared__ __attribute__((aligned(16))) unsigned char name[]

// Wavefront width of the target: 64 on every CDNA part (wave64 only). Taken from the compiler
// where it still defines it, so a wave32 build would change it rather than silently disagree;
// the host checks the device's hipDeviceAttributeWarpSize against the code object before use.
#if defined(__AMDGCN_WAVEFRONT_SIZE__)
#define NK_WARP __AMDGCN_WAVEFRONT_SIZE__
#else
#define NK_WARP 64
#endif
// All lanes of a wavefront (unused by the AMD shuffles, which take no mask).
#define NK_FULL_MASK (~0ull)
// No FULL twins of the register kernels here: the second body pushed nk_bwd_reg4_bf16_ln_res into
// VGPR spills on gfx90a/gfx942/gfx950 (tests/isa.rs), and nothing has measured a gain on AMD.
#define NK_REG_FULL 0

// A 16-byte vector with .x .y .z .w members: loads and stores of it compile to
// global_load_dwordx4 / global_store_dwordx4.
typedef uint32_t nk_u128 __attribute__((ext_vector_type(4)));

NK_DEVICE int nk_tid() { return (int)__builtin_amdgcn_workitem_id_x(); }
NK_DEVICE int nk_bdim() { return (int)__builtin_amdgcn_workgroup_size_x(); }
NK_DEVICE int64_t nk_bid() { return (int64_t)__builtin_amdgcn_workgroup_id_x(); }
NK_DEVICE int64_t nk_bid_y() { return (int64_t)__builtin_amdgcn_workgroup_id_y(); }
// Workgroups in the grid: the dispatch packet holds the grid size in work-items.
NK_DEVICE int64_t nk_nblocks() {
  const uint32_t g = __builtin_amdgcn_grid_size_x(), w = __builtin_amdgcn_workgroup_size_x();
  return (int64_t)((g + w - 1) / w);
}
// log2 of a power of two (group widths): a shift instead of a division by a run-time width.
NK_DEVICE int nk_ilog2(int v) { return 31 - __builtin_clz((unsigned)v); }
NK_DEVICE int64_t nk_nblocks_y() {
  const uint32_t g = __builtin_amdgcn_grid_size_y(), w = __builtin_amdgcn_workgroup_size_y();
  return (int64_t)((g + w - 1) / w);
}

// Workgroup barrier with LDS visibility (what __syncthreads() expands to in HIP).
NK_DEVICE void nk_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// No programmatic dependent launch on HIP: plain stream order already holds (the shared finalize
// kernels call the wait).
NK_DEVICE void nk_grid_dep_wait() {}
NK_DEVICE void nk_grid_dep_launch() {}

// Lane index within the wavefront: mbcnt counts the lanes below this one.
NK_DEVICE int nk_lane() { return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }

// Butterfly exchange: `v` of lane (lane ^ lane_mask). ds_bpermute addresses source lanes in
// bytes and stays within the wavefront, so every mask below NK_WARP works; every lane of the
// wavefront must call it.
NK_DEVICE float nk_shfl_xor(float v, int lane_mask) {
  const int src = (nk_lane() ^ lane_mask) << 2;
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src, __builtin_bit_cast(int, v)));
}

NK_DEVICE float nk_u32_as_f32(uint32_t u) { return __builtin_bit_cast(float, u); }
NK_DEVICE uint32_t nk_f32_as_u32(float f) { return __builtin_bit_cast(uint32_t, f); }
// 16-bit conversions, round to nearest even; the 16 bits live in the low half of the uint32_t.
// gfx950 converts to bf16 in hardware (v_cvt_pk_bf16_f32); gfx942 / gfx90a get clang's integer
// RNE sequence (NaN kept quiet).
NK_DEVICE float nk_f16_to_f32(uint32_t h) { return (float)__builtin_bit_cast(_Float16, (uint16_t)h); }
NK_DEVICE uint32_t nk_f32_to_f16(float f) { return (uint32_t)__builtin_bit_cast(uint16_t, (_Float16)f); }
NK_DEVICE float nk_bf16_to_f32(uint32_t h) { return __builtin_bit_cast(float, h << 16); }
NK_DEVICE uint32_t nk_f32_to_bf16(float f) { return (uint32_t)__builtin_bit_cast(uint16_t, (__bf16)f); }

// IEEE round-to-nearest operations the compiler may not contract into an FMA (HIP compiles with
// -ffp-contract=fast-honor-pragmas, so the pragma holds even after inlining).
NK_DEVICE float nk_mul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}
NK_DEVICE float nk_add_rn(float a, float b) {
#pragma clang fp contract(off)
  return a + b;
}
NK_DEVICE float nk_sub_rn(float a, float b) {
#pragma clang fp contract(off)
  return a - b;
}
// a·b + c rounded once (an explicit FMA: its operands fixed, unlike a contraction).
NK_DEVICE float nk_fma_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
// Correctly rounded division and square root: without fast-math flags clang emits the
// div_scale/div_fmas/div_fixup and the scaled v_sqrt_f32 sequences, not v_rcp/v_rsq
// approximations. The statistic is computed once per row, so exactness costs nothing, and it
// matches the CPU reference bit for bit (v_rsq_f32, __builtin_amdgcn_rsqf, is 1 ulp).
NK_DEVICE float nk_div_rn(float a, float b) {
#pragma clang fp contract(off)
  return a / b;
}
NK_DEVICE float nk_rsqrt_rn(float v) {
#pragma clang fp contract(off)
  return 1.0f / __builtin_sqrtf(v);
}

// Global-memory accesses. The kernels receive plain 64-bit addresses, which clang treats as flat
// (generic) pointers and would access with flat_load/flat_store; casting to address space 1
// (global) pins global_load_dwordx4 / global_store_dwordx4 and the 32/16-bit forms. Plain (not
// volatile) accesses: the compiler may hoist loads ahead of use; a store in place depends on the
// value it overwrites, so no load moves past a store to its own address.
#define NK_GLOBAL __attribute__((address_space(1)))
NK_DEVICE nk_u128 nk_load_g128(const void* p) { return *(const NK_GLOBAL nk_u128*)p; }
NK_DEVICE void nk_store_g128(void* p, nk_u128 v) { *(NK_GLOBAL nk_u128*)p = v; }
NK_DEVICE uint32_t nk_load_g32(const void* p) { return *(const NK_GLOBAL uint32_t*)p; }
NK_DEVICE uint32_t nk_load_g16(const void* p) { return (uint32_t)*(const NK_GLOBAL uint16_t*)p; }
NK_DEVICE void nk_store_g32(void* p, uint32_t v) { *(NK_GLOBAL uint32_t*)p = v; }
NK_DEVICE void nk_store_g16(void* p, uint32_t v) { *(NK_GLOBAL uint16_t*)p = (uint16_t)v; }
// An 8-byte shared-memory (LDS) store of two words (lo at p, hi at p + 4; p 8-byte aligned).
NK_DEVICE void nk_store_s64(void* p, uint32_t lo, uint32_t hi) { *reinterpret_cast<uint64_t*>(p) = ((uint64_t)hi << 32) | lo; }
// Thread-block clusters: none on CDNA. The CUDA-only kernels that use them (the FP8 twin's yT
// tile) are not in this backend's kernel list; these stand in so the shared sources compile,
// and trap if ever reached.
NK_DEVICE int nk_cluster_rank() { return 0; }
// The CUDA kernels' L2 prefetch hint (the FP8 twin's, not in this backend's list, and the
// register forwards'): nothing to do. The HIP planner never sets `pf`, so the call is never
// reached and compiles away.
NK_DEVICE void nk_bulk_prefetch_l2(const void*, unsigned) {}
NK_DEVICE int nk_cluster_size() { return 1; }
NK_DEVICE void nk_cluster_sync() { __builtin_trap(); }
NK_DEVICE void nk_cluster_arrive() { __builtin_trap(); }
NK_DEVICE void nk_cluster_wait() { __builtin_trap(); }
NK_DEVICE void nk_cluster_sync_smem() { __builtin_trap(); }
NK_DEVICE void nk_cluster_arrive_relaxed() { __builtin_trap(); }
NK_DEVICE unsigned nk_cluster_map(const float*, int) {
    __builtin_trap();
    return 0;
}
NK_DEVICE uint32_t nk_load_cluster32(unsigned) {
    __builtin_trap();
    return 0;
}
// Byte permute: byte i of the result is byte (s >> 4i) & 7 of the 8 bytes b:a (CUDA's
// __byte_perm for selectors without the sign-replicate bit).
NK_DEVICE uint32_t nk_prmt(uint32_t a, uint32_t b, uint32_t s) {
    const uint64_t v = ((uint64_t)b << 32) | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFFu) << (8 * i);
    return r;
}

// Staging a 16-byte chunk from global memory into LDS. CUDA uses cp.async; here the copy goes
// synchronously through a register (global_load_dwordx4, then ds_write_b128 through an
// address-space-3 pointer), so the wait is empty. gfx950's global_load_lds_dwordx4 could make it
// asynchronous where the LDS slots of a wavefront are lane-contiguous; not done yet.
#define NK_LDS __attribute__((address_space(3)))
NK_DEVICE void nk_copy16_async(void* smem, const void* gmem) { *(NK_LDS nk_u128*)smem = nk_load_g128(gmem); }
NK_DEVICE void nk_copy_async_wait() {}
NK_DEVICE void nk_copy_async_commit() {}
NK_DEVICE void nk_copy_async_wait_prior() {}
NK_DEVICE void nk_copy_async_wait_all() {}

// Streaming store of a 16-byte vector (non-temporal: outputs are not re-read by the kernel).
NK_DEVICE void nk_store_u128_stream(nk_u128* p, nk_u128 v) { __builtin_nontemporal_store(v, p); }

// Single bytes and 8-byte pairs (FP8 outputs), the integer atomic max of the FP8 amax, and the
// float max / absolute value (NaN-ignoring fmax, as IEEE maxNum).
NK_DEVICE void nk_store_g8(void* p, uint32_t v) { *(NK_GLOBAL uint8_t*)p = (uint8_t)v; }
NK_DEVICE uint32_t nk_load_g8(const void* p) { return (uint32_t)*(const NK_GLOBAL uint8_t*)p; }
NK_DEVICE void nk_store_g64(void* p, uint32_t lo, uint32_t hi) {
  typedef uint32_t nk_u64v __attribute__((ext_vector_type(2)));
  nk_u64v v = {lo, hi};
  *(NK_GLOBAL nk_u64v*)p = v;
}
NK_DEVICE void nk_atomic_max_u32(uint32_t* p, uint32_t v) {
  __atomic_fetch_max((NK_GLOBAL uint32_t*)p, v, __ATOMIC_RELAXED);
}
NK_DEVICE float nk_fmax(float a, float b) { return __builtin_fmaxf(a, b); }
NK_DEVICE float nk_fabs(float v) { return __builtin_fabsf(v); }

// FP8: two f32 into two FP8 bytes (lo in the low byte) by the conversion instruction where the
// target has one for `fmt`; false otherwise, and kernels-common converts in software
// (nk_fp8.cuh, fp8_encode_sw). The contract is the software's: round to nearest even,
// saturating (finite overflow and infinities to ±max finite), NaN to NaN, and in the fnuz formats
// no −0 (a value that rounds to zero is 0x00: 0x80 is their NaN).
//
// The instructions, v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32 (clang:
// __builtin_amdgcn_cvt_pk_{fp8,bf8}_f32(a, b, old, word_sel): a into byte 0, b into byte 1 of the
// low word with word_sel false, the high word taken from `old`):
//   gfx942 (CDNA3): to e4m3fnuz / e5m2fnuz (bias 8 / 16, no infinities, NaN 0x80). Its OCP
//                   formats: software.
//   gfx950 (CDNA4): the same opcodes convert to OCP e4m3fn / e5m2 (bias 7 / 15). Its fnuz formats
//                   (no instruction since CDNA4): software.
//   gfx90a (CDNA2): no FP8 conversion: software for every format.
// What this adds around them, and why:
//   - Saturation. The instructions round with the MODE register's f32 rounding (round to nearest
//     even: HIP code never changes it) and saturate only with their clamp bit, which the builtins
//     cannot set; without it an overflow or an infinite input gives NaN or ±inf (ROCm's own
//     headers clamp before converting for that reason). So each input is saturated in f32 first, by a
//     comparison: |v| > max ? copysign(max, v) : v. Exact: every value beyond max finite rounds
//     (saturating) to max finite, which is itself exact in the format. A NaN fails the comparison
//     and reaches the instruction unchanged — fminf / fmaxf / v_med3_f32 would turn it into a
//     number, hence no clamp builtin.
//   - fnuz underflow (gfx942). A value of magnitude at most half the smallest subnormal rounds to
//     zero (a tie goes to the even code, 0); for a negative one the instruction may keep the sign
//     bit, 0x80, which is NaN in fnuz. Such inputs (−0 included) become +0 before the conversion,
//     again by a comparison that a NaN fails: 2^-11 for e4m3fnuz (smallest subnormal 2^-10),
//     2^-18 for e5m2fnuz (2^-17). The OCP formats have a −0 (0x80), which the software conversion
//     also returns: nothing to do on gfx950.
//   - NaN. Its code is the instruction's: 0x80 in fnuz (the only NaN there); in the OCP formats a
//     NaN code whose sign and low bits may differ from the software's 0x7F | sign. Still NaN, and
//     every byte of one call comes from the same conversion, so yT stays bitwise y_q's transpose.
//   - gfx950's scaled forms (v_cvt_scalef32_pk_fp8_f32 ...) are not used: they apply MX-style
//     power-of-two block scales, while normkit's scale is any f32, multiplied in before this
//     conversion with one rounding (nk_mul_rn), exactly as the CPU reference does.
// None of this has run on AMD hardware: the instruction semantics above are from AMD's ISA
// documentation and ROCm's own headers (which saturate the same way before converting), the code
// is checked only by compiling it (crates/normkit-hip/tests/isa.rs).
#if defined(__gfx942__) || defined(__gfx950__)
// Saturation in f32: |v| > mx gives ±mx; anything else (NaN included) is v.
NK_DEVICE float nk_fp8_sat(float v, float mx) { return __builtin_fabsf(v) > mx ? __builtin_copysignf(mx, v) : v; }
// The same, and |v| <= tiny (half the smallest subnormal) gives +0: the fnuz formats.
NK_DEVICE float nk_fp8_sat_fnuz(float v, float mx, float tiny) {
  const float a = __builtin_fabsf(v);
  return a > mx ? __builtin_copysignf(mx, v) : (a <= tiny ? 0.0f : v);
}
#endif

// `old` = 0: the high word of the instruction's result is zero, so `out` holds the two bytes only.
NK_DEVICE bool nk_cvt_fp8x2(int fmt, float lo, float hi, uint32_t& out) {
#if defined(__gfx942__)
  if (fmt == NK_DT_E4M3FNUZ) {
    out = (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(nk_fp8_sat_fnuz(lo, 240.0f, 0x1p-11f), nk_fp8_sat_fnuz(hi, 240.0f, 0x1p-11f), 0, false);
    return true;
  }
  if (fmt == NK_DT_E5M2FNUZ) {
    out = (uint32_t)__builtin_amdgcn_cvt_pk_bf8_f32(nk_fp8_sat_fnuz(lo, 57344.0f, 0x1p-18f), nk_fp8_sat_fnuz(hi, 57344.0f, 0x1p-18f), 0, false);
    return true;
  }
  return false;
#elif defined(__gfx950__)
  if (fmt == NK_DT_E4M3) {
    out = (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(nk_fp8_sat(lo, 448.0f), nk_fp8_sat(hi, 448.0f), 0, false);
    return true;
  }
  if (fmt == NK_DT_E5M2) {
    out = (uint32_t)__builtin_amdgcn_cvt_pk_bf8_f32(nk_fp8_sat(lo, 57344.0f), nk_fp8_sat(hi, 57344.0f), 0, false);
    return true;
  }
  return false;
#else
  (void)fmt, (void)lo, (void)hi, (void)out;
  return false;
#endif
}

// The FP8 amax's last-CTA protocol (kernels-common/nk_fp8.cuh, q_amax_commit): device-scope
// integer atomics and a device-scope fence.
NK_DEVICE uint32_t nk_atomic_max_u32_ret(uint32_t* p, uint32_t v) {
  return __atomic_fetch_max((NK_GLOBAL uint32_t*)p, v, __ATOMIC_RELAXED);
}
NK_DEVICE uint32_t nk_atomic_add_u32(uint32_t* p, uint32_t v) { return __atomic_fetch_add((NK_GLOBAL uint32_t*)p, v, __ATOMIC_RELAXED); }
NK_DEVICE void nk_atomic_exch_u32(uint32_t* p, uint32_t v) { __atomic_exchange_n((NK_GLOBAL uint32_t*)p, v, __ATOMIC_RELAXED); }
NK_DEVICE void nk_threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
// An arrival count that releases this thread's earlier writes and acquires the earlier arrivers'
// (the CUDA header's atom.acq_rel): agent-scope fences around a relaxed increment.
NK_DEVICE uint32_t nk_atomic_add_acq_rel_u32(uint32_t* p, uint32_t v) {
    nk_threadfence();
    const uint32_t old = nk_atomic_add_u32(p, v);
    nk_threadfence();
    return old;
}
