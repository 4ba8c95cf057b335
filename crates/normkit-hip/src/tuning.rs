//! Tuning: the launch tables and thresholds of each target, as data, each with the reasoning
//! behind it ([`Tuning::for_gfx942`], ...), and the occupancy each kernel is designed for (its
//! VGPR budget, checked by `tests/isa.rs`). [`crate::plan`] reads these and nothing else.
//!
//! **Nothing here has been measured**: no AMD GPU was available when this backend was written.
//! Every number says what it is derived from (the CDNA register file and LDS, the workgroup
//! bounds of kernels-hip/variants.rs, the VGPR counts clang-22 reports); replace the reasoning
//! with measurements when the kernels first run on MI300X / MI355X.
//!
//! Row path (kernels-common): a group of `group` threads normalises one row (thread t owns the
//! 8-element chunks t, t + group, ...), `rows_per_cta` groups share a persistent workgroup, and
//! the row is staged in LDS. A table row applies to every N up to its `max_n`; past the last row,
//! or when the staged row and weights do not fit the workgroup's LDS, the split-row path runs
//! (CDNA has no thread-block clusters to spread one row over several CUs). The choice depends on
//! N, the dtypes and which operands exist — never on M or the layout — so a row's forward output
//! is the same whatever the batch. Groups above the wavefront width are multiples of it (64), as
//! the shared reductions require.

use crate::kernels::{self, BwdChunks, Dt, FwdChunks, Kernel, KernelKey};

/// One row of a launch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowConfig {
    /// The largest hidden size N this row applies to (it applies from the previous row's `max_n` + 1).
    pub max_n: usize,
    /// Threads that normalise one row together.
    pub group: u32,
    /// Rows (groups) that share one persistent workgroup.
    pub rows_per_cta: u32,
}

const fn rc(max_n: usize, group: u32, rows_per_cta: u32) -> RowConfig {
    RowConfig { max_n, group, rows_per_cta }
}

/// Forward row path: the CUDA table's shape (at most 4 chunks = 32 elements per thread up to
/// N = 32768, 8 beyond; small rows packed into 256-thread workgroups = 4 wavefronts, one per
/// SIMD). On CDNA the LDS bound usually ends it first: with 64 KiB per workgroup a bf16 row of
/// 16384 with its weight (2 × 32 KiB) no longer fits and takes the split path.
static FWD_ROWS: [RowConfig; 12] = [
    rc(32, 1, 256),
    rc(64, 2, 128),
    rc(128, 4, 64),
    rc(256, 8, 32),
    rc(512, 16, 16),
    rc(1024, 32, 8),
    rc(2048, 64, 4),
    rc(4096, 128, 2),
    rc(8192, 256, 1),
    rc(16384, 512, 1),
    rc(32768, 1024, 1),
    rc(65536, 1024, 1),
];

/// Backward row path: one 8-element chunk per thread (max_n = 8·group), 256-thread workgroups
/// for small rows, groups up to 512 (the bound the backward row kernels are compiled with, see
/// kernels-hip/variants.rs). Derived from LDS, not measured: each staged chunk costs
/// (2 + residual)·slot bytes of staging plus nacc·32 bytes of dW/dB partials (96 bytes for bf16
/// with dW and dB), so 256 threads with one chunk each take ~24 KiB and two chunks per thread
/// (the CUDA table's shape) would not fit 64 KiB next to the weight. Rows past 4096 elements, or
/// past the LDS (f32 with dW and dB at 4096), take the split path.
static BWD_ROWS: [RowConfig; 10] = [
    rc(8, 1, 256),
    rc(16, 2, 128),
    rc(32, 4, 64),
    rc(64, 8, 32),
    rc(128, 16, 16),
    rc(256, 32, 8),
    rc(512, 64, 4),
    rc(1024, 128, 2),
    rc(2048, 256, 1),
    rc(4096, 512, 1),
];

