//! Launch planning: which kernels, which group sizes, which grid, how much LDS and workspace,
//! from the shape, the dtypes and the layout. Pure functions of the [`Tuning`], tested
//! without a device.

use crate::elf::CodeObject;
use crate::kernels::{self, BwdChunks, Dt, FwdChunks, Kernel, KernelKey};
use crate::tuning::{bwd_row_lds, fwd_row_lds, pick, Tuning, BREG_KMAX, REG_KMAX};
use normkit_core::{NormError, Operand, Result};
pub use normkit_gpu_host::Fp8Info;

/// Elements of one split-path chunk.
pub const SPLIT_CHUNK: usize = kernels::NK_SPLIT_THREADS * kernels::NK_SPLIT_ELEMS;
/// Grid-stride kernels never need more workgroups than this; rows beyond are walked in a loop.
pub const MAX_GRID: u64 = 1 << 20;

/// The split paths' per-row combine kernels: one variant each, looked up at compile time (a list
/// without them does not build).
const FWD_SPLIT_REDUCE: Kernel = kernels::get(KernelKey::FwdSplitReduce).unwrap();

/// A kernel the plan cannot do without: missing from the list is a fault of the library.
fn require(key: KernelKey) -> Result<Kernel> {
    kernels::lookup(key)
        .ok_or_else(|| NormError::Internal { backend: "hip", what: format!("kernel {} is missing from the code object", key.symbol()) })
}

/// The kernels' dtype named `tag` (`DType::name`: "f32", "f16", "bf16").
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
pub fn dyn_lds_limit(cfg: &Tuning, co: &CodeObject, prefix: &str) -> usize {
    let fixed = co.kernels.iter().filter(|k| k.name.starts_with(prefix)).map(|k| k.group_segment_fixed_size).max().unwrap_or(0);
    (cfg.lds_per_workgroup.saturating_sub(fixed)) as usize
}

/// What a forward call is made of, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwdShape {
    /// Rows, M.
    pub m: usize,
    /// Hidden size, N.
    pub n: usize,
    /// Every operand allows 16-byte accesses (N, strides, offsets multiples of 8; 16-byte aligned).
    pub aligned: bool,
    /// Every tensor present is f16/bf16 (16-byte staging slots, the narrow kernels).
    pub all16: bool,
    /// Weight and bias present (0, 1 or 2).
    pub nvec: usize,
    /// The fused residual add.
    pub residual: bool,
    /// The register-resident kernels apply (every tensor in x's dtype, Gemma casting): x's dtype
    /// and whether this is LayerNorm.
    pub reg: Option<(Dt, bool)>,
    /// Gemma casting (the quantised forward's 16-bit row kernels are compiled for it only).
    pub gemma: bool,
    /// A quantised (FP8) `y`: planned by [`forward_fp8`].
    pub fp8: Option<Fp8Info>,
}

/// How a forward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwdLaunch {
    /// One `group` of threads per row, `rows_per_cta` rows per persistent workgroup, `lds`
    /// bytes of dynamic LDS with `slot`-byte chunk slots.
    Row {
        /// The row kernel.
        kernel: Kernel,
        /// Threads per row.
        group: u32,
        /// Rows per workgroup.
        rows_per_cta: u32,
        /// Bytes per staged chunk slot (16 or 32).
        slot: u32,
        /// Dynamic LDS bytes.
        lds: usize,
        /// Persistent workgroups in the grid.
        blocks: u64,
    },
    /// `nsplit` chunks per row: `stats` writes partial statistics (8 bytes per (row, chunk)),
    /// `reduce` combines each row's once (8 more bytes per row), `apply` writes y.
    Split {
        /// The partial-statistics kernel.
        stats: Kernel,
        /// The per-row reduce kernel.
        reduce: Kernel,
        /// The kernel that writes `y`.
        apply: Kernel,
        /// Chunks per row.
        nsplit: usize,
        /// Workgroups of `stats` and `apply`.
        blocks: u64,
        /// Workgroups of `reduce`.
        reduce_blocks: u64,
        /// Threads per workgroup.
        threads: u32,
        /// Workspace bytes (the partial and combined statistics).
        ws_bytes: usize,
    },
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
pub fn forward(cfg: &Tuning, cus: u32, s: &FwdShape, lds_limit: usize) -> Result<FwdLaunch> {
    let slot = if s.all16 { 16 } else { 32 };
    if let Some(rc) = pick(cfg.fwd_rows, s.n) {
        let threads = rc.group * rc.rows_per_cta;
        // The register-resident kernels: chosen by N, dtypes and flags only; their 16-byte and
        // element-wise variants share one body (same chunks, same order).
        if let Some((dtype, ln)) = s.reg {
            let key = KernelKey::FwdReg {
                dtype,
                ln,
                residual: s.residual,
                chunks: FwdChunks::K4,
                aligned: s.aligned,
                one_barrier: false,
                ctas3: false,
            };
            let k_per_thread = s.n.div_ceil(8).div_ceil(rc.group as usize);
            let kernel = require(key)?;
            if k_per_thread <= REG_KMAX && threads <= kernel.max_threads {
                let per_cu = cfg.ctas_per_cu(kernel, threads, 0);
                let blocks = (s.m as u64).div_ceil(rc.rows_per_cta as u64).min(u64::from(cus.max(1)) * u64::from(per_cu)).max(1);
                return Ok(FwdLaunch::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds: 0, blocks });
            }
        }
        let lds = fwd_row_lds(rc, s.n, slot, s.nvec, 1 + usize::from(s.residual));
        if lds <= lds_limit {
            // The element-wise kernels have no narrow twin.
            let kernel = require(KernelKey::FwdRow { aligned: s.aligned, narrow: s.aligned && s.all16 })?;
            let per_cu = cfg.ctas_per_cu(kernel, threads, lds);
            let blocks = (s.m as u64).div_ceil(rc.rows_per_cta as u64).min(u64::from(cus.max(1)) * u64::from(per_cu)).max(1);
            return Ok(FwdLaunch::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds, blocks });
        }
    }
    let nsplit = s.n.div_ceil(SPLIT_CHUNK);
    let tiles = (s.m as u64).checked_mul(nsplit as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    // [chunk partials (M·S pairs) | combined (mean, rstd) per row (M pairs)]
    let ws_bytes =
        tiles.checked_add(s.m as u64).and_then(|t| t.checked_mul(8)).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let (aligned, narrow) = (s.aligned, s.aligned && s.all16);
    let stats = require(KernelKey::FwdSplitStats { aligned, narrow })?;
    let apply = require(KernelKey::FwdSplitApply { aligned, narrow })?;
    let threads = kernels::NK_SPLIT_THREADS as u32;
    Ok(FwdLaunch::Split {
        stats,
        reduce: FWD_SPLIT_REDUCE,
        apply,
        nsplit,
        blocks: tiles.clamp(1, MAX_GRID),
        // A wavefront per row.
        reduce_blocks: split_reduce_blocks(s.m as u64),
        threads,
        ws_bytes,
    })
}

