//! Launch configuration per target, as data.
//!
//! **Nothing here has been measured**: no AMD GPU was available when this backend was written.
//! Every number says what it is derived from (the CDNA register file and LDS, the compile-time
//! capacity of the kernels in kernels-hip/kernels.def, the VGPR counts clang-22 reports); replace
//! the reasoning with measurements when the kernels first run on MI300X / MI355X.
//!
//! Row path: a group of `group` threads normalises one row, `rows_per_cta` groups share a
//! workgroup. A table row applies to every N up to its `max_n`; past the last row the split-row
//! path runs. Each thread holds at most KC chunks of VEC elements (kernels.def:
//! NK_FWD_ROW_KC_*, NK_BWD_ROW_KC_*), so `max_n = group·KC·VEC`; groups are packed to 256 threads
//! (4 wavefronts, one per SIMD) per workgroup, or one group when it is larger. Groups above the
//! wavefront width are multiples of it (64), as the shared reductions require. The choice depends
//! on N, the dtypes and the layout only — never on M — so a row's forward output is the same
//! whatever the batch.

use crate::kernels;

/// One row of a launch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowConfig {
    pub max_n: usize,
    pub group: u32,
    pub rows_per_cta: u32,
}

const fn rc(max_n: usize, group: u32, rows_per_cta: u32) -> RowConfig {
    RowConfig { max_n, group, rows_per_cta }
}

// The same shape as the CUDA tables (kernels.def's KC values are the same); groups stop at
// NK_ROW_MAX_THREADS = 512, see kernels-hip/kernels.def for why not 1024.
/// Forward, 16-byte path (VEC = 8, KC = 4): max_n = 32·group.
static FWD_VEC: [RowConfig; 10] = [
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
];
/// Forward, scalar path (VEC = 1, KC = 16): max_n = 16·group.
static FWD_SCALAR: [RowConfig; 10] = [
    rc(16, 1, 256),
    rc(32, 2, 128),
    rc(64, 4, 64),
    rc(128, 8, 32),
    rc(256, 16, 16),
    rc(512, 32, 8),
    rc(1024, 64, 4),
    rc(2048, 128, 2),
    rc(4096, 256, 1),
    rc(8192, 512, 1),
];
/// Backward, 16-byte path (VEC = 8, KC = 2): max_n = 16·group.
static BWD_VEC: [RowConfig; 10] = FWD_SCALAR;
/// Backward, scalar path (VEC = 1, KC = 8): max_n = 8·group.
static BWD_SCALAR: [RowConfig; 10] = [
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

/// VGPRs per SIMD lane on CDNA2/3/3.5 (arch VGPRs and AGPRs share them).
pub const VGPRS_PER_SIMD: u32 = 512;
/// SIMDs per CU.
pub const SIMDS_PER_CU: u32 = 4;
/// Most wavefronts a SIMD holds (CDNA3).
pub const MAX_WAVES_PER_SIMD: u32 = 8;

/// Occupancy each kernel is designed for, in wavefronts per SIMD; its VGPR budget is
/// [`vgpr_budget`] of it, and `tests/isa.rs` fails any code object whose allocation exceeds it.
/// Where a kernel sits, and why (clang-22 -O3, gfx942, when this was written):
/// - `fwd_row_v8` 3 (161 VGPRs): KC = 4 raw 16-byte chunks of x and of the residual stay in
///   registers; the shared bodies dispatch on dtypes at run time, so chunks are sized for f32.
/// - `fwd_row_v1` 2 (216): 16 scalar chunks, same reason.
/// - split statistics kernels 5-6 (59-88): one pass, few chunks per thread.
/// - `fwd_split_apply_*` 5 (72-91).
/// - `bwd_row_v8` 3 (158), `bwd_row_v1` 4 (111): x and dy chunks across the row reduction.
/// - `bwd_split_apply_v8` 3 (142), `_v1` 2 (169): the segment's dW/dB partials live in
///   registers (2·NK_SPLIT_ELEMS floats).
/// - `bwd_finalize` 8 (30).
pub const OCCUPANCY: &[(&str, u32)] = &[
    ("nk_fwd_row_v8", 3),
    ("nk_fwd_row_v1", 2),
    ("nk_fwd_split_stats_v8", 6),
    ("nk_fwd_split_stats_v1", 6),
    ("nk_fwd_split_apply_v8", 5),
    ("nk_fwd_split_apply_v1", 5),
    ("nk_bwd_row_v8", 3),
    ("nk_bwd_row_v1", 4),
    ("nk_bwd_split_stats_v8", 5),
    ("nk_bwd_split_stats_v1", 5),
    ("nk_bwd_split_apply_v8", 3),
    ("nk_bwd_split_apply_v1", 2),
    ("nk_bwd_finalize", 8),
];

/// The designed occupancy of a kernel (wavefronts per SIMD).
pub fn occupancy(kernel: &str) -> Option<u32> {
    OCCUPANCY.iter().find(|(k, _)| *k == kernel).map(|&(_, w)| w)
}

/// Most VGPRs (allocation granule 8) a wavefront may use for `waves` of them to fit a SIMD.
pub const fn vgpr_budget(waves: u32) -> u32 {
    (VGPRS_PER_SIMD / waves) / 8 * 8
}

/// How one target is launched.
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    pub arch: &'static str,
    /// Wavefront size the code object is built for; the device must report the same.
    pub wavefront: u32,
    /// LDS a workgroup may use, bytes. Bounds the backward row path, whose dW/dB partials live in
    /// LDS (`rows_per_cta · (dW, dB) · N` fp32 words): past it the split path runs.
    pub lds_bytes: u32,
    pub fwd_vec: &'static [RowConfig],
    pub fwd_scalar: &'static [RowConfig],
    pub bwd_vec: &'static [RowConfig],
    pub bwd_scalar: &'static [RowConfig],
    /// Split-row backward: target workgroups per CU for the (chunks × parts) grid; 3 = the
    /// designed occupancy of `bwd_split_apply_v8` (3 waves per SIMD) in 4-wave workgroups.
    pub split_bwd_ctas_per_cu: u32,
}