/// Backward register-resident path: 2 chunks (16 elements) per thread, so a thread's dW/dB
/// partials and its row data stay in registers; 256-thread workgroups (the 16-bit kernels are
/// bounded at 256, see kernels-hip/variants.rs). The CUDA table's shape; past N = 4096 the LDS row kernel or
/// the split path runs.
static BWD_REG_ROWS: [RowConfig; 9] = [
    rc(16, 1, 256),
    rc(32, 2, 128),
    rc(64, 4, 64),
    rc(128, 8, 32),
    rc(256, 16, 16),
    rc(512, 32, 8),
    rc(1024, 64, 4),
    rc(2048, 128, 2),
    rc(4096, 256, 1),
];

/// Backward register-resident path with one chunk per thread (f16 / f32 from 4096 to 8192):
/// groups up to 1024 threads.
static BWD_REG1_ROWS: [RowConfig; 11] = [
    rc(8, 1, 256),
    rc(16, 2, 128),
    rc(32, 4, 64),
    rc(64, 8, 32),
    rc(128, 16, 16),
    rc(256, 32, 8),
    rc(512, 64, 4),
    rc(1024, 128, 2),
    rc(2048, 256, 1),
    rc(4096, 512, 1),
    rc(8192, 1024, 1),
];

/// Backward register-resident path with four chunks per thread (bf16 from 4096 to 16384).
static BWD_REG4_ROWS: [RowConfig; 2] = [rc(8192, 256, 1), rc(16384, 512, 1)];

/// Chunks per thread the register-resident kernels hold (REG_KMAX, BREG_KMAX of
/// kernels-common/nk_norm.cuh).
pub const REG_KMAX: usize = 4;
/// Chunks per thread the register-resident backward kernels hold (`BREG_KMAX`).
pub const BREG_KMAX: usize = 2;

/// VGPRs per SIMD lane on CDNA2/3/3.5 (arch VGPRs and AGPRs share them).
pub const VGPRS_PER_SIMD: u32 = 512;
/// SIMDs per CU.
pub const SIMDS_PER_CU: u32 = 4;
/// Most wavefronts a SIMD holds (CDNA3).
pub const MAX_WAVES_PER_SIMD: u32 = 8;

