//! Launch planning: a validated call ([`FwdCall`], [`BwdCall`]) and the device's facts
//! ([`DeviceFacts`], [`Occupancy`]) → a [`Launch`] value: which kernels in order, their grids,
//! blocks, dynamic shared memory, cluster sizes and programmatic dependencies, the workspace's
//! size and layout, and the parameter fields that depend on the path. No device access: where a
//! decision needs the occupancy of a kernel, it asks the [`Occupancy`] trait, which the backend
//! answers from the driver and the tests from fixed numbers. `launch.rs` executes the plan.
//!
//! Forward paths, in the order they are tried (each chosen by N, the dtypes and the flags only,
//! never by M or the layout — the forward pass is batch-invariant):
//!
//! 0. staged cluster kernels (`nk_fwd_cs_*`, sm_90+) from `ClusterTuning::staged_min_n` on: one
//!    row per cluster, each CTA's slice of it in shared memory (bulk copies, the next row
//!    streaming in while the current one is written), while the slice fits;
//! 1. register-resident kernels (`nk_fwd_reg*`): every tensor in x's dtype, Gemma casting, the
//!    row's chunks within the kernel's registers; the row table's group;
//! 2. the staged row kernel (`nk_fwd_row_*`) while the staged row and weights fit in shared memory;
//! 3. cluster kernels (`nk_fwd_cl_*`, sm_90+): one row per cluster, up to the caps in [`Tuning`];
//! 4. the re-reading cluster kernels (`nk_fwd_clr_*`, sm_90+) from `ClusterTuning::reread_min_n`
//!    on, for the calls `ClusterTuning::reread_ops` names (16-bit RMSNorm, f32): one row per
//!    cluster, each CTA's slice streamed once from HBM and read again from L2 for the output;
//! 5. split rows: partial statistics per chunk, one combine per row, then the apply pass.
//!
//! Backward paths, in order: row-batch (`nk_bwd_rows*`, 16-bit, 512 < N ≤ 2048), register-resident
//! (`nk_bwd_reg*`, with their prefetching twins), cluster (`nk_bwd_cl*`), the staged row kernel,
//! split rows; each followed by a finalize that sums the partial dW/dB rows in a fixed order.

use normkit_core::{DType, NormError, Operand, Result};

use crate::kernels::{self, BwdChunks, Dt, FwdChunks, Kernel, KernelKey, RowsGroup};
use crate::tuning::{self, ClusterConfig, Tuning};

/// Elements of one split-path chunk.
pub const SPLIT_CHUNK: usize = kernels::NK_SPLIT_THREADS * kernels::NK_SPLIT_ELEMS;
/// Grid-stride kernels never need more CTAs than this; rows beyond are walked in a loop.
pub const MAX_GRID: u64 = 1 << 20;
/// Chunks per thread the forward register-resident kernels hold (REG_KMAX of nk_reg.cuh; the 8-
/// and 16-chunk variants hold twice and four times as many).
const REG_KMAX: usize = 4;
/// Rows per thread at a time of the row-batch kernels (`KernelKey::BwdRows::rows`).
const ROWS: u32 = 4;
/// The split paths' per-row combine kernels and the finalizes: one variant each, looked up at
/// compile time (a list without them does not build).
const FWD_SPLIT_REDUCE: Kernel = kernels::get(KernelKey::FwdSplitReduce).unwrap();
const BWD_SPLIT_REDUCE: Kernel = kernels::get(KernelKey::BwdSplitReduce).unwrap();
const FINALIZE_COLS: Kernel = kernels::get(KernelKey::BwdFinalizeCols).unwrap();
const FINALIZE_WIDE: Kernel = kernels::get(KernelKey::BwdFinalizeWide).unwrap();
/// Chunks per thread of the cluster kernels (KMAX in cluster.cuh).
fn cluster_fwd_kmax(dt: DType) -> usize {
    if dt == DType::F32 {
        4
    } else {
        8
    }
}
fn cluster_bwd_kmax(dt: DType) -> usize {
    if dt == DType::F32 {
        2
    } else {
        4
    }
}
/// Threads per CTA above which the forward residual cluster kernels do not run (their
/// element-wise twin needs more than 128 registers), and above which the backward cluster
/// kernels keep dW/dB in shared memory (`cls`) rather than registers (`cl`, 256 threads at most).
const CLUSTER_REG_THREADS: u32 = 256;

/// What the planner needs to know about the device, read once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// Multiprocessors.
    pub sms: u32,
    /// Compute capability, major (the cluster kernels need 9+).
    pub cc_major: i32,
    /// Dynamic shared memory a row-path CTA may use (the same for every row kernel: the opt-in
    /// limit less the largest static shared memory of the row kernels). Also the bound of the
    /// cluster kernels' dynamic shared memory.
    pub row_smem_limit: usize,
    /// Largest dynamic shared memory each kernel may be launched with, by [`Kernel::index`].
    pub dyn_smem_max: Vec<usize>,
}

/// Occupancy of a kernel on the device: the driver's answer for the real backend, fixed numbers
/// in tests.
pub trait Occupancy {
    /// CTAs of `block` threads with `smem` bytes of dynamic shared memory that can be resident
    /// on one multiprocessor at once (cuOccupancyMaxActiveBlocksPerMultiprocessor).
    fn blocks_per_sm(&self, k: Kernel, block: u32, smem: usize) -> Result<u32>;
    /// Clusters of `cluster` CTAs of `threads` threads with `smem` bytes of dynamic shared memory
    /// that can be resident on the device at once (cuOccupancyMaxActiveClusters; 0: none, or a
    /// cluster shape the device refuses). The backend also prepares `k` for that shape (a
    /// non-portable cluster size, the dynamic shared memory attribute), so a kernel is asked
    /// about before it is launched with that shape.
    fn max_active_clusters(&self, k: Kernel, cluster: u32, threads: u32, smem: u32) -> Result<u32>;
}

/// A forward call, as far as planning goes: the shared host layer's summary of the operands
/// (`normkit_gpu_host::FwdInfo`: M, N, dtypes, LayerNorm, Gemma casting, residual, weight, bias,
/// 16-byte accesses), under the name the planner's tests use.
pub use normkit_gpu_host::FwdInfo as FwdCall;

/// A backward call, as far as planning goes (`normkit_gpu_host::BwdInfo`: M, N, dtypes,
/// LayerNorm, d_residual_out, weight, dW/dB wanted, 16-byte accesses; `nacc()` the dW/dB outputs).
pub use normkit_gpu_host::BwdInfo as BwdCall;

/// The kernel family of a plan's main pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// Nothing to launch (a forward over M = 0).
    Empty,
    /// Forward register-resident kernels (`nk_fwd_reg*`).
    FwdRegister,
    /// Forward staged row kernel (`nk_fwd_row_*`).
    FwdRow,
    /// Forward cluster kernels (`nk_fwd_cl_*`).
    FwdCluster,
    /// Forward staged cluster kernels (`nk_fwd_cs_*`): the row's slices in shared memory.
    FwdClusterStaged,
    /// Forward re-reading cluster kernels (`nk_fwd_clr*`): the row's slices read once from HBM,
    /// again from L2.
    FwdClusterReread,
    /// Forward split rows (stats, reduce, apply).
    FwdSplit,
    /// Backward row-batch kernels (`nk_bwd_rows*`).
    BwdRowsBatch,
    /// Backward register-resident kernels (`nk_bwd_reg*`).
    BwdRegister,
    /// The backward's twin for a few rows (`nk_bwd_sm*`): with column CTAs for dW/dB in the same
    /// launch (`nk_bwd_smc*`, 2–1024 rows by default), or alone: one CTA finishes dW/dB in the
    /// kernel, more add their partial rows in the finalize.
    BwdSmall,
    /// Backward cluster kernels (`nk_bwd_cl*`).
    BwdCluster,
    /// Backward staged row kernel (`nk_bwd_row_*`).
    BwdRow,
    /// Backward split rows (stats, reduce, apply).
    BwdSplit,
    /// Quantised (FP8) forward, register-resident rows (`nk_fwd_q_row*`).
    FwdQuant,
    /// Quantised forward, split rows (stats, reduce, [amax,] apply).
    FwdQuantSplit,
    /// Quantised forward, the staged cluster kernels (`nk_fwd_csq_*`): long rows read once.
    FwdQuantStaged,
}

/// How one kernel is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// cuLaunchKernel.
    Plain,
    /// cuLaunchKernelEx with clusters of this many CTAs (the grid counts CTAs).
    Cluster(u32),
    /// cuLaunchKernelEx as a programmatic dependent launch: the kernel executes
    /// `griddepcontrol.wait` before its first memory access.
    Pdl,
}

/// One kernel launch of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The kernel.
    pub kernel: Kernel,
    /// CTAs in x and y.
    pub grid: (u32, u32),
    /// Threads per CTA.
    pub block: u32,
    /// Dynamic shared memory bytes.
    pub smem: u32,
    /// Plain, cluster or programmatic dependent launch.
    pub mode: Mode,
    /// This launch's parameter `group`, where it differs from the plan's (finalize_wide: its
    /// columns per CTA).
    pub group: Option<i32>,
}

impl Step {
    fn plain(kernel: Kernel, grid: (u32, u32), block: u32, smem: u32) -> Step {
        Step { kernel, grid, block, smem, mode: Mode::Plain, group: None }
    }
    /// A programmatic dependent launch when `pdl`, else a plain one.
    fn dependent(pdl: bool, kernel: Kernel, grid: u32, block: u32, smem: u32) -> Step {
        Step { kernel, grid: (grid, 1), block, smem, mode: if pdl { Mode::Pdl } else { Mode::Plain }, group: None }
    }
}

/// The workspace a plan needs and where its parts start (byte offsets from its base; the base is
/// 0 when `bytes` is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Workspace {
    /// Bytes to lend the call.
    pub bytes: usize,
    /// Split statistics: the forward's `ws`, the backward's `ws_stats` (`None`: the field stays 0).
    pub stats: Option<u64>,
    /// Backward: the dW partial rows (`ws_dw`).
    pub dw: u64,
    /// Backward: the dB partial rows (`ws_db`).
    pub db: u64,
    /// FP8 split rows, per row: the per-(row, chunk) maxima (`ws_q`).
    pub q: Option<u64>,
}

/// Parameter fields that depend on the path (the rest come from the operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fields {
    /// Threads per row (cluster kernels: threads per CTA).
    pub group: i32,
    /// Rows per CTA (cluster kernels: CTAs per cluster).
    pub rpc: i32,
    /// Bytes per staged chunk slot (16 or 32; 0 where unused).
    pub slot: i32,
    /// Backward: partial dW/dB rows.
    pub nparts: i64,
    /// Split path: chunks per row.
    pub nsplit: i64,
    /// Backward register kernels: read the weight from global memory (NK_F_WGLOBAL).
    pub wglobal: bool,
    /// FP8: `Q_*` bits the path adds (the fused transpose).
    pub q: i32,
    /// FP8 fused transpose: rows per tile.
    pub tm: i32,
    /// FP8 fused transpose: bytes per shared-memory row of the tile.
    pub tpitch: i32,
    /// The forward's and the backward's twins: trigger the stream's next kernel at
    /// entry (NK_F_TRIGGER; set with the programmatic dependent launch, [`trigger_step`]).
    pub trigger: bool,
    /// Staged cluster forward: the next row's pass 1 this many stages behind its refills.
    pub lag: i32,
    /// Staged cluster forward: stages of a later row's slice prefetched into L2 (0: none).
    /// Re-reading cluster forward: KB of each CTA's slice of its next row.
    pub pf: i32,
    /// Staged cluster forward: the row `pf` prefetches (1: the next, 2: the one after).
    pub pfd: i32,
}

/// Most kernels one call launches (split backward: stats, reduce, apply, finalize; FP8 split rows:
/// stats, reduce, amax, apply, transpose).
pub const MAX_STEPS: usize = 5;

/// A planned call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// The main pass's kernel family.
    pub family: Family,
    steps: [Option<Step>; MAX_STEPS],
    /// Workspace size and layout.
    pub workspace: Workspace,
    /// Path-dependent parameter fields.
    pub fields: Fields,
}

impl Launch {
    fn new(family: Family, workspace: Workspace, fields: Fields) -> Launch {
        Launch { family, steps: [None; MAX_STEPS], workspace, fields }
    }
    fn push(&mut self, s: Step) {
        let slot = self.steps.iter_mut().find(|s| s.is_none()).expect("at most MAX_STEPS launches per call");
        *slot = Some(s);
    }
    /// The launches, in stream order.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().flatten()
    }
}

fn too_big() -> NormError {
    NormError::ResourceLimit { resource: "workspace bytes", requested: u64::MAX, available: usize::MAX as u64 }
}

fn to_u32(v: u64, what: &'static str) -> Result<u32> {
    u32::try_from(v).map_err(|_| NormError::ResourceLimit { resource: what, requested: v, available: u32::MAX as u64 })
}

/// Rounds up to a multiple of 256 bytes (workspace sub-regions).
pub fn align256(b: usize) -> usize {
    b.div_ceil(256) * 256
}

/// The kernels' dtype for x's dtype `d` (the specialised kernels exist for f32, f16 and bf16).
fn kdt(d: DType) -> Result<Dt> {
    Dt::of(d).ok_or_else(|| NormError::Internal { backend: "cuda", what: format!("no kernels for x in {d:?}") })
}

/// A kernel the plan cannot do without: missing from the list is a fault of the library.
fn require(key: KernelKey) -> Result<Kernel> {
    kernels::lookup(key)
        .ok_or_else(|| NormError::Internal { backend: "cuda", what: format!("kernel {} is missing from the fatbin", key.symbol()) })
}

/// A twin kernel (one that waits with `griddepcontrol.wait` before touching memory): a
/// programmatic dependent launch that triggers the stream's next kernel at its entry
/// (`fields.trigger`), or a plain launch without the trigger when PDL is off.
fn trigger_step(t: &Tuning, fields: &mut Fields, k: Kernel, blocks: u32, block: u32) -> Step {
    fields.trigger = t.pdl;
    Step::dependent(t.pdl, k, blocks, block, 0)
}

/// Whether a register forward of `blocks` CTAs of `block` threads runs the twin `tk`
/// ([`Tuning::fwd_decode_max_ctas`] when set, else [`Tuning::fwd_twin`]'s rules).
fn twin_fits(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall, tk: Kernel, blocks: u32, block: u32) -> Result<bool> {
    if let Some(max) = t.fwd_decode_max_ctas {
        return Ok(blocks <= max);
    }
    let sms = u64::from(d.sms);
    let wave = sms * u64::from(occ.blocks_per_sm(tk, block, 0)?.max(1));
    if matches!(tk.key, KernelKey::FwdRegDecode { k8: true, .. }) {
        let per_sm = if c.ln { t.fwd_twin.k8_ln_ctas_per_sm } else { t.fwd_twin.k8_rms_ctas_per_sm };
        return Ok(u64::from(blocks) <= wave.max(sms.saturating_mul(u64::from(per_sm))));
    }
    let per_sm = if c.ln { t.fwd_twin.ln_ctas_per_sm } else { t.fwd_twin.rms_ctas_per_sm };
    let wide = !c.residual && block == t.fwd_twin.wide_block && u64::from(blocks) <= sms.saturating_mul(u64::from(per_sm));
    Ok(u64::from(blocks) <= wave || wide)
}

