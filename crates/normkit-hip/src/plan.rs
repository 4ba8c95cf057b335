//! Launch planning: which kernels, which group sizes, which grid, how much LDS and workspace,
//! from the shape, the dtypes and the layout. Pure functions of the [`LaunchConfig`], tested
//! without a device.

use crate::config::{bwd_row_lds, fwd_row_lds, pick, LaunchConfig};
use crate::elf::CodeObject;
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

/// Dynamic LDS the row kernels may use: the per-workgroup LDS minus the largest static LDS
/// (reduction scratch) of the row kernels whose names start with `prefix`, read from the code
/// object's kernel descriptors.
pub fn dyn_lds_limit(cfg: &LaunchConfig, co: &CodeObject, prefix: &str) -> usize {
    let fixed = co.kernels.iter().filter(|k| k.name.starts_with(prefix)).map(|k| k.group_segment_fixed_size).max().unwrap_or(0);
    (cfg.lds_per_workgroup.saturating_sub(fixed)) as usize
}

/// What a forward call is made of, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwdShape {
    pub m: usize,
    pub n: usize,
    /// Every operand allows 16-byte accesses (N, strides, offsets multiples of 8; 16-byte aligned).
    pub aligned: bool,
    /// Every tensor present is f16/bf16 (16-byte staging slots, the narrow kernels).
    pub all16: bool,
    /// Weight and bias present (0, 1 or 2).
    pub nvec: usize,
    pub residual: bool,
}

/// How a forward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwdLaunch {
    /// One `group` of threads per row, `rows_per_cta` rows per persistent workgroup, `lds`
    /// bytes of dynamic LDS with `slot`-byte chunk slots.
    Row { kernel: Kernel, group: u32, rows_per_cta: u32, slot: u32, lds: usize, blocks: u64 },
    /// `nsplit` chunks per row; partial statistics (8 bytes per (row, chunk)) in the workspace.
    Split { stats: Kernel, apply: Kernel, nsplit: usize, blocks: u64, threads: u32, ws_bytes: usize },
}

impl FwdLaunch {
    /// What decides a row's result bits: the path, the group and the chunking — never the grid
    /// (which depends on M). The aligned and element-wise kernels of a path add the same numbers
    /// in the same order, so the kernel itself is not part of it.
    pub fn row_shape(&self) -> (bool, u32, usize) {
        match *self {
            FwdLaunch::Row { group, .. } => (true, group, 0),
            FwdLaunch::Split { nsplit, .. } => (false, 0, nsplit),
        }
    }
}

/// Plans a forward call (`n` > 0). `cus`: compute units; `lds_limit`: dynamic LDS a row
/// workgroup may use ([`dyn_lds_limit`]).
pub fn forward(cfg: &LaunchConfig, cus: u32, s: &FwdShape, lds_limit: usize) -> Result<FwdLaunch> {
    let slot = if s.all16 { 16 } else { 32 };
    if let Some(rc) = pick(cfg.fwd_rows, s.n) {
        let lds = fwd_row_lds(rc, s.n, slot, s.nvec, 1 + usize::from(s.residual));
        if lds <= lds_limit {
            let kernel = match (s.aligned, s.all16) {
                (true, true) => kernels::NK_FWD_ROW_AH,
                (true, false) => kernels::NK_FWD_ROW_A,
                _ => kernels::NK_FWD_ROW_U,
            };
            let threads = rc.group * rc.rows_per_cta;
            let per_cu = cfg.ctas_per_cu(kernel.name, threads, lds);
            let blocks = (s.m as u64).div_ceil(rc.rows_per_cta as u64).min(u64::from(cus.max(1)) * u64::from(per_cu)).max(1);
            return Ok(FwdLaunch::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds, blocks });
        }
    }
    let nsplit = s.n.div_ceil(SPLIT_CHUNK);
    let tiles = (s.m as u64).checked_mul(nsplit as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    let ws_bytes = tiles.checked_mul(8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let (stats, apply) = match (s.aligned, s.all16) {
        (true, true) => (kernels::NK_FWD_SPLIT_STATS_AH, kernels::NK_FWD_SPLIT_APPLY_AH),
        (true, false) => (kernels::NK_FWD_SPLIT_STATS_A, kernels::NK_FWD_SPLIT_APPLY_A),
        _ => (kernels::NK_FWD_SPLIT_STATS_U, kernels::NK_FWD_SPLIT_APPLY_U),
    };
    Ok(FwdLaunch::Split {
        stats,
        apply,
        nsplit,
        blocks: tiles.clamp(1, MAX_GRID),
        threads: kernels::NK_SPLIT_THREADS as u32,
        ws_bytes,
    })
}

/// What a backward call is made of, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdShape {
    pub m: usize,
    pub n: usize,
    pub aligned: bool,
    /// x, dy (and the weight, if any) are f16/bf16.
    pub all16: bool,
    pub weight: bool,
    pub d_residual: bool,
    /// dW and dB wanted (0, 1 or 2).
    pub nacc: usize,
}

