//! The HIP kernels, as data: every entry point of the code objects is one [`Variant`] of this
//! list — its [`KernelKey`](super::variants::KernelKey) (family, dtype, named options) and launch bounds (max threads per
//! workgroup; min workgroups per CU is accepted for the CUDA spelling, unused on AMD, see
//! platform.h). crates/normkit-hip/build.rs generates from it the `NK_KERNEL(symbol, template,
//! ALIGNED, SPEC, params, max threads, min blocks)` lines that kernels-hip/normkit.hip includes
//! (into OUT_DIR, `nk_kernels.inc`, in this order) and the Rust table (`kernels::KERNELS`,
//! `kernels::get(key)`); the crate includes this file as `kernels::list`, so the planner asks for
//! kernels with the same keys, and the ISA test checks every name against every code object.
//! Types: kernels-common/variants.rs.
//!
//! ALIGNED: 16-byte accesses (else element by element, same chunking and reduction order).
//! NARROW (`narrow`, the generic families): every tensor f16/bf16, one 16-byte register set per
//! chunk instead of two. The register-resident kernels take an integer SPEC instead, computed
//! from the key's fields (`KernelKey::spec`).

use super::variants::{v, BwdChunks, Dt::*, FwdChunks, KernelKey::*, Variant};

/// Wavefront width (must equal NK_WARP of platform.h; the finalize kernel takes one
/// wavefront-wide block of columns per workgroup).
pub const NK_WARP_WIDTH: usize = 64;
/// Split-row path: 256 threads (4 waves, one per SIMD) x 16 elements = 4096-element chunks.
pub const NK_SPLIT_THREADS: usize = 256;
/// Elements per thread of a split-path chunk: 16, not CUDA's 32: with 32, clang-22 gave the split
/// kernels 100-296 VGPRs on gfx942 (bwd_split_apply: 276 VGPRs + 20 AGPRs, one wave per SIMD);
/// with 16, 68-171.
pub const NK_SPLIT_ELEMS: usize = 16;
/// Row path: groups of up to 1024 threads per row (sizes the reduction scratch).
pub const NK_ROW_MAX_THREADS: usize = 1024;

/// The compile-time constants both sides need (`NK_CONST(name, value)` lines of the generated
/// include, before the kernel bodies).
pub const CONSTS: &[(&str, usize)] = &[
    ("NK_WARP_WIDTH", NK_WARP_WIDTH),
    ("NK_SPLIT_THREADS", NK_SPLIT_THREADS),
    ("NK_SPLIT_ELEMS", NK_SPLIT_ELEMS),
    ("NK_ROW_MAX_THREADS", NK_ROW_MAX_THREADS),
];

