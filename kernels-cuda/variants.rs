//! The CUDA kernels, as data: every entry point of the fatbin is one [`Variant`] of this list —
//! its [`KernelKey`](super::variants::KernelKey) (family, dtype, named options) and launch bounds (max threads per CTA, min
//! CTAs per SM). crates/normkit-cuda/build.rs generates from it the `NK_KERNEL(symbol, template,
//! ALIGNED, SPEC, params, max threads, min CTAs)` lines that kernels-cuda/norm.cu includes (into
//! OUT_DIR, `nk_kernels.inc`, in this order) and the Rust table (`kernels::ALL`,
//! `kernels::get(key)`); the crate includes this file as `kernels::list`, so the planner asks for
//! kernels with the same keys. Types: kernels-common/variants.rs.
//!
//! ALIGNED: 16-byte accesses (else element by element, same chunking and reduction order).
//! NARROW (`narrow`, the generic families): every tensor f16/bf16, one 16-byte register set per
//! chunk instead of two. The specialised families (register, cluster, row-batch) take an integer
//! SPEC instead, computed from the key's fields (`KernelKey::spec`).

use super::variants::{v, BwdChunks, Dt::*, FwdChunks, KernelKey, KernelKey::*, RowsGroup, Variant};

/// Kernels compiled in a translation unit of their own (kernels-cuda/norm.cu built with
/// `NK_UNIT_FP8T` into `normkit_fp8t.fatbin`, a second module): the FP8 twin's yT tiles, its
/// pairs, the staged cluster forward's FP8 output, the one-barrier LayerNorm builds, the f32
/// RMSNorm forward's three-CTA build, the f32 forwards' two-chunk builds. In norm.cu's unit their code changed nvcc's output for 24 unrelated kernels (the staged cluster
/// forward lost up to 22%, H100, kernels-cuda/NOTES.md v16); apart, every other kernel keeps its
/// machine code.
pub fn own_unit(k: KernelKey) -> bool {
    matches!(
        k,
        FwdRegQDecode { tile: true, .. }
            | FwdRegQDecode { two_ctas: true, .. }
            | FwdRegDecode { k8: true, .. }
            | FwdRegHalf { .. }
            | FwdRegQPair { .. }
            | FwdClusterStagedQ { .. }
            | BwdSmallCols { .. }
            | FwdClusterReread { .. }
            | FwdReg { one_barrier: true, .. }
            | FwdReg { ctas3: true, .. }
            | FwdReg { chunks: FwdChunks::K2, .. }
            | FwdRegDecode { one_barrier: true, .. }
            | FwdRegPair { one_barrier: true, .. }
    )
}

/// Warp width of this platform (must equal NK_WARP of platform.cuh): the finalize kernel takes
/// one warp-wide block of columns per CTA.
pub const NK_WARP_WIDTH: usize = 32;
/// Threads of a split-path CTA.
pub const NK_SPLIT_THREADS: usize = 256;
/// Elements per thread of a split-path chunk.
pub const NK_SPLIT_ELEMS: usize = 32;
/// Row path: groups of up to this many threads per row (sizes the reduction scratch).
pub const NK_ROW_MAX_THREADS: usize = 1024;
/// Staged cluster forward (cluster.cuh `fwd_cstage`): chunks per thread of one pipeline stage,
/// 16-bit and f32 (8 KiB stages at 256 threads)...
pub const NK_CS_KS16: usize = 2;
pub const NK_CS_KS32: usize = 1;
/// ...and the most stages a CTA's slice may have (its mbarriers; the host sizes the slice).
pub const NK_CS_MAX_STAGES: usize = 32;

/// The compile-time constants both sides need (`NK_CONST(name, value)` lines of the generated
/// include, before the kernel bodies).
pub const CONSTS: &[(&str, usize)] = &[
    ("NK_WARP_WIDTH", NK_WARP_WIDTH),
    ("NK_SPLIT_THREADS", NK_SPLIT_THREADS),
    ("NK_SPLIT_ELEMS", NK_SPLIT_ELEMS),
    ("NK_ROW_MAX_THREADS", NK_ROW_MAX_THREADS),
    ("NK_CS_KS16", NK_CS_KS16),
    ("NK_CS_KS32", NK_CS_KS32),
    ("NK_CS_MAX_STAGES", NK_CS_MAX_STAGES),
];