/// Occupancy each kernel variant is designed for, in wavefronts per SIMD; its VGPR budget is
/// [`vgpr_budget`] of it, and `tests/isa.rs` fails any code object whose allocation exceeds it.
/// What clang-22 -O3 gave on gfx942 / gfx950 / gfx90a when this was written, and why:
/// - `fwd_row_a` 4 (99-101 VGPRs): must fit 1024-thread workgroups (16 waves = 4 per SIMD, so
///   128 is a hard limit); `_ah` 5 (73-84): one 16-byte register set per chunk; `_u` 4 (108).
/// - `fwd_split_stats_a` 6 (68), `_ah` 6 (51-53), `_u` 5 (90).
/// - `bwd_row_a` 2 (180-183), `_ah` 3 (146-154), `_u` 2 (204-205): x, dy and weight chunks plus
///   the per-row sums; bounded at 512 threads (8 waves, 2 per SIMD) so these fit.
/// - `bwd_split_stats_a` / `_u` 4 (98), `_ah` 6 (70); `bwd_split_apply_pre_a` / `_u` 2
///   (175-177), `_ah` 3 (122-127): the chunk's dW/dB partials (2·NK_SPLIT_ELEMS floats) stay in
///   registers across rows.
/// - `bwd_finalize` 8 (30), `bwd_finalize_wide` 4 (58; 1024-thread workgroups allow at most 4),
///   `fwd_split_reduce` / `bwd_split_reduce` 8 (25);
///   `fwd_split_apply_pre_a` / `_u` 4 (99-105), `_ah` 5 (72).
/// - register-resident: `fwd_reg` 16-bit 4 (71-98 in 1024-thread workgroups, where 128 is the
///   hard limit), f32 3 (87-126 in 512-thread workgroups); `bwd_reg` 16-bit 3 (114-144), f32 2 (128-166: 166 would
///   sit at the 3-wave edge); `bwd_reg1` 4 (86-107 in 1024-thread workgroups), `bwd_reg4` 2
///   (166-220).
/// - quantised (FP8) forward, rows in 512-thread workgroups (2 waves per SIMD at least; each
///   thread holds its row's chunks and prefetches the next row's): `fwd_q_row4_ah` 4 (110-119
///   VGPRs), the other 16-bit 4-chunk kernels 3 (120-142); 8 chunks 2 (167-239); with an f32
///   tensor (`fwd_q_row4_{a,u}`) 2 (195-256: with the residual at the 512-VGPR-per-lane edge of
///   2 waves); `fwd_q_split_amax_ah` 6 (57-58), `_a` / `_u` 5 (76); `fwd_q_split_apply_ah` 5
///   (73-81), `_a` / `_u` 4 (92-102); `fwd_q_transpose` 3 (53-60 used; its 16.25 KiB LDS tile
///   lets 3 workgroups share a 64 KiB CU, 3 waves per SIMD, and clang-22 then allocates that
///   occupancy's VGPRs: 136 on gfx90a / gfx942).
pub const fn designed_waves(key: KernelKey) -> u32 {
    use KernelKey::*;
    match key {
        FwdRow { narrow: true, .. } => 5,
        FwdRow { .. } => 4,
        FwdSplitStats { narrow: true, .. } => 6,
        FwdSplitStats { aligned: true, .. } => 6,
        FwdSplitStats { .. } => 5,
        BwdRow { narrow: true, .. } => 3,
        BwdRow { .. } => 2,
        BwdSplitStats { narrow: true, .. } => 6,
        BwdSplitStats { .. } => 4,
        BwdFinalize => 8,
        BwdFinalizeWide => 4,
        FwdSplitReduce | BwdSplitReduce => 8,
        FwdSplitApply { narrow: true, .. } => 5,
        FwdSplitApply { .. } => 4,
        BwdSplitApply { narrow: true, .. } => 3,
        BwdSplitApply { .. } => 2,
        FwdReg { dtype: Dt::F32, .. } => 3,
        FwdReg { .. } => 4,
        BwdReg { chunks: BwdChunks::K2, dtype: Dt::F32, .. } => 2,
        BwdReg { chunks: BwdChunks::K2, .. } => 3,
        BwdReg { chunks: BwdChunks::K1, .. } => 4,
        BwdReg { chunks: BwdChunks::K4, .. } => 2,
        FwdQRow { narrow: true, chunks: FwdChunks::K4, residual: false, aligned: true, .. } => 4,
        FwdQRow { narrow: true, chunks: FwdChunks::K4, .. } => 3,
        FwdQRow { .. } => 2,
        FwdQSplitAmax { narrow: true, .. } => 6,
        FwdQSplitAmax { .. } => 5,
        FwdQSplitApply { narrow: true, .. } => 5,
        FwdQSplitApply { .. } => 4,
        FwdQTranspose => 3,
        // Not compiled for AMD (kernels-hip/variants.rs has none of them; the quantised twins of
        // the register forward, FwdRegQ, FwdRegQDecode and FwdRegQPair, and the decode-sized twins, FwdRegPair included,
        // not yet).
        BwdFinalizeCols
        | FwdCluster { .. }
        | FwdClusterStaged { .. }
        | FwdClusterStagedQ { .. }
        | FwdClusterReread { .. }
        | BwdCluster { .. }
        | BwdRows { .. }
        | FwdRegQ { .. }
        | FwdRegQDecode { .. }
        | FwdRegQPair { .. }
        | FwdRegDecode { .. }
        | FwdRegPair { .. }
        | FwdRegHalf { .. }
        | BwdSmall { .. }
        | BwdSmallCols { .. } => 1,
    }
}

/// The designed occupancy of the kernel called `name` (wavefronts per SIMD), if the list has it
/// ([`designed_waves`] of its key; `tests/isa.rs` reads kernels by name).
pub fn occupancy(name: &str) -> Option<u32> {
    kernels::find(name).map(|k| designed_waves(k.key))
}