/// The least dynamic shared memory (1 KiB steps) with which at most `cap` CTAs of `k` fit on an
/// SM (0 if they never exceed it; the kernel's largest if even that leaves more).
fn cap_padding(d: &DeviceFacts, occ: &dyn Occupancy, k: Kernel, block: u32, cap: u32) -> Result<u32> {
    if occ.blocks_per_sm(k, block, 0)? <= cap {
        return Ok(0);
    }
    let max = d.dyn_smem_max[k.index] / 1024;
    let (mut lo, mut hi) = (0usize, max);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if occ.blocks_per_sm(k, block, mid * 1024)? <= cap {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    to_u32((lo * 1024) as u64, "shared memory")
}

/// A programmatic-dependent twin's step padded (dynamic shared memory the kernels never read:
/// the same code and bits) so that at most its own share of an SM, K = ⌈grid / SMs⌉ CTAs, fit
/// one, where K is at most `auto` (0: never): the next call's CTAs, launched early, then cannot
/// stack on the SMs this grid leaves idle (NOTES v22). At least the step's own shared memory; a
/// step not launched as a programmatic dependent (PDL off) unchanged.
fn share_of_sm(d: &DeviceFacts, occ: &dyn Occupancy, step: Step, auto: u32) -> Result<Step> {
    let k = step.grid.0.div_ceil(d.sms.max(1));
    if auto == 0 || k > auto || step.mode != Mode::Pdl {
        return Ok(step);
    }
    let pad = cap_padding(d, occ, step.kernel, step.block, k)?;
    Ok(Step { smem: step.smem.max(pad), ..step })
}

/// CTAs of a persistent kernel: as many as fit on the device at once, at most `work`.
fn persistent_blocks(d: &DeviceFacts, occ: &dyn Occupancy, k: Kernel, block: u32, smem: usize, work: u64) -> Result<u32> {
    let per_sm = occ.blocks_per_sm(k, block, smem)?.max(1);
    Ok(work.min(d.sms as u64 * per_sm as u64).max(1) as u32)
}

/// CTAs of `threads` threads for the split path's per-row reduce kernels (one warp per row).
fn reduce_blocks(m: u64, threads: u32) -> u32 {
    m.div_ceil(u64::from(threads / kernels::NK_WARP_WIDTH as u32)).clamp(1, MAX_GRID) as u32
}

/// Dynamic shared memory of the forward row kernel (nk_row.cuh, fwd_row): the staged weight
/// and bias, then per group the staged row (and residual).
fn fwd_row_smem(rc: tuning::RowConfig, n: usize, slot: usize, nvec: usize, staged: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nvec + rc.rows_per_cta as usize * staged * k * g * slot
}

/// Dynamic shared memory of the backward row kernel (nk_row.cuh, bwd_row): the staged weight,
/// then per group the staged x, dy (and d_residual_out) and the fp32 dW/dB accumulators.
fn bwd_row_smem(rc: tuning::RowConfig, n: usize, slot: usize, nw: usize, staged: usize, nacc: usize) -> usize {
    let nch = n.div_ceil(8);
    let g = rc.group as usize;
    let k = nch.div_ceil(g);
    slot * nch * nw + rc.rows_per_cta as usize * (staged * k * g * slot + nacc * k * g * 8 * 4)
}

// ---------------------------------------------------------------------------------------------
// Forward

/// Plans a forward call.
pub fn forward(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall) -> Result<Launch> {
    if let Some(q) = c.fp8 {
        return forward_fp8(t, d, occ, c, q);
    }
    if c.m == 0 {
        return Ok(Launch::new(Family::Empty, Workspace::default(), Fields::default()));
    }
    if let Some(l) = forward_staged(t, d, occ, c)? {
        return Ok(l);
    }
    let dts = &c.dtypes;
    let affine = c.weight || c.bias;
    // Every tensor 16-bit: 16-byte staging slots and, when aligned, the kernel that keeps one
    // 16-byte register set per chunk. A dtype property: strided and contiguous views of the
    // same dtypes take the same path and the same reduction order.
    let all16 =
        dts.x != DType::F32 && dts.y != DType::F32 && (!c.residual || dts.residual != DType::F32) && (!affine || dts.weight != DType::F32);
    let slot = if all16 { 16 } else { 32 };
    let m = c.m as u64;
    // Tuning::fwd_k8_wide's row (8 chunks per thread) for bf16 RMSNorm without the residual at
    // its N, where the device takes it; by N and dtypes only, as the table.
    // Tuning::fwd_k8_wide_ln's for LayerNorm.
    let k8_at = |w: &tuning::RowConfig| t.fwd_k8 && dts.x == DType::BF16 && !c.residual && c.n > w.max_n / 2 && c.n <= w.max_n;
    let wide = if c.ln { t.fwd_k8_wide_ln } else { t.fwd_k8_wide }.filter(k8_at);
    // Tuning::fwd_rpc: the table's group on other rows per CTA (the same bits), for 16-bit
    // forwards where a rule takes the call and the CTA stays within 1024 threads.
    let rows_rule = |rc: tuning::RowConfig| -> tuning::RowConfig {
        let rule = t
            .fwd_rpc
            .iter()
            .find(|r| r.ln == c.ln && r.residual == c.residual && (r.n.0..=r.n.1).contains(&c.n) && (r.rows.0..=r.rows.1).contains(&m));
        match rule {
            Some(r) if dts.x != DType::F32 && rc.group * r.rpc <= 1024 => tuning::RowConfig { rows_per_cta: r.rpc, ..rc },
            _ => rc,
        }
    };
    // Tuning::fwd_f32: every tensor f32, no residual, its own table's groups on two chunks per
    // thread where a row holds N in whole rounds (by op, dtypes and N only, as the table: other
    // groups, other bits). `uniform`: every tensor in x's dtype, the register kernels' condition
    // below.
    let uniform = dts.y == dts.x && (!c.residual || dts.residual == dts.x) && (!affine || dts.weight == dts.x);
    let f32k2 = tuning::pick(&t.fwd_f32, c.n).filter(|r| {
        dts.x == DType::F32 && uniform && c.gemma && !c.residual && c.n == 16 * r.group as usize && r.group * r.rows_per_cta <= 1024
    });
    if let Some(rc) = f32k2.or(wide).or_else(|| tuning::pick(&t.fwd, c.n).map(rows_rule)) {
        // The register-resident kernels: every tensor in x's dtype, Gemma casting, the row's
        // chunks fit REG_KMAX per thread. Chosen by N, dtypes and flags only; the 16-byte and
        // element-wise variants share one body (same chunks, same order).
        let dt = dts.x;
        let block = rc.group * rc.rows_per_cta;
        let k_per_thread = c.n.div_ceil(8).div_ceil(rc.group as usize);
        let wide_ok = dt != DType::F32 && !c.residual;
        // 8 chunks per thread: bf16 RMSNorm without residual only (Tuning::fwd_k8).
        let k8 = t.fwd_k8
            && k_per_thread > REG_KMAX
            && k_per_thread <= 2 * REG_KMAX
            && dt == DType::BF16
            && !c.residual
            && (!c.ln || t.fwd_k8_ln || wide.is_some());
        // 16 chunks per thread (a warp per row at N = 4096): 16-bit dtypes without residual,
        // where a table row asks for it (256-thread CTAs at most: the kernels' launch bound).
        let k16 = k_per_thread > 2 * REG_KMAX && k_per_thread <= 4 * REG_KMAX && wide_ok && block <= 256;
        // 512 threads: the f32 and residual register kernels' launch bound (1024: the f32
        // two-chunk builds).
        if uniform && c.gemma && (k_per_thread <= REG_KMAX || k8 || k16) && (block <= 512 || wide_ok || f32k2.is_some()) {
            let chunks = if f32k2.is_some() {
                FwdChunks::K2
            } else if k16 {
                FwdChunks::K16
            } else if k8 {
                FwdChunks::K8
            } else {
                FwdChunks::K4
            };
            // Tuning::fwd_ln_one_barrier: LayerNorm's statistics behind one barrier for the
            // table's groups from its size, on rows of whole chunks that give every thread of
            // the group all its chunks (N = 8 · chunks · G: equal counts per warp). By N only, as
            // the table: every kernel below, twin, pairs and half-thread, takes the same reduction.
            let one_barrier = c.ln
                && !matches!(chunks, FwdChunks::K16 | FwdChunks::K2)
                && c.n == 8 * chunks.get() * rc.group as usize
                && t.fwd_ln_one_barrier.is_some_and(|g| rc.group >= g);
            let kd = kdt(dt)?;
            let key =
                |ctas3| KernelKey::FwdReg { dtype: kd, ln: c.ln, residual: c.residual, chunks, aligned: c.aligned, one_barrier, ctas3 };
            // Tuning::fwd_f32_ctas3: f32 RMSNorm without the residual on its build for three
            // 256-thread CTAs per SM (fewer registers, the same code and bits) where a rule takes
            // the call and the CTA fits it.
            let o3 = dt == DType::F32
                && chunks == FwdChunks::K4
                && !c.ln
                && !c.residual
                && t.fwd_f32_ctas3.iter().any(|r| (r.n.0..=r.n.1).contains(&c.n) && (r.rows.0..=r.rows.1).contains(&m));
            let k = match o3.then(|| kernels::lookup(key(true))).flatten().filter(|k3| block <= k3.max_threads) {
                Some(k3) => k3,
                None => require(key(false))?,
            };
            let work = m.div_ceil(rc.rows_per_cta as u64);
            let blocks = if t.fwd_persistent { persistent_blocks(d, occ, k, block, 0, work)? } else { work.min(MAX_GRID) as u32 };
            let mut fields = Fields { group: rc.group as i32, rpc: rc.rows_per_cta as i32, slot, ..Fields::default() };
            // The twin (`nk_fwd_regd_*`: the weight loaded with the row, the wait right before
            // the first load), a programmatic dependent that triggers its successor at entry
            // (with PDL on), where Tuning::fwd_twin says. The same arithmetic: the same bits at
            // every M.
            let twin = kdt(dt)
                .ok()
                .filter(|_| matches!(chunks, FwdChunks::K4 | FwdChunks::K8) && c.aligned && dt != DType::F32)
                .and_then(|dtype| {
                    kernels::lookup(KernelKey::FwdRegDecode {
                        dtype,
                        ln: c.ln,
                        residual: c.residual,
                        k8: chunks == FwdChunks::K8,
                        one_barrier,
                    })
                })
                .filter(|k| block <= k.max_threads);
            let twin = match twin {
                Some(tk) if twin_fits(t, d, occ, c, tk, blocks, block)? => Some(tk),
                _ => None,
            };
            // The twin in pairs (`nk_fwd_regp_*`) where Tuning::fwd_pair says: each group of the
            // table run by twice its threads, 2 chunks each, launched as group 2G (the kernel
            // keeps group G's reduction order: the same bits at every M).
            let pt = t.fwd_pair;
            let pair = twin
                .filter(|_| (pt.rows.0..=pt.rows.1).contains(&m) && !(pt.skip_ctas.0..=pt.skip_ctas.1).contains(&blocks))
                .filter(|_| {
                    (pt.every_op || (c.residual && !c.ln)) && chunks == FwdChunks::K4 && k_per_thread >= 2 && rc.group.is_power_of_two()
                })
                .and_then(|_| kernels::lookup(KernelKey::FwdRegPair { dtype: kdt(dt).ok()?, ln: c.ln, residual: c.residual, one_barrier }))
                .filter(|pk| 2 * block <= pk.max_threads);
            // Tuning::fwd_half: the table's 4-chunk row on half its threads, 8 chunks each
            // (`nk_fwd_regh_*`, group G / 2: the kernel keeps group G's reduction order, the same
            // bits at every M), for calls with the rows for it.
            let half = t
                .fwd_half
                .iter()
                .find(|h| h.ln == c.ln && (h.n.0..=h.n.1).contains(&c.n) && (h.rows.0..=h.rows.1).contains(&m))
                // Compiled for bf16 only.
                .filter(|_| {
                    dt == DType::BF16 && chunks == FwdChunks::K4 && c.aligned && !c.residual && rc.group >= 16 && rc.group.is_power_of_two()
                })
                .and_then(|_| {
                    kernels::lookup(KernelKey::FwdRegHalf { dtype: kdt(dt).ok()?, ln: c.ln, l2: false, sub: rc.group < 64, one_barrier })
                })
                .filter(|hk| block / 2 <= hk.max_threads);
            let step = match (half, pair, twin) {
                (Some(hk), _, _) => {
                    fields.group = rc.group as i32 / 2;
                    let blocks = if t.fwd_persistent { persistent_blocks(d, occ, hk, block / 2, 0, work)? } else { blocks };
                    trigger_step(t, &mut fields, hk, blocks, block / 2)
                }
                (None, Some(pk), _) => {
                    fields.group = 2 * rc.group as i32;
                    let blocks = persistent_blocks(d, occ, pk, 2 * block, 0, work)?;
                    trigger_step(t, &mut fields, pk, blocks, 2 * block)
                }
                (None, None, Some(k)) => trigger_step(t, &mut fields, k, blocks, block),
                (None, None, None) => Step::plain(k, (blocks, 1), block, 0),
            };
            // Tuning::fwd_l2_ahead: the kernels that carry the prefetch — the 16-byte-aligned
            // plain kernels without the residual, the half-thread kernels (always aligned;
            // LayerNorm's in its `_l2` build) — on a grid past its first wave prefetch into L2
            // the row that far on (a share of a wave's rows).
            // The first rule of the op, dtype and N decides (a call below its size gets none).
            let l2 = t
                .fwd_l2_ahead
                .iter()
                .find(|r| r.ln == c.ln && r.f32 == (dt == DType::F32) && (r.n.0..=r.n.1).contains(&c.n))
                .filter(|r| m.saturating_mul(c.n as u64) >= r.min_elems);
            let l2_kernel = match step.kernel.key {
                KernelKey::FwdReg { residual: false, aligned: true, .. } | KernelKey::FwdRegHalf { ln: false, .. } => Some(step.kernel),
                // LayerNorm's `_l2` builds: groups of a warp and more (no `_sw` build has one).
                KernelKey::FwdRegHalf { dtype, ln: true, l2: false, sub: false, one_barrier } => {
                    kernels::lookup(KernelKey::FwdRegHalf { dtype, ln: true, l2: true, sub: false, one_barrier })
                }
                _ => None,
            };
            let mut step = step;
            if let (Some(rule), Some(lk)) = (l2, l2_kernel) {
                let wave = u64::from(d.sms) * u64::from(occ.blocks_per_sm(lk, step.block, step.smem as usize)?.max(1));
                if u64::from(step.grid.0) > wave {
                    let rows = wave * fields.rpc.max(1) as u64 * u64::from(rule.pct) / 100;
                    fields.pf = i32::try_from(rows).unwrap_or(i32::MAX);
                    step.kernel = lk;
                }
            }
            // Tuning::fwd_twin_cap(_auto): padding that leaves at most K of the twin's CTAs on
            // an SM — by default its own share, ⌈grid / SMs⌉, up to 2 — so that the next call's
            // early CTAs cannot stack on the SMs this grid leaves idle.
            // (Only the twin and its pairs are programmatic dependents.)
            let step = match t.fwd_twin_cap {
                _ if step.mode != Mode::Pdl => step,
                Some((lo, hi, k)) if (lo..=hi).contains(&m) => Step { smem: cap_padding(d, occ, step.kernel, step.block, k)?, ..step },
                Some(_) => step,
                None => share_of_sm(d, occ, step, t.fwd_twin_cap_auto)?,
            };
            let mut l = Launch::new(Family::FwdRegister, Workspace::default(), fields);
            l.push(step);
            return Ok(l);
        }
        let nvec = usize::from(c.weight) + usize::from(c.bias);
        let staged = 1 + usize::from(c.residual);
        let smem = fwd_row_smem(rc, c.n, slot as usize, nvec, staged);
        if smem <= d.row_smem_limit {
            // The element-wise kernels have no narrow twin.
            let k = require(KernelKey::FwdRow { aligned: c.aligned, narrow: c.aligned && all16 })?;
            let blocks = persistent_blocks(d, occ, k, block, smem, m.div_ceil(rc.rows_per_cta as u64))?;
            let fields = Fields { group: rc.group as i32, rpc: rc.rows_per_cta as i32, slot, ..Fields::default() };
            let mut l = Launch::new(Family::FwdRow, Workspace::default(), fields);
            l.push(Step::plain(k, (blocks, 1), block, smem as u32));
            return Ok(l);
        }
    }
    if let Some(l) = forward_cluster(t, d, occ, c)? {
        return Ok(l);
    }
    if let Some(l) = forward_reread(t, d, occ, c)? {
        return Ok(l);
    }
    // Split rows.
    let s = c.n.div_ceil(SPLIT_CHUNK);
    let tiles = m.checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    // [chunk partials (M·S pairs) | combined (mean, rstd) per row (M pairs)]
    let bytes = tiles.checked_add(m).and_then(|t| t.checked_mul(8)).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let blocks = tiles.min(MAX_GRID) as u32;
    let threads = kernels::NK_SPLIT_THREADS as u32;
    let (aligned, narrow) = (c.aligned, c.aligned && all16);
    let ks = require(KernelKey::FwdSplitStats { aligned, narrow })?;
    let ka = require(KernelKey::FwdSplitApply { aligned, narrow })?;
    let ws = Workspace { bytes, stats: Some(0), ..Workspace::default() };
    let mut l = Launch::new(Family::FwdSplit, ws, Fields { nsplit: s as i64, ..Fields::default() });
    l.push(Step::plain(ks, (blocks, 1), threads, 0));
    l.push(Step::plain(FWD_SPLIT_REDUCE, (reduce_blocks(m, threads), 1), threads, 0));
    l.push(Step::plain(ka, (blocks, 1), threads, 0));
    Ok(l)
}

// ---------------------------------------------------------------------------------------------
// Quantised (FP8) forward

pub use normkit_gpu_host::fp8_tile_pitch;

/// The workspace of the FP8 row path: none of its bytes are used, but a lent workspace carries
/// the zeroed words the amax's last CTA uses (`buffers::WsLease::sync`).
const FP8_WS: Workspace = Workspace { bytes: 256, stats: None, dw: 0, db: 0, q: None };

/// The register kernel of a quantised forward and its group: the fewest chunks per thread whose
/// group (a power of two ≥ ⌈chunks/K⌉) fits the kernel's launch bound; `None` beyond them.
fn fp8_row_kernel(t: &Tuning, c: &FwdCall, narrow: bool, strided: bool) -> Option<(Kernel, u32)> {
    if c.n > t.fp8.row_max_n {
        return None;
    }
    let nch = c.n.div_ceil(8);
    // 16-bit: 4 chunks per thread (512 threads: N ≤ 16384), then 8 (N ≤ 32768, the default
    // `Fp8Tuning::row_max_n`). With an f32 tensor 4 chunks only: an 8-chunk kernel at its
    // 256-thread bound covers no N the 4-chunk one at 512 does not (those kernels and the
    // 16-chunk one, which spilled 1.5 KB, were removed: NOTES v8, v10).
    let options: &[FwdChunks] = if narrow { &[FwdChunks::K4, FwdChunks::K8] } else { &[FwdChunks::K4] };
    for &chunks in options {
        if strided && (chunks != FwdChunks::K4 || !narrow || c.residual) {
            continue;
        }
        let key = KernelKey::FwdQRow { aligned: c.aligned, narrow, chunks, residual: c.residual, strided };
        let Some(k) = kernels::lookup(key) else { continue };
        let group = nch.div_ceil(chunks.get()).next_power_of_two() as u32;
        if group <= k.max_threads {
            return Some((k, group));
        }
    }
    None
}

/// Plans a quantised (FP8) forward: the register kernel while a row fits its registers (with the
/// transposed output through its shared-memory tile where a tile of at least `min_tm` rows fits,
/// else the separate transpose kernel after it), else split rows (statistics, combine, per-row
/// chunk maxima, apply, then the separate transpose). Chosen by N, the dtypes and the flags only.
/// With an `amax`, every CTA folds its max into the workspace's synchronisation words and the last one
/// writes it (no memset before the kernels).
fn forward_fp8(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall, q: normkit_gpu_host::Fp8Info) -> Result<Launch> {
    let dts = &c.dtypes;
    let affine = c.weight || c.bias;
    let all16 = dts.x != DType::F32 && (!c.residual || dts.residual != DType::F32) && (!affine || dts.weight != DType::F32);
    let narrow = c.aligned && all16;
    let m = c.m as u64;
    let f = &t.fp8;
    let strided = q.transposed && f.transpose == tuning::Fp8Transpose::Strided;
    // yT by the separate transpose (after whichever kernel writes y).
    let tk = require(KernelKey::FwdQTranspose)?;
    let transpose = Step::plain(tk, (transpose_blocks(d, c), 1), tk.max_threads, 0);
    if m == 0 {
        // Nothing to quantise, but a per-tensor `scale_inv` is still written (and `amax`, zeroed
        // by the launch, stays 0): one CTA of a row kernel that visits no row.
        let k = require(KernelKey::FwdQRow { aligned: false, narrow: false, chunks: FwdChunks::K4, residual: c.residual, strided: false })?;
        let mut l = Launch::new(Family::FwdQuant, FP8_WS, Fields { group: 32, rpc: 1, ..Fields::default() });
        l.push(Step::plain(k, (1, 1), 32, 0));
        return Ok(l);
    }
    // The quantised register forward (fwd_reg's body, SPEC + 128): every tensor in x's 16-bit
    // dtype, Gemma casting, 16-byte layouts, the forward table's group with at most 4 chunks per
    // thread; yT (if any) by the separate kernel. The strided baseline keeps the row kernel.
    // With the fused residual too: the row kernel without its twin ran 9-21% slower (H100,
    // bench/results/nvidia-h100-2026-11-25/fp8/final: A/B of that choice).
    let uniform = dts.x != DType::F32 && (!c.residual || dts.residual == dts.x) && (!affine || dts.weight == dts.x);
    if let (true, Some(rc), false) = (uniform && c.gemma && c.aligned && t.fp8.reg, tuning::pick(&t.fwd, c.n), strided) {
        let k_per_thread = c.n.div_ceil(8).div_ceil(rc.group as usize);
        let key = KernelKey::FwdRegQ { dtype: kdt(dts.x)?, ln: c.ln, residual: c.residual, chunks: FwdChunks::K4, aligned: true };
        if let (true, Some(k)) = (k_per_thread <= REG_KMAX, kernels::lookup(key)) {
            let (mut block, mut rpc) = (rc.group * rc.rows_per_cta, rc.rows_per_cta);
            let mut work = m.div_ceil(u64::from(rpc));
            // Its twin (`nk_fwd_regqd_*`) where the group fits the twin's 256-thread bound and y
            // is e4m3 or e5m2 (it converts by instruction only): the same arithmetic, no spills,
            // a programmatic dependent. Walks: row groups per CTA of its persistent grid.
            let dtype = kdt(dts.x)?;
            let twin_key =
                |tile, two_ctas| KernelKey::FwdRegQDecode { dtype, ln: c.ln, residual: c.residual, per_row: q.per_row, tile, two_ctas };
            // Calls of Fp8Tuning::twin_x2_min_elems elements take the twin's two-CTAs-per-SM
            // build where there is one (the same code: the choice by size keeps every bit).
            let x2 = m.saturating_mul(c.n as u64) >= f.twin_x2_min_elems && kernels::lookup(twin_key(false, true)).is_some();
            // Scaled per row, the RMSNorm twin finds each row's max |y| from max |x·(w + offset)|
            // (nk_reg.cuh, QF), which a bias breaks: RMSNorm with a bias keeps the plain kernel.
            let twin = Some(twin_key(false, x2))
                .filter(|_| t.fp8.reg_twin && matches!(dts.y, DType::F8E4M3 | DType::F8E5M2))
                .filter(|_| !(q.per_row && !c.ln && c.bias))
                .and_then(kernels::lookup)
                .filter(|tk| block <= tk.max_threads);
            // Calls whose yT the twin's own tiles may write (below: Fp8Tuning::twin_tile_n).
            let tile_n = q.transposed && f.twin_tm >= 8 && (f.twin_tile_n.0..=f.twin_tile_n.1).contains(&c.n);
            let twin = match twin {
                Some(tk) => {
                    let wave = u64::from(persistent_blocks(d, occ, tk, block, 0, work)?);
                    // Per-row scaling: RMSNorm at every M (its twin's y and row max are its own: a
                    // choice by M would break batch invariance), LayerNorm while its CTAs walk at
                    // most Fp8Tuning::row_twin_walks.
                    let keep = !q.per_row || !c.ln || work <= wave.saturating_mul(t.fp8.row_twin_walks);
                    // Twice the rows per CTA past Fp8Tuning::wide_cta_walks (the group, and so
                    // every bit, unchanged): per tensor, and per row as Fp8Tuning::wide_row says;
                    // the calls that take the yT tiles only up to Fp8Tuning::tile_wide_max_rows
                    // where M is a multiple of 16 (the contiguous yT's rows 16-byte aligned: the
                    // case measured; odd M measured slower so, tpf/wide call 1).
                    let row_ok = match f.wide_row {
                        tuning::WideRow::Never => false,
                        tuning::WideRow::Residual => c.residual && c.n == 32 * rc.group as usize,
                        tuning::WideRow::Always => true,
                    };
                    let wide = (!q.per_row || row_ok) && !(tile_n && m > f.tile_wide_max_rows && m.is_multiple_of(16));
                    if keep && wide && work > wave.saturating_mul(t.fp8.wide_cta_walks) && 2 * block <= tk.max_threads {
                        (block, rpc) = (2 * block, 2 * rpc);
                        work = m.div_ceil(u64::from(rpc));
                    }
                    keep.then_some(tk)
                }
                None => None,
            };
            // yT through the twin's own tiles (`nk_fwd_regqd{|r}t_*`): the most rows (a power of
            // two, at most Fp8Tuning::twin_tm, at least 8 and the CTA's rows) whose tile fits
            // Fp8Tuning::tile_smem, in clusters of Fp8Tuning::twin_cluster CTAs, for N in
            // Fp8Tuning::twin_tile_n and where the supertiles number at least
            // Fp8Tuning::twin_tile_fill % of the resident clusters; else the separate transpose
            // after the twin.
            let mut tiled = None;
            if twin.is_some() && tile_n && rpc.is_power_of_two() {
                if let Some(kt) = kernels::lookup(twin_key(true, false)) {
                    // The pitch of a 16-row tile at 32 rows too: 8-byte aligned rows for the
                    // twin's stores (32 rows' conflict-free pitch is an odd number of words).
                    let limit = f.tile_smem.min(d.dyn_smem_max[kt.index]);
                    tiled = fp8_tile_rows(c.n, f.twin_tm.next_power_of_two(), 8.max(rpc), limit, |tm| tm.min(16))
                        .map(|(tm, pitch)| (kt, tm, pitch, tm as usize * pitch));
                }
            }
            let mut fields = Fields { group: rc.group as i32, rpc: rpc as i32, slot: 16, ..Fields::default() };
            if let Some((kt, tm, pitch, smem)) = tiled {
                let cl = f.twin_cluster;
                let supertiles = m.div_ceil(u64::from(tm * cl));
                // Clusters resident at once (cl = 1: CTAs), none where the device refuses the shape.
                let wave = if cl > 1 {
                    u64::from(occ.max_active_clusters(kt, cl, block, smem as u32)?)
                } else {
                    u64::from(d.sms) * u64::from(occ.blocks_per_sm(kt, block, smem)?)
                };
                if wave > 0 && supertiles.saturating_mul(100) >= wave.saturating_mul(f.twin_tile_fill) {
                    let grid = (wave.min(supertiles) as u32) * cl;
                    fields.tm = tm as i32;
                    fields.tpitch = pitch as i32;
                    // Fp8Tuning::tile_l2_ahead: the tiles' RMSNorm without the residual, from
                    // Fp8Tuning::tile_l2_min_n.
                    if !c.ln && !c.residual && c.n >= f.tile_l2_min_n {
                        fields.pf = i32::try_from(f.tile_l2_ahead).unwrap_or(i32::MAX);
                    }
                    let step = if cl > 1 {
                        Step { kernel: kt, grid: (grid, 1), block, smem: smem as u32, mode: Mode::Cluster(cl), group: None }
                    } else {
                        fields.trigger = t.pdl;
                        Step::dependent(t.pdl, kt, grid, block, smem as u32)
                    };
                    let mut l = Launch::new(Family::FwdQuant, FP8_WS, fields);
                    l.push(step);
                    return Ok(l);
                }
            }
            // The twin in pairs (`nk_fwd_regqp{|r}_*`, compiled for RMSNorm with the residual) for
            // calls of Fp8Tuning::pair_rows rows: group G's row on 2G threads of 2 chunks (the
            // same bits), the same rows per CTA.
            let pair_op = f.pair_every_op || (!c.ln && c.residual);
            let twin = match twin {
                Some(tk) if pair_op && (f.pair_rows.0..=f.pair_rows.1).contains(&m) => {
                    let key = KernelKey::FwdRegQPair { dtype, ln: c.ln, residual: c.residual, per_row: q.per_row };
                    match kernels::lookup(key).filter(|pk| 2 * block <= pk.max_threads) {
                        Some(pk) => {
                            fields.group *= 2;
                            block *= 2;
                            Some(pk)
                        }
                        None => Some(tk),
                    }
                }
                other => other,
            };
            // Fp8Tuning::row_res_rows_min_elems: the per-row bf16 add + RMSNorm twin (not its
            // pairs) on a CTA per row group, as the plain forward runs.
            let row_res_rows = twin.is_some_and(|k| matches!(k.key, KernelKey::FwdRegQDecode { .. }))
                && q.per_row
                && c.residual
                && !c.ln
                && dtype == Dt::Bf16
                && m.saturating_mul(c.n as u64) >= f.row_res_rows_min_elems;
            let k = twin.unwrap_or(k);
            let blocks =
                if t.fp8.reg_grid_rows || row_res_rows { work.min(MAX_GRID) as u32 } else { persistent_blocks(d, occ, k, block, 0, work)? };
            // Fp8Tuning::twin_l2_ahead: the RMSNorm twin's L2 prefetch without the residual (`pf`
            // walks ahead of its registers'; the other twins compile none).
            if twin.is_some() && !c.ln && !c.residual {
                let k = if q.per_row { f.row_l2_ahead } else { f.twin_l2_ahead };
                fields.pf = i32::try_from(k).unwrap_or(i32::MAX);
            }
            let step = match twin {
                // Fp8Tuning::twin_cap_auto: padded to its own share of an SM (with PDL).
                Some(tk) => share_of_sm(d, occ, trigger_step(t, &mut fields, tk, blocks, block), f.twin_cap_auto)?,
                None => Step::plain(k, (blocks, 1), block, 0),
            };
            let mut l = Launch::new(Family::FwdQuant, FP8_WS, fields);
            l.push(step);
            if q.transposed {
                l.push(transpose);
            }
            return Ok(l);
        }
    }
    // The 16-bit row kernels are compiled for Gemma casting only (nk_fp8.cuh, fwd_q_row).
    let narrow_row = narrow && c.gemma;
    if let Some((k, group)) =
        fp8_row_kernel(t, c, narrow_row, strided).or_else(|| if strided { fp8_row_kernel(t, c, narrow_row, false) } else { None })
    {
        let strided = strided && matches!(k.key, KernelKey::FwdQRow { strided: true, .. });
        let rpc = (f.cta_threads / group).max(1);
        // The fused tile: the most rows (≤ max_tm, ≥ rows per CTA pass) whose tile fits.
        let mut tm = 0u32;
        if q.transposed && f.transpose == tuning::Fp8Transpose::Fused {
            let limit = f.tile_smem.min(d.dyn_smem_max[k.index]);
            tm = fp8_tile_rows(c.n, f.max_tm, f.min_tm.max(4), limit, |tm| tm).map_or(0, |(tm, _)| tm);
        }
        // At least a warp per CTA (the CTA-wide max of the amax reads whole warps).
        let rpc = if tm > 0 { rpc.min(tm).max(32u32.div_ceil(group)) } else { rpc };
        let block = group * rpc;
        let (smem, tpitch) = if tm > 0 {
            let pitch = fp8_tile_pitch(c.n, tm);
            (tm as usize * pitch, pitch as i32)
        } else {
            (0, 0)
        };
        let rows_per_tile = if tm > 0 { tm } else { rpc };
        let work = m.div_ceil(rows_per_tile as u64).max(1);
        let blocks = persistent_blocks(d, occ, k, block, smem, work)?;
        let fields = Fields {
            group: group as i32,
            rpc: rpc as i32,
            q: if tm > 0 { normkit_gpu_host::params::Q_TFUSED } else { 0 },
            tm: tm as i32,
            tpitch,
            ..Fields::default()
        };
        let mut l = Launch::new(Family::FwdQuant, FP8_WS, fields);
        l.push(Step::plain(k, (blocks, 1), block, smem as u32));
        if q.transposed && tm == 0 && !strided && m > 0 {
            l.push(transpose);
        }
        return Ok(l);
    }
    if let Some(mut l) = forward_fp8_staged(t, d, occ, c, q, uniform)? {
        if q.transposed {
            l.push(transpose);
        }
        return Ok(l);
    }
    // Split rows.
    let s = c.n.div_ceil(SPLIT_CHUNK);
    let tiles = m.checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
    // [chunk partials (M·S pairs) | combined (mean, rstd) per row (M pairs) | per row: M·S maxima]
    let stats_bytes = tiles.checked_add(m).and_then(|t| t.checked_mul(8)).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
    let q_at = align256(stats_bytes);
    let bytes = if q.per_row {
        tiles.checked_mul(4).and_then(|b| usize::try_from(b).ok()).and_then(|b| b.checked_add(q_at)).ok_or_else(too_big)?
    } else {
        stats_bytes
    };
    let blocks = tiles.min(MAX_GRID) as u32;
    let threads = kernels::NK_SPLIT_THREADS as u32;
    let all16s = all16 && c.aligned;
    let ks = require(KernelKey::FwdSplitStats { aligned: c.aligned, narrow: all16s })?;
    let ka = require(KernelKey::FwdQSplitApply { aligned: c.aligned, narrow })?;
    let ws = Workspace { bytes, stats: Some(0), q: q.per_row.then_some(q_at as u64), ..Workspace::default() };
    let mut l = Launch::new(Family::FwdQuantSplit, ws, Fields { nsplit: s as i64, ..Fields::default() });
    l.push(Step::plain(ks, (blocks, 1), threads, 0));
    l.push(Step::plain(FWD_SPLIT_REDUCE, (reduce_blocks(m, threads), 1), threads, 0));
    if q.per_row {
        l.push(Step::plain(require(KernelKey::FwdQSplitAmax { aligned: c.aligned, narrow })?, (blocks, 1), threads, 0));
    }
    // The apply folds amax once per CTA (one atomicMax each): a persistent grid.
    let apply_blocks = persistent_blocks(d, occ, ka, threads, 0, tiles)?;
    l.push(Step::plain(ka, (apply_blocks, 1), threads, 0));
    if q.transposed {
        l.push(transpose);
    }
    Ok(l)
}

/// Rows past the register kernels: the staged cluster forward with an FP8 output
/// (`nk_fwd_csq_*`, `Fp8Tuning::staged`) where every tensor but y is x's 16-bit dtype, Gemma
/// casting, 16-byte layouts (sm_90+), and the row's slices fit a cluster of at most 16 CTAs;
/// chosen by N, the dtypes and the flags only. Per tensor or per row (the kernel reads the mode;
/// per-row RMSNorm without a bias has kernels of its own, `nk_fwd_csqr_*`: y = (x·(w +
/// offset))·rstd, the row's max with its sum of squares); yT (if any) by the separate transpose
/// after it. `uniform`: forward_fp8's every tensor but y in x's 16-bit dtype.
fn forward_fp8_staged(
    t: &Tuning,
    d: &DeviceFacts,
    occ: &dyn Occupancy,
    c: &FwdCall,
    q: normkit_gpu_host::Fp8Info,
    uniform: bool,
) -> Result<Option<Launch>> {
    let dt = c.dtypes.x;
    if !(t.fp8.staged && t.cluster.on && uniform && c.gemma && c.aligned && d.cc_major >= 9 && c.m > 0) {
        return Ok(None);
    }
    let Some(rc) = staged_shape(t, dt, c.n, c.residual) else { return Ok(None) };
    // Per-row RMSNorm without a bias: the kernel that finds the row's max with its sum of squares.
    let per_row = q.per_row && !c.ln && !c.bias;
    let Some(k) = kernels::lookup(KernelKey::FwdClusterStagedQ { dtype: kdt(dt)?, ln: c.ln, residual: c.residual, per_row }) else {
        return Ok(None);
    };
    // Resident clusters walk the rows: each CTA's amax fold is one atomic per CTA, not per row.
    let Some((step, fields)) = staged_step(t, d, occ, k, rc, c, false)? else { return Ok(None) };
    let mut l = Launch::new(Family::FwdQuantStaged, FP8_WS, fields);
    l.push(step);
    Ok(Some(l))
}

/// The most rows of an FP8 shared-memory tile for N = `n`: `from`, halved while at least `floor`,
/// the first whose rows (`fp8_tile_pitch(n, pitch_rows(tm))` bytes each) fit `limit` bytes; with
/// that row pitch.
fn fp8_tile_rows(n: usize, from: u32, floor: u32, limit: usize, pitch_rows: impl Fn(u32) -> u32) -> Option<(u32, usize)> {
    let mut tm = from;
    while tm >= floor && tm > 0 {
        let pitch = fp8_tile_pitch(n, pitch_rows(tm));
        if tm as usize * pitch <= limit {
            return Some((tm, pitch));
        }
        tm /= 2;
    }
    None
}

/// CTAs of the separate transpose: its 64 × 256 tiles, at most 8 per SM (persistent).
fn transpose_blocks(d: &DeviceFacts, c: &FwdCall) -> u32 {
    let tiles = (c.m as u64).div_ceil(64) * (c.n as u64).div_ceil(256);
    tiles.clamp(1, d.sms as u64 * 8) as u32
}

/// The cluster table row for N, if it applies (the caps, the shape override, the kernels' KMAX).
fn cluster_config(t: &Tuning, fwd: bool, dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    let cl = &t.cluster;
    let f32 = dt == DType::F32;
    if n > cl.cap_raise.max(cl.caps.get(fwd, f32, ln, residual)) || !cl.on {
        return None;
    }
    let table = match (fwd, f32) {
        (true, false) => &cl.fwd16,
        (true, true) => &cl.fwd32,
        (false, false) => &cl.bwd16,
        (false, true) => &cl.bwd32,
    };
    let rc = tuning::pick_cluster(table, n)?;
    let rc = match cl.shape {
        Some((c, t)) => ClusterConfig { max_n: n, c, t },
        None => rc,
    };
    if fwd && residual && rc.t > CLUSTER_REG_THREADS {
        return None;
    }
    let kmax = if fwd { cluster_fwd_kmax(dt) } else { cluster_bwd_kmax(dt) };
    (n.div_ceil(8).div_ceil((rc.c * rc.t) as usize) <= kmax).then_some(rc)
}

/// The forward configuration of the cluster path for N (None: not on the cluster path).
pub fn forward_cluster_config(t: &Tuning, dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    cluster_config(t, true, dt, n, ln, residual)
}

/// The backward configuration of the cluster path for N (`residual`: with d_residual_out).
pub fn backward_cluster_config(t: &Tuning, dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    cluster_config(t, false, dt, n, ln, residual)
}

/// `clusters` clusters of `c` CTAs as a grid of CTAs.
fn cluster_grid(clusters: u32, c: u32) -> Result<u32> {
    clusters.checked_mul(c).ok_or(NormError::ResourceLimit {
        resource: "grid",
        requested: clusters as u64 * c as u64,
        available: u32::MAX as u64,
    })
}

/// The dtype of every tensor of a forward the cluster kernels (plain and staged) take: sm_90+,
/// M > 0, Gemma casting, every tensor in x's dtype; `None` otherwise.
fn cluster_dtype(d: &DeviceFacts, c: &FwdCall) -> Option<DType> {
    let dt = c.dtypes.x;
    let affine = c.weight || c.bias;
    let uniform = c.dtypes.y == dt && (!c.residual || c.dtypes.residual == dt) && (!affine || c.dtypes.weight == dt);
    (d.cc_major >= 9 && c.m > 0 && c.gemma && uniform).then_some(dt)
}

/// Cluster row kernels (sm_90+): chosen by N, the dtypes and the flags alone (every tensor in x's
/// dtype, Gemma casting, N within the table), never by M or the layout: a 16-byte layout runs
/// the `_a` kernel, any other the element-wise `_u` twin (same chunks, same reduction order).
fn forward_cluster(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall) -> Result<Option<Launch>> {
    let Some(dt) = cluster_dtype(d, c) else { return Ok(None) };
    let Some(rc) = forward_cluster_config(t, dt, c.n, c.ln, c.residual) else { return Ok(None) };
    let k = require(KernelKey::FwdCluster { dtype: kdt(dt)?, ln: c.ln, residual: c.residual, aligned: c.aligned })?;
    if rc.t > k.max_threads {
        return Ok(None);
    }
    cluster_forward_launch(occ, c, Family::FwdCluster, k, (rc.c, rc.t), 0)
}

/// One launch of `k` on min(M, resident) clusters of `shape` = (CTAs, threads), with neither
/// shared memory nor workspace (the register and re-reading cluster forwards); `None` where no
/// cluster of that shape can be resident.
fn cluster_forward_launch(
    occ: &dyn Occupancy,
    c: &FwdCall,
    family: Family,
    k: Kernel,
    shape: (u32, u32),
    pf: i32,
) -> Result<Option<Launch>> {
    let (cc, tt) = shape;
    let cap = occ.max_active_clusters(k, cc, tt, 0)?;
    if cap == 0 {
        return Ok(None);
    }
    let grid = cluster_grid((c.m as u64).min(cap as u64) as u32, cc)?;
    let fields = Fields { group: tt as i32, rpc: cc as i32, pf, ..Fields::default() };
    let mut l = Launch::new(family, Workspace::default(), fields);
    l.push(Step { kernel: k, grid: (grid, 1), block: tt, smem: 0, mode: Mode::Cluster(cc), group: None });
    Ok(Some(l))
}

/// The re-reading cluster forward ([`tuning::ClusterTuning::reread`]): rows of at least
/// `reread_min_n` that the register and staged cluster kernels left, by N, the dtypes and the
/// flags alone (the element-wise twin runs the same body); `None` where no cluster of that shape
/// can be resident.
fn forward_reread(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall) -> Result<Option<Launch>> {
    let cl = &t.cluster;
    let Some(shape) = cl.reread else { return Ok(None) };
    if !cl.on || c.n < cl.reread_min_n {
        return Ok(None);
    }
    let Some(dt) = cluster_dtype(d, c) else { return Ok(None) };
    if !cl.reread_ops.covers(dt == DType::F32, c.ln, c.residual) {
        return Ok(None);
    }
    // Built only for the calls where it measured faster (kernels-cuda/variants.rs).
    let Some(k) = kernels::lookup(KernelKey::FwdClusterReread { dtype: kdt(dt)?, ln: c.ln, residual: c.residual, aligned: c.aligned })
    else {
        return Ok(None);
    };
    // The prefetch takes 16-byte aligned slices.
    let pf = if c.aligned { cl.reread_pf_kb as i32 } else { 0 };
    cluster_forward_launch(occ, c, Family::FwdClusterReread, k, shape, pf)
}

/// Chunks per thread of one stage of the staged cluster forward (NK_CS_KS16 / NK_CS_KS32, the
/// constants cluster.cuh compiles with).
fn staged_ks(dt: DType) -> usize {
    if dt == DType::F32 {
        kernels::NK_CS_KS32
    } else {
        kernels::NK_CS_KS16
    }
}

/// Stages of a staged-forward slice (`nst` of fwd_cstage: rank 0's, which holds the most).
fn staged_stages(dt: DType, n: usize, c: u32, t: u32) -> usize {
    n.div_ceil(8).div_ceil(c as usize).div_ceil(staged_ks(dt) * t as usize)
}

/// The staged cluster forward's dynamic shared memory for rows of `n` elements of `dt` on
/// clusters of `c` CTAs of `t` threads: `(1 + residual)·nst·sc·CB` bytes (fwd_cstage's layout),
/// or `None` where the slice needs more than NK_CS_MAX_STAGES stages.
pub fn staged_smem(dt: DType, n: usize, c: u32, t: u32, residual: bool) -> Option<usize> {
    let nst = staged_stages(dt, n, c, t);
    let stage_bytes = staged_ks(dt) * t as usize * 8 * dt.size_bytes();
    (nst <= kernels::NK_CS_MAX_STAGES).then_some((1 + usize::from(residual)) * nst * stage_bytes)
}

/// How many stages behind its refills the staged forward runs the next row's pass 1: the loads
/// in flight per CTA are about this many stages (`ClusterTuning::staged_lag`, or half the slice).
fn staged_lag(t: &Tuning, dt: DType, n: usize, c: u32, threads: u32) -> i32 {
    let nst = staged_stages(dt, n, c, threads).max(1);
    t.cluster.staged_lag.map_or(nst.div_ceil(2), |l| l as usize).clamp(1, nst) as i32
}

/// Stages of the next row the staged kernel `key` prefetches into L2 by default: the kernels
/// that carry the code (cluster.cuh, `L2PF`: 16-bit add + RMSNorm, LayerNorm without the
/// residual, per-row FP8 RMSNorm without it), 0 for the others.
fn staged_pf(t: &Tuning, key: KernelKey) -> u32 {
    let narrow = |dt: Dt| dt != Dt::F32;
    match key {
        KernelKey::FwdClusterStaged { dtype, ln: false, residual: true, .. } if narrow(dtype) => t.cluster.staged_pf_res,
        KernelKey::FwdClusterStaged { dtype, ln: true, residual: false, .. } if narrow(dtype) => t.cluster.staged_pf_ln,
        KernelKey::FwdClusterStagedQ { ln: false, residual: false, per_row: true, .. } => t.cluster.staged_pf_ln,
        _ => 0,
    }
}

/// The staged cluster configuration for N (None: not on the staged path): the fewest CTAs (a
/// power of two, at most 16) whose slices of x (and r) fit `staged_slice` bytes, of
/// `staged_threads` threads; None where 16 CTAs do not bring them under it.
pub fn forward_staged_config(t: &Tuning, dt: DType, n: usize, ln: bool, residual: bool) -> Option<ClusterConfig> {
    let cl = &t.cluster;
    if !cl.on || !cl.staged || n < if ln { cl.staged_min_n_ln } else { cl.staged_min_n } {
        return None;
    }
    staged_shape(t, dt, n, residual)
}

/// The staged cluster shape for rows of N (any N): `ClusterTuning::staged_shape` if set, else the
/// fewest CTAs (a power of two from 2, at most 16) whose slices fit `staged_slice` bytes. Never
/// one CTA: the kernels push their partials to every rank by `st.async` into the cluster's
/// shared memory, which compute-sanitizer's memcheck rejects in a cluster of one CTA ("Cluster
/// needs to have at least 2 blocks", then a launch failure; the staged kernel tour at N = 7,
/// f32k2/call2) though the device computes it right. The default rows (from N = 65536 16-bit)
/// never needed fewer than two; the rows forced onto this path below that take two CTAs, one
/// of them with an empty or short slice.
fn staged_shape(t: &Tuning, dt: DType, n: usize, residual: bool) -> Option<ClusterConfig> {
    let cl = &t.cluster;
    if let Some((c, t)) = cl.staged_shape {
        return Some(ClusterConfig { max_n: n, c, t });
    }
    let row = n.checked_mul(dt.size_bytes() * (1 + usize::from(residual)))?;
    let mut c = 2u32;
    while c < 16 && row.div_ceil(c as usize) > cl.staged_slice {
        c *= 2;
    }
    (row.div_ceil(c as usize) <= cl.staged_slice).then_some(ClusterConfig { max_n: n, c, t: cl.staged_threads })
}

/// Staged cluster kernels (sm_90+): chosen by N, the dtypes and the flags alone, like the
/// cluster kernels (every tensor in x's dtype, Gemma casting), never by M or the layout (the
/// `_u` twin stages element by element: same chunks, same order). Where the slice does not fit
/// the kernel's shared memory, or no cluster of that shape can be resident, the next path runs.
fn forward_staged(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &FwdCall) -> Result<Option<Launch>> {
    let Some(dt) = cluster_dtype(d, c) else { return Ok(None) };
    let Some(rc) = forward_staged_config(t, dt, c.n, c.ln, c.residual) else { return Ok(None) };
    let k = require(KernelKey::FwdClusterStaged { dtype: kdt(dt)?, ln: c.ln, residual: c.residual, aligned: c.aligned })?;
    let Some((step, fields)) = staged_step(t, d, occ, k, rc, c, t.cluster.staged_grid_rows)? else { return Ok(None) };
    let mut l = Launch::new(Family::FwdClusterStaged, Workspace::default(), fields);
    l.push(step);
    Ok(Some(l))
}

/// The launch of staged cluster kernel `k` (plain or FP8) for `c`'s rows in the shape `rc`:
/// `None` where the shape does not fit the kernel (its thread bound, 16 CTAs, its dynamic shared
/// memory) or no such cluster can be resident; else resident clusters walking the rows (or, with
/// `grid_rows`, one cluster per row) and the step's fields (threads, cluster size, lag).
fn staged_step(
    t: &Tuning,
    d: &DeviceFacts,
    occ: &dyn Occupancy,
    k: Kernel,
    rc: ClusterConfig,
    c: &FwdCall,
    grid_rows: bool,
) -> Result<Option<(Step, Fields)>> {
    let dt = c.dtypes.x;
    if rc.t > k.max_threads || rc.c == 0 || rc.c > 16 {
        return Ok(None);
    }
    let Some(smem) = staged_smem(dt, c.n, rc.c, rc.t, c.residual) else { return Ok(None) };
    if smem > d.dyn_smem_max.get(k.index).copied().unwrap_or(0) {
        return Ok(None);
    }
    let cap = occ.max_active_clusters(k, rc.c, rc.t, smem as u32)?;
    if cap == 0 {
        return Ok(None);
    }
    let clusters = if grid_rows { (c.m as u64).min(MAX_GRID / rc.c as u64) } else { (c.m as u64).min(cap as u64) };
    let grid = cluster_grid(clusters as u32, rc.c)?;
    let lag = staged_lag(t, dt, c.n, rc.c, rc.t);
    // The L2 prefetch (ClusterTuning::staged_pf_res / staged_pf_ln, for the kernels that carry
    // it; the fields stay 0 elsewhere).
    let (pf, pfd) = match t.cluster.staged_pf.unwrap_or((staged_pf(t, k.key), 1)) {
        (0, _) => (0, 0),
        (s, d) => (s as i32, d as i32),
    };
    let fields = Fields { group: rc.t as i32, rpc: rc.c as i32, lag, pf, pfd, ..Fields::default() };
    Ok(Some((Step { kernel: k, grid: (grid, 1), block: rc.t, smem: smem as u32, mode: Mode::Cluster(rc.c), group: None }, fields)))
}

// ---------------------------------------------------------------------------------------------
// Backward

/// The workspace bound of `CudaBackend`'s docs for calls of at most `m` rows of at most `n`
/// columns on a device of `sms` multiprocessors, whatever the op and dtypes:
/// `max(1 MiB, 8·M·(⌈N/8192⌉ + 1) + 8·N·min(M, 32·S) + 768)` (statistics of the split path;
/// two fp32 partial rows per resident CTA, at most 32 per SM; the 256-byte alignment of three
/// regions), saturating. The planner's every launch stays within it (tested below over a grid
/// of shapes, dtypes and ops).
pub fn workspace_bound(m: usize, n: usize, sms: usize) -> usize {
    let stats = m.saturating_mul(n.div_ceil(8192).saturating_add(1)).saturating_mul(8);
    let parts = n.saturating_mul(m.min(sms.saturating_mul(32))).saturating_mul(8);
    stats.saturating_add(parts).saturating_add(768).max(1 << 20)
}

/// Workspace of the paths that keep only partial rows: `[dW parts | dB parts]`.
fn parts_workspace(c: &BwdCall, part_bytes: usize, bytes: usize) -> Workspace {
    Workspace { bytes, stats: None, dw: 0, db: if c.dw { align256(part_bytes) as u64 } else { 0 }, q: None }
}

/// Plans a backward call. The number of partial rows may depend on M and the device: it only
/// decides how dW is cut into partials; the same inputs on the same device give the same bits.
pub fn backward(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &BwdCall) -> Result<Launch> {
    let dts = &c.dtypes;
    let nacc = c.nacc();
    let n = c.n;
    let m = c.m as u64;
    let dt = dts.x;
    let all16 = dt != DType::F32 && dts.y != DType::F32 && (!c.weight || dts.weight != DType::F32);
    let slot = if all16 { 16 } else { 32 };
    // 16-byte layouts, every tensor in x's dtype, dB only for LayerNorm.
    let uniform = c.aligned && dts.y == dt && (!c.weight || dts.weight == dt) && (c.ln || !c.db);
    if let Some(l) = backward_small(t, d, occ, c, uniform)? {
        return Ok(l);
    }
    if let Some(l) = backward_rows(t, d, occ, c, uniform)? {
        return Ok(l);
    }
    if let Some(l) = backward_register(t, d, occ, c, uniform)? {
        return Ok(l);
    }
    if let Some(l) = backward_cluster(t, d, occ, c)? {
        return Ok(l);
    }
    let (aligned, narrow) = (c.aligned, c.aligned && all16);
    let row_kernel = require(KernelKey::BwdRow { aligned, narrow })?;
    let staged = 2 + usize::from(c.d_residual);
    let row = tuning::pick(&t.bwd, n)
        .map(|rc| (rc, bwd_row_smem(rc, n, slot, usize::from(c.weight), staged, nacc)))
        .filter(|&(_, smem)| smem <= d.row_smem_limit);
    // The grid and the workspace: [split stats | dW parts | dB parts].
    let (parts, stats_bytes, s) = match row {
        Some((rc, smem)) if m > 0 => {
            let blocks = persistent_blocks(d, occ, row_kernel, rc.group * rc.rows_per_cta, smem, m.div_ceil(rc.rows_per_cta as u64))?;
            (blocks as u64, 0usize, 0usize)
        }
        Some(_) => (0, 0, 0),
        None => {
            let s = n.div_ceil(SPLIT_CHUNK);
            let target = (d.sms * t.split_bwd_ctas_per_sm) as u64;
            let parts = if m == 0 { 0 } else { target.div_ceil(s as u64).clamp(1, m.min(65535)) };
            // Chunk partials (M·S pairs), then each row's combined (c1, c2) (M pairs).
            let stats = m.checked_mul((s as u64 + 1) * 8).and_then(|b| usize::try_from(b).ok()).ok_or_else(too_big)?;
            (parts, stats, s)
        }
    };
    let part_bytes = (parts as usize).checked_mul(n * 4).ok_or_else(too_big)?;
    let bytes = align256(stats_bytes).checked_add(align256(part_bytes) * nacc).ok_or_else(too_big)?;
    let dw_at = align256(stats_bytes) as u64;
    let ws = Workspace { bytes, stats: Some(0), dw: dw_at, db: dw_at + if c.dw { align256(part_bytes) as u64 } else { 0 }, q: None };
    let family = if row.is_some() { Family::BwdRow } else { Family::BwdSplit };
    let mut l = Launch::new(family, ws, Fields { nparts: parts as i64, nsplit: s as i64, ..Fields::default() });
    if m > 0 {
        match row {
            Some((rc, smem)) => {
                l.fields.group = rc.group as i32;
                l.fields.rpc = rc.rows_per_cta as i32;
                l.fields.slot = slot as i32;
                l.push(Step::plain(row_kernel, (to_u32(parts, "grid")?, 1), rc.group * rc.rows_per_cta, smem as u32));
            }
            None => {
                let tiles = m.checked_mul(s as u64).ok_or(NormError::Overflow { operand: Operand::X })?;
                let threads = kernels::NK_SPLIT_THREADS as u32;
                let ks = require(KernelKey::BwdSplitStats { aligned, narrow })?;
                let ka = require(KernelKey::BwdSplitApply { aligned, narrow })?;
                l.push(Step::plain(ks, (tiles.min(MAX_GRID) as u32, 1), threads, 0));
                // One warp per row combines the row's partials once (the apply CTAs used to do
                // it serially in every CTA: H200 128×1M rms_bwd apply 699 µs).
                l.push(Step::plain(BWD_SPLIT_REDUCE, (reduce_blocks(m, threads), 1), threads, 0));
                l.push(Step::plain(ka, (to_u32(s as u64, "grid")?, to_u32(parts, "grid")?), threads, 0));
            }
        }
    }
    finalize(t, d, &mut l, n, nacc);
    Ok(l)
}

/// Row-batch backward (kernels-cuda/rows.cuh): 16-bit rows of 512 < N ≤ 2048 in 16-byte layouts,
/// every batch size. A group of G = 128 (N ≤ 1024) or 256 threads (compile-time) takes 4 rows at
/// a time, one chunk of each per thread, so four rows' loads are in flight per group; one
/// partial dW/dB row per CTA, summed by the finalize — a programmatic dependent launch, set up
/// while the row kernel's CTAs finish. Both kernels wait for their predecessor in the stream
/// (griddepcontrol.wait) before touching memory.
fn backward_rows(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &BwdCall, uniform: bool) -> Result<Option<Launch>> {
    let r = &t.rows;
    let dt = c.dtypes.x;
    if !r.on || !uniform || dt == DType::F32 || c.m == 0 || c.n <= r.min_n || c.n > r.max_n {
        return Ok(None);
    }
    // The group size is compile-time, one chunk per thread: 128 threads to N = 1024, 256 (`g256`)
    // to 2048.
    let g = if c.n <= 1024 { RowsGroup::G128 } else { RowsGroup::G256 };
    let group = g.threads();
    let key = KernelKey::BwdRows { dtype: kdt(dt)?, ln: c.ln, residual: c.d_residual, rows: ROWS, group: g };
    let Some(k) = kernels::lookup(key) else {
        return Ok(None);
    };
    let rpc = r.rpc.unwrap_or(r.cta_threads / group).min(k.max_threads / group).max(1);
    let block = group * rpc;
    let smem = if rpc > 1 { 2 * rpc as usize * c.n * 4 } else { 0 };
    if smem > d.dyn_smem_max[k.index] {
        return Ok(None);
    }
    let batches = (c.m as u64).div_ceil(ROWS as u64).div_ceil(rpc as u64);
    let mut parts = persistent_blocks(d, occ, k, block, smem, batches)? as u64;
    if let Some(cap) = t.bwd_ctas_per_sm {
        parts = parts.min(d.sms as u64 * cap as u64).max(1);
    }
    let part_bytes = (parts as usize).checked_mul(c.n * 4).ok_or_else(too_big)?;
    let bytes = align256(part_bytes) * c.nacc();
    let fields = Fields { group: group as i32, rpc: rpc as i32, nparts: parts as i64, ..Fields::default() };
    let mut l = Launch::new(Family::BwdRowsBatch, parts_workspace(c, part_bytes, bytes), fields);
    l.push(Step::dependent(t.pdl, k, parts as u32, block, smem as u32));
    finalize(t, d, &mut l, c.n, c.nacc());
    Ok(Some(l))
}

/// The register-resident backward (16-byte layouts, every tensor in x's dtype, dB only for
/// LayerNorm): 1, 2 or 4 chunks per thread (their own tables), the dW/dB partials in registers
/// of a persistent grid; the prefetching twins where their buffers fit.
fn backward_register(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &BwdCall, uniform: bool) -> Result<Option<Launch>> {
    let dt = c.dtypes.x;
    let n = c.n;
    let m = c.m as u64;
    // Tables: 2 chunks per thread to N = 2048, then 4 chunks per thread for 16-bit dtypes to
    // N = 16384; f32 keeps 2 chunks to `bwd_k1_above` (4096), then 1 chunk per thread (groups up
    // to 1024) to N = 8192 (Tuning::bwd_reg_16bit_max_n, Tuning::bwd_reg_f32_max_n).
    let Some(kd) = Dt::of(dt) else { return Ok(None) };
    let reg = bwd_reg_table(t, dt, c.m, n).filter(|_| uniform);
    let reg = reg.and_then(|(rc, chunks)| {
        let k_per_thread = n.div_ceil(8).div_ceil(rc.group as usize);
        let block = rc.group * rc.rows_per_cta;
        let red = if rc.rows_per_cta > 1 { rc.rows_per_cta as usize * n * 4 } else { 0 };
        let key = |prefetch| KernelKey::BwdReg { dtype: kd, ln: c.ln, residual: c.d_residual, chunks, prefetch };
        // The prefetching twin: two buffers of x, dy (and d_residual_out) × K chunks × 16
        // bytes (32 for f32) per thread, then the weight + offset in fp32 (32 bytes a chunk),
        // sharing the dynamic shared memory with the group reduction (used after the last row).
        // Where the weight's slots do not fit (N = 16384 with d_residual_out: 256 KiB), the
        // kernel reads the weight from global memory instead (NK_F_WGLOBAL; only the kernels
        // with d_residual_out have that variant).
        let res = c.d_residual;
        let row_slots = 2 * (2 + usize::from(res)) * if dt == DType::F32 { 32 } else { 16 };
        let w_slots = if c.weight { 32 } else { 0 };
        let fits = |k: Kernel, smem: usize| block <= k.max_threads && smem <= d.dyn_smem_max[k.index];
        let prefetch = t.bwd_reg_prefetch && (dt != DType::F32 || t.bwd_reg_prefetch_f32);
        let pf = prefetch.then(|| kernels::lookup(key(true))).flatten().and_then(|k| {
            [(row_slots + w_slots, false), (row_slots, true)]
                .into_iter()
                .filter(|&(_, wglobal)| !wglobal || res)
                .map(|(bytes, wglobal)| ((bytes * k_per_thread * block as usize).max(red), wglobal))
                .find(|&(smem, _)| fits(k, smem))
                .map(|(smem, wglobal)| (k, smem, wglobal))
        });
        pf.or_else(|| kernels::lookup(key(false)).map(|k| (k, red, false)))
            .filter(|&(k, smem, _)| fits(k, smem))
            .map(|(k, smem, wglobal)| (rc, k, smem, wglobal))
    });
    let Some((rc, k, smem, wglobal)) = reg else { return Ok(None) };
    let block = rc.group * rc.rows_per_cta;
    let mut parts = if m == 0 { 0 } else { persistent_blocks(d, occ, k, block, smem, m.div_ceil(rc.rows_per_cta as u64))? as u64 };
    // 16-bit rows past N = 2048 with dW or dB: CTAs per SM by rows per SM (Tuning::bwd_reg4_caps;
    // measured with partial rows only).
    let cap = t.bwd_ctas_per_sm.or_else(|| {
        let per_sm = (m as usize).div_ceil(d.sms.max(1) as usize);
        (bwd_reg4_row(t, dt, n) && c.nacc() > 0).then(|| t.bwd_reg4_caps.iter().find(|&&(r, _)| per_sm <= r).map(|&(_, c)| c)).flatten()
    });
    if let Some(cap) = cap {
        parts = parts.min(d.sms as u64 * cap as u64).max(u64::from(m > 0));
    }
    let part_bytes = (parts as usize).checked_mul(n * 4).ok_or_else(too_big)?;
    let bytes = align256(part_bytes) * c.nacc();
    let fields = Fields { group: rc.group as i32, rpc: rc.rows_per_cta as i32, nparts: parts as i64, wglobal, ..Fields::default() };
    let mut l = Launch::new(Family::BwdRegister, parts_workspace(c, part_bytes, bytes), fields);
    if m > 0 {
        l.push(Step::plain(k, (to_u32(parts, "grid")?, 1), block, smem as u32));
    }
    finalize(t, d, &mut l, n, c.nacc());
    Ok(Some(l))
}

/// Whether a backward row takes the 16-bit 4-chunk tables (16-bit x past
/// [`Tuning::bwd_reg_16bit_max_n`]): [`Tuning::bwd_reg4`], [`Tuning::bwd_reg4_few`] and
/// [`Tuning::bwd_reg4_caps`] apply to these rows.
fn bwd_reg4_row(t: &Tuning, dt: DType, n: usize) -> bool {
    dt != DType::F32 && n > t.bwd_reg_16bit_max_n
}

/// The register table and its chunks per thread for a backward call of M rows of N (the
/// register path's choice: 2 chunks per thread to N = 2048, then 4 for 16-bit dtypes — or, for
/// at most [`Tuning::bwd_reg4_few_max_m`] rows, [`Tuning::bwd_reg4_few`]'s rows first; f32 2
/// then 1).
fn bwd_reg_table(t: &Tuning, dt: DType, m: usize, n: usize) -> Option<(tuning::RowConfig, BwdChunks)> {
    let rc = if dt == DType::F32 {
        tuning::pick(if n <= t.bwd_k1_above.min(t.bwd_reg_f32_max_n) { &t.bwd_reg } else { &t.bwd_reg1 }, n)
    } else if !bwd_reg4_row(t, dt, n) {
        tuning::pick(&t.bwd_reg, n)
    } else {
        (m <= t.bwd_reg4_few_max_m).then(|| tuning::pick(&t.bwd_reg4_few, n)).flatten().or_else(|| tuning::pick(&t.bwd_reg4, n))
    }?;
    let chunks = match n.div_ceil(8).div_ceil(rc.group as usize) {
        1 => BwdChunks::K1,
        2 => BwdChunks::K2,
        3 | 4 => BwdChunks::K4,
        _ => return None,
    };
    Some((rc, chunks))
}

/// A few rows (M ≤ [`Tuning::bwd_small_max_m`], 1024 by default; sm_90+, the register path's
/// layouts): the register kernel's twin (`nk_bwd_sm*`) with the register table's group, a
/// programmatic dependent that triggers its successor at entry; ⌈M / R⌉ CTAs walking R rows each
/// ([`Tuning::bwd_small_walk`]). One CTA (M ≤ R): it writes dW/dB itself, no workspace, no
/// finalize. More: each CTA's rows are a partial dW/dB row and the finalize, a programmatic
/// dependent too, adds them in CTA order (the register path's bits on as many CTAs). Within
/// [`Tuning::bwd_small_cols`] the column CTAs of [`backward_small_cols`] come first.
fn backward_small(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &BwdCall, uniform: bool) -> Result<Option<Launch>> {
    let m = c.m;
    if !uniform || m == 0 || m > t.bwd_small_max_m || d.cc_major < 9 || (c.dtypes.x == DType::F32 && m > t.bwd_small_f32_max_m) {
        return Ok(None);
    }
    // Where the row-batch backward applies (backward_rows), it keeps the larger batches.
    let r = &t.rows;
    if m > t.bwd_small_rows_max_m && r.on && c.dtypes.x != DType::F32 && c.n > r.min_n && c.n <= r.max_n {
        return Ok(None);
    }
    let Some(dtype) = Dt::of(c.dtypes.x) else { return Ok(None) };
    // No one-chunk twins (f32 rows past N = 4096 spill at their 1024-thread bound; 16-bit rows of
    // at most 8 elements): those take the general path.
    let Some((rc, chunks)) = bwd_reg_table(t, c.dtypes.x, c.m, c.n).filter(|&(_, k)| k != BwdChunks::K1) else { return Ok(None) };
    let key = KernelKey::BwdSmall { dtype, ln: c.ln, residual: c.d_residual, chunks };
    let Some(k) = kernels::lookup(key) else { return Ok(None) };
    if rc.group > k.max_threads {
        return Ok(None);
    }
    if let Some(l) = backward_small_cols(t, d, occ, c, dtype, chunks, rc.group)? {
        return Ok(Some(l));
    }
    // Rows per CTA (Tuning::bwd_small_walk): CTA b walks rows b, b + P, .. of the grid's P and
    // leaves their sum, in row order, as partial row b.
    // R = 0: ⌈M / SMs⌉, about one CTA per SM.
    let walk = match tuning::by_m(&t.bwd_small_walk, m) {
        Some(0) => m.div_ceil(d.sms.max(1) as usize),
        Some(r) => r as usize,
        None => 1,
    };
    let blocks = m.div_ceil(walk);
    // One CTA (M ≤ R): it writes dW/dB itself, 0 + its sum, the finalize's bits for one part.
    let parts = if blocks > 1 && c.nacc() > 0 { blocks } else { 0 };
    let part_bytes = parts.checked_mul(c.n * 4).ok_or_else(too_big)?;
    let ws = if parts > 0 { parts_workspace(c, part_bytes, align256(part_bytes) * c.nacc()) } else { Workspace::default() };
    let mut fields = Fields { group: rc.group as i32, rpc: 1, nparts: parts as i64, ..Fields::default() };
    // Tuning::bwd_twin_cap_auto: padded to its own share of an SM (with PDL).
    let step = share_of_sm(d, occ, trigger_step(t, &mut fields, k, to_u32(blocks as u64, "grid")?, rc.group), t.bwd_twin_cap_auto)?;
    let mut l = Launch::new(Family::BwdSmall, ws, fields);
    l.push(step);
    if parts > 0 {
        finalize(t, d, &mut l, c.n, c.nacc());
    }
    Ok(Some(l))
}

/// The twin with column CTAs in one launch ([`Tuning::bwd_small_cols`], at most
/// [`Tuning::bwd_small_cols_max_elems`] elements, 16-bit, dW or dB wanted):
/// CTAs 0 .. M − 1 write a row's dx each (`nsplit` = M), the ⌈chunks / CB⌉ after them dW/dB of CB
/// 8-element chunks each from x, dy and the statistics, RP = `slot` lanes per chunk adding rows
/// in row order, then the lanes in lane order (kernels-common nk_reg.cuh `bwd_cols`): no
/// workspace, no finalize. RP: the power of two at or above M / [`Tuning::bwd_small_cols_rows`],
/// at most the block. Not in place (dx over dy): a column CTA reads every row's dy, which the
/// row CTAs of the same launch overwrite (a run on an H200 read dx back into dB:
/// bench/results/nvidia-h200-2026-11-28/rowq/call13/tests.log).
fn backward_small_cols(
    t: &Tuning,
    d: &DeviceFacts,
    occ: &dyn Occupancy,
    c: &BwdCall,
    dtype: Dt,
    chunks: BwdChunks,
    block: u32,
) -> Result<Option<Launch>> {
    let m = c.m;
    // 16-bit only (kernels-cuda/variants.rs has no f32 column kernels).
    let in_range = t.bwd_small_cols.is_some_and(|(lo, hi)| (lo..=hi).contains(&m)) && m.saturating_mul(c.n) <= t.bwd_small_cols_max_elems;
    if !in_range || c.nacc() == 0 || !block.is_power_of_two() || dtype == Dt::F32 || c.in_place {
        return Ok(None);
    }
    let Some(k) = kernels::lookup(KernelKey::BwdSmallCols { dtype, ln: c.ln, residual: c.d_residual, chunks }) else { return Ok(None) };
    if block > k.max_threads {
        return Ok(None);
    }
    let per_lane = tuning::by_m(&t.bwd_small_cols_rows, m).map_or(1, |r| r.max(1));
    let rp = (m.div_ceil(per_lane).next_power_of_two() as u32).min(block);
    let cb = (block / rp) as usize;
    let col_ctas = c.n.div_ceil(8).div_ceil(cb);
    let blocks = to_u32((m + col_ctas) as u64, "grid")?;
    let smem = if rp > 1 { block * 8 * 4 } else { 0 };
    let mut fields = Fields { group: block as i32, rpc: 1, slot: rp as i32, nsplit: m as i64, ..Fields::default() };
    // Tuning::bwd_twin_cap_auto, as the twin alone.
    let step = share_of_sm(d, occ, Step { smem, ..trigger_step(t, &mut fields, k, blocks, block) }, t.bwd_twin_cap_auto)?;
    let mut l = Launch::new(Family::BwdSmall, Workspace::default(), fields);
    l.push(step);
    Ok(Some(l))
}

/// Cluster backward (sm_90+): 16-byte layouts only (it needs determinism, not layout
/// invariance); dW/dB partials per cluster, summed by the finalize in a fixed order.
fn backward_cluster(t: &Tuning, d: &DeviceFacts, occ: &dyn Occupancy, c: &BwdCall) -> Result<Option<Launch>> {
    let dt = c.dtypes.x;
    let nacc = c.nacc();
    if d.cc_major < 9 || c.m == 0 || !c.aligned || c.dtypes.y != dt || (c.weight && c.dtypes.weight != dt) || (!c.ln && c.db) {
        return Ok(None);
    }
    let n = c.n;
    let res = c.d_residual;
    let Some(rc) = backward_cluster_config(t, dt, n, c.ln, res) else { return Ok(None) };
    let kk = n.div_ceil(8).div_ceil((rc.c * rc.t) as usize);
    // 16-bit LayerNorm, and RMSNorm above 256 threads: the prefetching twin (`nk_bwd_clp_*`,
    // register accumulators) where its two row buffers and the fp32 weight slots fit in
    // shared memory; else dW/dB in registers up to 256 threads, in shared memory (`cls`) at
    // 512. RMSNorm at 256 threads keeps the plain kernel (two CTAs per SM; kernels-cuda/variants.rs).
    let pf_smem = (2 * (2 + res as usize) * 16 + if c.weight { 32 } else { 0 }) * kk * rc.t as usize;
    // The RMSNorm twin exists without d_residual_out only (kernels-cuda/variants.rs: `nk_bwd_clp_*_rms`);
    // with it, RMSNorm keeps the shared-memory kernel (`cls`). Before 2026-11-24 the planner
    // asked for `nk_bwd_clp_*_rms_res` at 131072 < N ≤ 262144 and the call failed.
    let pf = (c.ln || (rc.t > t.cluster.prefetch_rms_above_threads && !res))
        && dt != DType::F32
        && t.cluster.prefetch
        && pf_smem <= d.row_smem_limit;
    let sacc = !pf && rc.t > CLUSTER_REG_THREADS;
    let k = require(KernelKey::BwdCluster { dtype: kdt(dt)?, ln: c.ln, residual: res, shared_acc: sacc, prefetch: pf })?;
    if rc.t > k.max_threads {
        return Ok(None);
    }
    let smem = if pf {
        pf_smem
    } else if sacc {
        // Shared-memory accumulators: nacc × K·8·T floats.
        nacc * kk * 8 * rc.t as usize * 4
    } else {
        0
    } as u32;
    if smem as usize > d.row_smem_limit {
        return Ok(None);
    }
    let cap = occ.max_active_clusters(k, rc.c, rc.t, smem)?;
    if cap == 0 {
        return Ok(None);
    }
    let clusters = (c.m as u64).min(cap as u64);
    let part_bytes = (clusters as usize).checked_mul(n * 4).ok_or_else(too_big)?;
    let bytes = align256(part_bytes).checked_mul(nacc).ok_or_else(too_big)?;
    let grid = cluster_grid(clusters as u32, rc.c)?;
    let fields = Fields { group: rc.t as i32, rpc: rc.c as i32, nparts: clusters as i64, ..Fields::default() };
    let mut l = Launch::new(Family::BwdCluster, parts_workspace(c, part_bytes, bytes), fields);
    l.push(Step { kernel: k, grid: (grid, 1), block: rc.t, smem, mode: Mode::Cluster(rc.c), group: None });
    finalize(t, d, &mut l, n, nacc);
    Ok(Some(l))
}

/// Appends the finalize: dW/dB from the partial rows (a fixed order: bitwise repeatable).
fn finalize(t: &Tuning, d: &DeviceFacts, l: &mut Launch, n: usize, nacc: usize) {
    let nparts = l.fields.nparts;
    if nacc > 0 && (nparts <= t.fin_cols_parts || (nparts <= t.fin_cols_max && n >= t.fin_cols_min_n)) {
        // Few parts: one column per thread, where its grid still covers the device.
        let k = FINALIZE_COLS;
        let blocks = (n as u64).div_ceil(k.max_threads as u64).min(MAX_GRID) as u32;
        l.push(Step::dependent(t.pdl, k, blocks, k.max_threads, 0));
    } else if nacc > 0 {
        // Columns per CTA: 32, or 16 / 8 where N / 32 CTAs would leave the device half empty.
        let cols = [32u64, 16, 8].into_iter().find(|&c| (n as u64).div_ceil(c) >= t.fin_wide_min_ctas_per_sm * d.sms as u64).unwrap_or(8);
        let blocks = (n as u64).div_ceil(cols).min(MAX_GRID) as u32;
        let k = FINALIZE_WIDE;
        // About four parts per lane: the warp count follows the number of parts.
        let per_warp = t.fin_wide_parts_per_lane * (kernels::NK_WARP_WIDTH as u64 / cols);
        let warps = (nparts.max(0) as u64).div_ceil(per_warp).clamp(1, (k.max_threads / kernels::NK_WARP_WIDTH as u32) as u64);
        let mut s = Step::dependent(t.pdl, k, blocks, warps as u32 * kernels::NK_WARP_WIDTH as u32, 0);
        s.group = Some(cols as i32);
        l.push(s);
    }
}

#[cfg(test)]
mod tests {
    //! The path boundaries as they were before the planner was pulled out of lib.rs, cluster.rs
    //! and rows.rs (expectations derived from that code by hand, on H100 facts and a fake
    //! occupancy), and a walk over every reachable plan checking the kernels it names exist.

    use normkit_core::DTypes;
    use normkit_gpu_host::Fp8Info;
    use std::collections::BTreeSet;

    use super::*;
    use crate::tuning::{RowConfig, TwinTuning};

    const OPTIN: usize = 232448; // 227 KiB per block, opt-in (H100)
    const SM_SMEM: usize = 233472; // 228 KiB per SM

    /// H100 SXM: 132 SMs, 227 KiB of shared memory per block (opt-in); each kernel's dynamic
    /// limit is the opt-in less its static shared memory, as start-up computes it (static sizes
    /// from the kernel sources: row kernels' scratch 128 / 256 bytes, register kernels' 256 /
    /// 512, quantised register kernels' 1792, row-batch 2048; other kernels keep the 48 KiB
    /// default).
    fn h100() -> DeviceFacts {
        let row_limit = OPTIN - 256;
        let dyn_smem_max = kernels::ALL
            .iter()
            .map(|k| match k.key.family() {
                _ if !crate::startup::opts_in_dyn_smem(k)
                    && !matches!(k.key.family(), kernels::Family::FwdRow | kernels::Family::BwdRow) =>
                {
                    48 * 1024
                }
                kernels::Family::FwdRow | kernels::Family::BwdRow => row_limit,
                kernels::Family::FwdReg => OPTIN - 256,
                kernels::Family::BwdReg => OPTIN - 512,
                kernels::Family::BwdRows => OPTIN - 2048,
                kernels::Family::FwdQRow => OPTIN - 2048,
                // The quantised register kernels' scratch, exchange and amax words (sm_90a: 1792).
                kernels::Family::FwdRegQ => OPTIN - 1792,
                // The staged cluster forward's static scratch, partials and barriers.
                kernels::Family::FwdCluster => OPTIN - 1024,
                _ => 48 * 1024,
            })
            .collect();
        DeviceFacts { sms: 132, cc_major: 9, row_smem_limit: row_limit, dyn_smem_max }
    }

    /// Occupancy from thread and shared-memory limits only (2048 threads, 32 CTAs and 228 KiB
    /// per SM); clusters: the device's CTAs of that shape divided by the cluster size.
    struct FakeOcc {
        sms: u32,
        clusters: bool,
    }

    fn per_sm(block: u32, smem: usize) -> u32 {
        let by_smem = SM_SMEM.checked_div(smem).map_or(32, |b| b as u32);
        32.min(2048 / block).min(by_smem)
    }

    impl Occupancy for FakeOcc {
        fn blocks_per_sm(&self, k: Kernel, block: u32, smem: usize) -> Result<u32> {
            // The forward twins are register-bound, as measured on sm_90a (~90 of 64K registers
            // per thread): 5 CTAs of 128 threads, 2 of 256.
            if k.name.starts_with("nk_fwd_regd_") {
                return Ok((65536 / (96 * block)).clamp(1, per_sm(block, smem)));
            }
            // The 8-chunk twins: 128 (RMSNorm) and 168 (LayerNorm) registers.
            if k.name.starts_with("nk_fwd_regd8_") {
                let regs = if k.name.contains("_ln") { 168 } else { 128 };
                return Ok((65536 / (regs * block)).clamp(1, per_sm(block, smem)));
            }
            // The quantised twins: 120-125 registers (sm_90a, RMSNorm), 4 CTAs of 128 threads.
            if k.name.starts_with("nk_fwd_regqd") {
                return Ok((65536 / (128 * block)).clamp(1, per_sm(block, smem)));
            }
            Ok(per_sm(block, smem))
        }
        fn max_active_clusters(&self, _k: Kernel, c: u32, t: u32, smem: u32) -> Result<u32> {
            Ok(if self.clusters { self.sms * per_sm(t, smem as usize) / c } else { 0 })
        }
    }

    const OCC: FakeOcc = FakeOcc { sms: 132, clusters: true };

    fn fwd(dt: DType, n: usize, m: usize) -> FwdCall {
        FwdCall {
            m,
            n,
            dtypes: DTypes::uniform(dt),
            ln: false,
            gemma: true,
            residual: false,
            weight: true,
            bias: false,
            aligned: true,
            fp8: None,
        }
    }
    fn bwd(dt: DType, n: usize, m: usize) -> BwdCall {
        BwdCall {
            m,
            n,
            dtypes: DTypes::uniform(dt),
            ln: false,
            d_residual: false,
            weight: true,
            dw: true,
            db: false,
            aligned: true,
            in_place: false,
        }
    }
    fn ln_fwd(c: FwdCall) -> FwdCall {
        FwdCall { ln: true, bias: true, ..c }
    }
    fn ln_bwd(c: BwdCall) -> BwdCall {
        BwdCall { ln: true, db: true, ..c }
    }

    /// One expected launch: kernel, grid, block, smem, mode, group override.
    type S = (&'static str, (u32, u32), u32, u32, Mode, Option<i32>);

    const P: Mode = Mode::Plain;
    const D: Mode = Mode::Pdl;
    fn cl(c: u32) -> Mode {
        Mode::Cluster(c)
    }

    fn ws(bytes: usize, stats: Option<u64>, dw: u64, db: u64) -> Workspace {
        Workspace { bytes, stats, dw, db, q: None }
    }
    fn f(group: i32, rpc: i32, slot: i32, nparts: i64, nsplit: i64) -> Fields {
        Fields { group, rpc, slot, nparts, nsplit, ..Fields::default() }
    }

    fn check(what: &str, l: Launch, family: Family, steps: &[S], w: Workspace, fields: Fields) {
        let got: Vec<S> = l.steps().map(|s| (s.kernel.name, s.grid, s.block, s.smem, s.mode, s.group)).collect();
        assert_eq!((l.family, got.as_slice(), l.workspace, l.fields), (family, steps, w, fields), "{what}");
    }

    /// Hopper's tables without the forward rules that take calls by N and M from the table's
    /// kernels (the 8-chunk row at N = 16384, LayerNorm's one barrier, the f32 three-CTA build,
    /// the half-thread rows, rows per CTA, the L2 prefetch; each has its own test): the paths
    /// below them.
    fn sm90_without_rules() -> Tuning {
        Tuning {
            fwd_k8_wide: None,
            fwd_ln_one_barrier: None,
            fwd_f32_ctas3: Vec::new(),
            fwd_half: Vec::new(),
            fwd_rpc: Vec::new(),
            fwd_l2_ahead: Vec::new(),
            ..Tuning::for_sm90()
        }
    }

    /// The rules off by environment give [`sm90_without_rules`] with no per-row FP8 prefetch:
    /// the H100's tables before 2026-12-06, the `old` side of
    /// bench/results/nvidia-h100-2026-12-06/h100t/call2.
    #[test]
    fn hopper_rules_off_by_environment() {
        let old = [
            ("NORMKIT_CUDA_FWD_K8W", "off"),
            ("NORMKIT_CUDA_FWD_LN1B", "off"),
            ("NORMKIT_CUDA_FWD_F32_O3", "off"),
            ("NORMKIT_CUDA_FWD_HALF", "off"),
            ("NORMKIT_CUDA_FWD_RPC", "off"),
            ("NORMKIT_CUDA_FWD_L2PF", "off"),
            ("NORMKIT_CUDA_FP8_ROW_L2PF", "0"),
        ];
        let t = Tuning::for_sm90().with_env(|k| old.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()));
        let mut want = sm90_without_rules();
        want.fp8.row_l2_ahead = 0;
        assert_eq!(t, want);
    }

    fn plan_fwd(t: &Tuning, c: FwdCall) -> Launch {
        forward(t, &h100(), &OCC, &c).unwrap()
    }
    fn plan_bwd(t: &Tuning, c: BwdCall) -> Launch {
        backward(t, &h100(), &OCC, &c).unwrap()
    }

    #[test]
    fn forward_paths_as_before() {
        use DType::*;
        use Family::*;
        // The paths before the staged cluster forward (still there with it off, and below its N),
        // and the twin on decode-sized grids only, as before its wider rules (forward_twin_rules).
        let mut t = sm90_without_rules();
        t.cluster.staged = false;
        // The split path past the cluster kernels (forward_reread_plan tests the re-reading one).
        t.cluster.reread = None;
        t.fwd_decode_max_ctas = Some(132);
        // No padding of the twin's CTAs (forward_pair_by_op_and_grid tests it).
        t.fwd_twin_cap_auto = 0;
        let none = Workspace::default();
        // Register-resident: 4 chunks per thread, one CTA per rows_per_cta rows.
        check(
            "F1 bf16 4096",
            plan_fwd(&t, fwd(BF16, 4096, 4096)),
            FwdRegister,
            &[("nk_fwd_reg_bf16_rms_a", (4096, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        check(
            "F8 unaligned",
            plan_fwd(&t, FwdCall { aligned: false, ..fwd(BF16, 4096, 4096) }),
            FwdRegister,
            &[("nk_fwd_reg_bf16_rms_u", (4096, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        // 8 chunks per thread: bf16 RMSNorm at 65536 (1024-thread groups).
        check(
            "F2 bf16 65536 k8",
            plan_fwd(&t, fwd(BF16, 65536, 2048)),
            FwdRegister,
            &[("nk_fwd_reg8_bf16_rms_a", (2048, 1), 1024, 0, P, None)],
            none,
            f(1024, 1, 16, 0, 0),
        );
        // f32: 512 threads at most in the register kernels.
        check(
            "F5 f32 16384",
            plan_fwd(&t, fwd(F32, 16384, 100)),
            FwdRegister,
            &[("nk_fwd_reg_f32_rms_a", (100, 1), 512, 0, P, None)],
            none,
            f(512, 1, 32, 0, 0),
        );
        check(
            "F7 residual 8192",
            plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 8192, 64) }),
            FwdRegister,
            &[("nk_fwd_regd_bf16_rms_res", (64, 1), 256, 0, D, None)],
            none,
            Fields { trigger: true, ..f(256, 1, 16, 0, 0) },
        );
        // Staged row kernel (Llama casting or mixed dtypes), persistent grid: 14 CTAs per SM by
        // shared memory (16 KiB) → 1848; 7 per SM at 32 KiB → 924.
        check(
            "F9 llama 4096",
            plan_fwd(&t, FwdCall { gemma: false, ..fwd(BF16, 4096, 4096) }),
            FwdRow,
            &[("nk_fwd_row_ah", (1848, 1), 128, 16384, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        check(
            "F15 y f32",
            plan_fwd(&t, FwdCall { dtypes: DTypes { y: F32, ..DTypes::uniform(BF16) }, ..fwd(BF16, 4096, 4096) }),
            FwdRow,
            &[("nk_fwd_row_a", (924, 1), 128, 32768, P, None)],
            none,
            f(128, 1, 32, 0, 0),
        );
        // Cluster kernels: past the register/row paths, up to the caps.
        check(
            "F3 ln 65536",
            plan_fwd(&t, ln_fwd(fwd(BF16, 65536, 2048))),
            FwdCluster,
            &[("nk_fwd_cl_bf16_ln_a", (1056, 1), 256, 0, cl(4), None)],
            none,
            f(256, 4, 0, 0, 0),
        );
        check(
            "F6 f32 32768",
            plan_fwd(&t, fwd(F32, 32768, 100)),
            FwdCluster,
            &[("nk_fwd_cl_f32_rms_a", (400, 1), 256, 0, cl(4), None)],
            none,
            f(256, 4, 0, 0, 0),
        );
        check(
            "F19 f32 65536",
            plan_fwd(&t, fwd(F32, 65536, 4)),
            FwdCluster,
            &[("nk_fwd_cl_f32_rms_a", (32, 1), 256, 0, cl(8), None)],
            none,
            f(256, 8, 0, 0, 0),
        );
        check(
            "F12 bf16 262144",
            plan_fwd(&t, fwd(BF16, 262144, 4)),
            FwdCluster,
            &[("nk_fwd_cl_bf16_rms_a", (64, 1), 256, 0, cl(16), None)],
            none,
            f(256, 16, 0, 0, 0),
        );
        check(
            "F20 residual 131072",
            plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 131072, 4) }),
            FwdCluster,
            &[("nk_fwd_cl_bf16_rms_res_a", (32, 1), 256, 0, cl(8), None)],
            none,
            f(256, 8, 0, 0, 0),
        );
        // Split rows: [M·S chunk pairs | M row pairs].
        let split = |s: u32, tiles: u32, reduce: u32, sfx: &str| -> Vec<S> {
            let st: &'static str = Box::leak(format!("nk_fwd_split_stats_{sfx}").into_boxed_str());
            let ap: &'static str = Box::leak(format!("nk_fwd_split_apply_pre_{sfx}").into_boxed_str());
            let _ = s;
            vec![
                (st, (tiles, 1), 256, 0, P, None),
                ("nk_fwd_split_reduce", (reduce, 1), 256, 0, P, None),
                (ap, (tiles, 1), 256, 0, P, None),
            ]
        };
        check(
            "F4 bf16 1M",
            plan_fwd(&t, fwd(BF16, 1 << 20, 8)),
            FwdSplit,
            &split(128, 1024, 1, "ah"),
            ws(8256, Some(0), 0, 0),
            f(0, 0, 0, 0, 128),
        );
        check(
            "F10 llama 65536",
            plan_fwd(&t, FwdCall { gemma: false, ..fwd(BF16, 65536, 8) }),
            FwdSplit,
            &split(8, 64, 1, "ah"),
            ws(576, Some(0), 0, 0),
            f(0, 0, 0, 0, 8),
        );
        check(
            "F11 ln 262144",
            plan_fwd(&t, ln_fwd(fwd(BF16, 262144, 4))),
            FwdSplit,
            &split(32, 128, 1, "ah"),
            ws(1056, Some(0), 0, 0),
            f(0, 0, 0, 0, 32),
        );
        check(
            "F13 bf16 524288",
            plan_fwd(&t, fwd(BF16, 524288, 4)),
            FwdSplit,
            &split(64, 256, 1, "ah"),
            ws(2080, Some(0), 0, 0),
            f(0, 0, 0, 0, 64),
        );
        check(
            "F20b residual 262144",
            plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 262144, 4) }),
            FwdSplit,
            &split(32, 128, 1, "ah"),
            ws(1056, Some(0), 0, 0),
            f(0, 0, 0, 0, 32),
        );
        // No clusters to be had: the split path.
        let l = forward(&t, &h100(), &FakeOcc { sms: 132, clusters: false }, &fwd(BF16, 262144, 4)).unwrap();
        check("F12 no clusters", l, FwdSplit, &split(32, 128, 1, "ah"), ws(1056, Some(0), 0, 0), f(0, 0, 0, 0, 32));
        // M = 0: nothing.
        check("F14 m=0", plan_fwd(&t, fwd(BF16, 4096, 0)), Empty, &[], none, Fields::default());
    }

    #[test]
    fn forward_twin_rules() {
        use DType::*;
        // TwinTuning::SM90: the twin wherever its first wave (FakeOcc: 5 CTAs of 128 threads,
        // 2 of 256 per SM, 132 SMs) holds the grid; past it, non-residual 128-thread grids:
        // RMSNorm at any size, LayerNorm up to 16 CTAs per SM (below the rules that take calls
        // from the table's kernels).
        let t = sm90_without_rules();
        let twin = |c: FwdCall| {
            let l = plan_fwd(&t, c);
            let s = l.steps().next().unwrap();
            // The twin, or the twin in pairs (Tuning::fwd_pair).
            let twin = s.kernel.name.starts_with("nk_fwd_regd_") || s.kernel.name.starts_with("nk_fwd_regp_");
            assert_eq!(l.fields.trigger, twin, "{c:?}");
            twin
        };
        let res = |c: FwdCall| FwdCall { residual: true, ..c };
        for (c, want, why) in [
            (fwd(BF16, 4096, 1), true, "one row"),
            (fwd(BF16, 4096, 4096), true, "RMSNorm, 128 threads, 4096 CTAs"),
            (fwd(F16, 4096, 32768), true, "RMSNorm, 128 threads, any grid"),
            (fwd(BF16, 512, 65536), true, "RMSNorm, N = 512 (16 × 8 rows)"),
            (ln_fwd(fwd(BF16, 4096, 2048)), true, "LayerNorm, 2048 CTAs ≤ 16 per SM"),
            (ln_fwd(fwd(BF16, 4096, 4096)), false, "LayerNorm, 4096 CTAs"),
            (res(fwd(BF16, 4096, 660)), true, "residual, one wave of the twin"),
            (res(fwd(BF16, 4096, 661)), false, "residual, a second wave"),
            (res(ln_fwd(fwd(BF16, 1024, 2048))), true, "residual LayerNorm, 512 CTAs"),
            (fwd(BF16, 2048, 1024), true, "256-thread CTAs, 256 ≤ 2 per SM"),
            (fwd(BF16, 2048, 2048), false, "256-thread CTAs, past one wave"),
            (FwdCall { aligned: false, ..fwd(BF16, 4096, 1) }, false, "element-wise layout"),
            (fwd(F32, 4096, 1), false, "f32"),
        ] {
            assert_eq!(twin(c), want, "{why}");
        }
        // HBM3e (Tuning::for_device, TwinTuning::SM90_HBM3E): RMSNorm's twin past its first
        // wave only up to 64 CTAs per SM; an H100's bandwidth keeps TwinTuning::SM90.
        assert_eq!(Tuning::for_device(9, 3350.0), Tuning::for_sm90());
        assert_eq!(Tuning::for_device(10, 4100.0), Tuning::for_sm100());
        // (Without Tuning::fwd_half, which takes some of these calls: forward_overrides_as_before.)
        let h200 = Tuning { fwd_half: Vec::new(), ..Tuning::for_device(9, 4100.0) };
        assert_eq!(h200.fwd_twin, TwinTuning::SM90_HBM3E);
        let twin_h200 = |c: FwdCall| plan_fwd(&h200, c).steps().next().unwrap().kernel.name.starts_with("nk_fwd_regd_");
        for (c, want, why) in [
            (fwd(BF16, 4096, 8448), true, "RMSNorm, 64 CTAs per SM"),
            (fwd(BF16, 4096, 8449), false, "RMSNorm, past 64 CTAs per SM"),
            (fwd(BF16, 4096, 32768), false, "RMSNorm, 248 CTAs per SM"),
            (fwd(BF16, 1024, 4096), true, "RMSNorm, N = 1024 (32 × 4 rows), 8 per SM"),
            (ln_fwd(fwd(BF16, 4096, 2048)), true, "LayerNorm as on the H100"),
            (fwd(BF16, 4096, 1), true, "one row"),
        ] {
            assert_eq!(twin_h200(c), want, "{why}");
        }
        // The override: a grid bound instead of the rules.
        let t = Tuning { fwd_decode_max_ctas: Some(0), ..Tuning::for_sm90() };
        assert!(!plan_fwd(&t, fwd(BF16, 4096, 1)).steps().next().unwrap().kernel.name.starts_with("nk_fwd_regd_"));
        let t = Tuning { fwd_decode_max_ctas: Some(1_000_000), ..Tuning::for_sm90() };
        assert!(plan_fwd(&t, ln_fwd(fwd(BF16, 4096, 32768))).steps().next().unwrap().kernel.name.starts_with("nk_fwd_regd_"));
    }

    #[test]
    fn forward_overrides_as_before() {
        use DType::*;
        use Family::*;
        // The paths before the staged cluster forward (off here; see forward_staged_paths), and
        // the twin on decode-sized grids only (see forward_twin_rules).
        let sm90 = || {
            let mut t = sm90_without_rules();
            t.cluster.staged = false;
            t.cluster.reread = None;
            t.fwd_decode_max_ctas = Some(132);
            t.fwd_twin_cap_auto = 0;
            t
        };
        let none = Workspace::default();
        // 16 chunks per thread, where a table row asks for it.
        let t = Tuning { fwd: vec![RowConfig { max_n: 4096, group: 32, rows_per_cta: 8 }], ..sm90() };
        check(
            "F16 k16",
            plan_fwd(&t, fwd(F16, 4096, 100)),
            FwdRegister,
            &[("nk_fwd_reg16_f16_rms_a", (13, 1), 256, 0, P, None)],
            none,
            f(32, 8, 16, 0, 0),
        );
        // Decode-sized register forwards (up to the multiprocessor count by default) run the
        // decode twin as programmatic dependents that trigger at entry; NORMKIT_CUDA_FWD_DECODE=0
        // keeps the plain kernel, NORMKIT_CUDA_PDL=0 launches the twin plainly.
        let t = sm90();
        for (m, k, mode, trigger) in
            [(1, "nk_fwd_regd_bf16_rms", D, true), (132, "nk_fwd_regd_bf16_rms", D, true), (133, "nk_fwd_reg_bf16_rms_a", P, false)]
        {
            check(
                "F17 decode",
                plan_fwd(&t, fwd(BF16, 4096, m)),
                FwdRegister,
                &[(k, (m as u32, 1), 128, 0, mode, None)],
                none,
                Fields { trigger, ..f(128, 1, 16, 0, 0) },
            );
        }
        check(
            "F18 decode, ln + residual",
            plan_fwd(&t, FwdCall { residual: true, ..ln_fwd(fwd(F16, 2048, 8)) }),
            FwdRegister,
            &[("nk_fwd_regd_f16_ln_res", (2, 1), 256, 0, D, None)],
            none,
            Fields { trigger: true, ..f(64, 4, 16, 0, 0) },
        );
        let off = Tuning { fwd_decode_max_ctas: Some(0), ..sm90() };
        check(
            "F19 no decode twin",
            plan_fwd(&off, fwd(BF16, 4096, 8)),
            FwdRegister,
            &[("nk_fwd_reg_bf16_rms_a", (8, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        let no_pdl = Tuning { pdl: false, ..sm90() };
        check(
            "F20 decode, no PDL",
            plan_fwd(&no_pdl, fwd(BF16, 4096, 8)),
            FwdRegister,
            &[("nk_fwd_regd_bf16_rms", (8, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        // Unaligned, f32: no twin.
        check(
            "F21 decode, unaligned",
            plan_fwd(&t, FwdCall { aligned: false, ..fwd(BF16, 4096, 8) }),
            FwdRegister,
            &[("nk_fwd_reg_bf16_rms_u", (8, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        // NORMKIT_CUDA_FWD_K8=all: LayerNorm too.
        let t = Tuning { fwd_k8_ln: true, ..sm90() };
        check(
            "F17 k8 ln",
            plan_fwd(&t, ln_fwd(fwd(BF16, 65536, 16))),
            FwdRegister,
            &[("nk_fwd_reg8_bf16_ln_a", (16, 1), 1024, 0, P, None)],
            none,
            f(1024, 1, 16, 0, 0),
        );
        // Hopper's HBM3e parts: N = 16384 in bf16 RMSNorm without the residual on 256 threads
        // of 8 chunks, at every M (so a row's bits do not depend on the batch); f16, the residual
        // and other N keep the table's row. LayerNorm there: the table's 512-thread row on the
        // half-thread kernel (256 threads of 8 chunks, the table's bits) at every M, its `_l2`
        // build from 2^25 elements (tuning::HALF_SM90_HBM3E, L2_SM90), each the one-barrier
        // build (`_1b`, Tuning::fwd_ln_one_barrier: the table's group is 512).
        let t = Tuning::for_device(9, 4800.0);
        for m in [1, 8, 1 << 20] {
            let kn = |c: FwdCall| plan_fwd(&t, c).steps().map(|s| (s.kernel.name, s.block)).next().unwrap();
            // RMSNorm's twin (`nk_fwd_regd8_*`, the same bits) at every M.
            let (ln, rms) = if m <= 8 {
                ("nk_fwd_regh_bf16_ln_1b", "nk_fwd_regd8_bf16_rms")
            } else {
                ("nk_fwd_regh_bf16_ln_l2_1b", "nk_fwd_regd8_bf16_rms")
            };
            assert_eq!(kn(ln_fwd(fwd(BF16, 16384, m))), (ln, 256), "k8w ln {m}");
            assert_eq!(kn(fwd(BF16, 16000, m)), (rms, 256), "k8w rms {m}");
            assert_ne!(kn(fwd(F16, 16384, m)).0, "nk_fwd_reg8_f16_rms_a", "k8w f16 {m}");
            assert_ne!(kn(FwdCall { residual: true, ..fwd(BF16, 16384, m) }).1, 256, "k8w res {m}");
            assert!(!kn(fwd(BF16, 8192, m)).0.starts_with("nk_fwd_reg8"), "k8w 8192 {m}");
            assert!(!kn(ln_fwd(fwd(BF16, 8192, m))).0.contains("8_"), "k8w ln 8192 {m}");
            // NORMKIT_CUDA_FWD_K8W_LN=16384:256:1 gives LayerNorm the 8-chunk rows back: its twin
            // to 2 CTAs per SM (OCC: 132 SMs), then the plain kernel (groups of 256: one barrier).
            let t8 = t.clone().with_env(|k| (k == "NORMKIT_CUDA_FWD_K8W_LN").then(|| "16384:256:1".to_owned()));
            let kn8 = |c: FwdCall| plan_fwd(&t8, c).steps().map(|s| s.kernel.name).next().unwrap();
            assert_eq!(kn8(ln_fwd(fwd(BF16, 16384, 264))), "nk_fwd_regd8_bf16_ln_1b", "k8w ln twin 264");
            assert_eq!(kn8(ln_fwd(fwd(BF16, 16384, 265))), "nk_fwd_reg8_bf16_ln_a_1b", "k8w ln twin 265");
            // NORMKIT_CUDA_FWD_K8W_LN: LayerNorm alone at N = 8192 on 128 threads of 8 chunks.
            let t = t.clone().with_env(|k| (k == "NORMKIT_CUDA_FWD_K8W_LN").then(|| "8192:128:1".to_owned()));
            let ln8 = if m <= 8 { "nk_fwd_regd8_bf16_ln" } else { "nk_fwd_reg8_bf16_ln_a" };
            let kn = |c: FwdCall| plan_fwd(&t, c).steps().map(|s| (s.kernel.name, s.block)).next().unwrap();
            assert_eq!(kn(ln_fwd(fwd(BF16, 8192, m))), (ln8, 128), "k8w ln 8192 {m}");
            assert!(!kn(fwd(BF16, 8192, m)).0.contains("8_"), "k8w ln only {m}");
            assert!(!kn(ln_fwd(fwd(BF16, 4096, m))).0.contains("8_"), "k8w ln 4096 {m}");
        }
        // Tuning::fwd_half on HBM3e (tuning::HALF_SM90_HBM3E): bf16 without the residual on half
        // the table's threads (8 chunks each, the table's group halved) — RMSNorm at N in (4096,
        // 8192] from 512 rows and in (2048, 4096] from 2048, LayerNorm at N = 8192 from 512 rows,
        // at 4096 for 2048 to 8192 rows and at 2048 for 2048 to 4096, both at N = 1024 (RMSNorm
        // in (512, 1024]) from 4096 rows and at 512 (RMSNorm in (256, 512]) from 8192; the other
        // calls keep their kernels, and the residual and f16 never take it.
        let t = Tuning::for_device(9, 4800.0);
        let kn = |t: &Tuning, c: FwdCall| plan_fwd(t, c).steps().map(|s| (s.kernel.name, s.block)).next().unwrap();
        let group = |t: &Tuning, c: FwdCall| plan_fwd(t, c).fields.group;
        let (hr, hl) = ("nk_fwd_regh_bf16_rms", "nk_fwd_regh_bf16_ln");
        assert_eq!(kn(&t, fwd(BF16, 8192, 512)), (hr, 128));
        assert_eq!(group(&t, fwd(BF16, 8192, 512)), 128);
        assert_eq!(kn(&t, fwd(BF16, 6000, 1 << 20)), (hr, 128));
        assert_eq!(kn(&t, fwd(BF16, 8192, 511)).1, 256);
        assert!(!kn(&t, fwd(BF16, 8192, 511)).0.starts_with("nk_fwd_regh"));
        assert_eq!(group(&t, fwd(BF16, 8192, 511)), 256);
        assert_eq!(kn(&t, fwd(BF16, 4096, 2048)), (hr, 64));
        assert_ne!(kn(&t, fwd(BF16, 4096, 2047)).0, hr);
        // N = 512 and 1024 from 4096 rows: the `_sw` builds (halves of 8 and 16 threads).
        let (sr, sl) = ("nk_fwd_regh_bf16_rms_sw", "nk_fwd_regh_bf16_ln_sw");
        assert_eq!(kn(&t, fwd(BF16, 1024, 4096)), (sr, 64));
        assert_eq!(group(&t, fwd(BF16, 1024, 4096)), 16);
        assert_eq!(kn(&t, fwd(BF16, 512, 65536)), (sr, 64));
        assert_eq!(group(&t, fwd(BF16, 512, 65536)), 8);
        assert_eq!(kn(&t, fwd(BF16, 700, 4096)).0, sr);
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 1024, 16384))), (sl, 64));
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 512, 8192))), (sl, 64));
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 512, 8191))).0, sl);
        assert_ne!(kn(&t, fwd(BF16, 512, 8191)).0, sr);
        assert_ne!(kn(&t, fwd(BF16, 1024, 4095)).0, sr);
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 1000, 16384))).0, sl);
        assert_ne!(kn(&t, fwd(BF16, 256, 65536)).0, sr);
        // N = 8192: the one-barrier build (Tuning::fwd_ln_one_barrier, groups of 256).
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 8192, 512))), ("nk_fwd_regh_bf16_ln_1b", 128));
        assert!(!kn(&t, ln_fwd(fwd(BF16, 8192, 511))).0.starts_with("nk_fwd_regh"));
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 6000, 4096))).0, hl);
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 4096, 8192))), ("nk_fwd_regh_bf16_ln_l2", 64), "2^25 elements: the L2 prefetch's build");
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 4096, 8191))), (hl, 64));
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 4096, 8193))).0, hl);
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 4096, 2047))).0, hl);
        // LayerNorm at N = 2048 for 2048 to 4096 rows (groups of 64 on 32 threads).
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 2048, 2048))), (hl, 128));
        assert_eq!(group(&t, ln_fwd(fwd(BF16, 2048, 4096))), 32);
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 2048, 2047))).0, hl);
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 2048, 4097))).0, hl);
        assert_ne!(kn(&t, ln_fwd(fwd(BF16, 2000, 4096))).0, hl);
        assert_ne!(kn(&t, FwdCall { residual: true, ..fwd(BF16, 8192, 4096) }).0, hr);
        assert!(!kn(&t, fwd(F16, 8192, 4096)).0.starts_with("nk_fwd_regh"));
        assert!(!kn(&t, fwd(BF16, 2048, 1 << 20)).0.starts_with("nk_fwd_regh"));
        assert_eq!(Tuning::for_device(9, 3350.0).fwd_half, tuning::HALF_SM90.to_vec());
        // The H100's RMSNorm at N = 4096 for 2048 to 6144 rows only (its twin past them).
        let h100 = Tuning::for_device(9, 3350.0);
        assert_eq!(kn(&h100, fwd(BF16, 4096, 6144)).0, hr);
        assert_ne!(kn(&h100, fwd(BF16, 4096, 6145)).0, hr);
        assert_eq!(kn(&t, fwd(BF16, 4096, 6145)).0, hr);
        // NORMKIT_CUDA_FWD_HALF: the rules replaced (`all`: both ops; `max`: no row limit); `off`;
        // malformed values keep the default.
        let env = |v: &'static str| Tuning::for_device(9, 4800.0).with_env(move |k| (k == "NORMKIT_CUDA_FWD_HALF").then(|| v.to_owned()));
        let e = env("all:2049:8192:1:max,rms:1025:2048:5:9");
        assert_eq!(kn(&e, fwd(BF16, 4096, 1)), (hr, 64));
        assert_eq!(kn(&e, ln_fwd(fwd(BF16, 6000, 1))), (hl, 128), "partial rows: no one-barrier build");
        assert_eq!(kn(&e, fwd(BF16, 2048, 9)), (hr, 64), "the table's group on Tuning::fwd_rpc's 2 rows per CTA, halved");
        assert_eq!(plan_fwd(&e, fwd(BF16, 2048, 9)).fields.group, 32);
        assert!(!kn(&e, fwd(BF16, 2048, 10)).0.starts_with("nk_fwd_regh"));
        assert!(!kn(&e, ln_fwd(fwd(BF16, 2048, 9))).0.starts_with("nk_fwd_regh"));
        assert!(env("off").fwd_half.is_empty());
        for bad in ["rms:8192:4096:1:1", "rms:1:2:3", "layer:1:2:3:4", "rms:1:2:3:4,ln:1"] {
            assert_eq!(env(bad).fwd_half, tuning::HALF_SM90_HBM3E.to_vec(), "{bad}");
        }
        let t = Tuning::for_device(9, 4800.0).with_env(|k| (k == "NORMKIT_CUDA_FWD_K8W").then(|| "off".to_owned()));
        assert_eq!(t.fwd_k8_wide, None);
        let t = Tuning::for_device(9, 3350.0).with_env(|k| (k == "NORMKIT_CUDA_FWD_K8W").then(|| "32768:512:1".to_owned()));
        assert_eq!(t.fwd_k8_wide, Some(tuning::RowConfig { max_n: 32768, group: 512, rows_per_cta: 1 }));
        assert_eq!(Tuning::for_device(9, 3350.0).fwd_k8_wide, Some(tuning::RowConfig { max_n: 16384, group: 256, rows_per_cta: 1 }));
        assert_eq!(Tuning::for_device(9, 3350.0).fwd_k8_wide_ln, None);
        assert_eq!(Tuning::for_device(9, 4800.0).fwd_k8_wide_ln, None);
        // NORMKIT_CUDA_FWD_GRID=persist: 16 CTAs of 128 threads per SM.
        let t = Tuning { fwd_persistent: true, ..sm90() };
        check(
            "F18 persist",
            plan_fwd(&t, fwd(BF16, 4096, 1 << 20)),
            FwdRegister,
            &[("nk_fwd_reg_bf16_rms_a", (2112, 1), 128, 0, P, None)],
            none,
            f(128, 1, 16, 0, 0),
        );
        // NORMKIT_CUDA_CLUSTER=0 and NORMKIT_CUDA_CLUSTER_CT.
        let t = sm90().with_env(|k| (k == "NORMKIT_CUDA_CLUSTER").then(|| "0".to_owned()));
        assert_eq!(plan_fwd(&t, fwd(BF16, 262144, 4)).family, FwdSplit);
        let t = sm90().with_env(|k| {
            (k == "NORMKIT_CUDA_CLUSTER_CT").then(|| "8,512".to_owned()).or_else(|| (k == "NORMKIT_CUDA_CSTAGE").then(|| "0".to_owned()))
        });
        check(
            "CT 8,512",
            plan_fwd(&t, fwd(BF16, 262144, 4)),
            FwdCluster,
            &[("nk_fwd_cl_bf16_rms_a", (32, 1), 512, 0, cl(8), None)],
            none,
            f(512, 8, 0, 0, 0),
        );
    }

    /// The staged cluster forward (`nk_fwd_cs_*`): from `staged_min_n` on, by N, dtypes and flags;
    /// the fewest CTAs whose slices fit `staged_slice`; grids of min(M, resident clusters)
    /// clusters; its shared memory `(1 + residual)·nst·sc·CB`; the lag half the stages; the next
    /// path where the slice does not fit.
    #[test]
    fn forward_reread_plan() {
        use DType::*;
        use Family::*;
        let t = Tuning::for_sm90();
        let t = Tuning { cluster: tuning::ClusterTuning { reread_ops: tuning::RereadOps::ALL, ..t.cluster.clone() }, ..t };
        // 1M bf16 on clusters of 8 × 512 threads: the fake occupancy's 4 CTAs per SM hold
        // 132 · 4 / 8 = 66 clusters; fewer rows, fewer clusters.
        check(
            "R1 bf16 1M",
            plan_fwd(&t, fwd(BF16, 1 << 20, 128)),
            FwdClusterReread,
            &[("nk_fwd_clr_bf16_rms_a", (66 * 8, 1), 512, 0, cl(8), None)],
            Workspace::default(),
            Fields { group: 512, rpc: 8, pf: t.cluster.reread_pf_kb as i32, ..Fields::default() },
        );
        check(
            "R2 f32 1M ln res, 3 rows, element-wise (no prefetch)",
            plan_fwd(&t, FwdCall { residual: true, aligned: false, ..ln_fwd(fwd(F32, 1 << 20, 3)) }),
            FwdClusterReread,
            &[("nk_fwd_clr_f32_ln_res_u", (24, 1), 512, 0, cl(8), None)],
            Workspace::default(),
            Fields { group: 512, rpc: 8, ..Fields::default() },
        );
        // The 16-bit LayerNorm and residual builds do not exist: the split path, whatever the
        // calls' list says.
        assert_eq!(plan_fwd(&t, ln_fwd(fwd(BF16, 1 << 20, 3))).family, FwdSplit);
        // Another cluster size, the prefetch, the calls, off, a lower N by environment.
        let env = |k: &'static str, v: &'static str| Tuning::for_sm90().with_env(move |n| (n == k).then(|| v.to_owned()));
        let l = plan_fwd(&env("NORMKIT_CUDA_CLUSTER_REREAD", "16"), fwd(F32, 1 << 20, 128));
        assert_eq!((l.steps().next().unwrap().kernel.name, l.fields.group, l.fields.rpc), ("nk_fwd_clr_f32_rms_a", 512, 16));
        let l = plan_fwd(&env("NORMKIT_CUDA_CLUSTER_REREAD", "16,256"), fwd(F32, 1 << 20, 128));
        assert_eq!((l.steps().next().unwrap().block, l.fields.group, l.fields.rpc), (256, 256, 16));
        assert_eq!(env("NORMKIT_CUDA_CLUSTER_REREAD", "6").cluster.reread, Some((6, 512)));
        assert_eq!(
            env("NORMKIT_CUDA_CLUSTER_REREAD", "17").cluster.reread,
            Tuning::for_sm90().cluster.reread,
            "a bad size keeps the default"
        );
        assert_eq!(plan_fwd(&env("NORMKIT_CUDA_CLUSTER_REREAD_PF", "96"), fwd(BF16, 1 << 20, 128)).fields.pf, 96);
        let ops = env("NORMKIT_CUDA_CLUSTER_REREAD_OPS", "ln16,res32").cluster.reread_ops;
        assert_eq!(
            (ops.covers(false, true, false), ops.covers(true, false, true), ops.covers(false, false, false), ops.covers(true, true, false)),
            (true, true, false, false)
        );
        assert_eq!(env("NORMKIT_CUDA_CLUSTER_REREAD_OPS", "ln16,bad").cluster.reread_ops, Tuning::for_sm90().cluster.reread_ops);
        assert_eq!(plan_fwd(&env("NORMKIT_CUDA_CLUSTER_REREAD", "0"), fwd(BF16, 1 << 20, 128)).family, FwdSplit);
        // Past the staged slices with the residual (f32 300000: 150 KB on 16 CTAs), and below its N.
        assert_eq!(plan_fwd(&t, FwdCall { residual: true, ..fwd(F32, 300000, 128) }).family, FwdClusterReread);
        assert_eq!(plan_fwd(&env("NORMKIT_CUDA_CLUSTER_REREAD_MIN_N", "2000000"), fwd(BF16, 1 << 20, 128)).family, FwdSplit);
        assert_eq!(plan_fwd(&t, fwd(BF16, 262144, 128)).family, FwdClusterStaged);
        // Other casting than Gemma's: no cluster kernel, the split path.
        assert_eq!(plan_fwd(&t, FwdCall { gemma: false, ..fwd(BF16, 1 << 20, 128) }).family, FwdSplit);
    }

    #[test]
    fn forward_staged_paths() {
        use DType::*;
        use Family::*;
        let t = Tuning::for_sm90();
        let none = Workspace::default();
        let fs = |threads: i32, c: i32, lag: i32| Fields { group: threads, rpc: c, lag, ..Fields::default() };
        // 262144 bf16: 512 KiB rows → 8 CTAs of 64 KiB, 4096 chunks per slice = 8 stages of 512
        // chunks, lag 4. FakeOcc: 3 CTAs of 64 KiB per SM → 132·3/8 = 49 clusters; M = 4 → 4.
        check(
            "S1 bf16 262144",
            plan_fwd(&t, fwd(BF16, 262144, 4)),
            FwdClusterStaged,
            &[("nk_fwd_cs_bf16_rms_a", (32, 1), 256, 65536, cl(8), None)],
            none,
            fs(256, 8, 4),
        );
        check(
            "S2 many rows",
            plan_fwd(&t, ln_fwd(fwd(BF16, 262144, 4096))),
            FwdClusterStaged,
            &[("nk_fwd_cs_bf16_ln_a", (49 * 8, 1), 256, 65536, cl(8), None)],
            none,
            Fields { pf: 4, pfd: 1, ..fs(256, 8, 4) },
        );
        // The residual stages r too: x and r slices of 32 KiB on 16 CTAs, 4 stages.
        check(
            "S3 residual 262144",
            plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 262144, 4) }),
            FwdClusterStaged,
            &[("nk_fwd_cs_bf16_rms_res_a", (64, 1), 256, 65536, cl(16), None)],
            none,
            Fields { pf: 2, pfd: 1, ..fs(256, 16, 2) },
        );
        // The L2 prefetch: 2 stages of the next row with the residual, 4 for LayerNorm, none for
        // RMSNorm alone or f32 (their kernels carry no code for it); NORMKIT_CUDA_CSTAGE_PF sets
        // every kernel's fields (S[:D]; 0: none).
        let pf = |t: &Tuning, c: FwdCall| plan_fwd(t, c).fields;
        assert_eq!((pf(&t, fwd(BF16, 262144, 4)).pf, pf(&t, fwd(F32, 262144, 2)).pf), (0, 0));
        assert_eq!(pf(&t, ln_fwd(fwd(F32, 262144, 2))).pf, 0);
        assert_eq!(pf(&t, ln_fwd(FwdCall { residual: true, ..fwd(BF16, 262144, 4) })).pf, 0);
        let env = |v: &'static str| Tuning::for_sm90().with_env(move |k| (k == "NORMKIT_CUDA_CSTAGE_PF").then(|| v.to_owned()));
        let f = pf(&env("8:2"), fwd(BF16, 262144, 4));
        assert_eq!((f.pf, f.pfd), (8, 2));
        assert_eq!(pf(&env("3"), ln_fwd(fwd(BF16, 262144, 4))).pfd, 1);
        let f = pf(&env("0"), ln_fwd(fwd(BF16, 262144, 4)));
        assert_eq!((f.pf, f.pfd), (0, 0));
        assert_eq!(pf(&env("4:3"), ln_fwd(fwd(BF16, 262144, 4))).pf, 4, "a bad distance keeps the default");
        // 1M bf16: 128 KiB slices even on 16 CTAs → the next path (the re-reading cluster
        // forward); f32 524288 alike.
        assert_eq!(plan_fwd(&t, fwd(BF16, 1 << 20, 8)).family, FwdClusterReread);
        assert_eq!(plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 1 << 20, 8) }).family, FwdSplit);
        assert_eq!(plan_fwd(&t, ln_fwd(fwd(BF16, 1 << 20, 8))).family, FwdSplit);
        assert_eq!(plan_fwd(&t, FwdCall { residual: true, ..ln_fwd(fwd(F32, 524288, 2)) }).family, FwdClusterReread);
        assert_eq!(plan_fwd(&t, fwd(F32, 524288, 2)).family, FwdClusterReread);
        // f32 262144: 1 MiB rows on 16 CTAs, 2048 chunks of 32 bytes per slice = 8 stages of 256.
        check(
            "S5 f32 262144",
            plan_fwd(&t, fwd(F32, 262144, 2)),
            FwdClusterStaged,
            &[("nk_fwd_cs_f32_rms_a", (32, 1), 256, 65536, cl(16), None)],
            none,
            fs(256, 16, 4),
        );
        // NORMKIT_CUDA_CSTAGE_GRID=rows: one cluster per row.
        let rows = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CSTAGE_GRID").then(|| "rows".to_owned()));
        let l = plan_fwd(&rows, fwd(BF16, 262144, 4096));
        assert_eq!(l.steps().next().unwrap().grid, (4096 * 8, 1));
        // Any layout: the element-wise twin, same shape. Odd N: 32769 chunks → 16 CTAs (8 would
        // leave 65538-byte slices), 2049 chunks per slice, 5 stages, lag 3; 132·5/16 = 41
        // clusters resident.
        check(
            "S6 odd N",
            plan_fwd(&t, FwdCall { aligned: false, ..fwd(F16, 262151, 3) }),
            FwdClusterStaged,
            &[("nk_fwd_cs_f16_rms_u", (48, 1), 256, 5 * 512 * 16, cl(16), None)],
            none,
            fs(256, 16, 3),
        );
        // Below staged_min_n, other casting, mixed dtypes, no clusters, pre-Hopper: not staged.
        assert_eq!(plan_fwd(&t, fwd(BF16, 131072, 4)).family, FwdClusterStaged);
        assert_eq!(plan_fwd(&t, fwd(BF16, 65536, 4)).family, FwdRegister);
        assert_eq!(plan_fwd(&t, FwdCall { residual: true, ..fwd(BF16, 65536, 4) }).family, FwdCluster);
        assert_eq!(plan_fwd(&t, ln_fwd(fwd(BF16, 65536, 4))).family, FwdClusterStaged);
        assert_ne!(plan_fwd(&t, ln_fwd(fwd(BF16, 32768, 4))).family, FwdClusterStaged);
        assert_eq!(plan_fwd(&t, FwdCall { gemma: false, ..fwd(BF16, 262144, 4) }).family, FwdSplit);
        assert_eq!(plan_fwd(&t, FwdCall { dtypes: DTypes { y: F32, ..DTypes::uniform(BF16) }, ..fwd(BF16, 262144, 4) }).family, FwdSplit);
        let l = forward(&t, &h100(), &FakeOcc { sms: 132, clusters: false }, &fwd(BF16, 262144, 4)).unwrap();
        assert_eq!(l.family, FwdSplit);
        let old = DeviceFacts { cc_major: 8, ..h100() };
        assert_eq!(forward(&t, &old, &OCC, &fwd(BF16, 262144, 4)).unwrap().family, FwdSplit);
        // The knobs: a lower N, a forced shape, off.
        let low = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CSTAGE_MIN_N").then(|| "65536".to_owned()));
        check(
            "S7 min_n 65536",
            plan_fwd(&low, ln_fwd(fwd(BF16, 65536, 2048))),
            FwdClusterStaged,
            &[("nk_fwd_cs_bf16_ln_a", (132 * 3 / 2 * 2, 1), 256, 65536, cl(2), None)],
            none,
            Fields { pf: 4, pfd: 1, ..fs(256, 2, 4) },
        );
        let ct = Tuning::for_sm90().with_env(|k| {
            (k == "NORMKIT_CUDA_CSTAGE_CT")
                .then(|| "16,128".to_owned())
                .or_else(|| (k == "NORMKIT_CUDA_CSTAGE_LAG").then(|| "9".to_owned()))
        });
        check(
            "S8 CT 16,128, lag past the stages",
            plan_fwd(&ct, fwd(BF16, 262144, 4)),
            FwdClusterStaged,
            &[("nk_fwd_cs_bf16_rms_a", (64, 1), 128, 32768, cl(16), None)],
            none,
            fs(128, 16, 8),
        );
        // 512 threads (the kernels' bound): 4 stages of 1024 chunks.
        let wide = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CSTAGE_CT").then(|| "8,512".to_owned()));
        let l = plan_fwd(&wide, fwd(BF16, 262144, 4));
        let st = l.steps().next().unwrap();
        assert_eq!((l.family, st.block, st.smem, l.fields.lag), (FwdClusterStaged, 512, 65536, 2));
        let small = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CSTAGE_SLICE").then(|| "32768".to_owned()));
        assert_eq!(plan_fwd(&small, fwd(BF16, 262144, 4)).steps().next().unwrap().mode, cl(16));
        let off = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CSTAGE").then(|| "0".to_owned()));
        assert_eq!(plan_fwd(&off, fwd(BF16, 262144, 4)).family, FwdCluster);
        // Shared memory: stages beyond NK_CS_MAX_STAGES are refused.
        assert_eq!(staged_smem(BF16, 262144, 16, 256, false), Some(32768));
        assert_eq!(staged_smem(BF16, 1 << 20, 16, 256, true), Some(262144));
        assert_eq!(staged_smem(BF16, 1 << 22, 16, 256, false), None);
    }

    #[test]
    fn backward_paths_as_before() {
        use DType::*;
        use Family::*;
        // The twin alone (Tuning::bwd_small_cols off; its column CTAs: below).
        // No padding of the twin's CTAs (twins_padded_to_their_share tests it).
        let t = Tuning { bwd_small_cols: None, bwd_twin_cap_auto: 0, ..Tuning::for_sm90() };
        // A handful of rows. One row: one CTA writing dW/dB itself, a programmatic dependent
        // that triggers at entry (plain with NORMKIT_CUDA_PDL=0); no workspace, no finalize.
        let none = Workspace::default();
        let one = |t: &Tuning| plan_bwd(t, bwd(BF16, 4096, 1));
        check(
            "B0 one row",
            one(&t),
            BwdSmall,
            &[("nk_bwd_sm_bf16_rms", (1, 1), 256, 0, D, None)],
            none,
            Fields { trigger: true, ..f(256, 1, 0, 0, 0) },
        );
        let no_pdl = Tuning { pdl: false, ..t.clone() };
        check("B0 one row, no PDL", one(&no_pdl), BwdSmall, &[("nk_bwd_sm_bf16_rms", (1, 1), 256, 0, P, None)], none, f(256, 1, 0, 0, 0));
        // Up to 128 rows: a CTA per row leaving a partial dW/dB row, the finalize adding them.
        check(
            "B0 small",
            plan_bwd(&t, bwd(BF16, 4096, 8)),
            BwdSmall,
            &[("nk_bwd_sm_bf16_rms", (8, 1), 256, 0, D, None), ("nk_bwd_finalize_cols", (16, 1), 256, 0, D, None)],
            ws(131072, None, 0, 131072),
            Fields { trigger: true, ..f(256, 1, 0, 8, 0) },
        );
        check(
            "B0 small ln + d_residual_out",
            plan_bwd(&t, BwdCall { d_residual: true, ..ln_bwd(bwd(F16, 2048, 4)) }),
            BwdSmall,
            &[("nk_bwd_sm_f16_ln_res", (4, 1), 128, 0, D, None), ("nk_bwd_finalize_cols", (8, 1), 256, 0, D, None)],
            ws(65536, None, 0, 32768),
            Fields { trigger: true, ..f(128, 1, 0, 4, 0) },
        );
        // Two or three rows: one CTA walks them and writes dW/dB itself (Tuning::bwd_small_walk).
        check(
            "B0 small, 3 rows in one CTA",
            plan_bwd(&t, BwdCall { d_residual: true, ..ln_bwd(bwd(F16, 2048, 3)) }),
            BwdSmall,
            &[("nk_bwd_sm_f16_ln_res", (1, 1), 128, 0, D, None)],
            none,
            Fields { trigger: true, ..f(128, 1, 0, 0, 0) },
        );
        // Past the SMs (132), ⌈M / SMs⌉ rows a CTA: 512 rows → 4 → 128 CTAs; 1024 → 8 → 128.
        for (m, ctas) in [(132, 132), (133, 67), (512, 128), (1024, 128)] {
            let l = plan_bwd(&t, bwd(BF16, 4096, m));
            assert_eq!((l.family, l.steps().next().unwrap().grid.0, l.fields.nparts), (BwdSmall, ctas, ctas as i64), "{m} rows");
        }
        assert_eq!(plan_bwd(&t, bwd(BF16, 4096, 1025)).family, BwdRegister);
        assert_eq!((plan_bwd(&t, bwd(F32, 4096, 256)).family, plan_bwd(&t, bwd(F32, 4096, 257)).family), (BwdSmall, BwdRegister));
        check(
            "B0 small f32, no PDL",
            plan_bwd(&no_pdl, bwd(F32, 4096, 4)),
            BwdSmall,
            &[("nk_bwd_sm_f32_rms", (4, 1), 256, 0, P, None), ("nk_bwd_finalize_cols", (16, 1), 256, 0, P, None)],
            ws(65536, None, 0, 65536),
            f(256, 1, 0, 4, 0),
        );
        // No dW or dB wanted: no partial rows, no finalize.
        check(
            "B0 small, dx only",
            plan_bwd(&t, BwdCall { dw: false, ..bwd(BF16, 4096, 4) }),
            BwdSmall,
            &[("nk_bwd_sm_bf16_rms", (4, 1), 256, 0, D, None)],
            none,
            Fields { trigger: true, ..f(256, 1, 0, 0, 0) },
        );
        // Rows per CTA (Tuning::bwd_small_walk): ⌈M / R⌉ CTAs, as many partial rows; one CTA
        // (M ≤ R) writes dW itself.
        let walk = Tuning { bwd_small_walk: vec![(8, 8), (64, 2), (usize::MAX, 4)], ..t.clone() };
        check(
            "B0 small, 2 rows per CTA",
            plan_bwd(&walk, bwd(BF16, 4096, 31)),
            BwdSmall,
            &[("nk_bwd_sm_bf16_rms", (16, 1), 256, 0, D, None), ("nk_bwd_finalize_cols", (16, 1), 256, 0, D, None)],
            ws(16 * 4096 * 4, None, 0, 16 * 4096 * 4),
            Fields { trigger: true, ..f(256, 1, 0, 16, 0) },
        );
        check(
            "B0 small, one CTA walks 8 rows",
            plan_bwd(&walk, bwd(BF16, 4096, 8)),
            BwdSmall,
            &[("nk_bwd_sm_bf16_rms", (1, 1), 256, 0, D, None)],
            none,
            Fields { trigger: true, ..f(256, 1, 0, 0, 0) },
        );
        assert_eq!(plan_bwd(&walk, bwd(BF16, 4096, 128)).steps().next().unwrap().grid, (32, 1));
        // Column CTAs in the twin's launch (Tuning::bwd_small_cols): M row CTAs, then the column
        // CTAs, RP = ⌈M / 4⌉ rounded up to a power of two lanes per chunk, CB = 256 / RP chunks a
        // CTA; no workspace, no finalize. 8×4096: RP 2, CB 128, 4 column CTAs; 128 rows: RP 32,
        // CB 8, 64; 3 rows: RP 1 (no shared memory), CB 256, 2. K4 at N = 8192 (128 threads).
        let cols = Tuning {
            bwd_small_cols: Some((2, 128)),
            bwd_small_cols_rows: vec![(usize::MAX, 4)],
            bwd_twin_cap_auto: 0,
            ..Tuning::for_sm90()
        };
        let fc = |block: i32, rp: i32, m: i64| Fields { trigger: true, slot: rp, nsplit: m, ..f(block, 1, 0, 0, 0) };
        for (m, rp, ctas, smem) in [(8, 2, 4, 8192), (128, 32, 64, 8192), (3, 1, 2, 0), (5, 2, 4, 8192)] {
            check(
                "B0 small, column CTAs",
                plan_bwd(&cols, bwd(BF16, 4096, m)),
                BwdSmall,
                &[("nk_bwd_smc_bf16_rms", ((m + ctas) as u32, 1), 256, smem, D, None)],
                none,
                fc(256, rp, m as i64),
            );
        }
        check(
            "B0 small, column CTAs, ln + d_residual_out, 4 chunks",
            plan_bwd(&cols, BwdCall { d_residual: true, ..ln_bwd(bwd(F16, 8192, 16)) }),
            BwdSmall,
            &[("nk_bwd_smc4_f16_ln_res", (16 + 16, 1), 256, 8192, D, None)],
            none,
            fc(256, 4, 16),
        );
        // In place (dx over dy): the twin alone, its CTAs' partial rows and the finalize.
        let ip = plan_bwd(&cols, BwdCall { in_place: true, ..ln_bwd(bwd(BF16, 4096, 128)) });
        assert_eq!(ip.steps().map(|s| s.kernel.name).collect::<Vec<_>>(), ["nk_bwd_sm_bf16_ln", "nk_bwd_finalize_wide"]);
        // The defaults: column CTAs from 2 to 1024 rows, lanes adding 1 row to M = 8, 2 to 64, 4 to
        // 128, then 8: 8×4096 RP 8, CB 32, 16 column CTAs; 128 rows RP 32, CB 8, 64; 1024 rows RP
        // 128, CB 2, 256. One row: the twin alone.
        let def = Tuning { bwd_twin_cap_auto: 0, ..Tuning::for_sm90() };
        for (m, rp, ctas) in [(2, 2, 4), (8, 8, 16), (64, 32, 64), (128, 32, 64), (1024, 128, 256)] {
            check(
                "B0 small, column CTAs by default",
                plan_bwd(&def, bwd(BF16, 4096, m)),
                BwdSmall,
                &[("nk_bwd_smc_bf16_rms", ((m + ctas) as u32, 1), 256, 8192, D, None)],
                none,
                fc(256, rp, m as i64),
            );
        }
        assert_eq!(plan_bwd(&def, bwd(BF16, 4096, 1)).steps().next().unwrap().kernel.name, "nk_bwd_sm_bf16_rms");
        assert_eq!(plan_bwd(&def, bwd(BF16, 4096, 1025)).family, BwdRegister);
        // Past 4 Mi elements (1024×8192): the twin and its finalize.
        assert_eq!(plan_bwd(&def, bwd(BF16, 8192, 512)).steps().next().unwrap().kernel.name, "nk_bwd_smc4_bf16_rms");
        assert_eq!(
            plan_bwd(&def, bwd(BF16, 8192, 1024)).steps().map(|s| s.kernel.name).collect::<Vec<_>>(),
            ["nk_bwd_sm4_bf16_rms", "nk_bwd_finalize_wide"]
        );
        // The device test's shapes (tests/tests/cuda.rs twin_backward_columns) take the column launch.
        let all = Tuning {
            bwd_small_cols: Some((1, usize::MAX)),
            bwd_small_cols_max_elems: usize::MAX,
            bwd_small_max_m: usize::MAX,
            ..Tuning::for_sm90()
        };
        let all = Tuning { rows: tuning::RowsTuning { on: false, ..all.rows }, ..all };
        for (m, n, dt) in [
            (1, 4096, F16),
            (3, 4096, F16),
            (8, 4096, BF16),
            (128, 4096, F16),
            (300, 1024, BF16),
            (37, 3000, F16),
            (20, 2048, BF16),
            (5, 64, BF16),
            (64, 8192, BF16),
        ] {
            for (ln, res) in [(false, false), (true, true)] {
                let c = BwdCall { d_residual: res, ..if ln { ln_bwd(bwd(dt, n, m)) } else { bwd(dt, n, m) } };
                let l = plan_bwd(&all, c);
                let s: Vec<_> = l.steps().map(|s| (s.kernel.name, s.grid.0, s.block, s.smem)).collect();
                assert!(s.len() == 1 && s[0].0.starts_with("nk_bwd_smc"), "{m}x{n} {dt:?} ln={ln}: {s:?}");
            }
        }
        // Outside the range, f32 (no column kernels), dx only: the twin as before.
        for c in [bwd(BF16, 4096, 1), bwd(BF16, 4096, 129), bwd(F32, 4096, 8), BwdCall { dw: false, ..bwd(BF16, 4096, 8) }] {
            let l = plan_bwd(&cols, c);
            assert!(l.steps().all(|s| !s.kernel.name.starts_with("nk_bwd_smc")), "{c:?}");
            assert_eq!(l.family, plan_bwd(&t, c).family);
        }
        let env = |v: &str| Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_BWD_SMALL_WALK").then(|| v.to_string())).bwd_small_walk;
        assert_eq!(
            (env("4"), env("64:2, 8:1"), env("x")),
            (vec![(usize::MAX, 4)], vec![(8, 1), (64, 2)], Tuning::for_sm90().bwd_small_walk)
        );
        assert_eq!(env("2:2,1024:0"), vec![(2, 2), (1024, 0)]);
        // 1025 rows, 65 rows where the row-batch path applies, N = 16384 (512-thread groups), f32
        // past N = 4096, unaligned, or NORMKIT_CUDA_BWD_SMALL=0: the general paths.
        assert_eq!(plan_bwd(&t, bwd(BF16, 2048, 64)).family, BwdSmall);
        assert_eq!(plan_bwd(&t, bwd(F32, 2048, 128)).family, BwdSmall);
        let off = Tuning { bwd_small_max_m: 0, ..Tuning::for_sm90() };
        for (t, c) in [
            (&t, bwd(BF16, 4096, 1025)),
            (&t, bwd(BF16, 2048, 65)),
            (&t, bwd(F16, 1024, 128)),
            (&t, bwd(BF16, 16384, 4)),
            (&t, bwd(F32, 8192, 4)),
            (&t, BwdCall { aligned: false, ..bwd(BF16, 4096, 4) }),
            (&off, bwd(BF16, 4096, 1)),
        ] {
            assert_ne!(plan_bwd(t, c).family, BwdSmall, "{c:?}");
        }
        // Row-batch: 16-bit, 512 < N ≤ 2048; two groups of 128 per CTA to 1024, one of 256 beyond.
        check(
            "B1 rows 1024",
            plan_bwd(&t, bwd(BF16, 1024, 4096)),
            BwdRowsBatch,
            &[("nk_bwd_rows4_bf16_rms", (512, 1), 256, 16384, D, None), ("nk_bwd_finalize_wide", (128, 1), 1024, 0, D, Some(8))],
            ws(2097152, None, 0, 2097152),
            f(128, 2, 0, 512, 0),
        );
        check(
            "B2 rows 2048 ln",
            plan_bwd(&t, ln_bwd(bwd(BF16, 2048, 4096))),
            BwdRowsBatch,
            &[("nk_bwd_rows4g256_bf16_ln", (1024, 1), 256, 0, D, None), ("nk_bwd_finalize_wide", (256, 1), 1024, 0, D, Some(8))],
            ws(16777216, None, 0, 8388608),
            f(256, 1, 0, 1024, 0),
        );
        // Register-resident, with the prefetching twins for 16-bit.
        check(
            "B3 reg 512",
            plan_bwd(&t, bwd(BF16, 512, 4096)),
            BwdRegister,
            &[("nk_bwd_regpf_bf16_rms", (512, 1), 256, 49152, P, None), ("nk_bwd_finalize_wide", (64, 1), 1024, 0, D, Some(8))],
            ws(1048576, None, 0, 1048576),
            f(32, 8, 0, 512, 0),
        );
        check(
            "B4 f32 1024",
            plan_bwd(&t, bwd(F32, 1024, 4096)),
            BwdRegister,
            &[("nk_bwd_reg_f32_rms", (1024, 1), 256, 16384, P, None), ("nk_bwd_finalize_wide", (128, 1), 1024, 0, D, Some(8))],
            ws(4194304, None, 0, 4194304),
            f(64, 4, 0, 1024, 0),
        );
        check(
            "B5 reg4 4096 d_res",
            plan_bwd(&t, BwdCall { d_residual: true, ..bwd(BF16, 4096, 32768) }),
            BwdRegister,
            &[("nk_bwd_reg4pf_bf16_rms_res", (396, 1), 128, 65536, P, None), ("nk_bwd_finalize_wide", (512, 1), 800, 0, D, Some(8))],
            ws(6488064, None, 0, 6488064),
            f(128, 1, 0, 396, 0),
        );
        let l = plan_bwd(&t, BwdCall { d_residual: true, ..bwd(BF16, 16384, 1000) });
        check(
            "B6 wglobal 16384",
            l,
            BwdRegister,
            &[("nk_bwd_reg4pf_bf16_rms_res", (132, 1), 512, 196608, P, None), ("nk_bwd_finalize_wide", (512, 1), 1024, 0, D, Some(32))],
            ws(8650752, None, 0, 8650752),
            Fields { wglobal: true, ..f(512, 1, 0, 132, 0) },
        );
        check(
            "B7 f32 8192 reg1",
            plan_bwd(&t, bwd(F32, 8192, 100)),
            BwdRegister,
            &[("nk_bwd_reg1_f32_rms", (100, 1), 1024, 0, P, None), ("nk_bwd_finalize_wide", (512, 1), 416, 0, D, Some(16))],
            ws(3276800, None, 0, 3276800),
            f(1024, 1, 0, 100, 0),
        );
        // Cluster: plain (registers), prefetching twin, shared-memory accumulators.
        check(
            "B8 cluster 32768",
            plan_bwd(&t, bwd(BF16, 32768, 256)),
            BwdCluster,
            &[("nk_bwd_cl_bf16_rms", (1024, 1), 256, 0, cl(4), None), ("nk_bwd_finalize_wide", (1024, 1), 1024, 0, D, Some(32))],
            ws(33554432, None, 0, 33554432),
            f(256, 4, 0, 256, 0),
        );
        check(
            "B9 clp ln 65536",
            plan_bwd(&t, ln_bwd(bwd(BF16, 65536, 64))),
            BwdCluster,
            &[("nk_bwd_clp_bf16_ln", (264, 1), 256, 98304, cl(8), None), ("nk_bwd_finalize_cols", (256, 1), 256, 0, D, None)],
            ws(17301504, None, 0, 8650752),
            f(256, 8, 0, 33, 0),
        );
        check(
            "B10 clp rms 262144",
            plan_bwd(&t, bwd(BF16, 262144, 64)),
            BwdCluster,
            &[("nk_bwd_clp_bf16_rms", (128, 1), 512, 196608, cl(16), None), ("nk_bwd_finalize_cols", (1024, 1), 256, 0, D, None)],
            ws(8388608, None, 0, 8388608),
            f(512, 16, 0, 8, 0),
        );
        let nopf = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CLUSTER_PF").then(|| "0".to_owned()));
        check(
            "B11 cls rms 262144",
            plan_bwd(&nopf, bwd(BF16, 262144, 64)),
            BwdCluster,
            &[("nk_bwd_cls_bf16_rms", (384, 1), 512, 65536, cl(16), None), ("nk_bwd_finalize_cols", (1024, 1), 256, 0, D, None)],
            ws(25165824, None, 0, 25165824),
            f(512, 16, 0, 24, 0),
        );
        // Staged row kernel (an unaligned view), persistent: 5 CTAs per SM by shared memory.
        check(
            "B13 row 4096 unaligned",
            plan_bwd(&t, BwdCall { aligned: false, ..bwd(BF16, 4096, 4096) }),
            BwdRow,
            &[("nk_bwd_row_u", (660, 1), 128, 40960, P, None), ("nk_bwd_finalize_wide", (512, 1), 1024, 0, D, Some(8))],
            ws(10813440, Some(0), 0, 10813440),
            f(128, 1, 16, 660, 0),
        );
        // Split rows: [M·(S+1) stat pairs | dW parts | dB parts]; ≤ 64 parts at N ≥ 65536 → cols.
        check(
            "B12 f32 ln 65536 split",
            plan_bwd(&t, ln_bwd(bwd(F32, 65536, 64))),
            BwdSplit,
            &[
                ("nk_bwd_split_stats_a", (512, 1), 256, 0, P, None),
                ("nk_bwd_split_reduce", (8, 1), 256, 0, P, None),
                ("nk_bwd_split_apply_pre_a", (8, 64), 256, 0, P, None),
                ("nk_bwd_finalize_cols", (256, 1), 256, 0, D, None),
            ],
            ws(33559040, Some(0), 4608, 16781824),
            f(0, 0, 0, 64, 8),
        );
        check(
            "B16 f32 1M split",
            plan_bwd(&t, bwd(F32, 1 << 20, 8)),
            BwdSplit,
            &[
                ("nk_bwd_split_stats_a", (1024, 1), 256, 0, P, None),
                ("nk_bwd_split_reduce", (1, 1), 256, 0, P, None),
                ("nk_bwd_split_apply_pre_a", (128, 8), 256, 0, P, None),
                ("nk_bwd_finalize_cols", (4096, 1), 256, 0, D, None),
            ],
            ws(33562880, Some(0), 8448, 33562880),
            f(0, 0, 0, 8, 128),
        );
        // M = 0: only the finalize (zeros); no dW/dB: no finalize.
        check(
            "B14 m=0",
            plan_bwd(&t, bwd(BF16, 1024, 0)),
            BwdRegister,
            &[("nk_bwd_finalize_cols", (4, 1), 256, 0, D, None)],
            ws(0, None, 0, 0),
            f(64, 4, 0, 0, 0),
        );
        // At most 1024 rows of 4096 (16-bit): 256 threads of 2 chunks per row (Tuning::bwd_reg4_few),
        // the twin and the register kernels alike; more rows, or the rule off: 128 threads of 4.
        let key = |l: Launch| {
            let s = *l.steps().next().unwrap();
            (s.kernel.name, s.block, l.fields.group)
        };
        let few_off = Tuning { bwd_reg4_few_max_m: 0, ..t.clone() };
        assert_eq!(key(plan_bwd(&few_off, bwd(BF16, 4096, 8))), ("nk_bwd_sm4_bf16_rms", 128, 128));
        assert_eq!(key(plan_bwd(&t, ln_bwd(bwd(F16, 3000, 128)))), ("nk_bwd_sm_f16_ln", 256, 256));
        assert_eq!(key(plan_bwd(&t, bwd(BF16, 4096, 1024))).2, 256);
        assert_eq!(key(plan_bwd(&t, bwd(BF16, 4096, 1025))).2, 128);
        assert_eq!(key(plan_bwd(&t, bwd(BF16, 8192, 8))).2, 256);
        // CTAs per SM by rows per SM (Tuning::bwd_reg4_caps), 16-bit rows past N = 2048 with
        // dW or dB: 256 rows one per SM, 1024 two, 32768 three; dx only, or the env's cap: as set.
        // (Up to 1024 rows the twin takes these calls by default; without it:)
        let grid = |t: &Tuning, c: BwdCall| plan_bwd(t, c).steps().next().unwrap().grid.0;
        let reg = Tuning { bwd_small_max_m: 0, ..Tuning::for_sm90() };
        assert_eq!(grid(&reg, bwd(BF16, 4096, 256)), 132);
        assert_eq!(grid(&reg, ln_bwd(bwd(BF16, 8192, 528))), 132);
        assert_eq!(grid(&reg, bwd(BF16, 4096, 1024)), 264);
        assert_eq!(grid(&t, bwd(F16, 4096, 32768)), 396);
        assert_eq!(grid(&t, BwdCall { dw: false, ..bwd(BF16, 4096, 32768) }), 528);
        assert_eq!(grid(&Tuning { bwd_ctas_per_sm: Some(4), ..reg }, bwd(BF16, 4096, 256)), 256);
        check(
            "B15 nacc=0",
            plan_bwd(&t, BwdCall { dw: false, ..bwd(BF16, 4096, 4096) }),
            BwdRegister,
            &[("nk_bwd_reg4pf_bf16_rms", (528, 1), 128, 49152, P, None)],
            ws(0, None, 0, 0),
            f(128, 1, 0, 528, 0),
        );
    }

    #[test]
    fn backward_overrides_as_before() {
        use DType::*;
        use Family::*;
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            Tuning::for_sm90().with_env(move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
        };
        // NORMKIT_CUDA_ROWS=off: the register table's 2-chunk kernel.
        check(
            "B17 rows off",
            plan_bwd(&env(&[("NORMKIT_CUDA_ROWS", "off")]), bwd(BF16, 1024, 4096)),
            BwdRegister,
            &[("nk_bwd_regpf_bf16_rms", (528, 1), 256, 49152, P, None), ("nk_bwd_finalize_wide", (128, 1), 1024, 0, D, Some(8))],
            ws(2162688, None, 0, 2162688),
            f(64, 4, 0, 528, 0),
        );
        // NORMKIT_CUDA_BWD_CTAS_PER_SM=1 caps the parts at the SM count.
        check(
            "B18 ctas per sm",
            plan_bwd(&env(&[("NORMKIT_CUDA_BWD_CTAS_PER_SM", "1")]), bwd(BF16, 1024, 4096)),
            BwdRowsBatch,
            &[("nk_bwd_rows4_bf16_rms", (132, 1), 256, 16384, D, None), ("nk_bwd_finalize_wide", (128, 1), 288, 0, D, Some(8))],
            ws(540672, None, 0, 540672),
            f(128, 2, 0, 132, 0),
        );
        // NORMKIT_CUDA_PDL=0: the same launches, plain.
        check(
            "B19 pdl off",
            plan_bwd(&env(&[("NORMKIT_CUDA_PDL", "0")]), bwd(BF16, 1024, 4096)),
            BwdRowsBatch,
            &[("nk_bwd_rows4_bf16_rms", (512, 1), 256, 16384, P, None), ("nk_bwd_finalize_wide", (128, 1), 1024, 0, P, Some(8))],
            ws(2097152, None, 0, 2097152),
            f(128, 2, 0, 512, 0),
        );
        // NORMKIT_CUDA_PF=0: the plain register kernel.
        check(
            "B20 pf off",
            plan_bwd(&env(&[("NORMKIT_CUDA_PF", "0")]), bwd(BF16, 512, 4096)),
            BwdRegister,
            &[("nk_bwd_reg_bf16_rms", (512, 1), 256, 16384, P, None), ("nk_bwd_finalize_wide", (64, 1), 1024, 0, D, Some(8))],
            ws(1048576, None, 0, 1048576),
            f(32, 8, 0, 512, 0),
        );
    }

    const NS: [usize; 44] = [
        1,
        7,
        8,
        9,
        16,
        17,
        32,
        33,
        64,
        100,
        128,
        500,
        512,
        513,
        769,
        1024,
        1025,
        2048,
        2049,
        3584,
        4096,
        4097,
        5120,
        8192,
        8193,
        16384,
        16385,
        32768,
        32769,
        65536,
        65537,
        131072,
        131073,
        163840,
        196608,
        262144,
        262145,
        524288,
        524289,
        1 << 20,
        (1 << 20) + 8,
        3 << 20,
        4 << 20,
        8 << 20,
    ];
    const MS: [usize; 5] = [0, 1, 3, 4096, 100_000];

    fn dtype_sets() -> Vec<DTypes> {
        let mut v = Vec::new();
        for x in [DType::F32, DType::F16, DType::BF16] {
            for y in [x, DType::F32] {
                for w in [x, DType::F32] {
                    for r in [x, DType::F32] {
                        v.push(DTypes { x, y, weight: w, residual: r });
                    }
                }
            }
        }
        v.dedup();
        v
    }

    fn check_steps(what: &dyn Fn() -> String, l: &Launch, d: &DeviceFacts) {
        for s in l.steps() {
            let k = s.kernel;
            assert_eq!(kernels::ALL.get(k.index), Some(&k), "{}: {} is not the table's entry", what(), k.name);
            assert!(s.block >= 1 && s.block <= k.max_threads, "{}: {} block {}", what(), k.name, s.block);
            assert!(s.grid.0 >= 1 && s.grid.1 >= 1 && u64::from(s.grid.0) <= MAX_GRID * 16, "{}: {} grid {:?}", what(), k.name, s.grid);
            let limit = if matches!(s.mode, Mode::Cluster(_)) { d.row_smem_limit } else { d.dyn_smem_max[k.index] };
            assert!(s.smem as usize <= limit, "{}: {} smem {}", what(), k.name, s.smem);
            if let Mode::Cluster(c) = s.mode {
                assert!(s.grid.0.is_multiple_of(c), "{}: {} grid {:?} not whole clusters of {c}", what(), k.name, s.grid);
            }
        }
        assert!(l.workspace.dw <= l.workspace.db && l.workspace.db as usize <= l.workspace.bytes.max(l.workspace.db as usize));
    }

    /// Every plan over a grid of shapes, dtypes and options names kernels of the table, within
    /// their launch bounds. A name the planner asks for and the table lacks is collected: the
    /// only ones are the two below (a known gap, see the test's last assertion).
    #[test]
    fn every_reachable_plan_names_existing_kernels() {
        kernels::take_asked();
        let d = h100();
        let tunings = [
            Tuning::for_sm90(),
            Tuning::for_sm90().with_env(|k| match k {
                "NORMKIT_CUDA_FWD_K8" => Some("all".into()),
                "NORMKIT_CUDA_ROWS" | "NORMKIT_CUDA_PF" | "NORMKIT_CUDA_PDL" | "NORMKIT_CUDA_CLUSTER_PF" => Some("0".into()),
                _ => None,
            }),
        ];
        let occs = [OCC, FakeOcc { sms: 132, clusters: false }];
        let mut internal = BTreeSet::new();
        for t in &tunings {
            for occ in &occs {
                for dtypes in dtype_sets() {
                    for n in NS {
                        for ln in [false, true] {
                            for residual in [false, true] {
                                for (weight, bias) in [(false, false), (true, false), (true, true)] {
                                    if bias && !ln {
                                        continue;
                                    }
                                    for gemma in [true, false] {
                                        let mut first = None;
                                        for m in MS {
                                            for aligned in [true, false] {
                                                let c = FwdCall { m, n, dtypes, ln, gemma, residual, weight, bias, aligned, fp8: None };
                                                let what = || format!("{c:?}");
                                                match forward(t, &d, occ, &c) {
                                                    Ok(l) => {
                                                        check_steps(&what, &l, &d);
                                                        // The forward path never depends on M or the layout
                                                        // (the twin in pairs launches group G's rows as
                                                        // group 2G and keeps G's order; rows per CTA may
                                                        // change by M, Tuning::fwd_rpc: the same groups).
                                                        let paired =
                                                            l.steps().any(|s| matches!(s.kernel.key, KernelKey::FwdRegPair { .. }));
                                                        let halved =
                                                            l.steps().any(|s| matches!(s.kernel.key, KernelKey::FwdRegHalf { .. }));
                                                        let group = match (paired, halved) {
                                                            (true, _) => l.fields.group / 2,
                                                            (_, true) => l.fields.group * 2,
                                                            _ => l.fields.group,
                                                        };
                                                        let shape = (l.family, group, l.fields.slot, l.fields.nsplit);
                                                        if m > 0 {
                                                            assert_eq!(*first.get_or_insert(shape), shape, "{}", what());
                                                        }
                                                    }
                                                    Err(NormError::Internal { what, .. }) => {
                                                        internal.insert(what);
                                                    }
                                                    Err(e) => panic!("{}: {e}", what()),
                                                }
                                            }
                                        }
                                    }
                                    for dw in [false, true] {
                                        for db in [false, ln && bias] {
                                            for m in MS {
                                                for aligned in [true, false] {
                                                    let c = BwdCall {
                                                        m,
                                                        n,
                                                        dtypes,
                                                        ln,
                                                        d_residual: residual,
                                                        weight,
                                                        dw,
                                                        db,
                                                        aligned,
                                                        in_place: false,
                                                    };
                                                    let what = || format!("{c:?}");
                                                    match backward(t, &d, occ, &c) {
                                                        Ok(l) => {
                                                            check_steps(&what, &l, &d);
                                                            let finalize = l.steps().any(|s| {
                                                                matches!(
                                                                    s.kernel.key,
                                                                    KernelKey::BwdFinalizeCols | KernelKey::BwdFinalizeWide
                                                                )
                                                            });
                                                            // The backward's twin: one CTA finishes dW/dB itself, without
                                                            // workspace; more leave a partial row each to the finalize.
                                                            let cols =
                                                                l.steps().any(|s| matches!(s.kernel.key, KernelKey::BwdSmallCols { .. }));
                                                            if cols {
                                                                // Column CTAs in the twin's launch: dW/dB written by
                                                                // them, no partial rows, no workspace, no finalize.
                                                                let s = l.steps().next().unwrap();
                                                                assert!(dw || db, "{}", what());
                                                                assert!(
                                                                    !finalize && l.fields.nparts == 0 && l.workspace.bytes == 0,
                                                                    "{}",
                                                                    what()
                                                                );
                                                                assert!(
                                                                    l.fields.nsplit == m as i64 && (s.grid.0 as i64) > l.fields.nsplit,
                                                                    "{}",
                                                                    what()
                                                                );
                                                                assert!(
                                                                    l.fields.slot >= 1 && s.block % l.fields.slot as u32 == 0,
                                                                    "{}",
                                                                    what()
                                                                );
                                                            } else if l.family == Family::BwdSmall {
                                                                let ctas = l.steps().next().unwrap().grid.0 as i64;
                                                                let parts = ctas > 1 && (dw || db);
                                                                assert_eq!(finalize, parts, "{}", what());
                                                                assert_eq!(l.fields.nparts, if parts { ctas } else { 0 }, "{}", what());
                                                                assert_eq!(l.workspace.bytes == 0, !parts, "{}", what());
                                                                let mode = if t.pdl { Mode::Pdl } else { Mode::Plain };
                                                                assert!(
                                                                    m <= t.bwd_small_max_m && l.steps().all(|s| s.mode == mode),
                                                                    "{}",
                                                                    what()
                                                                );
                                                            } else {
                                                                assert_eq!(finalize, dw || db, "{}", what());
                                                            }
                                                        }
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
            }
        }
        let asked = kernels::take_asked();
        assert!(asked.len() > 100, "the walk asked for {} kernels only", asked.len());
        let missing: BTreeSet<String> = asked.iter().filter(|&&k| kernels::get(k).is_none()).map(|k| k.symbol()).collect();
        // Every key the planner can ask for is in the list (the 16-bit RMSNorm backward with
        // d_residual_out at 131072 < N ≤ 262144 asked for a prefetching twin the list does not
        // have until 2026-11-24).
        let known: BTreeSet<String> = BTreeSet::new();
        assert_eq!(missing, known);
        assert_eq!(internal, known.iter().map(|n| format!("kernel {n} is missing from the fatbin")).collect());
    }

    /// Every FP8 plan over shapes, dtypes, options and the transpose modes names kernels of the
    /// table within their launch bounds and shared memory; the path (and tile; the group, not the
    /// rows per CTA, of the register kernels) never depends on M
    /// or, beyond the kernel's access width, on the layout; `yT` is always written by exactly one
    /// of the fused tile, the strided baseline or the separate kernel.
    #[test]
    fn every_fp8_plan_fits_and_writes_the_transpose_once() {
        let d = h100();
        let modes = ["fused", "separate", "strided"];
        let mut paths = BTreeSet::new();
        for mode in modes {
            let t = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_T").then(|| mode.to_owned()));
            for dtypes in dtype_sets() {
                let dtypes = DTypes { y: DType::F8E4M3, ..dtypes };
                for n in NS {
                    for (ln, residual) in [(false, false), (false, true), (true, false), (true, true)] {
                        for (per_row, transposed) in [(false, false), (false, true), (true, false), (true, true)] {
                            for aligned in [true, false] {
                                let mut first = None;
                                for m in MS {
                                    let c = FwdCall {
                                        m,
                                        n,
                                        dtypes,
                                        ln,
                                        gemma: true,
                                        residual,
                                        weight: true,
                                        bias: ln,
                                        aligned,
                                        fp8: Some(Fp8Info { per_row, transposed }),
                                    };
                                    let what = || format!("{mode} {c:?}");
                                    let l = forward(&t, &d, &OCC, &c).unwrap_or_else(|e| panic!("{}: {e}", what()));
                                    check_steps(&what, &l, &d);
                                    assert!(l.workspace.bytes <= workspace_bound(m, n, OCC.sms as usize), "{}", what());
                                    if m == 0 {
                                        assert_eq!(l.steps().count(), 1, "{}", what());
                                        continue;
                                    }
                                    let main = l.steps().find(|s| !matches!(s.kernel.key, KernelKey::FwdSplitStats { .. })).unwrap().kernel;
                                    let fused = l.fields.q & normkit_gpu_host::params::Q_TFUSED != 0;
                                    let tiled = matches!(main.key, KernelKey::FwdRegQDecode { tile: true, .. });
                                    let st = matches!(main.key, KernelKey::FwdQRow { strided: true, .. });
                                    let sep = l.steps().filter(|s| s.kernel.key == KernelKey::FwdQTranspose).count();
                                    assert_eq!(
                                        usize::from(fused) + usize::from(tiled) + usize::from(st) + sep,
                                        usize::from(transposed),
                                        "{}",
                                        what()
                                    );
                                    if fused {
                                        assert!(l.fields.tm >= 8 && l.fields.rpc <= l.fields.tm, "{}", what());
                                        assert_eq!(l.fields.tpitch as usize, fp8_tile_pitch(n, l.fields.tm as u32), "{}", what());
                                    }
                                    if tiled {
                                        // The twin's tile: a power of two, whole row groups, 8-byte rows.
                                        let tm = l.fields.tm as u32;
                                        assert!(tm >= 8 && tm.is_power_of_two() && tm.is_multiple_of(l.fields.rpc as u32), "{}", what());
                                        assert_eq!(l.fields.tpitch as usize, fp8_tile_pitch(n, tm.min(16)), "{}", what());
                                        assert!(l.fields.tpitch % 8 == 0 && l.fields.tpitch as usize >= n, "{}", what());
                                        assert_eq!(
                                            l.steps().next().unwrap().smem as usize,
                                            tm as usize * l.fields.tpitch as usize,
                                            "{}",
                                            what()
                                        );
                                    }
                                    // The quantised register kernels' rows per CTA may follow M
                                    // (Fp8Tuning::wide_cta_walks): a group's reduction, and so
                                    // every bit, does not depend on them.
                                    let reg = matches!(
                                        main.key,
                                        KernelKey::FwdRegQ { .. } | KernelKey::FwdRegQDecode { .. } | KernelKey::FwdRegQPair { .. }
                                    );
                                    // Nor does the twin's yT tile (the per-row twin runs at few rows only).
                                    let (rpc, tm) = if reg { (0, 0) } else { (l.fields.rpc, l.fields.tm) };
                                    // Pairs run group G's reduction on 2G threads (launched as group 2G).
                                    let pair = matches!(main.key, KernelKey::FwdRegQPair { .. });
                                    let group = if pair { l.fields.group / 2 } else { l.fields.group };
                                    let shape = (l.family, group, rpc, tm, l.fields.nsplit, l.workspace.q.is_some());
                                    assert_eq!(*first.get_or_insert(shape), shape, "{}", what());
                                    paths.insert((l.family, main.name));
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(paths.iter().any(|p| p.0 == Family::FwdQuantSplit) && paths.len() > 10, "{paths:?}");
        assert!(paths.iter().any(|p| p.0 == Family::FwdQuantStaged), "{paths:?}");
    }

    #[test]
    fn forward_ln_one_barrier_rule() {
        use DType::*;
        use Family::*;
        // The register path's kernels (past its launch bounds, e.g. 1024-thread rows with the
        // residual, the row and cluster paths run, which have no such build).
        let one = |t: &Tuning, c: FwdCall| {
            let l = plan_fwd(t, c);
            l.family != FwdRegister || l.steps().all(|s| s.kernel.name.contains("_1b"))
        };
        let reg = |t: &Tuning, c: FwdCall| plan_fwd(t, c).family == FwdRegister;
        let none = |t: &Tuning, c: FwdCall| plan_fwd(t, c).steps().all(|s| !s.kernel.name.contains("_1b"));
        let h200 = Tuning::for_device(9, 4800.0);
        assert_eq!(h200.fwd_ln_one_barrier, Some(256));
        // By N only: every M (the twin, its pairs, the half-thread and plain kernels) of an N
        // takes it or none does — 16-bit and f32, with and without the residual, aligned or not.
        for dt in [BF16, F16, F32] {
            for residual in [false, true] {
                for aligned in [true, false] {
                    for m in [1, 2, 8, 64, 128, 264, 512, 2048, 4096, 16384, 1 << 16] {
                        let c = |n| FwdCall { residual, aligned, ..ln_fwd(fwd(dt, n, m)) };
                        for n in [8192, 16384, 32768] {
                            assert!(one(&h200, c(n)), "{dt:?} res {residual} aligned {aligned} {m}x{n}");
                        }
                        assert!(reg(&h200, c(8192)), "{dt:?} res {residual} aligned {aligned} {m}x8192");
                        // Rows that leave some thread fewer chunks (unequal counts per warp: the
                        // decode rows lost, 1×6000 +5.9%), and groups below 256.
                        for n in [1, 7, 512, 1000, 2048, 3000, 4096, 4097, 6000, 8191, 8200, 12000, 16376] {
                            assert!(none(&h200, c(n)), "{dt:?} res {residual} aligned {aligned} {m}x{n}");
                        }
                        // RMSNorm has no such kernels.
                        assert!(none(&h200, FwdCall { residual, aligned, ..fwd(dt, 8192, m) }));
                    }
                }
            }
        }
        // The H100 the same (Hopper's tables); `NORMKIT_CUDA_FWD_LN1B`: the group (a power of
        // two from 128) or `off`; malformed values keep the default.
        let h100 = Tuning::for_device(9, 3350.0);
        assert_eq!(h100.fwd_ln_one_barrier, Some(256));
        assert!(!none(&h100, ln_fwd(fwd(BF16, 16384, 16384))));
        let env = |t: &Tuning, v: &'static str| t.clone().with_env(move |k| (k == "NORMKIT_CUDA_FWD_LN1B").then(|| v.to_owned()));
        assert_eq!(env(&h200, "off").fwd_ln_one_barrier, None);
        assert!(none(&env(&h200, "off"), ln_fwd(fwd(BF16, 16384, 16384))));
        assert_eq!(env(&h100, "128").fwd_ln_one_barrier, Some(128));
        for m in [1, 8, 4096, 32768] {
            assert!(one(&env(&h100, "128"), ln_fwd(fwd(BF16, 4096, m))), "{m}");
            assert!(none(&env(&h100, "128"), ln_fwd(fwd(BF16, 3072, m))), "{m}");
            assert!(none(&env(&h100, "128"), ln_fwd(fwd(BF16, 2048, m))), "{m}");
        }
        for bad in ["64", "300", "x", ""] {
            assert_eq!(env(&h200, bad).fwd_ln_one_barrier, Some(256), "{bad}");
        }
    }

    #[test]
    fn forward_f32_three_ctas() {
        use DType::*;
        let name = |t: &Tuning, c: FwdCall| plan_fwd(t, c).steps().next().unwrap().kernel.name;
        let h200 = Tuning::for_device(9, 4800.0);
        // f32 RMSNorm without the residual at N = 8192 from 4096 rows (tuning::O3_SM90).
        for m in [4096, 16384, 1 << 20] {
            assert_eq!(name(&h200, fwd(F32, 8192, m)), "nk_fwd_reg_f32_rms_a_o3", "{m}");
            assert_eq!(name(&h200, FwdCall { aligned: false, ..fwd(F32, 8192, m) }), "nk_fwd_reg_f32_rms_u_o3", "{m}");
        }
        // Fewer rows, other N, LayerNorm, the residual, 16-bit: the 512-thread build.
        for c in [
            fwd(F32, 8192, 4095),
            fwd(F32, 8192, 1),
            fwd(F32, 4096, 32768),
            fwd(F32, 6000, 32768),
            ln_fwd(fwd(F32, 8192, 4096)),
            FwdCall { residual: true, ..fwd(F32, 8192, 4096) },
            fwd(BF16, 8192, 4096),
        ] {
            assert!(!name(&h200, c).ends_with("_o3"), "{c:?}");
        }
        // The H100 the same (Hopper's tables); `NORMKIT_CUDA_FWD_F32_O3`: the rules replaced,
        // `off`, malformed values keep the default.
        let h100 = Tuning::for_device(9, 3350.0);
        assert_eq!(h100.fwd_f32_ctas3, tuning::O3_SM90.to_vec());
        assert_eq!(name(&h100, fwd(F32, 8192, 4096)), name(&h200, fwd(F32, 8192, 4096)));
        assert_eq!(name(&sm90_without_rules(), fwd(F32, 8192, 4096)), "nk_fwd_reg_f32_rms_a");
        let env = |t: &Tuning, v: &'static str| t.clone().with_env(move |k| (k == "NORMKIT_CUDA_FWD_F32_O3").then(|| v.to_owned()));
        assert_eq!(name(&env(&h200, "off"), fwd(F32, 8192, 4096)), "nk_fwd_reg_f32_rms_a");
        let e = env(&h100, "1:max:1:max");
        assert_eq!(name(&e, fwd(F32, 8192, 1)), "nk_fwd_reg_f32_rms_a_o3");
        // The 512-thread rows (N = 16384) cannot launch on the 256-thread build.
        assert_eq!(name(&e, fwd(F32, 16384, 4096)), "nk_fwd_reg_f32_rms_a");
        for bad in ["1:2:3", "9:8:1:1", "x:1:1:1"] {
            assert_eq!(env(&h200, bad).fwd_f32_ctas3, tuning::O3_SM90.to_vec(), "{bad}");
        }
    }

    /// Tuning::fwd_f32: f32 RMSNorm and LayerNorm without the residual on two chunks per
    /// thread with that table's groups where N is whole rounds of them, by N only (every M and
    /// layout); the residual, other N, 16-bit calls and the H200 keep the 4-chunk table.
    #[test]
    fn forward_f32_two_chunks() {
        use DType::*;
        let launch = |t: &Tuning, c: FwdCall| {
            let l = plan_fwd(t, c);
            let s = l.steps().next().unwrap();
            (s.kernel.name, s.block, l.fields.group)
        };
        let env = |t: &Tuning, v: &'static str| t.clone().with_env(move |k| (k == "NORMKIT_CUDA_FWD_F32").then(|| v.to_owned()));
        let h100 = Tuning::for_device(9, 3350.0);
        assert_eq!(h100.fwd_f32, tuning::F32_K2_SM90.to_vec());
        for m in [1, 8, 4096, 16384, 1 << 20] {
            for (n, g) in [(1024, 64), (2048, 128), (4096, 256)] {
                assert_eq!(launch(&h100, fwd(F32, n, m)), ("nk_fwd_reg2_f32_rms_a", g, g as i32), "{m} {n}");
                assert_eq!(launch(&h100, ln_fwd(fwd(F32, n, m))), ("nk_fwd_reg2_f32_ln_a", g, g as i32), "{m} {n}");
                assert_eq!(launch(&h100, FwdCall { aligned: false, ..fwd(F32, n, m) }), ("nk_fwd_reg2_f32_rms_u", g, g as i32), "{m} {n}");
            }
            // Partial rounds, other N, the residual, 16-bit: the 4-chunk kernels.
            for c in [
                fwd(F32, 4095, m),
                fwd(F32, 3000, m),
                fwd(F32, 512, m),
                fwd(F32, 8192, m),
                FwdCall { residual: true, ..fwd(F32, 4096, m) },
                fwd(BF16, 4096, m),
            ] {
                assert!(!launch(&h100, c).0.contains("reg2"), "{m} {c:?}");
            }
        }
        // None on the H200; `on` gives it the table, `off` empties it, a list replaces or adds
        // rows (one whose group does not hold N in two whole chunks is not taken).
        let h200 = Tuning::for_device(9, 4800.0);
        assert!(h200.fwd_f32.is_empty());
        assert_eq!(launch(&h200, fwd(F32, 4096, 8)).0, "nk_fwd_reg_f32_rms_a");
        assert_eq!(launch(&env(&h200, "on"), fwd(F32, 4096, 8)).0, "nk_fwd_reg2_f32_rms_a");
        assert_eq!(launch(&env(&h100, "off"), fwd(F32, 4096, 8)).0, "nk_fwd_reg_f32_rms_a");
        let one = env(&h200, "512:32:1,1024:32:1");
        assert_eq!(launch(&one, fwd(F32, 512, 8)), ("nk_fwd_reg2_f32_rms_a", 32, 32));
        assert_eq!(launch(&one, fwd(F32, 1024, 8)), ("nk_fwd_reg_f32_rms_a", 128, 32));
    }

    #[test]
    fn forward_rows_per_cta_rules() {
        use DType::*;
        // Tuning::fwd_rpc in Hopper's tables (tuning::RPC_SM90): 16-bit calls at N in (1024,
        // 2048] on 2 rows per CTA — RMSNorm to 8192 rows, with the residual to 512, LayerNorm
        // from 8192 — the table's group either way (the same bits). `table`: without the rules.
        let t = Tuning::for_device(9, 4800.0);
        assert_eq!(Tuning::for_device(9, 3350.0).fwd_rpc, t.fwd_rpc);
        let h100 = sm90_without_rules();
        let rows = |t: &Tuning, c: FwdCall| {
            let l = plan_fwd(t, c);
            (l.fields.rpc, l.fields.group)
        };
        let res = |c: FwdCall| FwdCall { residual: true, ..c };
        for c in [
            fwd(BF16, 2048, 8192),
            fwd(BF16, 2048, 1),
            fwd(F16, 2048, 4096),
            fwd(BF16, 1100, 4096),
            res(fwd(BF16, 2048, 512)),
            res(fwd(F16, 2048, 8)),
            ln_fwd(fwd(BF16, 2048, 8192)),
            ln_fwd(fwd(F16, 2048, 65536)),
        ] {
            let table = rows(&h100, c);
            assert_eq!(table.0, 4, "{c:?}");
            assert_eq!(rows(&t, c).0, 2, "{c:?}");
            // The group stays the table's (with the residual the twin may run in pairs, which
            // launch it doubled and keep its reduction).
            if !c.residual {
                assert_eq!(rows(&t, c).1, table.1, "{c:?}");
            }
        }
        // Not: outside the rows, LayerNorm with the residual, f32, other N, the H100.
        for c in [
            fwd(BF16, 2048, 8193),
            res(fwd(BF16, 2048, 513)),
            ln_fwd(fwd(BF16, 2048, 8191)),
            res(ln_fwd(fwd(BF16, 2048, 8192))),
            res(fwd(F32, 2048, 4096)),
            fwd(BF16, 1024, 4096),
            fwd(BF16, 4096, 4096),
        ] {
            assert_eq!(rows(&t, c).0, rows(&h100, c).0, "{c:?}");
        }
        assert!(h100.fwd_rpc.is_empty());
        // NORMKIT_CUDA_FWD_RPC: rules `op:min_n:max_n:min_rows:max_rows:R`; `off`; malformed
        // values (and CTAs past 1024 threads) keep the default.
        let env = |v: &'static str| Tuning::for_device(9, 4800.0).with_env(move |k| (k == "NORMKIT_CUDA_FWD_RPC").then(|| v.to_owned()));
        assert_eq!(rows(&env("off"), fwd(BF16, 2048, 4096)).0, 4);
        let e = env("all:512:512:1:max:16");
        assert_eq!(e.fwd_rpc.len(), 4);
        for c in [fwd(BF16, 512, 65536), ln_fwd(fwd(BF16, 512, 65536)), res(fwd(BF16, 512, 65536))] {
            assert_eq!(rows(&e, c).0, 16, "{c:?}");
        }
        assert_eq!(rows(&e, fwd(BF16, 2048, 4096)).0, 4);
        assert_eq!(rows(&env("addrms:2048:2048:1:max:2"), res(fwd(BF16, 2048, 65536))).0, 2);
        assert_eq!(rows(&env("rms:2048:2048:1:max:32"), fwd(BF16, 2048, 4096)).0, 4, "64 × 32 threads: the table's");
        for bad in ["rms:1:2", "xx:1:2048:1:max:2", "rms:2048:1:1:max:2", "rms:1:2048:1:max:0", "rms:1:2048:9:1:2"] {
            assert_eq!(env(bad).fwd_rpc, tuning::RPC_SM90.to_vec(), "{bad}");
        }
    }

    #[test]
    fn forward_l2_prefetch_rules() {
        use DType::*;
        // Tuning::fwd_l2_ahead in Hopper's tables (tuning::L2_SM90): the plain and half-thread
        // kernels of a grid past its first wave prefetch the row half a wave's rows on —
        // RMSNorm and LayerNorm without the residual in 16 bits up to N = 8192, LayerNorm in f32;
        // from 2^24 elements; the half-thread LayerNorm from 2^25, in its `_l2` build.
        let t = Tuning::for_device(9, 4800.0);
        let pf = |t: &Tuning, c: FwdCall| plan_fwd(t, c).fields.pf;
        let half_wave = |t: &Tuning, c: FwdCall| {
            let l = plan_fwd(t, c);
            let s = l.steps().next().unwrap();
            132 * OCC.blocks_per_sm(s.kernel, s.block, s.smem as usize).unwrap() as i32 * l.fields.rpc / 2
        };
        for c in [
            fwd(BF16, 4096, 32768),
            fwd(BF16, 6000, 4096),
            fwd(BF16, 8192, 8192),
            fwd(F16, 4096, 32768),
            ln_fwd(fwd(BF16, 4096, 32768)),
            ln_fwd(fwd(BF16, 4096, 16384)),
            ln_fwd(fwd(BF16, 6000, 4096)),
            ln_fwd(fwd(F16, 512, 65536)),
            ln_fwd(fwd(BF16, 8192, 32768)),
            ln_fwd(fwd(F32, 4096, 32768)),
            fwd(BF16, 512, 65536),
            ln_fwd(fwd(BF16, 16384, 16384)),
            ln_fwd(fwd(BF16, 16384, 2048)),
        ] {
            assert!(pf(&t, c) > 0, "{c:?}");
            assert_eq!(pf(&t, c), half_wave(&t, c), "{c:?}");
        }
        // None: RMSNorm in f32, the residual, RMSNorm at N = 16384 (its twin), calls below the
        // size; none on the H100.
        for c in [
            fwd(F32, 4096, 32768),
            FwdCall { residual: true, ..fwd(BF16, 4096, 32768) },
            FwdCall { residual: true, ..ln_fwd(fwd(BF16, 4096, 32768)) },
            fwd(BF16, 16384, 16384),
            ln_fwd(fwd(BF16, 16384, 2047)),
            fwd(BF16, 4096, 2048),
            fwd(BF16, 8192, 2047),
            ln_fwd(fwd(BF16, 8192, 2048)),
            ln_fwd(fwd(BF16, 8192, 4095)),
            // The half-thread LayerNorm's `_sw` build (N = 512, 1024) has no prefetching twin.
            ln_fwd(fwd(BF16, 512, 65536)),
        ] {
            assert_eq!(pf(&t, c), 0, "{c:?}");
        }
        // The H100 the same rules (its twin rule keeps the twin, which carries none, at this size).
        assert_eq!(Tuning::for_device(9, 3350.0).fwd_l2_ahead, tuning::L2_SM90.to_vec());
        assert_eq!(pf(&sm90_without_rules(), fwd(BF16, 4096, 32768)), 0);
        // The half-thread LayerNorm: its `_l2` build where it prefetches, the plain build else
        // (both one-barrier builds at N = 8192).
        let kn = |t: &Tuning, c: FwdCall| plan_fwd(t, c).steps().next().unwrap().kernel.name;
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 8192, 32768))), "nk_fwd_regh_bf16_ln_l2_1b");
        assert_eq!(kn(&t, ln_fwd(fwd(BF16, 8192, 4095))), "nk_fwd_regh_bf16_ln_1b");
        assert_eq!(kn(&t, fwd(BF16, 8192, 32768)), "nk_fwd_regh_bf16_rms");
        // A grid of one wave, the twin, an unaligned call: none.
        let all = Tuning::for_device(9, 4800.0).with_env(|k| (k == "NORMKIT_CUDA_FWD_L2PF").then(|| "50".to_owned()));
        assert_eq!(pf(&all, fwd(BF16, 4096, 1024)), 0);
        assert_eq!(pf(&all, fwd(BF16, 4096, 8)), 0);
        assert_eq!(pf(&all, FwdCall { aligned: false, ..fwd(BF16, 4096, 32768) }), 0);
        // NORMKIT_CUDA_FWD_L2PF: `P` every op at every size; rules `op:dt:min_n:max_n:min_elems:P`;
        // `off`; malformed values keep the default.
        let env = |v: &'static str| Tuning::for_device(9, 4800.0).with_env(move |k| (k == "NORMKIT_CUDA_FWD_L2PF").then(|| v.to_owned()));
        let e = env("100");
        assert_eq!(e.fwd_l2_ahead.len(), 4);
        assert_eq!(pf(&e, fwd(F32, 4096, 32768)), 2 * half_wave(&e, fwd(F32, 4096, 32768)));
        assert_eq!(pf(&e, FwdCall { residual: true, ..fwd(BF16, 4096, 32768) }), 0, "no kernel with the residual prefetches");
        assert_eq!(kn(&env("off"), ln_fwd(fwd(BF16, 8192, 32768))), "nk_fwd_regh_bf16_ln_1b");
        let e = env("ln:16:1:4096:0:25, ln:f32:1:max:0:50, rms:16:1:max:163840000:50");
        let ln = ln_fwd(fwd(BF16, 4096, 32768));
        assert_eq!(pf(&e, ln), half_wave(&e, ln) / 2);
        assert_eq!(pf(&e, fwd(BF16, 4096, 32768)), 0, "below the rule's size");
        assert!(pf(&e, fwd(BF16, 4096, 40000)) > 0);
        assert!(pf(&e, ln_fwd(fwd(F32, 4096, 32768))) > 0);
        assert!(env("off").fwd_l2_ahead.is_empty());
        for bad in ["rms:16:8192:4096:1:50", "rms:16:1:2:x:5", "rms:bf16:1:2:1:3", "addrms:16:1:2:1:3", "rms:16:1:2:3", "x"] {
            assert_eq!(env(bad).fwd_l2_ahead, tuning::L2_SM90.to_vec(), "{bad}");
        }
    }

    /// The forward's twin in pairs (Tuning::fwd_pair): RMSNorm with the fused residual wherever
    /// the twin runs, but not on grids of 17–63 CTAs; twice the table's group and threads, the
    /// same grid; `NORMKIT_CUDA_FWD_PAIR=all` every op, `0` never.
    #[test]
    fn forward_pair_by_op_and_grid() {
        let d = h100();
        let step = |t: &Tuning, n: usize, m: usize, ln: bool, residual: bool| {
            let c = FwdCall { ln, bias: ln, residual, ..fwd(DType::BF16, n, m) };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let s = l.steps().next().unwrap();
            (s.kernel.name, l.fields.group, s.block, s.grid.0)
        };
        let t = Tuning::for_sm90();
        assert_eq!(step(&t, 4096, 128, false, true), ("nk_fwd_regp_bf16_rms_res", 256, 256, 128));
        assert_eq!(step(&t, 4096, 8, false, true), ("nk_fwd_regp_bf16_rms_res", 256, 256, 8));
        // 4 rows of 1024 per CTA: 64 CTAs of 2 × 4 × 32 threads.
        assert_eq!(step(&t, 1024, 256, false, true), ("nk_fwd_regp_bf16_rms_res", 64, 256, 64));
        assert_eq!(step(&t, 4096, 32, false, true), ("nk_fwd_regd_bf16_rms_res", 128, 128, 32));
        assert_eq!(step(&t, 4096, 128, false, false).0, "nk_fwd_regd_bf16_rms");
        assert_eq!(step(&t, 4096, 128, true, true).0, "nk_fwd_regd_bf16_ln_res");
        // Past the twin's grids, the register kernel (no pair).
        assert_eq!(step(&t, 4096, 32768, false, true).0, "nk_fwd_reg_bf16_rms_res_a");
        let env = |v: &str| Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FWD_PAIR").then(|| v.to_owned()));
        assert_eq!(step(&env("all"), 4096, 32, true, false), ("nk_fwd_regp_bf16_ln", 256, 256, 32));
        assert_eq!(step(&env("0"), 4096, 128, false, true).0, "nk_fwd_regd_bf16_rms_res");
        assert_eq!(step(&env("100:200"), 4096, 8, false, true).0, "nk_fwd_regd_bf16_rms_res");
        assert_eq!(step(&env("100:200"), 4096, 128, false, true).0, "nk_fwd_regp_bf16_rms_res");
        // Tuning::fwd_twin_cap: the twin (and its pairs) padded to at most K CTAs per SM within
        // its rows; the same kernel, grid and block; elsewhere no padding.
        let cap = Tuning { fwd_twin_cap: Some((64, 128, 2)), ..Tuning::for_sm90() };
        let none = Tuning { fwd_twin_cap_auto: 0, ..Tuning::for_sm90() };
        for (m, residual) in [(128, true), (64, false), (100, true)] {
            let c = FwdCall { residual, ..fwd(DType::BF16, 4096, m) };
            let (a, b) = (forward(&none, &d, &OCC, &c).unwrap(), forward(&cap, &d, &OCC, &c).unwrap());
            let (sa, sb) = (*a.steps().next().unwrap(), *b.steps().next().unwrap());
            assert_eq!((sa.kernel.name, sa.grid, sa.block, sa.mode, a.fields), (sb.kernel.name, sb.grid, sb.block, sb.mode, b.fields));
            assert!(sa.smem == 0 && sb.smem > 0 && sb.smem as usize <= d.dyn_smem_max[sb.kernel.index], "{m}");
            assert!(OCC.blocks_per_sm(sb.kernel, sb.block, sb.smem as usize).unwrap() <= 2, "{m}");
            assert!(OCC.blocks_per_sm(sb.kernel, sb.block, sb.smem as usize - 1024).unwrap() > 2, "{m}: not the least padding");
        }
        for m in [32, 129, 32768] {
            let c = FwdCall { residual: true, ..fwd(DType::BF16, 4096, m) };
            assert_eq!(forward(&cap, &d, &OCC, &c).unwrap().steps().next().unwrap().smem, 0, "{m}");
        }
        // The default: the grid's own share, ⌈grid / SMs⌉ CTAs per SM, up to 2; none without PDL,
        // past 2 shares, or on the plain register kernel.
        let share = |t: &Tuning, m: usize, residual: bool| {
            let l = forward(t, &d, &OCC, &FwdCall { residual, ..fwd(DType::BF16, 4096, m) }).unwrap();
            let s = *l.steps().next().unwrap();
            (s.grid.0, if s.smem == 0 { 0 } else { OCC.blocks_per_sm(s.kernel, s.block, s.smem as usize).unwrap() })
        };
        assert_eq!(share(&t, 1, false), (1, 1));
        assert_eq!(share(&t, 128, true), (128, 1));
        assert_eq!(share(&t, 256, false), (256, 2));
        assert_eq!(share(&t, 32768, false).1, 0);
        assert_eq!(share(&Tuning { pdl: false, ..Tuning::for_sm90() }, 128, true).1, 0);
        assert_eq!(share(&none, 128, true).1, 0);
    }

    /// Fp8Tuning::twin_cap_auto and Tuning::bwd_twin_cap_auto: the quantised twin (and its
    /// pairs) and the backward's twin (alone or with its column CTAs) padded to their own share
    /// of an SM, ⌈grid / SMs⌉, where that is at most the setting and PDL is on: the same
    /// kernel, grid, block and fields, at least the launch's own shared memory, the least
    /// padding; none at 0, past the share, or without PDL.
    #[test]
    fn twins_padded_to_their_share() {
        let d = h100();
        let fp8 = |m: usize, per_row: bool, residual: bool| FwdCall {
            dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
            fp8: Some(Fp8Info { per_row, transposed: false }),
            residual,
            ..fwd(DType::BF16, 4096, m)
        };
        let mut on = Tuning::for_sm90();
        on.fp8.twin_cap_auto = 2;
        on.bwd_twin_cap_auto = 2;
        let mut off = on.clone();
        off.fp8.twin_cap_auto = 0;
        off.bwd_twin_cap_auto = 0;
        let check = |a: &Launch, b: &Launch, share: u32, what: &str| {
            let (sa, sb) = (*a.steps().next().unwrap(), *b.steps().next().unwrap());
            assert_eq!(
                (sa.kernel.name, sa.grid, sa.block, sa.mode, a.fields),
                (sb.kernel.name, sb.grid, sb.block, sb.mode, b.fields),
                "{what}"
            );
            assert_eq!(sa.grid.0.div_ceil(d.sms), share, "{what}");
            assert!(sb.smem >= sa.smem && sb.smem as usize <= d.dyn_smem_max[sb.kernel.index], "{what}");
            assert!(OCC.blocks_per_sm(sb.kernel, sb.block, sb.smem as usize).unwrap() <= share, "{what}");
            if sb.smem > sa.smem {
                let less = (sb.smem as usize - 1024).max(sa.smem as usize);
                assert!(OCC.blocks_per_sm(sb.kernel, sb.block, less).unwrap() > share, "{what}: not the least padding");
            }
        };
        // The quantised twin, its per-row twin and its pairs (add + RMSNorm at 8 rows).
        for (m, per_row, residual, share) in [(8, false, false, 1), (128, true, false, 1), (8, true, true, 1), (256, false, false, 2)] {
            let c = fp8(m, per_row, residual);
            let (a, b) = (forward(&off, &d, &OCC, &c).unwrap(), forward(&on, &d, &OCC, &c).unwrap());
            let what = format!("fp8 {m} rows, per row {per_row}, residual {residual}");
            assert!(b.steps().next().unwrap().smem > 0, "{what}");
            check(&a, &b, share, &what);
        }
        // Past two shares (2048 rows on the persistent grid of 4 CTAs per SM): none.
        assert_eq!(forward(&on, &d, &OCC, &fp8(2048, false, false)).unwrap().steps().next().unwrap().smem, 0);
        // The backward's twin: one CTA (3 rows), one CTA per SM (1024 rows walking), and with
        // its column CTAs (8 and 128 rows: M row CTAs and the column CTAs after them).
        for (c, share) in [(bwd(DType::BF16, 4096, 3), 1), (bwd(DType::BF16, 4096, 8), 1), (ln_bwd(bwd(DType::BF16, 4096, 128)), 2)] {
            let (a, b) = (backward(&off, &d, &OCC, &c).unwrap(), backward(&on, &d, &OCC, &c).unwrap());
            assert_eq!(a.family, Family::BwdSmall);
            check(&a, &b, share, &format!("bwd {} rows", c.m));
        }
        let pdl_off = Tuning { pdl: false, ..on.clone() };
        let unpadded = Tuning { pdl: false, ..off.clone() };
        let first = |l: Launch| *l.steps().next().unwrap();
        assert_eq!(first(forward(&pdl_off, &d, &OCC, &fp8(8, false, false)).unwrap()).smem, 0);
        let c3 = bwd(DType::BF16, 4096, 3);
        assert_eq!(first(backward(&pdl_off, &d, &OCC, &c3).unwrap()).smem, first(backward(&unpadded, &d, &OCC, &c3).unwrap()).smem);
        // The environment: a number, `0` or `off`.
        let env = |k: &str, v: &str| Tuning::for_sm90().with_env(|n| (n == k).then(|| v.to_owned()));
        assert_eq!(env("NORMKIT_CUDA_FP8_TWIN_CAP", "1").fp8.twin_cap_auto, 1);
        assert_eq!(env("NORMKIT_CUDA_BWD_TWIN_CAP", "2").bwd_twin_cap_auto, 2);
        assert_eq!(env("NORMKIT_CUDA_BWD_TWIN_CAP", "off").bwd_twin_cap_auto, 0);
        assert_eq!(env("NORMKIT_CUDA_FP8_TWIN_CAP", "x").fp8.twin_cap_auto, Tuning::for_sm90().fp8.twin_cap_auto);
    }

    /// The quantised register forward's twin: per tensor wherever the table's group fits 256
    /// threads and y is e4m3 or e5m2 (at every M; two rows per CTA past `wide_cta_walks`), per
    /// row only while its CTAs walk at most `row_twin_walks` row groups; 512-thread groups
    /// (N = 16384), the fnuz formats and `NORMKIT_CUDA_FP8_TWIN=0` keep the plain kernel; the
    /// group is the plain kernel's either way (the same bits).
    #[test]
    fn fp8_twin_by_scaling_mode_and_rows() {
        let d = h100();
        let name = |t: &Tuning, n: usize, m: usize, per_row: bool, ln: bool, residual: bool| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row, transposed: false }),
                ln,
                bias: ln,
                residual,
                ..fwd(DType::BF16, n, m)
            };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let s = l.steps().next().unwrap();
            (s.kernel.name, l.fields.group, l.fields.rpc, s.mode)
        };
        // Fp8Tuning::twin_l2_ahead: 1 on HBM3e for RMSNorm's twin without the residual, per row
        // and per tensor; 0 for the residual and LayerNorm; on the H100 per row only
        // (Fp8Tuning::row_l2_ahead).
        let pf = |t: &Tuning, per_row: bool, ln: bool, residual: bool| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row, transposed: false }),
                ln,
                bias: ln,
                residual,
                ..fwd(DType::BF16, 4096, 32768)
            };
            forward(t, &d, &OCC, &c).unwrap().fields.pf
        };
        let h200 = Tuning::for_device(9, 4800.0);
        assert_eq!([pf(&h200, true, false, false), pf(&h200, false, false, false)], [1, 1]);
        assert_eq!([pf(&h200, true, false, true), pf(&h200, true, true, false), pf(&h200, false, true, true)], [0, 0, 0]);
        let h100 = Tuning::for_sm90();
        assert_eq!([pf(&h100, true, false, false), pf(&h100, false, false, false)], [1, 0]);
        assert_eq!([pf(&h100, true, false, true), pf(&h100, true, true, false)], [0, 0]);
        let env = |v: &'static str, w: &'static str| {
            h100.clone().with_env(move |k| match k {
                "NORMKIT_CUDA_FP8_L2PF" => Some(v.to_owned()),
                "NORMKIT_CUDA_FP8_ROW_L2PF" => Some(w.to_owned()),
                _ => None,
            })
        };
        let (both, row_off) = (env("2", "x"), env("2", "off"));
        assert_eq!([pf(&both, true, false, false), pf(&both, false, false, false)], [2, 2]);
        assert_eq!([pf(&row_off, true, false, false), pf(&row_off, false, false, false)], [0, 2]);
        // The yT tiles (16-row tiles in clusters at 32768×4096): N ≥ Fp8Tuning::tile_l2_min_n.
        let tiles = |t: &Tuning, n: usize| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row: false, transposed: true }),
                ..fwd(DType::BF16, n, 32768)
            };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let name = l.steps().next().unwrap().kernel.name;
            (name, l.fields.pf)
        };
        assert_eq!(tiles(&h200, 4096), ("nk_fwd_regqdt_bf16_rms", 1));
        assert_eq!(tiles(&h200, 2048), ("nk_fwd_regqdt_bf16_rms", 0));
        // Fp8Tuning::tile_wide_max_rows (40960 on HBM3e): the tiles on one row per CTA past it.
        let tile_rpc = |t: &Tuning, m: usize| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row: false, transposed: true }),
                ..fwd(DType::BF16, 4096, m)
            };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let name = l.steps().next().unwrap().kernel.name;
            (name, l.fields.rpc)
        };
        assert_eq!(h200.fp8.tile_wide_max_rows, 40960);
        assert_eq!(tile_rpc(&h200, 40960), ("nk_fwd_regqdt_bf16_rms", 2));
        assert_eq!(tile_rpc(&h200, 40976), ("nk_fwd_regqdt_bf16_rms", 1));
        assert_eq!(tile_rpc(&h200, 40961), ("nk_fwd_regqdt_bf16_rms", 2), "M not a multiple of 16");
        assert_eq!(tile_rpc(&Tuning::for_sm90(), 65536), ("nk_fwd_regqdt_bf16_rms", 2));
        // Fp8Tuning::tile_l2_ahead sets the tiles' distance, not twin_l2_ahead.
        let mut far = h200.clone();
        far.fp8.tile_l2_ahead = 4;
        far.fp8.twin_l2_ahead = 2;
        assert_eq!((tiles(&far, 4096).1, pf(&far, false, false, false)), (4, 2));
        let t = Tuning::for_sm90();
        let pdl = if t.pdl { Mode::Pdl } else { Mode::Plain };
        // 32768 rows: 62 walks at one row per CTA, so two (wide_cta_walks).
        assert_eq!(name(&t, 4096, 32768, false, false, false), ("nk_fwd_regqd_bf16_rms", 128, 2, pdl));
        assert_eq!(name(&t, 4096, 8, false, true, true), ("nk_fwd_regqd_bf16_ln_res", 128, 1, pdl));
        assert_eq!(name(&t, 8192, 2048, false, true, false), ("nk_fwd_regqd_bf16_ln", 256, 1, pdl));
        // Up to 512 rows RMSNorm with the residual runs the twin in pairs (Fp8Tuning::pair_rows):
        // group 256 for the 128-thread group's row; the other ops keep the twin.
        assert_eq!(name(&t, 4096, 8, true, false, true), ("nk_fwd_regqpr_bf16_rms_res", 256, 1, pdl));
        assert_eq!(name(&t, 4096, 512, false, false, true), ("nk_fwd_regqp_bf16_rms_res", 256, 1, pdl));
        assert_eq!(name(&t, 4096, 513, true, false, true), ("nk_fwd_regqdr_bf16_rms_res", 128, 1, pdl));
        assert_eq!(name(&t, 4096, 8, true, false, false), ("nk_fwd_regqdr_bf16_rms", 128, 1, pdl));
        assert_eq!(name(&t, 4096, 8, false, false, false), ("nk_fwd_regqd_bf16_rms", 128, 1, pdl));
        assert_eq!(name(&t, 4096, 8, true, true, false).0, "nk_fwd_regqdr_bf16_ln");
        // LayerNorm per row: 4 CTAs of 128 threads on 132 SMs, 528 row groups per wave, 8 walks
        // = 4224 rows.
        assert_eq!(name(&t, 4096, 4224, true, true, true).0, "nk_fwd_regqdr_bf16_ln_res");
        assert_eq!(name(&t, 4096, 4225, true, true, true), ("nk_fwd_regq_bf16_ln_res_a", 128, 1, Mode::Plain));
        assert_eq!(name(&t, 4096, 32768, true, true, false).0, "nk_fwd_regq_bf16_ln_a");
        // RMSNorm per row: the twin at every M, with or without the residual, whole chunks or
        // not (its y and row max are its own: batch invariance).
        for (n, m, residual) in
            [(4096, 32768, false), (512, 1 << 20, false), (3000, 32768, false), (4096, 4225, true), (3000, 1 << 20, true)]
        {
            let want = if residual { "nk_fwd_regqdr_bf16_rms_res" } else { "nk_fwd_regqdr_bf16_rms" };
            assert_eq!(name(&t, n, m, true, false, residual).0, want, "{m}x{n}");
        }
        assert_eq!(name(&t, 16384, 8, false, false, false).0, "nk_fwd_regq_bf16_rms_a");
        // RMSNorm with a bias: the twin per tensor, the plain kernel per row at every M (the
        // per-row twin finds the max from x·(w + offset)).
        let biased = |per_row: bool, m: usize| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row, transposed: false }),
                bias: true,
                ..fwd(DType::BF16, 4096, m)
            };
            forward(&t, &d, &OCC, &c).unwrap().steps().next().unwrap().kernel.name
        };
        assert_eq!(biased(false, 8), "nk_fwd_regqd_bf16_rms");
        assert_eq!(biased(true, 8), "nk_fwd_regq_bf16_rms_a");
        assert_eq!(biased(true, 32768), "nk_fwd_regq_bf16_rms_a");
        // Per tensor (Fp8Tuning::wide_cta_walks = 8; NORMKIT_CUDA_FP8_WIDE=off: never): past 8 walks (4224 row
        // groups) two rows per 256-thread CTA, the same group; 256-thread groups stay as they are.
        assert_eq!(t.fp8.wide_cta_walks, 8);
        let wide = t.clone();
        let off = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_WIDE").then(|| "off".to_owned()));
        assert_eq!(name(&off, 4096, 4225, false, false, true), ("nk_fwd_regqd_bf16_rms_res", 128, 1, pdl));
        assert_eq!(name(&wide, 4096, 4224, false, false, true), ("nk_fwd_regqd_bf16_rms_res", 128, 1, pdl));
        assert_eq!(name(&wide, 4096, 4225, false, false, true), ("nk_fwd_regqd_bf16_rms_res", 128, 2, pdl));
        assert_eq!(name(&wide, 8192, 32768, false, false, false), ("nk_fwd_regqd_bf16_rms", 256, 1, pdl));
        // Per row only as Fp8Tuning::wide_row says (Never on the H100; Residual on HBM3e: RMSNorm
        // with the residual, whole 4-chunk rows).
        assert_eq!(name(&wide, 4096, 32768, true, false, false), ("nk_fwd_regqdr_bf16_rms", 128, 1, pdl));
        assert_eq!(name(&wide, 4096, 32768, true, false, true).2, 1);
        let row = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_WIDE_ROW").then(|| "1".to_owned()));
        assert_eq!(name(&row, 4096, 32768, true, false, false), ("nk_fwd_regqdr_bf16_rms", 128, 2, pdl));
        assert_eq!(name(&row, 4096, 32768, true, true, false).2, 1, "per-row LayerNorm past its walks: the plain kernel");
        let h200 = Tuning::for_device(9, 4800.0);
        assert_eq!(h200.fp8.wide_row, tuning::WideRow::Residual);
        assert_eq!(name(&h200, 4096, 32768, true, false, true).2, 2);
        assert_eq!(name(&h200, 4096, 32768, true, false, false).2, 1);
        assert_eq!(name(&h200, 3072, 32768, true, false, true).2, 1, "3 chunks of 4 per thread");
        // The fnuz formats (software conversion) keep the plain kernel.
        let fnuz = FwdCall {
            dtypes: DTypes { y: DType::F8E4M3Fnuz, ..DTypes::uniform(DType::BF16) },
            fp8: Some(Fp8Info { per_row: false, transposed: false }),
            ..fwd(DType::BF16, 4096, 8)
        };
        assert_eq!(forward(&t, &d, &OCC, &fnuz).unwrap().steps().next().unwrap().kernel.name, "nk_fwd_regq_bf16_rms_a");
        let off = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_TWIN").then(|| "0".to_owned()));
        assert!(!off.fp8.reg_twin);
        assert_eq!(name(&off, 4096, 8, false, false, false), ("nk_fwd_regq_bf16_rms_a", 128, 1, Mode::Plain));
        let walks = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_TWIN").then(|| "100".to_owned()));
        assert!(walks.fp8.reg_twin && walks.fp8.row_twin_walks == 100);
        assert_eq!(name(&walks, 4096, 32768, true, true, true).0, "nk_fwd_regqdr_bf16_ln_res");
        // The twin in pairs for the rows of Fp8Tuning::pair_rows: group 2G on twice the threads,
        // where that fits 256 threads (N = 8192's group of 256 does not).
        let pairs = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_PAIR").then(|| "1:128".to_owned()));
        assert_eq!(pairs.fp8.pair_rows, (1, 128));
        assert_eq!(name(&pairs, 4096, 8, true, false, true), ("nk_fwd_regqpr_bf16_rms_res", 256, 1, pdl));
        assert_eq!(name(&pairs, 4096, 128, false, false, true), ("nk_fwd_regqp_bf16_rms_res", 256, 1, pdl));
        assert_eq!(name(&pairs, 4096, 128, false, true, true), ("nk_fwd_regqd_bf16_ln_res", 128, 1, pdl));
        assert_eq!(name(&pairs, 4096, 129, true, false, true).0, "nk_fwd_regqdr_bf16_rms_res");
        assert_eq!(name(&pairs, 8192, 8, true, false, true).0, "nk_fwd_regqdr_bf16_rms_res");
        assert_eq!(name(&pairs, 1024, 100, true, false, true), ("nk_fwd_regqpr_bf16_rms_res", 64, 4, pdl));
        // `all`: every M (where a pair kernel exists: RMSNorm with the residual); `0`: never.
        let all = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_PAIR").then(|| "all".to_owned()));
        assert_eq!(name(&all, 4096, 1000, false, false, true), ("nk_fwd_regqp_bf16_rms_res", 256, 1, pdl));
        assert_eq!(name(&all, 4096, 1000, false, true, true).0, "nk_fwd_regqd_bf16_ln_res");
        let none = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_PAIR").then(|| "0".to_owned()));
        assert_eq!(name(&none, 4096, 8, true, false, true).0, "nk_fwd_regqdr_bf16_rms_res");
        // Per tensor with the residual (bf16), from Fp8Tuning::twin_x2_min_elems elements on
        // HBM3e Hopper: the twin's two-CTAs-per-SM build (the same code); per row, LayerNorm and
        // f16 have none; the H100 never takes it.
        let h200 = Tuning::for_device(9, 4800.0);
        assert_eq!(name(&h200, 4096, 8192, false, false, true).0, "nk_fwd_regqd_bf16_rms_res_x2");
        assert_eq!(name(&h200, 8192, 4096, false, false, true).0, "nk_fwd_regqd_bf16_rms_res_x2");
        assert_eq!(name(&h200, 8192, 2048, false, false, true).0, "nk_fwd_regqd_bf16_rms_res");
        assert_eq!(name(&h200, 4096, 8192, true, false, true).0, "nk_fwd_regqdr_bf16_rms_res");
        assert_eq!(name(&h200, 4096, 8192, false, true, true).0, "nk_fwd_regqd_bf16_ln_res");
        assert_eq!(name(&t, 4096, 8192, false, false, true).0, "nk_fwd_regqd_bf16_rms_res");
        let x2off = h200.with_env(|k| (k == "NORMKIT_CUDA_FP8_TWIN_X2").then(|| "off".to_owned()));
        assert_eq!(name(&x2off, 4096, 8192, false, false, true).0, "nk_fwd_regqd_bf16_rms_res");
        let x2on = t.clone().with_env(|k| (k == "NORMKIT_CUDA_FP8_TWIN_X2").then(|| "33554432".to_owned()));
        assert_eq!(name(&x2on, 4096, 8192, false, false, true).0, "nk_fwd_regqd_bf16_rms_res_x2");
    }

    /// Fp8Tuning::row_res_rows_min_elems: the per-row bf16 add + RMSNorm twin runs on a CTA per
    /// row group from that many elements (2^22 on Hopper's tables, never on HBM3e), else on the
    /// persistent grid; its pairs (up to Fp8Tuning::pair_rows), per tensor, LayerNorm and f16
    /// keep the persistent grid. The kernel and group are the same either way (the same bits).
    #[test]
    fn fp8_row_res_twin_on_a_cta_per_row_group() {
        let d = h100();
        let plan = |t: &Tuning, n: usize, m: usize, per_row: bool, ln: bool, dt: DType| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(dt) },
                fp8: Some(Fp8Info { per_row, transposed: false }),
                ln,
                bias: ln,
                residual: true,
                ..fwd(dt, n, m)
            };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let s = l.steps().next().unwrap();
            (s.kernel.name, s.grid.0, s.block)
        };
        let bf = DType::BF16;
        let t = Tuning::for_sm90();
        assert_eq!(t.fp8.row_res_rows_min_elems, 1 << 22);
        assert_eq!(Tuning::for_device(9, 4800.0).fp8.row_res_rows_min_elems, u64::MAX);
        let off = t.clone().with_env(|k| (k == "NORMKIT_CUDA_FP8_ROW_RES_GRID").then(|| "off".to_owned()));
        assert_eq!(off.fp8.row_res_rows_min_elems, u64::MAX);
        let persistent = plan(&off, 4096, 32768, true, false, bf);
        assert_eq!(persistent.0, "nk_fwd_regqdr_bf16_rms_res");
        assert!(persistent.1 < 32768);
        assert_eq!(plan(&t, 4096, 32768, true, false, bf), ("nk_fwd_regqdr_bf16_rms_res", 32768, 128));
        assert_eq!(plan(&t, 4096, 1024, true, false, bf), ("nk_fwd_regqdr_bf16_rms_res", 1024, 128));
        assert_eq!(plan(&t, 1024, 4096, true, false, bf).1, 4096 / 4);
        assert_eq!(plan(&t, 4096, 1023, true, false, bf).1, plan(&off, 4096, 1023, true, false, bf).1);
        // 512 rows of 8192 (2^22 elements): N = 8192's 256-thread group has no pairs.
        assert_eq!(plan(&t, 8192, 512, true, false, bf), ("nk_fwd_regqdr_bf16_rms_res", 512, 256));
        for (n, m, per_row, ln, dt) in
            [(4096, 32768, false, false, bf), (4096, 32768, true, true, bf), (4096, 32768, true, false, DType::F16)]
        {
            assert_eq!(plan(&t, n, m, per_row, ln, dt), plan(&off, n, m, per_row, ln, dt));
        }
        let every = t.clone().with_env(|k| (k == "NORMKIT_CUDA_FP8_ROW_RES_GRID").then(|| "0".to_owned()));
        // The pairs (up to 512 rows of 4096) keep the persistent grid at any threshold.
        assert_eq!(plan(&every, 4096, 512, true, false, bf), plan(&off, 4096, 512, true, false, bf));
        assert_eq!(plan(&every, 4096, 512, true, false, bf).0, "nk_fwd_regqpr_bf16_rms_res");
        assert_eq!(plan(&every, 4096, 600, true, false, bf).1, 600);
    }

    /// yT where the quantised twin runs: through its own tiles (`nk_fwd_regqd{|r}t_*`, one step,
    /// no separate transpose) of Fp8Tuning::twin_tm rows where that fits `tile_smem`, else half
    /// as many (N = 8192: 8 rows), in clusters of Fp8Tuning::twin_cluster CTAs on a persistent
    /// grid of whole clusters, for N in `twin_tile_n` and where the supertiles fill at least
    /// `twin_tile_fill` % of a wave of clusters; otherwise (and with `NORMKIT_CUDA_FP8_TWIN_TM=0`
    /// or the plain kernel) the separate transpose after the kernel. `NORMKIT_CUDA_FP8_TWIN_CL=1`:
    /// no cluster, a programmatic dependent.
    #[test]
    fn fp8_twin_tile_by_shape() {
        let d = h100();
        let plan = |t: &Tuning, n: usize, m: usize, per_row: bool| {
            let c = FwdCall {
                dtypes: DTypes { y: DType::F8E4M3, ..DTypes::uniform(DType::BF16) },
                fp8: Some(Fp8Info { per_row, transposed: true }),
                ..fwd(DType::BF16, n, m)
            };
            let l = forward(t, &d, &OCC, &c).unwrap();
            let names: Vec<&str> = l.steps().map(|s| s.kernel.name).collect();
            let s = l.steps().next().unwrap();
            (names, l.fields.tm, l.fields.rpc, s.smem, s.grid.0, s.mode)
        };
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            Tuning::for_sm90().with_env(|k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_owned()))
        };
        let t = Tuning::for_sm90();
        let f = t.fp8;
        assert_eq!((f.twin_tm, f.twin_cluster, f.twin_tile_fill, f.twin_tile_n), (16, 2, 150, (2048, 4096)));
        let pitch = fp8_tile_pitch(4096, 16) as u32;
        // 32768 rows: two rows per CTA (wide), 1024 supertiles of 32 rows over whole clusters.
        let (names, tm, rpc, smem, grid, mode) = plan(&t, 4096, 32768, false);
        assert_eq!((names, tm, rpc, smem, mode), (vec!["nk_fwd_regqdt_bf16_rms"], 16, 2, 16 * pitch, cl(2)));
        assert!(grid.is_multiple_of(2) && (OCC.sms..=2048).contains(&grid), "{grid}");
        // Few rows: the twin (a CTA per row group), then the separate transpose.
        assert_eq!(plan(&t, 4096, 8, true).0, vec!["nk_fwd_regqdr_bf16_rms", "nk_fwd_q_transpose"]);
        assert_eq!(plan(&t, 4096, 1024, false).0, vec!["nk_fwd_regqd_bf16_rms", "nk_fwd_q_transpose"]);
        // N outside twin_tile_n; with the range widened, N = 8192 takes 8-row tiles (16 would
        // pass tile_smem).
        assert_eq!(plan(&t, 8192, 32768, false).0, vec!["nk_fwd_regqd_bf16_rms", "nk_fwd_q_transpose"]);
        let wide = env(&[("NORMKIT_CUDA_FP8_TWIN_N", "512:8192")]);
        let (names, tm, _, smem, _, _) = plan(&wide, 8192, 32768, false);
        assert_eq!((names, tm, smem), (vec!["nk_fwd_regqdt_bf16_rms"], 8, 8 * fp8_tile_pitch(8192, 8) as u32));
        // Without the fill's floor, one supertile is enough: a cluster.
        let (names, _, _, _, grid, mode) = plan(&env(&[("NORMKIT_CUDA_FP8_TWIN_TW", "0")]), 4096, 8, true);
        assert_eq!((names, grid, mode), (vec!["nk_fwd_regqdrt_bf16_rms"], 2, cl(2)));
        let pdl = if t.pdl { Mode::Pdl } else { Mode::Plain };
        assert_eq!(plan(&env(&[("NORMKIT_CUDA_FP8_TWIN_CL", "1")]), 4096, 32768, false).5, pdl);
        let t32 = env(&[("NORMKIT_CUDA_FP8_TWIN_TM", "32"), ("NORMKIT_CUDA_FP8_TWIN_N", "512:4096")]);
        assert_eq!(plan(&t32, 1024, 65536, false).1, 32);
        let off = env(&[("NORMKIT_CUDA_FP8_TWIN_TM", "0")]);
        assert_eq!(plan(&off, 4096, 32768, false).0, vec!["nk_fwd_regqd_bf16_rms", "nk_fwd_q_transpose"]);
        // Per row: the twin at every M, with its tiles; without the twin, the plain kernel and
        // the separate transpose.
        assert_eq!(plan(&t, 4096, 32768, true).0, vec!["nk_fwd_regqdrt_bf16_rms"]);
        let notwin = env(&[("NORMKIT_CUDA_FP8_TWIN", "0")]);
        assert_eq!(plan(&notwin, 4096, 32768, true).0, vec!["nk_fwd_regq_bf16_rms_a", "nk_fwd_q_transpose"]);
    }

    /// FP8 rows past the register kernels (N > 32768 for 16-bit x): the staged cluster forward
    /// with an FP8 output (`nk_fwd_csq_*`), clusters of the fewest CTAs whose slices fit 64 KiB,
    /// 256 threads, resident clusters walking the rows, per tensor and per row alike (the mode is
    /// the kernel's), yT by the separate transpose; the split path where it does not apply.
    #[test]
    fn fp8_staged_by_shape() {
        use DType::*;
        use Family::*;
        let t = Tuning::for_sm90();
        let q = |per_row, transposed| Some(Fp8Info { per_row, transposed });
        let bf = DTypes { y: F8E4M3, ..DTypes::uniform(BF16) };
        let fp8 = |n: usize, m: usize, per_row: bool| FwdCall { dtypes: bf, fp8: q(per_row, false), ..fwd(BF16, n, m) };
        let fs = |threads: i32, c: i32, lag: i32| Fields { group: threads, rpc: c, lag, ..Fields::default() };
        // 65536 bf16: 128 KiB rows → 2 CTAs of 64 KiB (8 stages of 512 chunks, lag 4); FakeOcc:
        // 3 CTAs of 64 KiB per SM → 198 clusters resident; 2048 rows walk them.
        // Per row, RMSNorm without a bias: its own kernel (the row's max with the sum of squares).
        for (per_row, name) in [(false, "nk_fwd_csq_bf16_rms"), (true, "nk_fwd_csqr_bf16_rms")] {
            check(
                "Q1 bf16 65536",
                plan_fwd(&t, fp8(65536, 2048, per_row)),
                FwdQuantStaged,
                &[(name, (396, 1), 256, 65536, cl(2), None)],
                FP8_WS,
                // The L2 prefetch (4 stages) in the per-row kernel only.
                if per_row { Fields { pf: 4, pfd: 1, ..fs(256, 2, 4) } } else { fs(256, 2, 4) },
            );
        }
        // With a bias, per row: the kernel that finds the row's max in a pass over y.
        let biased = FwdCall { bias: true, ..fp8(65536, 8, true) };
        assert_eq!(plan_fwd(&t, biased).steps().next().unwrap().kernel.name, "nk_fwd_csq_bf16_rms");
        // Few rows: a cluster per row. The residual stages r too: 4 CTAs.
        check(
            "Q2 residual 65536",
            plan_fwd(&t, FwdCall { residual: true, ..fp8(65536, 3, true) }),
            FwdQuantStaged,
            &[("nk_fwd_csqr_bf16_rms_res", (12, 1), 256, 65536, cl(4), None)],
            FP8_WS,
            fs(256, 4, 2),
        );
        // LayerNorm (with its bias), f16, N = 40000: 80000-byte rows → 2 CTAs of 2500 chunks, 5
        // stages (the last one partial), lag 3; yT by the separate transpose.
        let hf = DTypes { y: F8E5M2, ..DTypes::uniform(F16) };
        let c = FwdCall { dtypes: hf, ln: true, bias: true, fp8: q(false, true), ..fwd(F16, 40000, 5) };
        check(
            "Q3 f16 ln 40000 yT",
            plan_fwd(&t, c),
            FwdQuantStaged,
            &[("nk_fwd_csq_f16_ln", (10, 1), 256, 5 * 8192, cl(2), None), ("nk_fwd_q_transpose", (157, 1), 256, 0, P, None)],
            FP8_WS,
            fs(256, 2, 3),
        );
        // 262144: 8 CTAs.
        assert_eq!(plan_fwd(&t, fp8(262144, 4, true)).steps().next().unwrap().mode, cl(8));
        // Not staged: within the register kernels' rows, 1M (128 KiB slices on 16 CTAs), f32 x,
        // a weight of another dtype, element-wise layouts, other casting, no clusters, off.
        assert_eq!(plan_fwd(&t, fp8(32768, 4, false)).family, FwdQuant);
        assert_eq!(plan_fwd(&t, fp8(1 << 20, 4, false)).family, FwdQuantSplit);
        let f32x = DTypes { y: F8E4M3, ..DTypes::uniform(F32) };
        assert_eq!(plan_fwd(&t, FwdCall { dtypes: f32x, ..fp8(65536, 4, false) }).family, FwdQuantSplit);
        let f32w = DTypes { y: F8E4M3, ..DTypes::f32_weight(BF16) };
        assert_eq!(plan_fwd(&t, FwdCall { dtypes: f32w, ..fp8(65536, 4, false) }).family, FwdQuantSplit);
        assert_eq!(plan_fwd(&t, FwdCall { aligned: false, ..fp8(65536, 4, false) }).family, FwdQuantSplit);
        assert_eq!(plan_fwd(&t, FwdCall { gemma: false, ..fp8(65536, 4, false) }).family, FwdQuantSplit);
        let l = forward(&t, &h100(), &FakeOcc { sms: 132, clusters: false }, &fp8(65536, 4, false)).unwrap();
        assert_eq!(l.family, FwdQuantSplit);
        let off = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_FP8_STAGED").then(|| "0".to_owned()));
        assert!(!off.fp8.staged);
        assert_eq!(plan_fwd(&off, fp8(65536, 4, true)).family, FwdQuantSplit);
    }

    /// bf16 RMSNorm backward with d_residual_out at N = 163840 (cluster, 512 threads): the
    /// shared-memory kernel, with or without the prefetching twins enabled (RMSNorm has no twin
    /// with d_residual_out); without d_residual_out the twin runs.
    #[test]
    fn rms_backward_with_d_residual_out_at_163840_takes_the_shared_memory_kernel() {
        let c = BwdCall { d_residual: true, ..bwd(DType::BF16, 163840, 64) };
        assert_eq!(
            backward(&Tuning::for_sm90(), &h100(), &OCC, &c).unwrap().steps().next().unwrap().kernel.name,
            "nk_bwd_cls_bf16_rms_res"
        );
        let nopf = Tuning::for_sm90().with_env(|k| (k == "NORMKIT_CUDA_CLUSTER_PF").then(|| "0".to_owned()));
        assert_eq!(backward(&nopf, &h100(), &OCC, &c).unwrap().steps().next().unwrap().kernel.name, "nk_bwd_cls_bf16_rms_res");
        let plain = bwd(DType::BF16, 163840, 64);
        assert_eq!(
            backward(&Tuning::for_sm90(), &h100(), &OCC, &plain).unwrap().steps().next().unwrap().kernel.name,
            "nk_bwd_clp_bf16_rms"
        );
    }
    /// `workspace_bound` covers every launch the planner makes up to its shape, for both ops,
    /// every dtype and the LayerNorm/residual variants, on the H100 facts.
    #[test]
    fn workspace_bound_covers_every_plan() {
        let t = Tuning::for_cc(9);
        let d = h100();
        let sms = OCC.sms as usize;
        for &dt in &DType::ALL {
            for &n in &[1usize, 7, 64, 1000, 4096, 8192, 12288, 65536, 131072, 262145, 1 << 20] {
                for &m in &[1usize, 3, 128, 1000, 4096, 70000] {
                    let bound = workspace_bound(m, n, sms);
                    let q = |c: FwdCall, per_row| FwdCall {
                        dtypes: DTypes { y: DType::F8E4M3, ..c.dtypes },
                        fp8: Some(Fp8Info { per_row, transposed: true }),
                        ..c
                    };
                    let res = FwdCall { residual: true, ..fwd(dt, n, m) };
                    for c in
                        [fwd(dt, n, m), ln_fwd(fwd(dt, n, m)), res, q(fwd(dt, n, m), false), q(res, true), q(ln_fwd(fwd(dt, n, m)), true)]
                    {
                        let l = forward(&t, &d, &OCC, &c).unwrap();
                        assert!(l.workspace.bytes <= bound, "fwd {dt} {m}x{n}: {} > {bound}", l.workspace.bytes);
                    }
                    for c in [bwd(dt, n, m), ln_bwd(bwd(dt, n, m)), BwdCall { d_residual: true, ..bwd(dt, n, m) }] {
                        let l = backward(&t, &d, &OCC, &c).unwrap();
                        assert!(l.workspace.bytes <= bound, "bwd {dt} {m}x{n}: {} > {bound}", l.workspace.bytes);
                    }
                }
            }
        }
    }
}
