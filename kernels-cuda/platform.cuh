// normkit CUDA platform header: the only file that names CUDA intrinsics, the warp width (32) and
// the full-warp mask. kernels-common/*.cuh are written against the `nk_*` names defined here; a HIP
// platform header defines the same names (NK_WARP 64, ds_bpermute shuffles, ...) and the kernels
// compile unchanged.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "nk_params.h"

#define NK_DEVICE __device__ __forceinline__
#define NK_KERNEL_ATTR extern "C" __global__
#define NK_LAUNCH_BOUNDS(t, min_blocks) __launch_bounds__(t, min_blocks)
#define NK_SHARED __shared__
#define NK_DYN_SMEM(name) extern __shared__ __align__(16) unsigned char name[]

// Threads per warp and the mask naming all of them.
#define NK_WARP 32
#define NK_FULL_MASK 0xffffffffu
// Register kernels get a FULL twin without per-chunk guards (nk_norm.cuh fwd_reg / bwd_reg).
#define NK_REG_FULL 1

// A 16-byte vector: loads and stores of it compile to LDG.E.128 / STG.E.128.
typedef uint4 nk_u128;

NK_DEVICE int nk_tid() { return (int)threadIdx.x; }
NK_DEVICE int nk_bdim() { return (int)blockDim.x; }
NK_DEVICE int64_t nk_bid() { return (int64_t)blockIdx.x; }
NK_DEVICE int64_t nk_nblocks() { return (int64_t)gridDim.x; }
// log2 of a power of two (group widths): a shift instead of a division by a run-time width.
NK_DEVICE int nk_ilog2(int v) { return 31 - __clz(v); }
NK_DEVICE int64_t nk_bid_y() { return (int64_t)blockIdx.y; }
NK_DEVICE int64_t nk_nblocks_y() { return (int64_t)gridDim.y; }
NK_DEVICE void nk_sync() { __syncthreads(); }

// Programmatic dependent launch (sm_90+): wait until the grids this one depends on have completed
// and their writes are visible (a no-op for a plain launch); let the dependent grid be launched.
NK_DEVICE void nk_grid_dep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
NK_DEVICE void nk_grid_dep_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// Thread-block clusters (sm_90+), for the cluster kernels (cluster.cuh): this CTA's rank, the
// cluster's CTA count, a barrier of every thread of the cluster (this CTA's shared-memory writes
// released, the others' acquired), and the address of this CTA's shared memory as CTA `rank`
// holds it (DSMEM).
NK_DEVICE int nk_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}
NK_DEVICE int nk_cluster_size() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return (int)r;
}
NK_DEVICE void nk_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The two halves of nk_cluster_sync, for work between them: every thread arrives (its shared-
// memory accesses so far released), later waits for every thread of the cluster to have arrived.
NK_DEVICE void nk_cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
NK_DEVICE void nk_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// Cheaper forms where the global stores issued so far need not be ordered before the barrier
// (the release forms above wait for all of them: MEMBAR.ALL.GPU + ERRBAR in the sm_90a SASS).
// nk_cluster_sync_smem: this CTA's own shared-memory writes released at cluster scope (a fence
// restricted to shared::cta: MEMBAR.ALL.CTA), then the barrier, the others' writes acquired.
// nk_cluster_arrive_relaxed: an arrival that orders nothing, for a CTA that has only read its
// partners' shared memory since the last barrier, every value read already consumed by the
// instructions before it (so the reads are complete when it issues).
NK_DEVICE void nk_cluster_sync_smem() {
    asm volatile(
        "fence.release.sync_restrict::shared::cta.cluster;\n\tbarrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.acquire."
        "aligned;" ::: "memory");
}
NK_DEVICE void nk_cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
// The shared::cluster address of `local` (this CTA's shared memory) in CTA `rank`.
NK_DEVICE unsigned nk_cluster_map(const float* local, int rank) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(local);
    unsigned ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"((unsigned)rank));
    return ra;
}
// A 4-byte word of the cluster's shared memory (an address from nk_cluster_map).
NK_DEVICE uint32_t nk_load_cluster32(unsigned a) {
    uint32_t v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}