/// Most VGPRs (allocation granule 8) a wavefront may use for `waves` of them to fit a SIMD.
pub const fn vgpr_budget(waves: u32) -> u32 {
    (VGPRS_PER_SIMD / waves) / 8 * 8
}

/// The quantised (FP8) forward's register-resident row kernels (`nk_fwd_q_row*`) and the
/// transposed output. CUDA's choices (normkit-cuda's `Fp8Tuning`) with CDNA's LDS; not measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8Tuning {
    /// Threads per workgroup when a row needs fewer (groups per workgroup = this / group): 4
    /// wavefronts, one per SIMD.
    pub cta_threads: u32,
    /// Whether `yT` goes through the row kernel's LDS tile (where one fits) rather than the
    /// separate transpose kernel reading y_q back. Off: CUDA measured the separate kernel faster
    /// on an H100 (bf16 → e4m3 with yT: 32768×4096 394 µs against 626 fused, 2048×8192 54.8
    /// against 82.3, 4096×1024 18.7 against 29.0; normkit-cuda's `Fp8Tuning`); nothing is measured
    /// on CDNA, where the fused tile also competes with occupancy for the 64 KiB of LDS.
    pub fused_transpose: bool,
    /// The largest tile of the fused transpose, rows: 32. Its LDS pitch (`plan::fp8_tile_pitch`)
    /// makes the 4-byte tile reads conflict-free for a half-wavefront (32 lanes, CDNA's 32 banks of
    /// 4 bytes — what CUDA's warp sees); 64 rows would write 64-byte runs of `yT` but read the tile
    /// with 2-way bank conflicts under that pitch.
    pub max_tm: u32,
    /// The smallest tile worth fusing, rows (8: CUDA's); below it the separate transpose kernel
    /// (32-row tiles) writes `yT`.
    pub min_tm: u32,
    /// LDS the fused tile may take per workgroup, bytes: half a CU's LDS less 1 KiB, so two
    /// workgroups of the row kernel (their static reduction scratch included) stay resident per
    /// CU; the planner also caps it at the kernel's dynamic-LDS limit (64 KiB per workgroup less
    /// its static LDS). gfx942 / gfx90a: 31 KiB (a bf16 row of 4096 has no 8-row tile: the
    /// separate transpose); gfx950: the per-workgroup limit.
    pub tile_lds: usize,
}

/// How one target is launched: every table and threshold the planner uses.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// The target, e.g. `"gfx942"`.
    pub arch: &'static str,
    /// Wavefront size the code object is built for; the device must report the same.
    pub wavefront: u32,
    /// LDS one workgroup may use (static + dynamic), bytes: bounds the row paths, which stage
    /// rows, weights and (backward) dW/dB partials in LDS.
    pub lds_per_workgroup: u32,
    /// LDS per CU, bytes: with the per-workgroup LDS of a launch, bounds resident workgroups.
    pub lds_per_cu: u32,
    /// Forward row path table.
    pub fwd_rows: &'static [RowConfig],
    /// Backward LDS row path table.
    pub bwd_rows: &'static [RowConfig],
    /// Backward register-resident path (at most 2 chunks per thread, 256-thread workgroups).
    pub bwd_reg_rows: &'static [RowConfig],
    /// Backward register path with one chunk per thread (groups up to 1024 threads).
    pub bwd_reg1_rows: &'static [RowConfig],
    /// Backward register path with four chunks per thread (bf16 from N = 4096 to 16384).
    pub bwd_reg4_rows: &'static [RowConfig],
    /// Split-row backward: target workgroups per CU for the (chunks × parts) grid; 2 = the
    /// designed occupancy of `bwd_split_apply` (2 waves per SIMD) in 4-wave workgroups.
    pub split_bwd_ctas_per_cu: u32,
    /// The quantised (FP8) forward.
    pub fp8: Fp8Tuning,
}