// ---------------------------------------------------------------------------------------------
// Quantised (FP8) forward

/// The fused transpose's LDS tile pitch (shared with normkit-cuda; CDNA's LDS, like NVIDIA's shared
/// memory, has 32 banks of 4 bytes and serves a wavefront's 4-byte reads 32 lanes at a time).
pub use normkit_gpu_host::fp8_tile_pitch;

/// The separate transpose's tile: `Q_TR` rows × `Q_TC` bytes, staged in `Q_TR` × `Q_TPITCH` bytes
/// of static LDS (kernels-common/nk_fp8.cuh's constants).
const Q_TR: u64 = 64;
const Q_TC: u64 = 256;
const Q_TRANSPOSE_LDS: usize = Q_TR as usize * (Q_TC as usize + 4);

/// The separate transpose (`nk_fwd_q_transpose`) of a quantised forward: its persistent grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QTranspose {
    /// The kernel.
    pub kernel: Kernel,
    /// Workgroups (of `kernel.max_threads` threads) over its 64 × 256-byte tiles.
    pub blocks: u64,
}

/// How a quantised (FP8) forward runs. Chosen by N, the dtypes, the casting mode, the residual
/// and the FP8 options only — never by M (but for M = 0, which quantises nothing) or the layout —
/// so a row's bytes depend on neither the batch nor the strides. With an `amax`, every workgroup
/// folds its max into the workspace's synchronisation words and the last one writes it
/// (kernels-common/nk_fp8.cuh, `q_amax_commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwdQLaunch {
    /// The register-resident row kernel: `group` threads per row, `rows_per_cta` groups per
    /// workgroup; with `tm` > 0 the transposed output goes through an LDS tile of `tm` rows ×
    /// `tpitch` bytes (`lds` bytes of dynamic LDS); `transpose`: the separate kernel after it
    /// (a `yT` without a fused tile). M = 0: one wavefront that visits no row (a per-tensor
    /// `scale_inv` is still written, `amax` stays 0).
    Row {
        /// The row kernel.
        kernel: Kernel,
        /// Threads per row.
        group: u32,
        /// Rows (groups) per workgroup and pass.
        rows_per_cta: u32,
        /// Rows per transposed tile (0: no fused transpose).
        tm: u32,
        /// Bytes per LDS row of the tile.
        tpitch: u32,
        /// Dynamic LDS bytes (`tm · tpitch`).
        lds: usize,
        /// Persistent workgroups.
        blocks: u64,
        /// The separate transpose, if `yT` is wanted and not fused.
        transpose: Option<QTranspose>,
    },
    /// Long rows: `stats` (chunk statistics), `reduce` (one combine per row), per row `amax`
    /// (each chunk's max |y|), `apply` (y_q), then the separate transpose.
    Split {
        /// `nk_fwd_split_stats*`, over (row, chunk) tiles.
        stats: Kernel,
        /// `nk_fwd_split_reduce`.
        reduce: Kernel,
        /// `nk_fwd_q_split_amax*` (per-row scaling only).
        amax: Option<Kernel>,
        /// `nk_fwd_q_split_apply*`.
        apply: Kernel,
        /// Chunks per row.
        nsplit: usize,
        /// Workgroups of `stats` and `amax`.
        blocks: u64,
        /// Workgroups of `reduce`.
        reduce_blocks: u64,
        /// Workgroups of `apply` (persistent: one atomic max per workgroup).
        apply_blocks: u64,
        /// Threads per workgroup of the split kernels.
        threads: u32,
        /// Workspace bytes: `[chunk partials (M·S pairs) | combined (mean, rstd) per row (M pairs)
        /// | per row, 256-byte aligned: M·S chunk maxima]`.
        ws_bytes: usize,
        /// Offset of the chunk maxima (`ws_q`) in the workspace (per-row scaling).
        ws_q: Option<usize>,
        /// The separate transpose, if `yT` is wanted.
        transpose: Option<QTranspose>,
    },
}

impl FwdQLaunch {
    /// What decides a row's bytes: the path, the kernel's chunking and group, the split — never
    /// the grid, the tile or the transpose (the same y_q either way).
    pub fn row_shape(&self) -> (bool, u32, u32, usize) {
        match *self {
            FwdQLaunch::Row { kernel, group, .. } => {
                let chunks = match kernel.key {
                    KernelKey::FwdQRow { chunks, .. } => chunks.get() as u32,
                    _ => 0,
                };
                (true, group, chunks, 0)
            }
            FwdQLaunch::Split { nsplit, .. } => (false, 0, 0, nsplit),
        }
    }
}

/// The register kernel of a quantised forward and its group: the fewest chunks per thread whose
/// group (a power of two ≥ ⌈chunks/K⌉) fits the kernel's launch bound; `None` beyond them. The
/// choice depends on N, the dtypes, the casting mode and the residual only: each chunking has its
/// 16-byte and element-wise kernels (kernels-hip/variants.rs), the same arithmetic. The 16-bit
/// kernels (8 chunks too) take every tensor but y 16-bit with Gemma casting; the others 4 chunks.
fn fp8_row_kernel(s: &FwdShape) -> Result<Option<(Kernel, u32)>> {
    let nch = s.n.div_ceil(8);
    let narrow = s.all16 && s.gemma;
    let options: &[FwdChunks] = if narrow { &[FwdChunks::K4, FwdChunks::K8] } else { &[FwdChunks::K4] };
    for &chunks in options {
        let k = require(KernelKey::FwdQRow { aligned: s.aligned, narrow, chunks, residual: s.residual, strided: false })?;
        let group = nch.div_ceil(chunks.get()).next_power_of_two();
        if group <= k.max_threads as usize {
            return Ok(Some((k, group as u32)));
        }
    }
    Ok(None)
}