// Bulk copies with transaction-count barriers (sm_90+), for the staged cluster forward
// (cluster.cuh, fwd_cstage): one thread arms an mbarrier with the bytes it expects and starts a
// bulk global → shared copy that completes it; every thread waits on the barrier's phase parity.
NK_DEVICE unsigned nk_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
NK_DEVICE void nk_mbar_init(uint64_t* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(nk_smem_addr(bar)), "r"(count) : "memory");
}
// After the inits, before any thread or copy uses the barriers (then a CTA barrier).
NK_DEVICE void nk_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory"); }
NK_DEVICE void nk_mbar_expect_tx(uint64_t* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(nk_smem_addr(bar)), "r"(bytes) : "memory");
}
NK_DEVICE void nk_mbar_wait(uint64_t* bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred P1;\n\tNK_MBAR_WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
        "@!P1 bra NK_MBAR_WAIT;\n\t}" ::"r"(nk_smem_addr(bar)),
        "r"(parity)
        : "memory");
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to this CTA's shared
// memory, completing `bar`'s transaction count.
NK_DEVICE void nk_bulk_copy_g2s(void* smem, const void* gmem, unsigned bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(nk_smem_addr(smem)), "l"(gmem),
                 "r"(bytes), "r"(nk_smem_addr(bar))
                 : "memory");
}
// Starts moving `bytes` (a multiple of 16, 16-byte aligned) from global memory into L2; nothing
// waits for it (a hint: a later load or bulk copy of those bytes finds them there).
NK_DEVICE void nk_bulk_prefetch_l2(const void* gmem, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(gmem), "r"(bytes) : "memory");
}
// Two floats into CTA `rank`'s shared memory at `local` (this CTA's address of the same
// variable), completing 8 bytes of that CTA's mbarrier `bar` (likewise this CTA's address): the
// receiver reads them after its wait on `bar` (a DSMEM push; no cluster barrier).
NK_DEVICE void nk_cluster_push2(const float* local, const uint64_t* bar, int rank, float a, float b) {
    const unsigned ra = nk_cluster_map(local, rank);
    const unsigned rb = nk_cluster_map(reinterpret_cast<const float*>(bar), rank);
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(ra), "f"(a), "f"(b), "r"(rb)
                 : "memory");
}
// Orders this thread's (and, after a CTA barrier, the CTA's) generic shared-memory accesses
// before later bulk copies into the same bytes.
NK_DEVICE void nk_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Butterfly exchange inside a warp; every lane of the warp must call it.
NK_DEVICE float nk_shfl_xor(float v, int lane_mask) { return __shfl_xor_sync(NK_FULL_MASK, v, lane_mask, NK_WARP); }

NK_DEVICE float nk_u32_as_f32(uint32_t u) { return __uint_as_float(u); }
NK_DEVICE uint32_t nk_f32_as_u32(float f) { return __float_as_uint(f); }
NK_DEVICE float nk_f16_to_f32(uint32_t h) { return __half2float(__ushort_as_half((unsigned short)h)); }
NK_DEVICE uint32_t nk_f32_to_f16(float f) { return (uint32_t)__half_as_ushort(__float2half_rn(f)); }
NK_DEVICE float nk_bf16_to_f32(uint32_t h) { return __uint_as_float(h << 16); }
NK_DEVICE uint32_t nk_f32_to_bf16(float f) { return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f)); }

// IEEE round-to-nearest arithmetic that the compiler may not contract into an FMA: used where the
// contract fixes the rounding steps (the `none` casting mode, elementwise outputs).
NK_DEVICE float nk_mul_rn(float a, float b) { return __fmul_rn(a, b); }
NK_DEVICE float nk_add_rn(float a, float b) { return __fadd_rn(a, b); }
NK_DEVICE float nk_sub_rn(float a, float b) { return __fsub_rn(a, b); }
// a·b + c rounded once (an explicit FMA: its operands fixed, unlike a contraction).
NK_DEVICE float nk_fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
// Correctly rounded 1/sqrt(v) (two IEEE operations, not the MUFU approximation): the statistic is
// computed once per row, so its cost is nothing, and it matches a CPU reference bit for bit.
NK_DEVICE float nk_rsqrt_rn(float v) { return __fdiv_rn(1.0f, __fsqrt_rn(v)); }
NK_DEVICE float nk_div_rn(float a, float b) { return __fdiv_rn(a, b); }

// Streaming store of a 16-byte vector (outputs are not re-read by this kernel).
NK_DEVICE void nk_store_u128_stream(nk_u128* p, nk_u128 v) { __stcs(p, v); }