impl Tuning {
    /// MI300X / MI300A / MI325X: 304 CUs (MI300X), 64 KiB LDS per CU (all of it usable by one
    /// workgroup), 512 VGPRs per SIMD lane, 5.3 TB/s HBM3. Derived, not measured.
    pub const fn for_gfx942() -> Self {
        Tuning {
            arch: "gfx942",
            wavefront: 64,
            lds_per_workgroup: 64 * 1024,
            lds_per_cu: 64 * 1024,
            fwd_rows: &FWD_ROWS,
            bwd_rows: &BWD_ROWS,
            bwd_reg_rows: &BWD_REG_ROWS,
            bwd_reg1_rows: &BWD_REG1_ROWS,
            bwd_reg4_rows: &BWD_REG4_ROWS,
            split_bwd_ctas_per_cu: 2,
            fp8: Fp8Tuning { cta_threads: 256, fused_transpose: false, max_tm: 32, min_tm: 8, tile_lds: 31 * 1024 },
        }
    }

    /// MI350X / MI355X: 256 CUs, 160 KiB LDS per CU, the same 512-VGPR SIMDs, 8 TB/s HBM3E.
    /// The per-workgroup LDS is kept at 64 KiB until a launch with more dynamic LDS is verified
    /// on a device (HIP may need a function attribute for it); residency uses the 160 KiB.
    pub const fn for_gfx950() -> Self {
        let base = Self::for_gfx942();
        Tuning { arch: "gfx950", lds_per_cu: 160 * 1024, fp8: Fp8Tuning { tile_lds: 79 * 1024, ..base.fp8 }, ..base }
    }

    /// MI200 (gfx90a): 110 CUs per GCD, 64 KiB LDS; same derivation, not measured.
    pub const fn for_gfx90a() -> Self {
        Tuning { arch: "gfx90a", ..Self::for_gfx942() }
    }

    /// The configuration of `arch` (`"gfx90a"`, `"gfx942"`, `"gfx950"`), `None` for any other.
    pub fn for_arch(arch: &str) -> Option<Self> {
        match arch {
            "gfx942" => Some(Self::for_gfx942()),
            "gfx950" => Some(Self::for_gfx950()),
            "gfx90a" => Some(Self::for_gfx90a()),
            _ => None,
        }
    }

    /// Resident workgroups per CU of `kernel` in workgroups of `threads` using `lds` bytes of
    /// LDS: the designed occupancy (VGPRs) and the LDS, whichever binds first.
    pub fn ctas_per_cu(&self, kernel: Kernel, threads: u32, lds: usize) -> u32 {
        let waves = designed_waves(kernel.key).min(MAX_WAVES_PER_SIMD) * SIMDS_PER_CU;
        let by_waves = waves / threads.div_ceil(self.wavefront).max(1);
        let by_lds = (self.lds_per_cu as usize).checked_div(lds).map_or(u32::MAX, |v| v.min(u32::MAX as usize) as u32);
        by_waves.min(by_lds).max(1)
    }
}

/// The former name of [`Tuning`], kept for code written against it.
pub type LaunchConfig = Tuning;

/// Dynamic LDS of the forward row kernel (kernels-common's layout): `slot` bytes per chunk of
/// each present weight / bias, then per group `staged` (1, or 2 with the residual) row copies.
pub fn fwd_row_lds(rc: RowConfig, n: usize, slot: usize, nvec: usize, staged: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nvec + rc.rows_per_cta as usize * staged * k * g * slot
}

/// Dynamic LDS of the backward row kernel: the weight's chunks, then per group `staged` (x, dy,
/// and d_residual_out if given) row copies and `nacc` fp32 dW/dB partial rows.
pub fn bwd_row_lds(rc: RowConfig, n: usize, slot: usize, nw: usize, staged: usize, nacc: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nw + rc.rows_per_cta as usize * (staged * k * g * slot + nacc * k * g * 8 * 4)
}