/// Every kernel, in code-object table order (`Kernel::index`).
#[rustfmt::skip]
pub const VARIANTS: &[Variant] = &[
    // The forward row kernels fit 1024-thread workgroups (73-108 VGPRs, the 128 allowed at 16 waves
    // per CU). The backward row kernels are bounded at 512: at 1024 clang-22 spilled them (68-296
    // bytes of scratch) into the 128-VGPR limit; at 512 they take 146-205 VGPRs and no scratch, and
    // the backward tables (crates/normkit-hip/src/tuning.rs) stop at groups of 512.
    v(FwdRow { aligned: true, narrow: false }, 1024, 1),
    v(FwdRow { aligned: true, narrow: true }, 1024, 1),
    v(FwdRow { aligned: false, narrow: false }, 1024, 1),
    v(FwdSplitStats { aligned: true, narrow: false }, 256, 1),
    v(FwdSplitStats { aligned: true, narrow: true }, 256, 1),
    v(FwdSplitStats { aligned: false, narrow: false }, 256, 1),
    v(BwdRow { aligned: true, narrow: false }, 512, 1),
    v(BwdRow { aligned: true, narrow: true }, 512, 1),
    v(BwdRow { aligned: false, narrow: false }, 512, 1),
    v(BwdSplitStats { aligned: true, narrow: false }, 256, 1),
    v(BwdSplitStats { aligned: true, narrow: true }, 256, 1),
    v(BwdSplitStats { aligned: false, narrow: false }, 256, 1),
    v(BwdFinalize, 256, 1),

    // Split forward in three kernels: chunk statistics, one combine per row, apply.
    v(FwdSplitReduce, 256, 1),
    v(FwdSplitApply { aligned: true, narrow: false }, 256, 1),
    v(FwdSplitApply { aligned: true, narrow: true }, 256, 1),
    v(FwdSplitApply { aligned: false, narrow: false }, 256, 1),
    // Split backward in three kernels as well: chunk sums, one (c1, c2) per row, apply.
    v(BwdSplitReduce, 256, 1),
    v(BwdSplitApply { aligned: true, narrow: false }, 256, 1),
    v(BwdSplitApply { aligned: true, narrow: true }, 256, 1),
    v(BwdSplitApply { aligned: false, narrow: false }, 256, 1),
    // The dW/dB finalize with four loads in flight per thread, up to 1024 threads.
    v(BwdFinalizeWide, 1024, 1),

    // Register-resident row kernels (no LDS staging: on CDNA's 64 KiB LDS the hot path): every tensor
    // in x's dtype, Gemma casting. SPEC = dtype code + 4·LayerNorm + 8·residual.
    // Forward 16-bit: 1024 threads (71-96 VGPRs); f32: 512 (87-125). Backward 16-bit: 256 threads
    // (114-144 VGPRs), f32: 512 (128-166); backward has only the 16-byte variant.
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 1),
    v(BwdReg { dtype: F32, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    // Backward, one chunk per thread (groups up to 1024 threads, 86-107 VGPRs): f16 / f32, N <= 8192.
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    // Backward, four chunks per thread (512-thread groups, 166-220 VGPRs): bf16, N <= 16384.
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    // Not here: CUDA's 8-chunk forward (nk_fwd_reg8_*): in 1024-thread workgroups clang-22 spills it
    // on gfx942 (127 VGPRs + 28 bytes of scratch), and its table needs 1024-thread groups.

    // Quantised (FP8) forward (kernels-common/nk_fp8.cuh): register-resident rows (SPEC = NARROW +
    // 2·chunks/4 + 16·residual; NARROW: every tensor but y 16-bit, Gemma casting), the long-row
    // amax and apply passes, the separate transpose. The row kernels hold a row's chunks (and the
    // residual's) in registers, and the next row's prefetched, in workgroups of up to 512 threads
    // (8 waves, 2 per SIMD: at most 256 VGPRs); clang-22 (gfx90a / gfx942 / gfx950): 4 chunks
    // 16-bit 110-142 VGPRs, with an f32 tensor 195-256; 8 chunks 16-bit 167-239. Each chunking
    // has its 16-byte and element-wise variants (16-bit: `_ah` / `_uh`), so the path never
    // depends on the layout. Not here: 8 chunks with an f32 tensor (spilled at 512 even before
    // the prefetch: 184-480 bytes of scratch; at 256 threads they would reach no further than 4
    // chunks at 512) and 16 chunks (16-bit: 251 VGPRs + 528 bytes of scratch at 512 without the
    // prefetch) — those rows take the split path; nor CUDA's strided-store baseline (a
    // measurement kernel).
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: true, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: true, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K8, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K8, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: true, chunks: FwdChunks::K8, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: true, chunks: FwdChunks::K8, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: false, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: false, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    // Long rows: 256 threads (4 waves) as the other split kernels; 57-96 VGPRs.
    v(FwdQSplitAmax { aligned: true, narrow: true }, 256, 1),
    v(FwdQSplitAmax { aligned: true, narrow: false }, 256, 1),
    v(FwdQSplitAmax { aligned: false, narrow: false }, 256, 1),
    v(FwdQSplitApply { aligned: true, narrow: true }, 256, 1),
    v(FwdQSplitApply { aligned: true, narrow: false }, 256, 1),
    v(FwdQSplitApply { aligned: false, narrow: false }, 256, 1),
    // The separate transpose: 32 × 256-byte tiles in 8 KiB of static LDS, 256 threads.
    v(FwdQTranspose, 256, 1),
];