/// Every kernel, in fatbin table order (`Kernel::index`).
#[rustfmt::skip]
pub const VARIANTS: &[Variant] = &[
    v(FwdRow { aligned: true, narrow: false }, 1024, 1),
    v(FwdRow { aligned: true, narrow: true }, 1024, 1),
    v(FwdRow { aligned: false, narrow: false }, 1024, 1),
    v(FwdSplitStats { aligned: true, narrow: false }, 256, 1),
    v(FwdSplitStats { aligned: true, narrow: true }, 256, 3),
    v(FwdSplitStats { aligned: false, narrow: false }, 256, 1),
    v(BwdRow { aligned: true, narrow: false }, 1024, 1),
    v(BwdRow { aligned: true, narrow: true }, 1024, 1),
    v(BwdRow { aligned: false, narrow: false }, 1024, 1),
    v(BwdSplitStats { aligned: true, narrow: false }, 256, 1),
    v(BwdSplitStats { aligned: true, narrow: true }, 256, 3),
    v(BwdSplitStats { aligned: false, narrow: false }, 256, 1),

    // Register-resident hot path (every tensor x's dtype, Gemma casting): SPEC = dtype + 4·LN + 8·residual.
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: false, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: false }, 512, 1),
    // f32 on two chunks per thread (SPEC + 1024, `nk_fwd_reg2_*`; in the FP8 unit, own_unit):
    // the CUDA planner's Tuning::fwd_f32 rows, groups twice the 4-chunk table's, so that a
    // thread holds 16 floats of a row at the 1024-thread bound's 56-64 registers instead of 32
    // at 113. Without the residual only: its builds (64 registers, 0-16 bytes of stack) were 1-3%
    // slower at 4096-65536 rows (H100, f32k2/call1).
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K2, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K2, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K2, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K2, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 3),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 2),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 3),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 2),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 3),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 2),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 256, 3),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 256, 2),
    v(BwdReg { dtype: F32, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F32, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: false }, 512, 1),
    // Split forward, three kernels: stats, one combine per row, apply.
    v(FwdSplitReduce, 256, 1),
    v(FwdSplitApply { aligned: true, narrow: false }, 256, 1),
    v(FwdSplitApply { aligned: true, narrow: true }, 256, 2),
    v(FwdSplitApply { aligned: false, narrow: false }, 256, 1),
    v(BwdFinalizeWide, 1024, 1),
    // The finalize for few partial rows (≤ 16, or ≤ 64 at N ≥ 65536: split and cluster paths), one
    // column per thread.
    v(BwdFinalizeCols, 256, 1),
    // Split backward, three kernels: stats, one combine per row, apply.
    v(BwdSplitReduce, 256, 1),
    v(BwdSplitApply { aligned: true, narrow: false }, 256, 1),
    v(BwdSplitApply { aligned: true, narrow: true }, 256, 1),
    v(BwdSplitApply { aligned: false, narrow: false }, 256, 1),
    // Forward, 8 chunks per thread (N = 65536 with 1024-thread groups), bf16 without residual.
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K8, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K8, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K8, aligned: true, one_barrier: false, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K8, aligned: false, one_barrier: false, ctas3: false }, 1024, 1),
    // Backward, one chunk per thread (groups up to 1024 threads): N ≤ 8192.
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    v(BwdReg { dtype: F32, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: false }, 1024, 1),
    // Backward, four chunks per thread (groups up to 512 threads): 16-bit dtypes, 4096 ≤ N ≤ 16384.
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K4, prefetch: false }, 512, 1),
    // Prefetching twins of the aligned backward register kernels (SPEC + 64): the next row is copied
    // by cp.async into shared memory while the current one is reduced and written; same arithmetic.
    // (Forward twins were measured slower than the plain kernels on a full grid: H200, 2026-11-22,
    // rms_fwd 32768×4096 83% against 88%, kernels-cuda/NOTES.md v3.)
    // 16-bit only: the f32 twins ran at 55–58% of the copy ceiling against 82–91% for the plain
    // kernels (H200, NOTES.md v4), so they were removed.
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: true }, 256, 4),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: true }, 256, 2),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: true }, 256, 3),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: true }, 256, 2),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K2, prefetch: true }, 256, 4),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K2, prefetch: true }, 256, 2),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K2, prefetch: true }, 256, 3),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K2, prefetch: true }, 256, 2),
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K1, prefetch: true }, 1024, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    // Forward, 16 chunks per thread (SPEC + 32): one warp per row at N = 4096, no CTA barrier in
    // either reduction; 16-bit dtypes without residual.
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K16, aligned: true, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K16, aligned: false, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K16, aligned: true, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K16, aligned: false, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K16, aligned: true, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K16, aligned: false, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K16, aligned: true, one_barrier: false, ctas3: false }, 256, 2),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K16, aligned: false, one_barrier: false, ctas3: false }, 256, 2),
    v(BwdReg { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K4, prefetch: true }, 512, 1),
    v(BwdReg { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K4, prefetch: true }, 512, 1),

    // Cluster row kernels (sm_90+): one row per thread-block cluster, statistics through DSMEM (cluster.cuh).
    // SPEC = dtype + 4·LN + 8·residual. Forward: 8 chunks/thread (f16/bf16) or 4 (f32), ≤ 512 threads
    // (≤ 256 with the residual: the element-wise twin needs more than 128 registers);
    // Backward (16-byte layouts only): 4 chunks/thread (f16/bf16) or 2 (f32); dW/dB in registers with
    // ≤ 256 threads (nk_bwd_cl_*), or in shared memory with 512 (nk_bwd_cls_*, SPEC + 16).
    v(FwdCluster { dtype: F32, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: F32, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: F32, ln: false, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: F32, ln: false, residual: true, aligned: false }, 256, 1),
    v(FwdCluster { dtype: F32, ln: true, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: F32, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: F32, ln: true, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: F32, ln: true, residual: true, aligned: false }, 256, 1),
    v(FwdCluster { dtype: F16, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: F16, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: F16, ln: false, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: F16, ln: false, residual: true, aligned: false }, 256, 1),
    v(FwdCluster { dtype: F16, ln: true, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: F16, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: F16, ln: true, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: F16, ln: true, residual: true, aligned: false }, 256, 1),
    v(FwdCluster { dtype: Bf16, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: Bf16, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: Bf16, ln: false, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: Bf16, ln: false, residual: true, aligned: false }, 256, 1),
    v(FwdCluster { dtype: Bf16, ln: true, residual: false, aligned: true }, 512, 1),
    v(FwdCluster { dtype: Bf16, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdCluster { dtype: Bf16, ln: true, residual: true, aligned: true }, 256, 2),
    v(FwdCluster { dtype: Bf16, ln: true, residual: true, aligned: false }, 256, 1),
    // Staged cluster forward (SPEC + 64): the CTA's slice of the row in shared memory, bulk copies (cluster.cuh fwd_cstage).
    // 16-bit 16-byte kernels without residual: 64 registers (no spills); the others up to 128. The host runs 256
    // threads (three CTAs of 64 KiB slices per SM); a per-stage mbarrier instead of the CTA barrier needed 92 registers
    // and measured slower (NOTES v10).
    v(FwdClusterStaged { dtype: F32, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: false, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: false, residual: true, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: true, residual: false, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: true, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F32, ln: true, residual: true, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: false, residual: false, aligned: true }, 512, 2),
    v(FwdClusterStaged { dtype: F16, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: false, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: false, residual: true, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: true, residual: false, aligned: true }, 512, 2),
    v(FwdClusterStaged { dtype: F16, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: true, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: F16, ln: true, residual: true, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: false, residual: false, aligned: true }, 512, 2),
    v(FwdClusterStaged { dtype: Bf16, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: false, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: false, residual: true, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: true, residual: false, aligned: true }, 512, 2),
    v(FwdClusterStaged { dtype: Bf16, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: true, residual: true, aligned: true }, 512, 1),
    v(FwdClusterStaged { dtype: Bf16, ln: true, residual: true, aligned: false }, 512, 1),
    // Its FP8 output (SPEC + 64 + 128; in the FP8 unit, own_unit): 16-bit, 16-byte layouts, per
    // tensor or per row at run time; the FP8 forward's path past the register kernels' rows.
    // 256 × 3: 80 registers (16–24 bytes spilled around the per-row chain, none in the stage
    // loops), so three CTAs of 64 KiB slices share an SM as the plain kernels' do; unbounded
    // (512 × 1) they took 94–102 registers, two CTAs per SM.
    v(FwdClusterStagedQ { dtype: F16, ln: false, residual: false, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: F16, ln: false, residual: true, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: F16, ln: true, residual: false, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: F16, ln: true, residual: true, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: false, residual: false, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: false, residual: true, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: true, residual: false, per_row: false }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: true, residual: true, per_row: false }, 256, 3),
    // Per-row RMSNorm without a bias (SPEC + 256: the row's max with its sum of squares, no pass
    // over y for it and one cluster barrier per row; compiled apart, since in the kernels above
    // its code spilled in the stage loops): 80 registers, 12 bytes spilled.
    v(FwdClusterStagedQ { dtype: F16, ln: false, residual: false, per_row: true }, 256, 3),
    v(FwdClusterStagedQ { dtype: F16, ln: false, residual: true, per_row: true }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: false, residual: false, per_row: true }, 256, 3),
    v(FwdClusterStagedQ { dtype: Bf16, ln: false, residual: true, per_row: true }, 256, 3),
    v(BwdCluster { dtype: F32, ln: false, residual: false, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: F32, ln: false, residual: true, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: F32, ln: true, residual: false, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: F32, ln: true, residual: true, shared_acc: false, prefetch: false }, 256, 1),
    v(BwdCluster { dtype: F16, ln: false, residual: false, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: F16, ln: false, residual: true, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: F16, ln: true, residual: false, shared_acc: false, prefetch: false }, 256, 1),
    v(BwdCluster { dtype: F16, ln: true, residual: true, shared_acc: false, prefetch: false }, 256, 1),
    v(BwdCluster { dtype: Bf16, ln: false, residual: false, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: Bf16, ln: false, residual: true, shared_acc: false, prefetch: false }, 256, 2),
    v(BwdCluster { dtype: Bf16, ln: true, residual: false, shared_acc: false, prefetch: false }, 256, 1),
    v(BwdCluster { dtype: Bf16, ln: true, residual: true, shared_acc: false, prefetch: false }, 256, 1),
    // Prefetching LayerNorm twins (16-bit, register accumulators, SPEC + 32): the next row cp.async-
    // staged into shared memory while the current one is reduced and written (cluster.cuh); 128
    // registers (the plain LayerNorm kernels need 192–206: one CTA per SM), 256 or 512 threads.
    // At 256 threads RMSNorm keeps the plain kernels (127–128 registers, two CTAs per SM): H100
    // 2026-11-22, bf16, prefetch vs plain: rms_bwd 2048×65536 72% vs 77%, addrms_bwd 52% vs 88% (the
    // residual's third buffer leaves one CTA per SM).
    // RMSNorm's twins run at 512 threads only (N = 262144, against dW in shared memory: `cls`).
    v(BwdCluster { dtype: F16, ln: false, residual: false, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: false, residual: false, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: F16, ln: true, residual: false, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: F16, ln: true, residual: true, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: true, residual: false, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: true, residual: true, shared_acc: false, prefetch: true }, 512, 1),
    v(BwdCluster { dtype: F32, ln: false, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F32, ln: false, residual: true, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F32, ln: true, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F32, ln: true, residual: true, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F16, ln: false, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F16, ln: false, residual: true, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F16, ln: true, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: F16, ln: true, residual: true, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: false, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: false, residual: true, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: true, residual: false, shared_acc: true, prefetch: false }, 512, 1),
    v(BwdCluster { dtype: Bf16, ln: true, residual: true, shared_acc: true, prefetch: false }, 512, 1),

    // Row-batch backward (rows.cuh): one chunk per thread, R rows per thread at a time, groups of 128
    // (N ≤ 1024) or 256 threads (`g256`, N ≤ 2048); SPEC = dtype + 4·LN + 8·residual + 128·R (+ 2048
    // for G = 256); 16-bit, 16-byte layouts.
    v(BwdRows { dtype: Bf16, ln: false, residual: false, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: false, residual: true, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: true, residual: false, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: true, residual: true, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: F16, ln: false, residual: false, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: F16, ln: false, residual: true, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: F16, ln: true, residual: false, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: F16, ln: true, residual: true, rows: 4, group: RowsGroup::G128 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: false, residual: false, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: false, residual: true, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: true, residual: false, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: Bf16, ln: true, residual: true, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: F16, ln: false, residual: false, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: F16, ln: false, residual: true, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: F16, ln: true, residual: false, rows: 4, group: RowsGroup::G256 }, 512, 1),
    v(BwdRows { dtype: F16, ln: true, residual: true, rows: 4, group: RowsGroup::G256 }, 512, 1),

    // Quantised (FP8) forward (nk_fp8.cuh): register-resident rows (SPEC = NARROW + 2·chunks/4),
    // the long-row amax and apply passes, the separate transpose. Launch bounds: the row's chunks
    // (and the residual's) stay in registers without spilling.
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K8, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K8, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: true, chunks: FwdChunks::K4, residual: false, strided: true }, 512, 1),
    v(FwdQRow { aligned: true, narrow: false, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: true, narrow: false, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: false, strided: false }, 512, 1),
    v(FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: true, strided: false }, 512, 1),
    v(FwdQSplitAmax { aligned: true, narrow: true }, 256, 1),
    v(FwdQSplitAmax { aligned: true, narrow: false }, 256, 1),
    v(FwdQSplitAmax { aligned: false, narrow: false }, 256, 1),
    v(FwdQSplitApply { aligned: true, narrow: true }, 256, 1),
    v(FwdQSplitApply { aligned: true, narrow: false }, 256, 1),
    v(FwdQSplitApply { aligned: false, narrow: false }, 256, 1),
    v(FwdQTranspose, 256, 1),
    // The quantised twins of the register forward (fwd_reg, SPEC + 128): 16-bit, Gemma, 16-byte
    // layouts, 4 chunks per thread; 64 registers like their plain twins.
    // The register forward's twins (SPEC + 256; the planner's TwinTuning): 16-bit, 4 chunks, at
    // most 256 threads, the weight (and bias) loaded into registers with the row.
    v(FwdRegDecode { dtype: Bf16, ln: false, residual: false, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: false, residual: true, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: false, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: true, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: false, residual: false, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: false, residual: true, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: true, residual: false, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: true, residual: true, k8: false, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: false, residual: false, k8: true, one_barrier: false }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: false, k8: true, one_barrier: false }, 256, 1),
    // The 4-chunk table's rows on half the threads, 8 chunks each (the planner's fwd_half): the
    // twins' bits at the 4-chunk group, for large batches.
    v(FwdRegHalf { dtype: Bf16, ln: false, l2: false, sub: false, one_barrier: false }, 256, 2),
    v(FwdRegHalf { dtype: Bf16, ln: true, l2: false, sub: false, one_barrier: false }, 256, 2),
    // LayerNorm's with the L2 prefetch (its own build: the code alone cost the one above 1-3.4%
    // where the prefetch does not run, NOTES v28).
    v(FwdRegHalf { dtype: Bf16, ln: true, l2: true, sub: false, one_barrier: false }, 256, 2),
    // Groups below a warp (N = 512, 1024).
    v(FwdRegHalf { dtype: Bf16, ln: false, l2: false, sub: true, one_barrier: false }, 256, 2),
    v(FwdRegHalf { dtype: Bf16, ln: true, l2: false, sub: true, one_barrier: false }, 256, 2),
    // The backward's twin for a few rows (SPEC + 256): one row per CTA; one row writes dW/dB
    // itself, more leave partial rows to the finalize. 256 threads at most (the register table's groups to
    // N = 8192 for 4 chunks, to 2048 / 4096 for 2 chunks of 16-bit / f32): at 512 the 4-chunk
    // kernels spill (72–280 bytes), so longer rows take the general path.
    v(BwdSmall { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    // The twin with column CTAs in the same launch (SPEC + 256 + 4096; in the FP8 unit, own_unit,
    // so the main unit's code stays as it was): 16-bit only, as the few-row tables' groups.
    v(BwdSmallCols { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: false, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: false, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: true, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: Bf16, ln: true, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: false, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: false, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: true, residual: false, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmallCols { dtype: F16, ln: true, residual: true, chunks: BwdChunks::K4 }, 256, 1),
    v(BwdSmall { dtype: F32, ln: false, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F32, ln: false, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F32, ln: true, residual: false, chunks: BwdChunks::K2 }, 256, 1),
    v(BwdSmall { dtype: F32, ln: true, residual: true, chunks: BwdChunks::K2 }, 256, 1),
    v(FwdRegQ { dtype: Bf16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: Bf16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: F16, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: F16, ln: false, residual: true, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    v(FwdRegQ { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true }, 1024, 1),
    // The quantised twins in the decode twin's form (SPEC + 128 + 256): at most 256 threads, so
    // the 4 chunks, the weight's and the bias's stay in registers (the 1024-thread FwdRegQ
    // spills); the planner's FP8 default where the forward table's group fits. Per-tensor and
    // per-row scaling are separate kernels (each holds one mode's code: fewer registers).
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: false, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: true, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: false, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: true, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: false, per_row: true, tile: false, two_ctas: false }, 256, 1),
    // bf16 per-row RMSNorm with the residual at two CTAs per SM: 128 registers (166 at one),
    // no spills; A/B on the H200 (bench/results/nvidia-h200-2026-11-28/pf/call1): 2048×8192 48.0
    // → 33.8 µs, 8192×8192 175 → 120, 4096×1024 10.3 → 9.6, no cell slower. Not f16 (24 bytes
    // spilled, 4-12% slower at 1-1024 rows) and not per tensor (mixed by size: below).
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: true, per_row: true, tile: false, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: false, per_row: true, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: true, per_row: true, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: false, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: true, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: false, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: true, per_row: false, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: false, per_row: true, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: true, per_row: true, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: false, per_row: true, tile: false, two_ctas: false }, 256, 1),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: true, per_row: true, tile: false, two_ctas: false }, 256, 1),
    // bf16 per-tensor RMSNorm with the residual compiled a second time at two CTAs per SM (SPEC +
    // 4096, `_x2`, in the FP8 unit: 128 registers, 24 bytes spilled): on the H200 (pf/call1)
    // 5.5-6.6% faster from 8192×8192 / 32768×4096 but 4-10% slower at 1×8192-1024×8192 and
    // 4096×1024, so the planner takes it by size (Fp8Tuning::twin_x2_min_elems).
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: true, per_row: false, tile: false, two_ctas: true }, 256, 2),
    // The quantised twin with yT through its shared-memory tile (SPEC + 2048): the planner's
    // transposed FP8 output wherever the twin runs and a tile of Fp8Tuning::twin_tm rows fits.
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: false, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: true, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: false, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: true, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: false, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: false, residual: true, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: false, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: Bf16, ln: true, residual: true, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: false, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: true, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: false, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: true, per_row: false, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: false, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: false, residual: true, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: false, per_row: true, tile: true, two_ctas: false }, 256, 2),
    v(FwdRegQDecode { dtype: F16, ln: true, residual: true, per_row: true, tile: true, two_ctas: false }, 256, 2),
    // The decode twin in pairs (SPEC + 256 + 1024): 2G threads of 2 chunks with the 4-chunk group
    // G's reduction order (the same bits); the planner's forward for the rows of Tuning::fwd_pair.
    v(FwdRegPair { dtype: Bf16, ln: false, residual: false, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: Bf16, ln: false, residual: true, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: Bf16, ln: true, residual: false, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: Bf16, ln: true, residual: true, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: false, residual: false, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: false, residual: true, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: true, residual: false, one_barrier: false }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: true, residual: true, one_barrier: false }, 256, 1),
    // The quantised twin in pairs (SPEC + 128 + 256 + 1024, + 512 per row), RMSNorm with the
    // residual only (the quantised kernels with two accumulators): the bits of FwdRegQDecode with
    // twice the warps per row; for the few rows of Fp8Tuning::pair_rows. In the FP8 unit
    // (own_unit), so the main unit's code stays as it was.
    v(FwdRegQPair { dtype: Bf16, ln: false, residual: true, per_row: false }, 256, 1),
    v(FwdRegQPair { dtype: Bf16, ln: false, residual: true, per_row: true }, 256, 1),
    v(FwdRegQPair { dtype: F16, ln: false, residual: true, per_row: false }, 256, 1),
    v(FwdRegQPair { dtype: F16, ln: false, residual: true, per_row: true }, 256, 1),
    // The re-reading cluster forward (SPEC + 32): rows past the registers and the staged slices
    // (N = 1M at 16 bits), for the calls where it beat the split path (f32, 16-bit RMSNorm without
    // the residual: tuning.rs, ClusterTuning::reread_ops; the 16-bit LayerNorm and residual builds
    // measured slower and were removed). In the FP8 unit (own_unit), so the main unit's code stays
    // as it was.
    v(FwdClusterReread { dtype: F32, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: false, residual: true, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: false, residual: true, aligned: false }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: true, residual: false, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: true, residual: false, aligned: false }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: true, residual: true, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: F32, ln: true, residual: true, aligned: false }, 512, 1),
    v(FwdClusterReread { dtype: F16, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: F16, ln: false, residual: false, aligned: false }, 512, 1),
    v(FwdClusterReread { dtype: Bf16, ln: false, residual: false, aligned: true }, 512, 1),
    v(FwdClusterReread { dtype: Bf16, ln: false, residual: false, aligned: false }, 512, 1),
    // LayerNorm's statistics behind one barrier (SPEC + 65536, `_1b`; nk_reg.cuh's CHAN): the
    // plain, twin, pair and half-thread LayerNorm forwards of the rows the planner gives it
    // (Tuning::fwd_ln_one_barrier: table groups of 256 threads and more, rows of whole rounds
    // of chunks), every kernel of those N. In the FP8 unit (own_unit), so the main unit's code
    // stays as it was.
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: F16, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: true, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: F32, ln: true, residual: true, chunks: FwdChunks::K4, aligned: false, one_barrier: true, ctas3: false }, 512, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K8, aligned: true, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdReg { dtype: Bf16, ln: true, residual: false, chunks: FwdChunks::K8, aligned: false, one_barrier: true, ctas3: false }, 1024, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: false, k8: false, one_barrier: true }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: true, k8: false, one_barrier: true }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: true, residual: false, k8: false, one_barrier: true }, 256, 1),
    v(FwdRegDecode { dtype: F16, ln: true, residual: true, k8: false, one_barrier: true }, 256, 1),
    v(FwdRegDecode { dtype: Bf16, ln: true, residual: false, k8: true, one_barrier: true }, 256, 1),
    v(FwdRegHalf { dtype: Bf16, ln: true, l2: false, sub: false, one_barrier: true }, 256, 2),
    v(FwdRegHalf { dtype: Bf16, ln: true, l2: true, sub: false, one_barrier: true }, 256, 2),
    v(FwdRegPair { dtype: Bf16, ln: true, residual: false, one_barrier: true }, 256, 1),
    v(FwdRegPair { dtype: Bf16, ln: true, residual: true, one_barrier: true }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: true, residual: false, one_barrier: true }, 256, 1),
    v(FwdRegPair { dtype: F16, ln: true, residual: true, one_barrier: true }, 256, 1),
    // The f32 RMSNorm forward without the residual compiled for three 256-thread CTAs per SM
    // (`_o3`: 80 registers, no spill, against 113 under the 512-thread bound), for the calls of
    // Tuning::fwd_f32_ctas3: the same code, the same bits. In the FP8 unit (own_unit).
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: true, one_barrier: false, ctas3: true }, 256, 3),
    v(FwdReg { dtype: F32, ln: false, residual: false, chunks: FwdChunks::K4, aligned: false, one_barrier: false, ctas3: true }, 256, 3),
];