/// Plans a quantised (FP8) forward (`s.fp8` set): the register kernel while a row fits its
/// registers, then the separate transpose if `yT` is wanted — or, with
/// [`Fp8Tuning::fused_transpose`](crate::tuning::Fp8Tuning::fused_transpose), the transposed
/// output through the row kernel's LDS tile where a tile of at least `min_tm` rows fits
/// `lds_limit` (the dynamic LDS of `nk_fwd_q_row*`, [`dyn_lds_limit`]) and the tuning's tile
/// budget — otherwise split rows (statistics, combine, per-row chunk maxima, apply, then the
/// separate transpose). `cus`: compute units.
pub fn forward_fp8(cfg: &Tuning, cus: u32, s: &FwdShape, lds_limit: usize) -> Result<FwdQLaunch> {
    let q = s.fp8.ok_or_else(|| NormError::Internal { backend: "hip", what: "forward_fp8 without an FP8 output".into() })?;
    let f = &cfg.fp8;
    let cus = u64::from(cus.max(1));
    let wave = cfg.wavefront;
    // The split kernels' 16-bit variants are 16-byte only (same arithmetic as the others).
    let narrow = s.aligned && s.all16;
    let m = s.m as u64;
    let transpose = |kernel: Kernel| {
        let tiles = m.div_ceil(Q_TR) * (s.n as u64).div_ceil(Q_TC);
        let per_cu = cfg.ctas_per_cu(kernel, kernel.max_threads, Q_TRANSPOSE_LDS);
        QTranspose { kernel, blocks: tiles.clamp(1, cus * u64::from(per_cu)) }
    };
    if m == 0 {
        let kernel =
            require(KernelKey::FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: s.residual, strided: false })?;
        return Ok(FwdQLaunch::Row { kernel, group: wave, rows_per_cta: 1, tm: 0, tpitch: 0, lds: 0, blocks: 1, transpose: None });
    }
    if let Some((kernel, group)) = fp8_row_kernel(s)? {
        let rpc = (f.cta_threads / group).max(1);
        // The fused tile (when the tuning asks for it): the most rows (≤ max_tm, ≥ min_tm) whose
        // tile fits.
        let budget = f.tile_lds.min(lds_limit);
        let mut tm = 0;
        if q.transposed && f.fused_transpose {
            let mut cand = f.max_tm;
            while cand >= f.min_tm.max(4) {
                if cand as usize * fp8_tile_pitch(s.n, cand) <= budget {
                    tm = cand;
                    break;
                }
                cand /= 2;
            }
        }
        // A tile of tm rows takes at most tm groups per pass; whole wavefronts (the block
        // reductions of nk_fp8.cuh read every lane of a wavefront), groups past the tile idle.
        let rpc = if tm > 0 { rpc.min(tm) } else { rpc }.max(wave / group).max(1);
        let threads = group * rpc;
        let (lds, tpitch) = if tm > 0 {
            let pitch = fp8_tile_pitch(s.n, tm);
            (tm as usize * pitch, pitch as u32)
        } else {
            (0, 0)
        };
        let rows_per_tile = if tm > 0 { tm } else { rpc };
        let per_cu = cfg.ctas_per_cu(kernel, threads, lds);
        let blocks = m.div_ceil(u64::from(rows_per_tile)).min(cus * u64::from(per_cu)).max(1);
        let transpose = if q.transposed && tm == 0 { Some(transpose(require(KernelKey::FwdQTranspose)?)) } else { None };
        return Ok(FwdQLaunch::Row { kernel, group, rows_per_cta: rpc, tm, tpitch, lds, blocks, transpose });
    }
    let nsplit = s.n.div_ceil(SPLIT_CHUNK);
    let tiles = m.checked_mul(nsplit as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    let stats_bytes = tiles.checked_add(m).and_then(|t| t.checked_mul(8)).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let (ws_bytes, ws_q) = if q.per_row {
        let at = align256(stats_bytes);
        let bytes = tiles.checked_mul(4).and_then(|b| usize::try_from(b).ok()).and_then(|b| b.checked_add(at)).ok_or_else(too_big)?;
        (bytes, Some(at))
    } else {
        (stats_bytes, None)
    };
    let threads = kernels::NK_SPLIT_THREADS as u32;
    let apply = require(KernelKey::FwdQSplitApply { aligned: s.aligned, narrow })?;
    let amax = if q.per_row { Some(require(KernelKey::FwdQSplitAmax { aligned: s.aligned, narrow })?) } else { None };
    Ok(FwdQLaunch::Split {
        stats: require(KernelKey::FwdSplitStats { aligned: s.aligned, narrow })?,
        reduce: FWD_SPLIT_REDUCE,
        amax,
        apply,
        nsplit,
        blocks: tiles.clamp(1, MAX_GRID),
        reduce_blocks: split_reduce_blocks(m),
        apply_blocks: tiles.min(cus * u64::from(cfg.ctas_per_cu(apply, threads, 0))).max(1),
        threads,
        ws_bytes,
        ws_q,
        transpose: if q.transposed { Some(transpose(require(KernelKey::FwdQTranspose)?)) } else { None },
    })
}

/// What a backward call is made of, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdShape {
    /// Rows, M.
    pub m: usize,
    /// Hidden size, N.
    pub n: usize,
    /// Every operand allows 16-byte accesses.
    pub aligned: bool,
    /// x, dy (and the weight, if any) are f16/bf16.
    pub all16: bool,
    /// A weight is present.
    pub weight: bool,
    /// `d_residual_out` is given (added to dx).
    pub d_residual: bool,
    /// dW and dB wanted (0, 1 or 2).
    pub nacc: usize,
    /// The register-resident kernel applies (16-byte layouts, every tensor in x's dtype, dB only
    /// for LayerNorm): x's dtype and whether this is LayerNorm.
    pub reg: Option<(Dt, bool)>,
}