/// How the main pass of a backward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwdPath {
    /// Persistent row kernel; dW/dB partials in `lds` bytes of dynamic LDS.
    Row { kernel: Kernel, group: u32, rows_per_cta: u32, slot: u32, lds: usize },
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

/// Plans a backward call. `parts` may depend on M and the CU count: it only decides how dW is
/// cut into partials; the same inputs on the same device always give the same bits.
pub fn backward(cfg: &LaunchConfig, cus: u32, s: &BwdShape, lds_limit: usize) -> Result<BwdLaunch> {
    let m64 = s.m as u64;
    let cus = u64::from(cus.max(1));
    let slot = if s.all16 { 16 } else { 32 };
    let kernel = match (s.aligned, s.all16) {
        (true, true) => kernels::NK_BWD_ROW_AH,
        (true, false) => kernels::NK_BWD_ROW_A,
        _ => kernels::NK_BWD_ROW_U,
    };
    let staged = 2 + usize::from(s.d_residual);
    let row = pick(cfg.bwd_rows, s.n)
        .map(|rc| (rc, bwd_row_lds(rc, s.n, slot, usize::from(s.weight), staged, s.nacc)))
        .filter(|&(_, lds)| lds <= lds_limit);
    let (path, parts, stats_bytes, nsplit) = match row {
        _ if s.m == 0 => (BwdPath::Empty, 0, 0, 0),
        Some((rc, lds)) => {
            let per_cu = cfg.ctas_per_cu(kernel.name, rc.group * rc.rows_per_cta, lds);
            let blocks = m64.div_ceil(rc.rows_per_cta as u64).min(cus * u64::from(per_cu)).max(1);
            let path = BwdPath::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds };
            (path, blocks, 0, 0)
        }
        None => {
            let ns = s.n.div_ceil(SPLIT_CHUNK);
            let target = cus * u64::from(cfg.split_bwd_ctas_per_cu);
            let parts = target.div_ceil(ns as u64).clamp(1, m64.min(65535));
            let stats = m64.checked_mul(ns as u64 * 8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
            let tiles = m64.checked_mul(ns as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
            let (ks, ka) = match (s.aligned, s.all16) {
                (true, true) => (kernels::NK_BWD_SPLIT_STATS_AH, kernels::NK_BWD_SPLIT_APPLY_AH),
                (true, false) => (kernels::NK_BWD_SPLIT_STATS_A, kernels::NK_BWD_SPLIT_APPLY_A),
                _ => (kernels::NK_BWD_SPLIT_STATS_U, kernels::NK_BWD_SPLIT_APPLY_U),
            };
            (BwdPath::Split { stats: ks, apply: ka, tiles }, parts, stats, ns)
        }
    };
    let part_bytes = usize::try_from(parts).ok().and_then(|p| p.checked_mul(s.n.checked_mul(4)?)).ok_or_else(too_big)?;
    let ws_bytes = align256(stats_bytes)
        .checked_add(align256(part_bytes).checked_mul(s.nacc).ok_or_else(too_big)?)
        .ok_or_else(too_big)?;
    let finalize_blocks = if s.nacc > 0 { (s.n as u64).div_ceil(kernels::NK_WARP_WIDTH as u64).min(MAX_GRID) } else { 0 };
    Ok(BwdLaunch { path, parts, nsplit, stats_bytes, part_bytes, ws_bytes, finalize_blocks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf;

    const MS: [usize; 7] = [1, 2, 3, 255, 4096, 1 << 20, (1 << 23) + 1];
    const NS: [usize; 15] = [1, 7, 8, 64, 100, 769, 1024, 3584, 4096, 8192, 8200, 16384, 16385, 65536, 262_144];

    fn limit(cfg: &LaunchConfig, prefix: &str) -> usize {
        let co = elf::parse(kernels::code_object(cfg.arch).expect("code object")).expect("parses");
        dyn_lds_limit(cfg, &co, prefix)
    }

    #[test]
    fn forward_path_never_depends_on_m_or_the_layout() {
        for cfg in [LaunchConfig::for_gfx942(), LaunchConfig::for_gfx950()] {
            let lim = limit(&cfg, "nk_fwd_row");
            assert!(lim > 60 * 1024 && lim <= 64 * 1024, "{lim}");
            for n in NS {
                for all16 in [true, false] {
                    for nvec in 0..=2 {
                        for residual in [false, true] {
                            let shape = |m, aligned| FwdShape { m, n, aligned, all16, nvec, residual };
                            let first = forward(&cfg, 304, &shape(1, false), lim).unwrap().row_shape();
                            for m in MS {
                                for aligned in [false, true] {
                                    let l = forward(&cfg, 304, &shape(m, aligned), lim).unwrap();
                                    assert_eq!(l.row_shape(), first, "n={n} m={m} aligned={aligned}");
                                    match l {
                                        FwdLaunch::Row { blocks, group, rows_per_cta, kernel, lds, .. } => {
                                            assert!((1..=MAX_GRID).contains(&blocks));
                                            assert!(group * rows_per_cta <= kernel.max_threads);
                                            assert!(lds <= lim);
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
            }
        }
    }

    #[test]
    fn forward_row_path_limits() {
        let cfg = LaunchConfig::for_gfx942();
        let lim = limit(&cfg, "nk_fwd_row");
        let s = |n, nvec| FwdShape { m: 4, n, aligned: true, all16: true, nvec, residual: false };
        assert!(matches!(forward(&cfg, 304, &s(8192, 1), lim).unwrap(), FwdLaunch::Row { group: 256, slot: 16, kernel, .. } if kernel.narrow));
        // 16384 bf16 with a weight needs 64 KiB of LDS plus the scratch: split on gfx942.
        assert!(matches!(forward(&cfg, 304, &s(16384, 1), lim).unwrap(), FwdLaunch::Split { nsplit: 4, apply, .. } if apply.narrow));
        assert!(matches!(forward(&cfg, 304, &s(16384, 0), lim).unwrap(), FwdLaunch::Row { group: 512, .. }));
        assert!(matches!(forward(&cfg, 304, &s(70000, 0), lim).unwrap(), FwdLaunch::Split { .. }));
    }

    #[test]
    fn backward_plans() {
        let cfg = LaunchConfig::for_gfx942();
        let lim = limit(&cfg, "nk_bwd_row");
        let s = |m, n, nacc| BwdShape { m, n, aligned: true, all16: true, weight: true, d_residual: false, nacc };
        let l = backward(&cfg, 304, &s(32768, 1024, 2), lim).unwrap();
        let BwdPath::Row { group, lds, .. } = l.path else { panic!("{l:?}") };
        assert_eq!(group, 128);
        assert!(lds <= lim);
        assert!(l.parts >= 304, "{l:?}");
        assert_eq!(l.part_bytes, l.parts as usize * 1024 * 4);
        // 4096 bf16 with dW and dB still fits; f32 does not.
        assert!(matches!(backward(&cfg, 304, &s(100, 4096, 2), lim).unwrap().path, BwdPath::Row { .. }));
        let f32s = BwdShape { all16: false, ..s(100, 4096, 2) };
        assert!(matches!(backward(&cfg, 304, &f32s, lim).unwrap().path, BwdPath::Split { .. }));
        // Large rows: split, with parts bounded by M.
        let l = backward(&cfg, 304, &s(100, 16384, 2), lim).unwrap();
        assert!(matches!(l.path, BwdPath::Split { .. }), "{l:?}");
        assert!((1..=100).contains(&l.parts));
        // M = 0: only the finalize, over zero parts.
        let l = backward(&cfg, 304, &s(0, 512, 1), lim).unwrap();
        assert_eq!((l.path, l.parts, l.ws_bytes), (BwdPath::Empty, 0, 0));
        assert!(l.finalize_blocks > 0);
        // No dW/dB: no finalize, no partials.
        let l = backward(&cfg, 304, &s(10, 512, 0), lim).unwrap();
        assert_eq!((l.finalize_blocks, l.ws_bytes), (0, 0));
        // Huge shapes report a typed error rather than overflowing.
        assert!(backward(&cfg, 304, &s(usize::MAX / 2, 1 << 20, 2), lim).is_err());
    }
}