impl LaunchConfig {
    /// MI300X / MI300A / MI325X: 304 CUs (MI300X), 64 KiB LDS per workgroup, 512 VGPRs per SIMD
    /// lane, 5.3 TB/s HBM3. Derived, not measured.
    pub const fn for_gfx942() -> Self {
        LaunchConfig {
            arch: "gfx942",
            wavefront: 64,
            lds_bytes: 64 * 1024,
            fwd_vec: &FWD_VEC,
            fwd_scalar: &FWD_SCALAR,
            bwd_vec: &BWD_VEC,
            bwd_scalar: &BWD_SCALAR,
            split_bwd_ctas_per_cu: 3,
        }
    }

    /// MI350X / MI355X: 256 CUs, 160 KiB LDS per workgroup (so the backward row path keeps dW and
    /// dB of rows up to 8192 in LDS, where gfx942 switches to the split path at 4096), the same
    /// 512-VGPR SIMDs, 8 TB/s HBM3E. Same tables until measured: the limits they come from
    /// (VGPRs, wave64, the kernels' chunk counts) are unchanged.
    pub const fn for_gfx950() -> Self {
        LaunchConfig { arch: "gfx950", lds_bytes: 160 * 1024, ..Self::for_gfx942() }
    }

    /// MI200 (gfx90a): 110 CUs per GCD, 64 KiB LDS; same derivation, not measured.
    pub const fn for_gfx90a() -> Self {
        LaunchConfig { arch: "gfx90a", ..Self::for_gfx942() }
    }

    pub fn for_arch(arch: &str) -> Option<Self> {
        match arch {
            "gfx942" => Some(Self::for_gfx942()),
            "gfx950" => Some(Self::for_gfx950()),
            "gfx90a" => Some(Self::for_gfx90a()),
            _ => None,
        }
    }

