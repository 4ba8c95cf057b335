//! Launch planning: which kernels, which group sizes, which grid and how much workspace, from
//! the shape and the layout. Pure functions of the [`LaunchConfig`], tested without a device.

use crate::config::{pick, LaunchConfig};
use crate::kernels::{self, Kernel};
use normkit_core::{NormError, Operand, Result};

/// Elements of one split-path chunk.
pub const SPLIT_CHUNK: usize = kernels::NK_SPLIT_THREADS * kernels::NK_SPLIT_ELEMS;
/// Grid-stride kernels never need more workgroups than this; rows beyond are walked in a loop.
pub const MAX_GRID: u64 = 1 << 20;

fn too_big() -> NormError {
    NormError::ResourceLimit { resource: "HIP workspace bytes", requested: u64::MAX, available: usize::MAX as u64 }
}

/// Rounds a byte count up to 256 (sub-buffers of the workspace start 256-byte aligned).
pub fn align256(b: usize) -> usize {
    b.div_ceil(256) * 256
}

/// How a forward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwdLaunch {
    /// One `group` of threads per row, `rows_per_cta` rows per workgroup.
    Row { kernel: Kernel, group: u32, rows_per_cta: u32, blocks: u64 },
    /// `nsplit` chunks per row; partial statistics (8 bytes per (row, chunk)) in the workspace.
    Split { stats: Kernel, apply: Kernel, nsplit: usize, blocks: u64, threads: u32, ws_bytes: usize },
}

impl FwdLaunch {
    /// What decides the result bits of a row: the kernels and the group / chunking, never the
    /// grid (which depends on M).
    pub fn row_shape(&self) -> (&'static str, u32, usize) {
        match *self {
            FwdLaunch::Row { kernel, group, .. } => (kernel.name, group, 0),
            FwdLaunch::Split { apply, nsplit, .. } => (apply.name, 0, nsplit),
        }
    }
}

/// Plans a forward call of `m` rows of `n` (> 0) elements; `vec`: every operand allows the
/// 16-byte path (N, strides and offsets multiples of 8, 16-byte aligned starts).
pub fn forward(cfg: &LaunchConfig, m: usize, n: usize, vec: bool) -> Result<FwdLaunch> {
    let table = if vec { cfg.fwd_vec } else { cfg.fwd_scalar };
    if let Some(rc) = pick(table, n) {
        let kernel = if vec { kernels::NK_FWD_ROW_V8 } else { kernels::NK_FWD_ROW_V1 };
        let blocks = (m as u64).div_ceil(rc.rows_per_cta as u64).min(MAX_GRID);
        return Ok(FwdLaunch::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, blocks });
    }
    let nsplit = n.div_ceil(SPLIT_CHUNK);
    let tiles = (m as u64).checked_mul(nsplit as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    let ws_bytes = tiles.checked_mul(8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let (stats, apply) = if vec {
        (kernels::NK_FWD_SPLIT_STATS_V8, kernels::NK_FWD_SPLIT_APPLY_V8)
    } else {
        (kernels::NK_FWD_SPLIT_STATS_V1, kernels::NK_FWD_SPLIT_APPLY_V1)
    };
    Ok(FwdLaunch::Split {
        stats,
        apply,
        nsplit,
        blocks: tiles.min(MAX_GRID),
        threads: kernels::NK_SPLIT_THREADS as u32,
        ws_bytes,
    })
}

/// How the main pass of a backward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwdPath {
    /// Persistent row kernel, dW/dB partials in `lds` bytes of dynamic LDS.
    Row { kernel: Kernel, group: u32, rows_per_cta: u32, lds: usize },
    /// Split rows: `stats` over `tiles` (row, chunk) tiles, then `apply` on a (nsplit × parts) grid.
    Split { stats: Kernel, apply: Kernel, tiles: u64 },
    /// M = 0: nothing but the finalize (which writes zeros).
    Empty,
}

/// A planned backward call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdLaunch {
    pub path: BwdPath,
    /// Partial dW/dB rows (persistent workgroups along rows).
    pub parts: u64,
    pub nsplit: usize,
    /// Workspace layout: `[split stats | dW parts | dB parts]`, each 256-byte aligned.
    pub stats_bytes: usize,
    pub part_bytes: usize,
    pub ws_bytes: usize,
    /// Workgroups of the finalize kernel (0 when neither dW nor dB is wanted).
    pub finalize_blocks: u64,
}