/// How the main pass of a backward call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwdPath {
    /// Persistent row kernel; dW/dB partials in `lds` bytes of dynamic LDS (the LDS row kernel)
    /// or in registers (the register-resident kernel, whose `lds` only sums its groups).
    Row {
        /// The row kernel.
        kernel: Kernel,
        /// Threads per row.
        group: u32,
        /// Rows per workgroup.
        rows_per_cta: u32,
        /// Bytes per staged chunk slot (16 or 32).
        slot: u32,
        /// Dynamic LDS bytes.
        lds: usize,
    },
    /// Split rows: `stats` over `tiles` (row, chunk) tiles, `nk_bwd_split_reduce` on
    /// `reduce_blocks` workgroups (one wavefront per row combines its chunk sums once), then
    /// `apply` on a (nsplit × parts) grid.
    Split {
        /// The partial-sums kernel.
        stats: Kernel,
        /// The kernel that writes `dx` and the dW/dB partials.
        apply: Kernel,
        /// (row, chunk) tiles of `stats`.
        tiles: u64,
        /// Workgroups of `nk_bwd_split_reduce`.
        reduce_blocks: u64,
    },
    /// M = 0: nothing but the finalize (which writes zeros).
    Empty,
}

/// Workgroups of NK_SPLIT_THREADS threads for the split paths' per-row reduce kernels (one
/// wavefront per row).
fn split_reduce_blocks(m: u64) -> u64 {
    m.div_ceil(u64::from(kernels::NK_SPLIT_THREADS as u32 / kernels::NK_WARP_WIDTH as u32)).clamp(1, MAX_GRID)
}

/// A planned backward call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdLaunch {
    /// How the main pass runs.
    pub path: BwdPath,
    /// Partial dW/dB rows (persistent workgroups along rows).
    pub parts: u64,
    /// Split path: chunks per row (0 on the row path).
    pub nsplit: usize,
    /// Workspace layout: `[split stats | dW parts | dB parts]`, each 256-byte aligned; the split
    /// stats are M·nsplit chunk pairs, then each row's combined (c1, c2).
    pub stats_bytes: usize,
    /// Bytes of one kind of partials, dW or dB: `parts` fp32 rows of N (each kind starts 256-byte
    /// aligned in the workspace).
    pub part_bytes: usize,
    /// Total workspace bytes.
    pub ws_bytes: usize,
    /// Workgroups of the finalize kernel (0 when neither dW nor dB is wanted).
    pub finalize_blocks: u64,
}