/// The table row for hidden size `n`, or `None` for the split-row path.
pub fn pick(table: &[RowConfig], n: usize) -> Option<RowConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels;

    /// The workgroup bound the kernel list compiled `name` with.
    fn bound(name: &str) -> u32 {
        kernels::KERNELS.iter().find(|k| k.name == name).map_or(0, |k| k.max_threads)
    }

    #[test]
    fn tables_are_consistent_with_the_kernels() {
        for cfg in [Tuning::for_gfx942(), Tuning::for_gfx950(), Tuning::for_gfx90a()] {
            for (table, kernel) in [
                (cfg.fwd_rows, "nk_fwd_row_a"),
                (cfg.bwd_rows, "nk_bwd_row_a"),
                (cfg.bwd_reg_rows, "nk_bwd_reg_bf16_rms"),
                (cfg.bwd_reg1_rows, "nk_bwd_reg1_f16_rms"),
                (cfg.bwd_reg4_rows, "nk_bwd_reg4_bf16_rms"),
            ] {
                let mut last = 0;
                for r in table {
                    assert!(r.max_n > last, "tables grow");
                    last = r.max_n;
                    assert!(r.group.is_power_of_two());
                    let threads = r.group * r.rows_per_cta;
                    assert!(threads <= bound(kernel), "{kernel}: {threads} threads");
                    assert!(threads as usize <= kernels::NK_ROW_MAX_THREADS);
                    assert!(threads % cfg.wavefront == 0, "whole wavefronts per workgroup");
                    if r.group > cfg.wavefront {
                        assert!(r.group % cfg.wavefront == 0);
                    }
                }
            }
        }
    }

    #[test]
    fn lds_bounds() {
        let t = FWD_ROWS;
        // bf16 RMSNorm with a weight: 8192 fits 64 KiB (16 + 16 KiB), 16384 does not (32 + 32).
        let r = pick(&t, 8192).unwrap();
        assert_eq!(fwd_row_lds(r, 8192, 16, 1, 1), 32 * 1024);
        let r = pick(&t, 16384).unwrap();
        assert_eq!(fwd_row_lds(r, 16384, 16, 1, 1), 64 * 1024);
        // bf16 backward at 4096 with dW and dB: 8 KiB of weight + 512 chunks × (2·16 + 2·32).
        let b = pick(&BWD_ROWS, 4096).unwrap();
        assert_eq!(bwd_row_lds(b, 4096, 16, 1, 2, 2), 8 * 1024 + 512 * 96);
        // Small rows: 256 threads, one chunk each.
        let b = pick(&BWD_ROWS, 1024).unwrap();
        assert_eq!(bwd_row_lds(b, 1024, 16, 1, 2, 2), 2 * 1024 + 256 * 96);
        let cfg = Tuning::for_gfx942();
        assert_eq!(cfg.ctas_per_cu(kernels::NK_FWD_ROW_AH, 256, 32 * 1024), 2);
        assert_eq!(Tuning::for_gfx950().ctas_per_cu(kernels::NK_FWD_ROW_AH, 256, 32 * 1024), 5);
        assert_eq!(Tuning::for_gfx950().ctas_per_cu(kernels::NK_FWD_ROW_AH, 256, 16 * 1024), 5, "5 waves per SIMD");
        assert_eq!(cfg.ctas_per_cu(kernels::NK_BWD_FINALIZE, 256, 0), 8);
    }

    #[test]
    fn budgets() {
        assert_eq!(vgpr_budget(8), 64);
        assert_eq!(vgpr_budget(6), 80);
        assert_eq!(vgpr_budget(5), 96);
        assert_eq!(vgpr_budget(4), 128);
        assert_eq!(vgpr_budget(3), 168);
        assert_eq!(vgpr_budget(2), 256);
        for k in kernels::KERNELS {
            assert!(occupancy(k.name).is_some(), "{} has no designed occupancy", k.name);
        }
        assert_eq!(occupancy("nk_fwd_row_a"), Some(4));
        assert_eq!(occupancy("nk_fwd_row_ah"), Some(5));
        assert_eq!(occupancy("nk_fwd_reg_f32_ln_a"), Some(3));
        assert_eq!(occupancy("nk_fwd_reg_bf16_ln_a"), Some(4));
        assert_eq!(occupancy("nk_bwd_reg_bf16_ln"), Some(3));
        assert_eq!(occupancy("nk_bwd_reg_f32_ln"), Some(2));
    }
}