/// Plans a backward call. `nacc` counts the wanted accumulators (dW, dB); `cus` the device's
/// compute units. `parts` may depend on M and the CU count: it only decides how dW is cut into
/// partials; the same inputs on the same device always give the same bits.
pub fn backward(cfg: &LaunchConfig, cus: u32, m: usize, n: usize, vec: bool, nacc: usize) -> Result<BwdLaunch> {
    let m64 = m as u64;
    let cus = u64::from(cus.max(1));
    let row = cfg.bwd_row(n, vec, nacc);
    let k_row = if vec { kernels::NK_BWD_ROW_V8 } else { kernels::NK_BWD_ROW_V1 };
    let (path, parts, stats_bytes, nsplit) = match row {
        _ if m == 0 => (BwdPath::Empty, 0, 0, 0),
        Some((rc, lds)) => {
            let per_cu = cfg.bwd_row_ctas_per_cu(k_row.name, rc.group * rc.rows_per_cta, lds);
            let blocks = m64.div_ceil(rc.rows_per_cta as u64).min(cus * u64::from(per_cu));
            (BwdPath::Row { kernel: k_row, group: rc.group, rows_per_cta: rc.rows_per_cta, lds }, blocks, 0, 0)
        }
        None => {
            let s = n.div_ceil(SPLIT_CHUNK);
            let target = cus * u64::from(cfg.split_bwd_ctas_per_cu);
            let parts = target.div_ceil(s as u64).clamp(1, m64.min(65535));
            let stats = m64.checked_mul(s as u64 * 8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
            let tiles = m64.checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
            let (ks, ka) = if vec {
                (kernels::NK_BWD_SPLIT_STATS_V8, kernels::NK_BWD_SPLIT_APPLY_V8)
            } else {
                (kernels::NK_BWD_SPLIT_STATS_V1, kernels::NK_BWD_SPLIT_APPLY_V1)
            };
            (BwdPath::Split { stats: ks, apply: ka, tiles }, parts, stats, s)
        }
    };
    let part_bytes = usize::try_from(parts).ok().and_then(|p| p.checked_mul(n.checked_mul(4)?)).ok_or_else(too_big)?;
    let ws_bytes = align256(stats_bytes)
        .checked_add(align256(part_bytes).checked_mul(nacc).ok_or_else(too_big)?)
        .ok_or_else(too_big)?;
    let finalize_blocks = if nacc > 0 { (n as u64).div_ceil(kernels::NK_WARP_WIDTH as u64).min(MAX_GRID) } else { 0 };
    Ok(BwdLaunch { path, parts, nsplit, stats_bytes, part_bytes, ws_bytes, finalize_blocks })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: [usize; 7] = [1, 2, 3, 255, 4096, 1 << 20, (1 << 23) + 1];
    const NS: [usize; 14] = [1, 7, 8, 64, 100, 769, 1024, 3584, 4096, 8192, 16384, 16385, 65536, 262_144];

    #[test]
    fn forward_path_never_depends_on_m() {
        for cfg in [LaunchConfig::for_gfx942(), LaunchConfig::for_gfx950()] {
            for n in NS {
                for vec in [true, false] {
                    if vec && n % 8 != 0 {
                        continue;
                    }
                    let first = forward(&cfg, 1, n, vec).unwrap().row_shape();
                    for m in MS {
                        let l = forward(&cfg, m, n, vec).unwrap();
                        assert_eq!(l.row_shape(), first, "n={n} m={m} vec={vec}");
                        match l {
                            FwdLaunch::Row { blocks, group, rows_per_cta, kernel } => {
                                assert!((1..=MAX_GRID).contains(&blocks));
                                assert!(group * rows_per_cta <= kernel.max_threads);
                            }
                            FwdLaunch::Split { blocks, ws_bytes, nsplit, .. } => {
                                assert!((1..=MAX_GRID).contains(&blocks));
                                assert_eq!(ws_bytes, m * nsplit * 8);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn forward_row_path_limits() {
        let cfg = LaunchConfig::for_gfx942();
        assert!(matches!(forward(&cfg, 4, 16384, true).unwrap(), FwdLaunch::Row { group: 512, .. }));
        assert!(matches!(forward(&cfg, 4, 16392, true).unwrap(), FwdLaunch::Split { nsplit: 5, .. }));
        assert!(matches!(forward(&cfg, 4, 8193, false).unwrap(), FwdLaunch::Split { .. }));
        assert!(matches!(forward(&cfg, 4, 4096, true).unwrap(), FwdLaunch::Row { group: 128, rows_per_cta: 2, .. }));
    }

    #[test]
    fn backward_plans() {
        let cfg = LaunchConfig::for_gfx942();
        // 304 CUs; 4096 bf16 with dW + dB: row path (32 KiB of LDS partials per workgroup).
        let l = backward(&cfg, 304, 32768, 4096, true, 2).unwrap();
        let BwdPath::Row { group, lds, .. } = l.path else { panic!("{l:?}") };
        assert_eq!((group, lds), (256, 32768));
        assert!(l.parts >= 304 && l.parts <= 304 * 3, "{l:?}");
        assert_eq!(l.part_bytes, l.parts as usize * 4096 * 4);
        // 8192 with dW + dB does not fit gfx942's 64 KiB: split.
        let l = backward(&cfg, 304, 100, 8192, true, 2).unwrap();
        assert!(matches!(l.path, BwdPath::Split { .. }), "{l:?}");
        assert!(l.parts >= 1 && l.parts <= 100);
        // ... but does on gfx950.
        let l = backward(&LaunchConfig::for_gfx950(), 256, 100, 8192, true, 2).unwrap();
        assert!(matches!(l.path, BwdPath::Row { .. }), "{l:?}");
        // M = 0: only the finalize, over zero parts.
        let l = backward(&cfg, 304, 0, 512, true, 1).unwrap();
        assert_eq!((l.path, l.parts, l.ws_bytes), (BwdPath::Empty, 0, 0));
        assert!(l.finalize_blocks > 0);
        // No dW/dB: no finalize, no partials.
        let l = backward(&cfg, 304, 10, 512, true, 0).unwrap();
        assert_eq!((l.finalize_blocks, l.ws_bytes), (0, 0));
        // Huge shapes report a typed error rather than overflowing.
        assert!(backward(&cfg, 304, usize::MAX / 2, 1 << 20, true, 2).is_err());
    }
}