/// Plans a backward call. `parts` may depend on M and the CU count: it only decides how dW is
/// cut into partials; the same inputs on the same device always give the same bits.
pub fn backward(cfg: &Tuning, cus: u32, s: &BwdShape, lds_limit: usize) -> Result<BwdLaunch> {
    let m64 = s.m as u64;
    let cus = u64::from(cus.max(1));
    let slot = if s.all16 { 16 } else { 32 };
    let finalize_blocks = if s.nacc > 0 { (s.n as u64).div_ceil(kernels::NK_WARP_WIDTH as u64).min(MAX_GRID) } else { 0 };
    // The register-resident kernels, with their own tables: 2 chunks per thread up to 4096, then
    // 1 chunk per thread (f16 / f32, groups up to 1024) to 8192, and 4 chunks per thread (bf16,
    // the kernels that exist for it: kernels-hip/variants.rs) to 16384 — CUDA's choice, kept
    // until measured here.
    if let Some((dtype, ln)) = s.reg {
        let (table, kmax, chunks) = if s.n <= 4096 {
            (cfg.bwd_reg_rows, BREG_KMAX, Some(BwdChunks::K2))
        } else if s.n <= 8192 && dtype != Dt::Bf16 {
            (cfg.bwd_reg1_rows, 1, Some(BwdChunks::K1))
        } else {
            (cfg.bwd_reg4_rows, 2 * BREG_KMAX, (dtype == Dt::Bf16).then_some(BwdChunks::K4))
        };
        let key = chunks.map(|chunks| KernelKey::BwdReg { dtype, ln, residual: s.d_residual, chunks, prefetch: false });
        let found = match key {
            Some(key) => pick(table, s.n).map(|rc| require(key).map(|k| (k, rc))).transpose()?,
            None => None,
        };
        if let Some((kernel, rc)) = found {
            let threads = rc.group * rc.rows_per_cta;
            // The workgroup's groups are summed through LDS (rows_per_cta · N floats) when > 1.
            let lds = if rc.rows_per_cta > 1 { rc.rows_per_cta as usize * s.n * 4 } else { 0 };
            if s.n.div_ceil(8).div_ceil(rc.group as usize) <= kmax && threads <= kernel.max_threads && lds <= lds_limit {
                let parts = if s.m == 0 {
                    0
                } else {
                    m64.div_ceil(rc.rows_per_cta as u64).min(cus * u64::from(cfg.ctas_per_cu(kernel, threads, lds))).max(1)
                };
                let part_bytes = usize::try_from(parts).ok().and_then(|p| p.checked_mul(s.n.checked_mul(4)?)).ok_or_else(too_big)?;
                let ws_bytes = align256(part_bytes).checked_mul(s.nacc).ok_or_else(too_big)?;
                let path = if s.m == 0 {
                    BwdPath::Empty
                } else {
                    BwdPath::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds }
                };
                return Ok(BwdLaunch { path, parts, nsplit: 0, stats_bytes: 0, part_bytes, ws_bytes, finalize_blocks });
            }
        }
    }
    let (aligned, narrow) = (s.aligned, s.aligned && s.all16);
    let kernel = require(KernelKey::BwdRow { aligned, narrow })?;
    let staged = 2 + usize::from(s.d_residual);
    let row = pick(cfg.bwd_rows, s.n)
        .map(|rc| (rc, bwd_row_lds(rc, s.n, slot, usize::from(s.weight), staged, s.nacc)))
        .filter(|&(_, lds)| lds <= lds_limit);
    let (path, parts, stats_bytes, nsplit) = match row {
        _ if s.m == 0 => (BwdPath::Empty, 0, 0, 0),
        Some((rc, lds)) => {
            let per_cu = cfg.ctas_per_cu(kernel, rc.group * rc.rows_per_cta, lds);
            let blocks = m64.div_ceil(rc.rows_per_cta as u64).min(cus * u64::from(per_cu)).max(1);
            let path = BwdPath::Row { kernel, group: rc.group, rows_per_cta: rc.rows_per_cta, slot: slot as u32, lds };
            (path, blocks, 0, 0)
        }
        None => {
            let ns = s.n.div_ceil(SPLIT_CHUNK);
            let target = cus * u64::from(cfg.split_bwd_ctas_per_cu);
            let parts = target.div_ceil(ns as u64).clamp(1, m64.min(65535));
            let stats = m64.checked_mul((ns as u64 + 1) * 8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
            let tiles = m64.checked_mul(ns as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
            let ks = require(KernelKey::BwdSplitStats { aligned, narrow })?;
            let ka = require(KernelKey::BwdSplitApply { aligned, narrow })?;
            let reduce_blocks = split_reduce_blocks(m64);
            (BwdPath::Split { stats: ks, apply: ka, tiles, reduce_blocks }, parts, stats, ns)
        }
    };
    let part_bytes = usize::try_from(parts).ok().and_then(|p| p.checked_mul(s.n.checked_mul(4)?)).ok_or_else(too_big)?;
    let ws_bytes = align256(stats_bytes).checked_add(align256(part_bytes).checked_mul(s.nacc).ok_or_else(too_big)?).ok_or_else(too_big)?;
    Ok(BwdLaunch { path, parts, nsplit, stats_bytes, part_bytes, ws_bytes, finalize_blocks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf;

    const MS: [usize; 7] = [1, 2, 3, 255, 4096, 1 << 20, (1 << 23) + 1];
    const NS: [usize; 15] = [1, 7, 8, 64, 100, 769, 1024, 3584, 4096, 8192, 8200, 16384, 16385, 65536, 262_144];

    fn limit(cfg: &Tuning, prefix: &str) -> usize {
        let co = elf::parse(kernels::code_object(cfg.arch).expect("code object")).expect("parses");
        dyn_lds_limit(cfg, &co, prefix)
    }

    #[test]
    fn forward_path_never_depends_on_m_or_the_layout() {
        for cfg in [Tuning::for_gfx942(), Tuning::for_gfx950()] {
            let lim = limit(&cfg, "nk_fwd_r");
            assert!(lim > 60 * 1024 && lim <= 64 * 1024, "{lim}");
            for n in NS {
                for all16 in [true, false] {
                    for nvec in 0..=2 {
                        for residual in [false, true] {
                            let reg = if all16 { Some((Dt::Bf16, nvec == 2)) } else { None };
                            let shape = |m, aligned| FwdShape { m, n, aligned, all16, nvec, residual, reg, gemma: true, fp8: None };
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
                                            assert_eq!(ws_bytes, (m * nsplit + m) * 8);
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
        let cfg = Tuning::for_gfx942();
        let lim = limit(&cfg, "nk_fwd_r");
        let s = |n, nvec| FwdShape { m: 4, n, aligned: true, all16: true, nvec, residual: false, reg: None, gemma: true, fp8: None };
        assert!(
            matches!(forward(&cfg, 304, &s(8192, 1), lim).unwrap(), FwdLaunch::Row { group: 256, slot: 16, kernel, .. } if kernel.narrow)
        );
        // 16384 bf16 with a weight needs 64 KiB of LDS plus the scratch: split on gfx942.
        assert!(matches!(forward(&cfg, 304, &s(16384, 1), lim).unwrap(), FwdLaunch::Split { nsplit: 4, apply, .. } if apply.narrow));
        assert!(matches!(forward(&cfg, 304, &s(16384, 0), lim).unwrap(), FwdLaunch::Row { group: 512, .. }));
        assert!(matches!(forward(&cfg, 304, &s(70000, 0), lim).unwrap(), FwdLaunch::Split { .. }));
        // The register-resident kernels take uniform-dtype Gemma calls up to 4 chunks per thread,
        // whatever the LDS: 16384 bf16 with a weight runs in registers.
        let r = |n, aligned| FwdShape { reg: Some((Dt::Bf16, false)), aligned, ..s(n, 1) };
        assert!(
            matches!(forward(&cfg, 304, &r(16384, true), lim).unwrap(), FwdLaunch::Row { kernel, lds: 0, .. } if kernel.name == "nk_fwd_reg_bf16_rms_a")
        );
        assert!(
            matches!(forward(&cfg, 304, &r(16384, false), lim).unwrap(), FwdLaunch::Row { kernel, .. } if kernel.name == "nk_fwd_reg_bf16_rms_u")
        );
        // f32 register kernels are bounded at 512 threads: 16384 (groups of 512) runs in them,
        // 32768 (groups of 1024) does not.
        let f32r = |n| FwdShape { all16: false, reg: Some((Dt::F32, true)), ..s(n, 2) };
        assert!(
            matches!(forward(&cfg, 304, &f32r(16384), lim).unwrap(), FwdLaunch::Row { kernel, .. } if kernel.name == "nk_fwd_reg_f32_ln_a")
        );
        assert!(!matches!(forward(&cfg, 304, &f32r(32768), lim).unwrap(), FwdLaunch::Row { kernel, .. } if kernel.spec >= 0));
    }

    #[test]
    fn backward_plans() {
        let cfg = Tuning::for_gfx942();
        let lim = limit(&cfg, "nk_bwd_r");
        let s = |m, n, nacc| BwdShape { m, n, aligned: true, all16: true, weight: true, d_residual: false, nacc, reg: None };
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
        let BwdPath::Split { apply, reduce_blocks, .. } = l.path else { panic!("{l:?}") };
        assert_eq!(apply.name, "nk_bwd_split_apply_pre_ah");
        assert!((1..=100).contains(&l.parts));
        // Chunk pairs, then one (c1, c2) per row; a wavefront per row for the reduce.
        assert_eq!(l.stats_bytes, 100 * (l.nsplit + 1) * 8);
        assert_eq!(reduce_blocks, 100u64.div_ceil(kernels::NK_SPLIT_THREADS as u64 / kernels::NK_WARP_WIDTH as u64));
        // M = 0: only the finalize, over zero parts.
        let l = backward(&cfg, 304, &s(0, 512, 1), lim).unwrap();
        assert_eq!((l.path, l.parts, l.ws_bytes), (BwdPath::Empty, 0, 0));
        assert!(l.finalize_blocks > 0);
        // No dW/dB: no finalize, no partials.
        let l = backward(&cfg, 304, &s(10, 512, 0), lim).unwrap();
        assert_eq!((l.finalize_blocks, l.ws_bytes), (0, 0));
        // Register-resident backward: 4096 bf16 LayerNorm with dW and dB, one group of 256.
        let r = BwdShape { reg: Some((Dt::Bf16, true)), ..s(1000, 4096, 2) };
        let l = backward(&cfg, 304, &r, limit(&cfg, "nk_bwd_r")).unwrap();
        assert!(matches!(l.path, BwdPath::Row { kernel, group: 256, lds: 0, .. } if kernel.name == "nk_bwd_reg_bf16_ln"), "{l:?}");
        assert!(l.finalize_blocks > 0 && l.ws_bytes > 0);
        // 8192 f16 → one chunk per thread in 1024-thread groups; 16384 bf16 → four per thread.
        let r = BwdShape { all16: true, reg: Some((Dt::F16, false)), ..s(1000, 8192, 1) };
        let l = backward(&cfg, 304, &r, limit(&cfg, "nk_bwd_r")).unwrap();
        assert!(matches!(l.path, BwdPath::Row { kernel, group: 1024, .. } if kernel.name == "nk_bwd_reg1_f16_rms"), "{l:?}");
        let r = BwdShape { reg: Some((Dt::Bf16, true)), ..s(1000, 16384, 2) };
        let l = backward(&cfg, 304, &r, limit(&cfg, "nk_bwd_r")).unwrap();
        assert!(matches!(l.path, BwdPath::Row { kernel, group: 512, .. } if kernel.name == "nk_bwd_reg4_bf16_ln"), "{l:?}");
        // f32 at 16384 has no register kernel: LDS row or split.
        let r = BwdShape { all16: false, reg: Some((Dt::F32, true)), ..s(1000, 16384, 2) };
        let l = backward(&cfg, 304, &r, limit(&cfg, "nk_bwd_r")).unwrap();
        assert!(!matches!(l.path, BwdPath::Row { kernel, .. } if kernel.spec >= 0), "{l:?}");
        // Huge shapes report a typed error rather than overflowing.
        assert!(backward(&cfg, 304, &s(usize::MAX / 2, 1 << 20, 2), lim).is_err());
    }

    /// Every plan over a grid of shapes, options and targets names kernels of the list within
    /// their launch bounds, and every key the planner asks for is in the list (no code object
    /// needed: the LDS limits are the targets' less a scratch allowance).
    #[test]
    fn every_reachable_plan_names_existing_kernels() {
        use std::collections::BTreeSet;
        kernels::take_asked();
        let check = |what: &dyn Fn() -> String, k: Kernel, threads: u32| {
            assert_eq!(kernels::KERNELS.get(k.index), Some(&k), "{}: {} is not the table's entry", what(), k.name);
            assert!(threads >= 1 && threads <= k.max_threads, "{}: {} with {threads} threads", what(), k.name);
        };
        let ns = [1, 7, 8, 64, 100, 512, 769, 1024, 2048, 3584, 4096, 4097, 8192, 8200, 12288, 16384, 16385, 32768, 65536, 262_144];
        let mut internal = BTreeSet::new();
        let mut plans = 0usize;
        for cfg in [Tuning::for_gfx942(), Tuning::for_gfx950(), Tuning::for_gfx90a()] {
            let lim = cfg.lds_per_workgroup as usize - 1024;
            for n in ns {
                for all16 in [true, false] {
                    let tags: &[Dt] = if all16 { &[Dt::F16, Dt::Bf16] } else { &[Dt::F32] };
                    let mut regs = vec![None];
                    for &t in tags {
                        regs.extend([Some((t, false)), Some((t, true))]);
                    }
                    for &reg in &regs {
                        for m in [0, 1, 3, 4096, 100_000] {
                            for aligned in [true, false] {
                                for residual in [false, true] {
                                    for nvec in 0..=2 {
                                        let f = FwdShape { m, n, aligned, all16, nvec, residual, reg, gemma: true, fp8: None };
                                        let what = || format!("{} {f:?}", cfg.arch);
                                        plans += 1;
                                        match forward(&cfg, 304, &f, lim) {
                                            Ok(FwdLaunch::Row { kernel, group, rows_per_cta, .. }) => {
                                                check(&what, kernel, group * rows_per_cta)
                                            }
                                            Ok(FwdLaunch::Split { stats, reduce, apply, threads, .. }) => {
                                                for k in [stats, reduce, apply] {
                                                    check(&what, k, threads);
                                                }
                                            }
                                            Err(NormError::Internal { what, .. }) => {
                                                internal.insert(what);
                                            }
                                            Err(e) => panic!("{}: {e}", what()),
                                        }
                                    }
                                    for weight in [false, true] {
                                        for nacc in 0..=2 {
                                            let b = BwdShape { m, n, aligned, all16, weight, d_residual: residual, nacc, reg };
                                            let what = || format!("{} {b:?}", cfg.arch);
                                            plans += 1;
                                            match backward(&cfg, 304, &b, lim) {
                                                Ok(l) => match l.path {
                                                    BwdPath::Row { kernel, group, rows_per_cta, .. } => {
                                                        check(&what, kernel, group * rows_per_cta)
                                                    }
                                                    BwdPath::Split { stats, apply, .. } => {
                                                        let threads = kernels::NK_SPLIT_THREADS as u32;
                                                        check(&what, stats, threads);
                                                        check(&what, apply, threads);
                                                    }
                                                    BwdPath::Empty => assert_eq!(m, 0, "{}", what()),
                                                },
                                                Err(NormError::Internal { what, .. }) => {
                                                    internal.insert(what);
                                                }
                                                Err(e) => panic!("{}: {e}", what()),
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
        let asked = kernels::take_asked();
        assert!(plans > 10_000 && asked.len() > 40, "{plans} plans asked for {} kernels only", asked.len());
        let missing: BTreeSet<String> = asked.iter().filter(|&&k| kernels::get(k).is_none()).map(|k| k.symbol()).collect();
        assert_eq!(missing, BTreeSet::new(), "keys the planner asks for and the list lacks");
        assert_eq!(internal, BTreeSet::new());
    }

    fn q_shape(m: usize, n: usize, all16: bool, residual: bool, aligned: bool, fp8: Fp8Info) -> FwdShape {
        FwdShape { m, n, aligned, all16, nvec: 1, residual, reg: None, gemma: true, fp8: Some(fp8) }
    }

    /// Quantised forward plans: the path, kernel chunking and group depend on N, the dtypes and
    /// the residual only (never M or the layout); workgroups are whole wavefronts within the
    /// kernel's bound; the fused tile fits its LDS; the workspace holds the split layout.
    #[test]
    fn fp8_plans() {
        let targets = [Tuning::for_gfx942(), Tuning::for_gfx950(), Tuning::for_gfx90a()];
        for cfg in targets.into_iter().flat_map(|t| [t, fused(t)]) {
            let lim = limit(&cfg, "nk_fwd_q_row");
            assert!(lim > 60 * 1024 && lim <= 64 * 1024, "{lim}");
            for n in [1, 7, 8, 32, 33, 64, 100, 769, 1024, 2048, 3584, 4096, 8192, 8200, 16384, 16385, 32768, 32769, 65536] {
                for (all16, gemma) in [(true, true), (true, false), (false, true)] {
                    for residual in [false, true] {
                        for per_row in [false, true] {
                            for transposed in [false, true] {
                                let q = Fp8Info { per_row, transposed };
                                let shape = |m, aligned| FwdShape { gemma, ..q_shape(m, n, all16, residual, aligned, q) };
                                let first = forward_fp8(&cfg, 304, &shape(1, false), lim).unwrap().row_shape();
                                for m in MS {
                                    for aligned in [false, true] {
                                        let s = shape(m, aligned);
                                        let what = format!("{} {s:?}", cfg.arch);
                                        let l = forward_fp8(&cfg, 304, &s, lim).unwrap();
                                        assert_eq!(l.row_shape(), first, "{what}");
                                        match l {
                                            FwdQLaunch::Row { kernel, group, rows_per_cta, tm, tpitch, lds, blocks, transpose } => {
                                                let KernelKey::FwdQRow { chunks, narrow, residual: r, aligned: a, strided } = kernel.key
                                                else {
                                                    panic!("{what}: {kernel:?}")
                                                };
                                                assert_eq!((narrow, r, a, strided), (all16 && gemma, residual, aligned, false), "{what}");
                                                assert!(group as usize * chunks.get() * 8 >= n, "{what}");
                                                let threads = group * rows_per_cta;
                                                assert!(
                                                    threads <= kernel.max_threads && threads.is_multiple_of(cfg.wavefront),
                                                    "{what}: {threads}"
                                                );
                                                assert!((1..=MAX_GRID).contains(&blocks), "{what}");
                                                assert_eq!(lds, tm as usize * tpitch as usize, "{what}");
                                                assert!(lds <= lim.min(cfg.fp8.tile_lds), "{what}");
                                                if tm > 0 {
                                                    assert!(cfg.fp8.fused_transpose, "{what}");
                                                    assert!(transposed && tm >= cfg.fp8.min_tm && tm <= cfg.fp8.max_tm, "{what}");
                                                    assert_eq!(tpitch as usize, fp8_tile_pitch(n, tm));
                                                }
                                                assert_eq!(transpose.is_some(), transposed && tm == 0, "{what}");
                                            }
                                            FwdQLaunch::Split {
                                                stats,
                                                amax,
                                                apply,
                                                nsplit,
                                                ws_bytes,
                                                ws_q,
                                                transpose,
                                                apply_blocks,
                                                ..
                                            } => {
                                                assert_eq!(nsplit, n.div_ceil(SPLIT_CHUNK));
                                                assert!(matches!(stats.key, KernelKey::FwdSplitStats { .. }));
                                                assert!(matches!(apply.key, KernelKey::FwdQSplitApply { .. }));
                                                assert_eq!(amax.is_some(), per_row, "{what}");
                                                assert_eq!(transpose.is_some(), transposed, "{what}");
                                                let stats_bytes = (m * nsplit + m) * 8;
                                                match ws_q {
                                                    Some(at) => {
                                                        assert_eq!(at, align256(stats_bytes));
                                                        assert_eq!(ws_bytes, at + m * nsplit * 4);
                                                    }
                                                    None => assert_eq!(ws_bytes, stats_bytes),
                                                }
                                                assert!(apply_blocks >= 1 && apply_blocks <= (m * nsplit) as u64, "{what}");
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
    }

    /// A target's tuning with the fused transpose on.
    fn fused(cfg: Tuning) -> Tuning {
        Tuning { fp8: crate::tuning::Fp8Tuning { fused_transpose: true, ..cfg.fp8 }, ..cfg }
    }

    #[test]
    fn fp8_paths() {
        let g942 = fused(Tuning::for_gfx942());
        let lim = limit(&g942, "nk_fwd_q_row");
        let t = Fp8Info { per_row: false, transposed: true };
        let plan = |cfg: &Tuning, n, all16, aligned| forward_fp8(cfg, 304, &q_shape(4096, n, all16, false, aligned, t), lim).unwrap();
        // By default yT is written by the separate transpose (CUDA's measured choice).
        let l = forward_fp8(&Tuning::for_gfx942(), 304, &q_shape(4096, 512, true, false, true, t), lim).unwrap();
        assert!(matches!(l, FwdQLaunch::Row { tm: 0, lds: 0, transpose: Some(QTranspose { blocks: 128, .. }), .. }), "{l:?}");
        // bf16 512: 4 chunks per thread in groups of 16, a fused 32-row tile (16.1 KiB); 1024: a
        // 32-row tile would take 32.1 KiB, so 16 rows.
        let l = plan(&g942, 512, true, true);
        assert!(
            matches!(l, FwdQLaunch::Row { kernel, group: 16, rows_per_cta: 16, tm: 32, transpose: None, .. } if kernel.name == "nk_fwd_q_row4_ah"),
            "{l:?}"
        );
        let l = plan(&g942, 1024, true, true);
        assert!(matches!(l, FwdQLaunch::Row { group: 32, rows_per_cta: 8, tm: 16, lds: 16512, transpose: None, .. }), "{l:?}");
        // bf16 4096 on gfx942: an 8-row tile (32896 bytes) passes the 31 KiB budget: the separate
        // transpose. On gfx950 (64 KiB per workgroup) it is fused.
        let l = plan(&g942, 4096, true, true);
        assert!(matches!(l, FwdQLaunch::Row { group: 128, tm: 0, transpose: Some(_), .. }), "{l:?}");
        let l = plan(&fused(Tuning::for_gfx950()), 4096, true, true);
        assert!(matches!(l, FwdQLaunch::Row { group: 128, tm: 8, lds: 32896, transpose: None, .. }), "{l:?}");
        // 16-bit rows to 32768 in registers (8 chunks, groups of 512), element-wise too; beyond: split.
        let l = plan(&g942, 32768, true, false);
        assert!(matches!(l, FwdQLaunch::Row { kernel, group: 512, .. } if kernel.name == "nk_fwd_q_row8_uh"), "{l:?}");
        assert!(matches!(plan(&g942, 32769, true, true), FwdQLaunch::Split { nsplit: 9, .. }));
        // Llama casting: the generic kernels, 4 chunks.
        let llama = |n| forward_fp8(&g942, 304, &FwdShape { gemma: false, ..q_shape(8, n, true, false, true, t) }, lim).unwrap();
        assert!(matches!(llama(16384), FwdQLaunch::Row { kernel, group: 512, .. } if kernel.name == "nk_fwd_q_row4_a"));
        assert!(matches!(llama(16385), FwdQLaunch::Split { apply, .. } if apply.name == "nk_fwd_q_split_apply_ah"));
        // With an f32 tensor: 4 chunks only, to 16384.
        let l = plan(&g942, 16384, false, true);
        assert!(matches!(l, FwdQLaunch::Row { kernel, group: 512, .. } if kernel.name == "nk_fwd_q_row4_a"), "{l:?}");
        assert!(matches!(plan(&g942, 16385, false, true), FwdQLaunch::Split { apply, .. } if apply.name == "nk_fwd_q_split_apply_a"));
        // Tiny rows: one thread per row, still whole wavefronts (groups past the 32-row tile idle).
        let l = plan(&g942, 8, true, true);
        assert!(matches!(l, FwdQLaunch::Row { group: 1, rows_per_cta: 64, tm: 32, .. }), "{l:?}");
        // M = 0: one wavefront of a row kernel that visits no row (scale_inv, amax = 0).
        let l = forward_fp8(&g942, 304, &q_shape(0, 4096, true, true, true, t), lim).unwrap();
        assert!(matches!(l, FwdQLaunch::Row { group: 64, rows_per_cta: 1, blocks: 1, tm: 0, transpose: None, .. }), "{l:?}");
        // Per-row scaling of long rows: the chunk maxima after the statistics, 256-byte aligned.
        let r = Fp8Info { per_row: true, transposed: false };
        let l = forward_fp8(&g942, 304, &q_shape(3, 65536, true, false, true, r), lim).unwrap();
        let FwdQLaunch::Split { amax: Some(k), nsplit: 16, ws_q: Some(at), ws_bytes, .. } = l else { panic!("{l:?}") };
        assert_eq!((k.name, at, ws_bytes), ("nk_fwd_q_split_amax_ah", 512, 512 + 3 * 16 * 4));
        // No FP8 output: not this planner's call.
        assert!(forward_fp8(&g942, 304, &FwdShape { fp8: None, ..q_shape(1, 8, true, false, true, r) }, lim).is_err());
    }

    /// Every quantised plan names kernels of the list (every key asked for exists).
    #[test]
    fn every_fp8_plan_names_existing_kernels() {
        use std::collections::BTreeSet;
        kernels::take_asked();
        for cfg in [Tuning::for_gfx942(), fused(Tuning::for_gfx950()), Tuning::for_gfx90a()] {
            let lim = cfg.lds_per_workgroup as usize - 1024;
            for n in [1, 100, 4096, 16384, 16385, 32768, 32769, 262_144] {
                for (all16, residual, aligned, per_row, transposed, gemma) in
                    (0..64).map(|b| (b & 1 != 0, b & 2 != 0, b & 4 != 0, b & 8 != 0, b & 16 != 0, b & 32 != 0))
                {
                    for m in [0, 1, 5000] {
                        let s = FwdShape { gemma, ..q_shape(m, n, all16, residual, aligned, Fp8Info { per_row, transposed }) };
                        let l = forward_fp8(&cfg, 304, &s, lim).unwrap_or_else(|e| panic!("{} {s:?}: {e}", cfg.arch));
                        let ks: Vec<(Kernel, u32)> = match l {
                            FwdQLaunch::Row { kernel, group, rows_per_cta, transpose, .. } => {
                                let mut v = vec![(kernel, group * rows_per_cta)];
                                v.extend(transpose.map(|t| (t.kernel, t.kernel.max_threads)));
                                v
                            }
                            FwdQLaunch::Split { stats, reduce, amax, apply, threads, transpose, .. } => {
                                let mut v = vec![(stats, threads), (reduce, threads), (apply, threads)];
                                v.extend(amax.map(|k| (k, threads)));
                                v.extend(transpose.map(|t| (t.kernel, t.kernel.max_threads)));
                                v
                            }
                        };
                        for (k, threads) in ks {
                            assert_eq!(kernels::KERNELS.get(k.index), Some(&k));
                            assert!(threads >= 1 && threads <= k.max_threads, "{} {s:?}: {} with {threads}", cfg.arch, k.name);
                        }
                    }
                }
            }
        }
        let missing: BTreeSet<String> = kernels::take_asked().iter().filter(|&&k| kernels::get(k).is_none()).map(|k| k.symbol()).collect();
        assert_eq!(missing, BTreeSet::new());
    }
}