    /// Dynamic LDS of the backward row kernel: per group, one fp32 region per accumulator
    /// (dW, dB) of `K·VEC·group >= N` words (the layout of kernels-common's bwd_row).
    pub fn bwd_row_lds(&self, rc: RowConfig, n: usize, vec: bool, nacc: usize) -> usize {
        let v = if vec { 8 } else { 1 };
        let g = rc.group as usize;
        let k = (n / v).div_ceil(g);
        rc.rows_per_cta as usize * nacc * k * v * g * 4
    }

    /// The backward row configuration for `n`, if the row path applies: the table has a row
    /// for `n` and its LDS fits next to the kernel's static LDS.
    pub fn bwd_row(&self, n: usize, vec: bool, nacc: usize) -> Option<(RowConfig, usize)> {
        let table = if vec { self.bwd_vec } else { self.bwd_scalar };
        let rc = pick(table, n)?;
        let lds = self.bwd_row_lds(rc, n, vec, nacc);
        // Static LDS of bwd_row: 2·NK_ROW_MAX_THREADS/NK_WARP floats of reduction scratch.
        let fixed = 2 * kernels::NK_ROW_MAX_THREADS / kernels::NK_WARP_WIDTH * 4;
        (lds + fixed <= self.lds_bytes as usize).then_some((rc, lds))
    }

    /// Persistent backward row workgroups per CU: the designed occupancy of the kernel, bounded
    /// by LDS.
    pub fn bwd_row_ctas_per_cu(&self, kernel: &str, threads: u32, lds: usize) -> u32 {
        let waves = occupancy(kernel).unwrap_or(1).min(MAX_WAVES_PER_SIMD) * SIMDS_PER_CU;
        let by_waves = waves / threads.div_ceil(self.wavefront).max(1);
        let by_lds = (self.lds_bytes as usize).checked_div(lds).map_or(u32::MAX, |v| v.min(u32::MAX as usize) as u32);
        by_waves.min(by_lds).max(1)
    }
}

/// The table row for hidden size `n`, or `None` for the split-row path.
pub fn pick(table: &[RowConfig], n: usize) -> Option<RowConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent_with_the_kernels() {
        for cfg in [LaunchConfig::for_gfx942(), LaunchConfig::for_gfx950(), LaunchConfig::for_gfx90a()] {
            for (table, kc, vec) in [
                (cfg.fwd_vec, kernels::NK_FWD_ROW_KC_V8, 8),
                (cfg.fwd_scalar, kernels::NK_FWD_ROW_KC_V1, 1),
                (cfg.bwd_vec, kernels::NK_BWD_ROW_KC_V8, 8),
                (cfg.bwd_scalar, kernels::NK_BWD_ROW_KC_V1, 1),
            ] {
                let mut last = 0;
                for r in table {
                    assert!(r.max_n > last, "tables grow");
                    last = r.max_n;
                    assert!(r.group.is_power_of_two());
                    assert!(r.group as usize <= kernels::NK_ROW_MAX_THREADS);
                    assert!(r.max_n <= r.group as usize * kc * vec, "a row must fit the group's registers");
                    let threads = r.group * r.rows_per_cta;
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
    fn backward_row_path_respects_lds() {
        let g942 = LaunchConfig::for_gfx942();
        let g950 = LaunchConfig::for_gfx950();
        assert!(g942.bwd_row(4096, true, 2).is_some());
        assert!(g942.bwd_row(8192, true, 2).is_none(), "64 KiB of dW+dB partials do not fit next to the scratch");
        assert!(g942.bwd_row(8192, true, 1).is_some());
        assert!(g950.bwd_row(8192, true, 2).is_some());
        assert!(g942.bwd_row(16384, true, 0).is_none());
    }

    #[test]
    fn budgets() {
        assert_eq!(vgpr_budget(8), 64);
        assert_eq!(vgpr_budget(5), 96);
        assert_eq!(vgpr_budget(4), 128);
        assert_eq!(vgpr_budget(3), 168);
        assert_eq!(vgpr_budget(2), 256);
        for k in kernels::KERNELS {
            assert!(occupancy(k.name).is_some(), "{} has no designed occupancy", k.name);
        }
    }
}