// Global-memory accesses. The kernels receive plain 64-bit addresses, so without these the
// compiler emits generic LD/ST; these pin the global-space instructions (LDG.E.128 / STG.E.128 for
// the 16-byte forms). All are `volatile`: kept in program order (the kernels issue a row's loads
// before its stores) and never speculated out of the branch that guards them (a non-volatile asm
// is a pure function to the compiler, which hoisted a guarded load past its bounds check: seen
// under memcheck).
// Makes v's value unknown to the compiler (no instruction): what was computed from it before
// cannot be reused after, so loop-invariant values derived from v are not kept in registers.
NK_DEVICE void nk_opaque(nk_u128& v) { asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)); }
NK_DEVICE nk_u128 nk_load_g128(const void* p) {
    nk_u128 v;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
NK_DEVICE void nk_store_g128(void* p, nk_u128 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}
NK_DEVICE uint32_t nk_load_g32(const void* p) {
    uint32_t v;
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
NK_DEVICE uint32_t nk_load_g16(const void* p) {
    unsigned short v;
    asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return (uint32_t)v;
}
NK_DEVICE void nk_store_g32(void* p, uint32_t v) { asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v)); }
NK_DEVICE void nk_store_g16(void* p, uint32_t v) {
    asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"((unsigned short)v));
}
// An 8-byte shared-memory store of two words (lo at p, hi at p + 4; p 8-byte aligned).
NK_DEVICE void nk_store_s64(void* p, uint32_t lo, uint32_t hi) { *reinterpret_cast<uint2*>(p) = make_uint2(lo, hi); }
// Byte permute: byte i of the result is byte (s >> 4i) & 7 of the 8 bytes b:a (PRMT).
NK_DEVICE uint32_t nk_prmt(uint32_t a, uint32_t b, uint32_t s) { return __byte_perm(a, b, s); }

// Asynchronous 16-byte global → shared copies (cp.async, sm_80+): the row lands in shared memory
// without occupying registers while in flight, so occupancy, not the register file, bounds the
// bytes in flight. A platform without them copies synchronously through a register.
NK_DEVICE void nk_copy16_async(void* smem, const void* gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
NK_DEVICE void nk_copy_async_wait() { asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory"); }
// Double buffering: close the group of copies issued since the last commit (possibly empty), and
// wait until at most the newest group is still in flight (the row before it has landed).
NK_DEVICE void nk_copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
NK_DEVICE void nk_copy_async_wait_prior() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
NK_DEVICE void nk_copy_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Single bytes and 8-byte pairs (FP8 outputs), and the integer atomic max of the FP8 amax.
NK_DEVICE void nk_store_g8(void* p, uint32_t v) { asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "h"((unsigned short)v)); }
NK_DEVICE uint32_t nk_load_g8(const void* p) {
    unsigned short v;
    asm volatile("ld.global.u8 %0, [%1];" : "=h"(v) : "l"(p));
    return (uint32_t)v;
}
NK_DEVICE void nk_store_g64(void* p, uint32_t lo, uint32_t hi) { asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi)); }
NK_DEVICE void nk_atomic_max_u32(uint32_t* p, uint32_t v) { atomicMax(reinterpret_cast<unsigned int*>(p), v); }
NK_DEVICE uint32_t nk_atomic_max_u32_ret(uint32_t* p, uint32_t v) { return atomicMax(reinterpret_cast<unsigned int*>(p), v); }
NK_DEVICE void nk_atomic_exch_u32(uint32_t* p, uint32_t v) { atomicExch(reinterpret_cast<unsigned int*>(p), v); }
// An arrival count that publishes what this thread wrote before it (release) and, to the thread
// that reads the last count, what every earlier arriver wrote before theirs (acquire): one
// GPU-scope atom.acq_rel instead of sequentially consistent fences (MEMBAR.SC.GPU) around a
// relaxed increment.
NK_DEVICE uint32_t nk_atomic_add_acq_rel_u32(uint32_t* p, uint32_t v) {
    uint32_t old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
NK_DEVICE float nk_fmax(float a, float b) { return fmaxf(a, b); }  // NaN-ignoring (IEEE maxNum)
NK_DEVICE float nk_fabs(float v) { return fabsf(v); }

// FP8: two f32 to the OCP formats by cvt.rn.satfinite (sm_89+): round to nearest even, finite
// overflow and infinities to ±max finite, NaN to NaN — the contract's conversion, in hardware.
// `out`: lo in the low byte. False for the fnuz formats (no instruction): the caller converts in
// software (kernels-common/nk_fp8.cuh, fp8_encode_sw).
NK_DEVICE bool nk_cvt_fp8x2(int fmt, float lo, float hi, uint32_t& out) {
    unsigned short r;
    if (fmt == NK_DT_E4M3) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    } else if (fmt == NK_DT_E5M2) {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    } else {
        return false;
    }
    out = r;
    return true;
}
