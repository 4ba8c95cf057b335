//! Every launch threshold and every measurement override of the CUDA backend, kept as data:
//! one [`Tuning`] per backend, built once when the backend is created ([`Tuning::for_cc`], then
//! [`Tuning::with_env`] from `startup.rs`) and read by the planner (`plan.rs`). Each entry says
//! the measurement behind it. No process-global state: two backends may hold different tunings.
//!
//! Row path: a group of `group` threads normalises one row (thread t owns the 8-element chunks
//! t, t + group, ...), `rows_per_cta` groups share a persistent CTA, and the row is staged in
//! shared memory. A table row applies to every N up to its `max_n`; past the last row, or when the
//! staged row and weights do not fit in shared memory, the split-row path runs. The choice depends
//! on N and the dtypes only — never on M or the layout — so a row's forward output is the same
//! whatever the batch and however it is strided.
//!
//! # Environment overrides (measurements only)
//!
//! Read once, when a backend is created ([`Tuning::with_env`], called by `CudaBackend::new`);
//! a value set later does not reach that backend. None changes a result's bits except where said;
//! they exist for A/B runs (kernels-cuda/NOTES.md names the run behind each).
//!
//! | variable | field | effect |
//! |---|---|---|
//! | `NORMKIT_CUDA_MEM_GBPS` | [`Tuning::for_device`]'s `mem_gbps` | the DRAM bandwidth in GB/s the tables are chosen by, instead of the device's (an H100 given 4800 takes the H200's rules: measurements); read by the backend before the others apply |
//! | `NORMKIT_CUDA_FWD_TABLE` | [`Tuning::fwd`] | `max_n:group:rows_per_cta,...` rows replaced or added (malformed entries ignored) |
//! | `NORMKIT_CUDA_BWD_TABLE` | [`Tuning::bwd_reg`] | the same, for the backward register table (2 chunks per thread) |
//! | `NORMKIT_CUDA_BWD4_TABLE` | [`Tuning::bwd_reg4`] | the same, for the 4-chunk backward register table |
//! | `NORMKIT_CUDA_BWD4F_TABLE` | [`Tuning::bwd_reg4_few`] | the same, for the rows taken before it by calls of a few rows |
//! | `NORMKIT_CUDA_BWD4F_MAX_M` | [`Tuning::bwd_reg4_few_max_m`] | the most rows of a call that takes those rows (`0`: never) |
//! | `NORMKIT_CUDA_BWD_K1_ABOVE` | [`Tuning::bwd_k1_above`] | f32 backward: N above which one chunk per thread is used |
//! | `NORMKIT_CUDA_FWD_K8` | [`Tuning::fwd_k8`], [`Tuning::fwd_k8_ln`] | `0`: no 8-chunk forward kernels; `all`: also for LayerNorm |
//! | `NORMKIT_CUDA_FWD_K8W` | [`Tuning::fwd_k8_wide`] | `max_n:group:rows_per_cta`: the 8-chunk row for bf16 RMSNorm without the residual at N in (max_n / 2, max_n]; `off`: none; changes bits where it runs |
//! | `NORMKIT_CUDA_FWD_K8W_LN` | [`Tuning::fwd_k8_wide_ln`] | the same for LayerNorm only |
//! | `NORMKIT_CUDA_FWD_LN1B` | [`Tuning::fwd_ln_one_barrier`] | `G`: LayerNorm forwards whose table group is at least G threads (a power of two from 128), on rows of whole rounds of chunks, take their statistics behind one barrier; `off`: none; changes bits where it runs |
//! | `NORMKIT_CUDA_FWD_F32` | [`Tuning::fwd_f32`] | `on`: [`F32_K2_SM90`]; `off`: none; else `max_n:group:rows_per_cta,...` rows replaced or added (f32 forwards without the residual at N = 16 · group on two chunks per thread; changes bits where it runs) |
//! | `NORMKIT_CUDA_FWD_F32_O3` | [`Tuning::fwd_f32_ctas3`] | `min_n:max_n:min_rows:max_rows,...` (`max` for no limit): the rules replaced (f32 RMSNorm without the residual on its three-CTA build, same bits); `off`: none |
//! | `NORMKIT_CUDA_FWD_HALF` | [`Tuning::fwd_half`] | `op:min_n:max_n:min_rows:max_rows,...` (op `rms`, `ln` or `all`): the rules replaced (the 4-chunk rows on half the threads, same bits); `off`: none |
//! | `NORMKIT_CUDA_FWD_RPC` | [`Tuning::fwd_rpc`] | `op:min_n:max_n:min_rows:max_rows:R,...` (op `rms`, `addrms`, `ln`, `addln` or `all`): the rules replaced (16-bit forwards with N and M in range launch R rows per CTA, the table's groups, same bits); `off`: none |
//! | `NORMKIT_CUDA_FWD_L2PF` | [`Tuning::fwd_l2_ahead`] | `op:dt:min_n:max_n:min_elems:P,...` (op `rms` or `ln`; dt `16` or `f32`): the rules replaced (the plain register forwards without the residual and the half-thread kernels, of at least min_elems elements, prefetch into L2 the row P % of a wave on); a number P: every op at every size; `off`: none |
//! | `NORMKIT_CUDA_PF` | [`Tuning::bwd_reg_prefetch`] | `0`: the backward register kernels without their prefetching twins |
//! | `NORMKIT_CUDA_FULL` | [`Tuning::no_full`] | `0`: register kernels without their FULL specialisation |
//! | `NORMKIT_CUDA_FWD_GRID` | [`Tuning::fwd_persistent`] | `persist`: forward register kernels on an occupancy-sized grid |
//! | `NORMKIT_CUDA_BWD_CTAS_PER_SM` | [`Tuning::bwd_ctas_per_sm`] | at most this many backward register / row-batch CTAs per SM |
//! | `NORMKIT_CUDA_FIN_COLS_MAX` | [`Tuning::fin_cols_max`] | at N ≥ 65536, at most this many partial rows take the one-column finalize |
//! | `NORMKIT_CUDA_PDL` | [`Tuning::pdl`] | `0`: no programmatic dependent launches |
//! | `NORMKIT_CUDA_FWD_DECODE` | [`Tuning::fwd_decode_max_ctas`] | the largest register-forward grid that runs the twin, instead of [`TwinTuning`]'s rules (`0`: none) |
//! | `NORMKIT_CUDA_FWD_TWIN_CAP` | [`Tuning::fwd_twin_cap`], [`Tuning::fwd_twin_cap_auto`] | `LO:HI:K`: calls of LO..=HI rows launch the forward's twin (and its pairs) with shared memory padding that leaves at most K CTAs per SM; `auto:N`: ⌈grid / SMs⌉ where at most N; `off`: no padding |
//! | `NORMKIT_CUDA_FWD_PAIR` | [`Tuning::fwd_pair`] | `0`: the forward's twin never in pairs; `all`: in pairs wherever it runs (every op, every grid); `LO:HI`: only for calls of LO..=HI rows |
//! | `NORMKIT_CUDA_BWD_SMALL` | [`Tuning::bwd_small_max_m`] | the most rows of the backward's twin (`nk_bwd_sm*`, `nk_bwd_smc*`; default 1024; `0`: never) |
//! | `NORMKIT_CUDA_BWD_SMALL_WALK` | [`Tuning::bwd_small_walk`] | rows per CTA of the backward's twin: `R` at every M, or `M:R,...` by M |
//! | `NORMKIT_CUDA_BWD_SMALL_COLS` | [`Tuning::bwd_small_cols`] | the rows (`LO:HI`, or `off`) where the twin's launch carries column CTAs for dW/dB (`nk_bwd_smc*`) |
//! | `NORMKIT_CUDA_BWD_TWIN_CAP` | [`Tuning::bwd_twin_cap_auto`] | a number N: the backward's twin (and its column CTAs) padded to ⌈grid / SMs⌉ CTAs per SM where that is at most N; `0` / `off`: never |
//! | `NORMKIT_CUDA_BWD_SMALL_COLS_ROWS` | [`Tuning::bwd_small_cols_rows`] | rows per lane of those column CTAs |
//! | `NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS` | [`Tuning::bwd_small_cols_max_elems`] | the most M·N elements that take those column CTAs |
//! | `NORMKIT_CUDA_FP8_T` | [`Fp8Tuning::transpose`] | `separate` (default), `fused` or `strided`: how the FP8 `yT` is written |
//! | `NORMKIT_CUDA_FP8_TM` | [`Fp8Tuning::max_tm`] | the largest fused-transpose tile, rows (4..=64, a power of two) |
//! | `NORMKIT_CUDA_FP8_CTA` | [`Fp8Tuning::cta_threads`] | threads per CTA of the FP8 row kernel (32..=512) |
//! | `NORMKIT_CUDA_FP8_REG` | [`Fp8Tuning::reg`] | `0`: no quantised register forward (`nk_fwd_regq*`) |
//! | `NORMKIT_CUDA_FP8_ROW_MAX` | [`Fp8Tuning::row_max_n`] | the largest N of the FP8 row kernels (longer rows: split) |
//! | `NORMKIT_CUDA_FP8_GRID` | [`Fp8Tuning::reg_grid_rows`] | `rows`: the quantised register forward on a CTA per row group, not persistent |
//! | `NORMKIT_CUDA_FP8_TWIN` | [`Fp8Tuning::reg_twin`], [`Fp8Tuning::row_twin_walks`] | `0`: the quantised register forward without its twin (`nk_fwd_regqd*`); a number: the per-row LayerNorm twin's most row groups per CTA |
//! | `NORMKIT_CUDA_FP8_PAIR` | [`Fp8Tuning::pair_rows`], [`Fp8Tuning::pair_every_op`] | `0`: the quantised twin never in pairs; `all`: in pairs at every M, every op; `LO:HI`: for calls of LO..=HI rows |
//! | `NORMKIT_CUDA_FP8_WIDE` | [`Fp8Tuning::wide_cta_walks`] | a number: the per-tensor twin doubles its rows per CTA past that many walks (default 8); `off`: never |
//! | `NORMKIT_CUDA_FP8_TWIN_TM` | [`Fp8Tuning::twin_tm`] | the twin's largest yT tile, rows (8, 16 or 32); `0`: the twin leaves yT to the separate transpose |
//! | `NORMKIT_CUDA_FP8_TWIN_CL` | [`Fp8Tuning::twin_cluster`] | CTAs per cluster of the twin's yT tiles (1, 2, 4 or 8) |
//! | `NORMKIT_CUDA_FP8_TWIN_TW` | [`Fp8Tuning::twin_tile_fill`] | the fewest supertiles for the twin's yT tiles, in % of the resident clusters (`0`: tiles at every M) |
//! | `NORMKIT_CUDA_FP8_TWIN_N` | [`Fp8Tuning::twin_tile_n`] | `LO:HI`: the N range of the twin's yT tiles |
//! | `NORMKIT_CUDA_FP8_TWIN_CAP` | [`Fp8Tuning::twin_cap_auto`] | a number N: the quantised twin (and its pairs) padded to ⌈grid / SMs⌉ CTAs per SM where that is at most N; `0` / `off`: never |
//! | `NORMKIT_CUDA_FP8_TWIN_X2` | [`Fp8Tuning::twin_x2_min_elems`] | a number E: calls of at least E elements take the quantised twin's two-CTAs-per-SM build where there is one; `off`: never |
//! | `NORMKIT_CUDA_FP8_ROW_RES_GRID` | [`Fp8Tuning::row_res_rows_min_elems`] | a number E: the per-row bf16 add + RMSNorm twin on a CTA per row group (not persistent) from E elements; `off`: never |
//! | `NORMKIT_CUDA_FP8_L2PF` | [`Fp8Tuning::twin_l2_ahead`], [`Fp8Tuning::row_l2_ahead`] | a number K: the quantised twin prefetches into L2 the row K walks past the one its registers fetch; `0` / `off`: none |
//! | `NORMKIT_CUDA_FP8_ROW_L2PF` | [`Fp8Tuning::row_l2_ahead`] | the same for the per-row twin only (read after `NORMKIT_CUDA_FP8_L2PF`) |
//! | `NORMKIT_CUDA_FP8_WIDE_ROW` | [`Fp8Tuning::wide_row`] | which per-row calls take the per-tensor twin's doubled rows per CTA past `NORMKIT_CUDA_FP8_WIDE`'s walks: `0` none, `res` RMSNorm with the residual on whole 4-chunk rows, `1` every one |
//! | `NORMKIT_CUDA_FP8_TILE_WIDE` | [`Fp8Tuning::tile_wide_max_rows`] | a number M: the calls that take the yT tiles double their rows per CTA only up to M rows (where the rows are a multiple of 16); `off`: no limit |
//! | `NORMKIT_CUDA_FP8_TILE_L2PF` | [`Fp8Tuning::tile_l2_ahead`] | a number K: the quantised twin's yT tiles prefetch into L2 the row K tile walks past the one their registers fetch; `0` / `off`: none |
//! | `NORMKIT_CUDA_FP8_STAGED` | [`Fp8Tuning::staged`] | `0`: rows past the register kernels take the split path, not the staged cluster forward (`nk_fwd_csq_*`) |
//! | `NORMKIT_CUDA_ROWS` | [`RowsTuning::on`], [`RowsTuning::rpc`] | `off` / `0`: no row-batch backward; a number: its groups per CTA |
//! | `NORMKIT_CUDA_CLUSTER` | [`ClusterTuning::on`] | `0`: no cluster kernels |
//! | `NORMKIT_CUDA_CLUSTER_CT` | [`ClusterTuning::shape`] | `C,T`: clusters of C CTAs of T threads at every N of the tables |
//! | `NORMKIT_CUDA_CLUSTER_CAP` | [`ClusterTuning::cap_raise`] | raises every cluster cap to at least this N |
//! | `NORMKIT_CUDA_CLUSTER_PF` | [`ClusterTuning::prefetch`] | `0`: the cluster backward without its prefetching twins |
//! | `NORMKIT_CUDA_CSTAGE` | [`ClusterTuning::staged`] | `0`: no staged cluster forward (`nk_fwd_cs_*`); changes bits where it ran |
//! | `NORMKIT_CUDA_CSTAGE_MIN_N` | [`ClusterTuning::staged_min_n`], [`ClusterTuning::staged_min_n_ln`] | the smallest N of the staged cluster forward; changes bits where the path changes |
//! | `NORMKIT_CUDA_CSTAGE_CT` | [`ClusterTuning::staged_shape`] | `C,T`: the staged cluster forward on clusters of C CTAs (2 to 16) of T threads at every N |
//! | `NORMKIT_CUDA_CSTAGE_SLICE` | [`ClusterTuning::staged_slice`] | the staged forward's target bytes per CTA (the cluster size follows) |
//! | `NORMKIT_CUDA_CSTAGE_LAG` | [`ClusterTuning::staged_lag`] | stages between the staged forward's refills and the next row's pass 1 |
//! | `NORMKIT_CUDA_CSTAGE_GRID` | [`ClusterTuning::staged_grid_rows`] | `rows`: the staged forward on one cluster per row (else the resident clusters walk the rows) |
//! | `NORMKIT_CUDA_CSTAGE_PF` | [`ClusterTuning::staged_pf`] | `S[:D]`: the staged kernels that carry the L2 prefetch take S stages of the row D ahead (1 or 2) at the top of each row; `0`: none |
//! | `NORMKIT_CUDA_CLUSTER_REREAD` | [`ClusterTuning::reread`] | `C[,T]`: the re-reading cluster forward on clusters of C CTAs (2 to 16) of T threads (256 or 512); `0`: off (the split path); changes bits where it ran |
//! | `NORMKIT_CUDA_CLUSTER_REREAD_MIN_N` | [`ClusterTuning::reread_min_n`] | the smallest N of the re-reading cluster forward; changes bits where the path changes |
//! | `NORMKIT_CUDA_CLUSTER_REREAD_OPS` | [`ClusterTuning::reread_ops`] | which calls take it: a comma list of `rms16`, `ln16`, `res16`, `f32`, `res32`, or `all`; changes bits where the path changes |
//! | `NORMKIT_CUDA_CLUSTER_REREAD_PF` | [`ClusterTuning::reread_pf_kb`] | KB of each CTA's slice of its next row prefetched into L2 after pass 1 (`0`: none) |

/// The environment variables [`Tuning::with_env`] reads, in the order of the table above.
pub const ENV_OVERRIDES: [&str; 68] = [
    "NORMKIT_CUDA_MEM_GBPS",
    "NORMKIT_CUDA_FWD_TABLE",
    "NORMKIT_CUDA_BWD_TABLE",
    "NORMKIT_CUDA_BWD4_TABLE",
    "NORMKIT_CUDA_BWD4F_TABLE",
    "NORMKIT_CUDA_BWD4F_MAX_M",
    "NORMKIT_CUDA_BWD_K1_ABOVE",
    "NORMKIT_CUDA_FWD_K8",
    "NORMKIT_CUDA_FWD_K8W",
    "NORMKIT_CUDA_FWD_K8W_LN",
    "NORMKIT_CUDA_FWD_LN1B",
    "NORMKIT_CUDA_FWD_F32",
    "NORMKIT_CUDA_FWD_F32_O3",
    "NORMKIT_CUDA_FWD_HALF",
    "NORMKIT_CUDA_FWD_RPC",
    "NORMKIT_CUDA_FWD_L2PF",
    "NORMKIT_CUDA_PF",
    "NORMKIT_CUDA_FULL",
    "NORMKIT_CUDA_FWD_GRID",
    "NORMKIT_CUDA_BWD_CTAS_PER_SM",
    "NORMKIT_CUDA_FIN_COLS_MAX",
    "NORMKIT_CUDA_PDL",
    "NORMKIT_CUDA_FWD_DECODE",
    "NORMKIT_CUDA_FWD_PAIR",
    "NORMKIT_CUDA_FWD_TWIN_CAP",
    "NORMKIT_CUDA_BWD_SMALL",
    "NORMKIT_CUDA_BWD_SMALL_WALK",
    "NORMKIT_CUDA_BWD_SMALL_COLS",
    "NORMKIT_CUDA_BWD_SMALL_COLS_ROWS",
    "NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS",
    "NORMKIT_CUDA_BWD_TWIN_CAP",
    "NORMKIT_CUDA_FP8_T",
    "NORMKIT_CUDA_FP8_TM",
    "NORMKIT_CUDA_FP8_CTA",
    "NORMKIT_CUDA_FP8_REG",
    "NORMKIT_CUDA_FP8_ROW_MAX",
    "NORMKIT_CUDA_FP8_GRID",
    "NORMKIT_CUDA_FP8_TWIN",
    "NORMKIT_CUDA_FP8_WIDE",
    "NORMKIT_CUDA_FP8_PAIR",
    "NORMKIT_CUDA_FP8_TWIN_TM",
    "NORMKIT_CUDA_FP8_TWIN_CL",
    "NORMKIT_CUDA_FP8_TWIN_TW",
    "NORMKIT_CUDA_FP8_TWIN_N",
    "NORMKIT_CUDA_FP8_STAGED",
    "NORMKIT_CUDA_FP8_L2PF",
    "NORMKIT_CUDA_FP8_ROW_L2PF",
    "NORMKIT_CUDA_FP8_TILE_L2PF",
    "NORMKIT_CUDA_FP8_WIDE_ROW",
    "NORMKIT_CUDA_FP8_TILE_WIDE",
    "NORMKIT_CUDA_FP8_TWIN_CAP",
    "NORMKIT_CUDA_FP8_TWIN_X2",
    "NORMKIT_CUDA_ROWS",
    "NORMKIT_CUDA_CLUSTER",
    "NORMKIT_CUDA_CLUSTER_CT",
    "NORMKIT_CUDA_CLUSTER_CAP",
    "NORMKIT_CUDA_CLUSTER_PF",
    "NORMKIT_CUDA_CSTAGE",
    "NORMKIT_CUDA_CSTAGE_MIN_N",
    "NORMKIT_CUDA_CSTAGE_CT",
    "NORMKIT_CUDA_CSTAGE_SLICE",
    "NORMKIT_CUDA_CSTAGE_LAG",
    "NORMKIT_CUDA_CSTAGE_GRID",
    "NORMKIT_CUDA_CSTAGE_PF",
    "NORMKIT_CUDA_CLUSTER_REREAD",
    "NORMKIT_CUDA_CLUSTER_REREAD_MIN_N",
    "NORMKIT_CUDA_CLUSTER_REREAD_OPS",
    "NORMKIT_CUDA_CLUSTER_REREAD_PF",
];

/// One row of a launch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowConfig {
    /// The largest hidden size N this row applies to (it applies from the previous row's `max_n` + 1).
    pub max_n: usize,
    /// Threads that normalise one row together.
    pub group: u32,
    /// Rows (groups) that share one persistent CTA.
    pub rows_per_cta: u32,
}

/// One row of a cluster launch table: rows up to `max_n` elements run on clusters of `c` CTAs of
/// `t` threads (chunks per thread K = ⌈N/8 / (c·t)⌉, at most the kernel's KMAX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The largest hidden size N this row applies to.
    pub max_n: usize,
    /// CTAs per cluster.
    pub c: u32,
    /// Threads per CTA.
    pub t: u32,
}

/// Largest N the cluster kernels take, per direction, dtype class and flags (`cap` in the old
/// cluster.rs). Where the cluster kernel lost to the existing path, the existing path keeps the
/// N range.
///
/// First measurements (H200, bf16/f16, same-run A/B against the existing paths,
/// kernels-cuda/NOTES.md "cluster v1"): forward 16-bit LayerNorm 48% vs 44% at 65536 but 37% vs
/// 43% at 262144 and 44% vs 45% (f16) at 131072 → 65536; residual 83% vs 74% at 65536, 68% vs
/// 73% at 262144 → 65536; RMSNorm 53% vs 50% at 262144 → 262144 (524288 unmeasured). f32
/// forward: rms 57% vs 37% at 131072, 47% vs 37% at 262144, LayerNorm 48% vs 33%, 35% vs 32% →
/// the whole table. Backward LayerNorm: 38% vs 34% at 65536 (C = 8), 24% vs 32% at 262144 and
/// 21% with C = 16 at 65536 → clusters of at most 8 (16-bit 65536, f32 32768); RMSNorm and
/// residual: 58% vs 40%, 70% vs 50% at 65536, 41% vs 36% and 51% vs 45% at 262144, f32 49% vs
/// 44% at 131072.
/// Re-measured 2026-11-22 after the instruction diet (NOTES v4, `NORMKIT_CUDA_CLUSTER_CAP` A/B,
/// 16-bit): at 131072 cluster vs split ln_fwd 49% vs 42%, addrms_fwd 77% vs 68%, ln_bwd 29% vs
/// 22% → those caps move to 131072; at 262144 the cluster still loses (44/68/24% vs 48/73/43%).
/// H100 2026-11-22 (fifth session), with the prefetching LayerNorm twins (`nk_bwd_clp_*`): ln_bwd
/// 512×262144 63% on clusters of 16 × 512 threads against 51.5% on the split path (1024×262144:
/// 64% vs 55%) → the 16-bit LayerNorm backward cap moves to 262144 where the twin fits (no
/// d_residual_out: its third row buffer needs 256 KiB of shared memory at 512 threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterCaps {
    /// Forward, 16-bit, LayerNorm or residual.
    pub fwd16_ln_or_residual: usize,
    /// Forward, 16-bit RMSNorm without residual.
    pub fwd16: usize,
    /// Forward, f32 with residual.
    pub fwd32_residual: usize,
    /// Forward, f32 without residual.
    pub fwd32: usize,
    /// Backward, 16-bit LayerNorm with d_residual_out.
    pub bwd16_ln_residual: usize,
    /// Backward, 16-bit LayerNorm without d_residual_out.
    pub bwd16_ln: usize,
    /// Backward, 16-bit RMSNorm.
    pub bwd16: usize,
    /// Backward, f32 LayerNorm.
    pub bwd32_ln: usize,
    /// Backward, f32 RMSNorm.
    pub bwd32: usize,
}

impl ClusterCaps {
    /// The cap for one direction, dtype class and flag set.
    pub fn get(&self, fwd: bool, f32: bool, ln: bool, residual: bool) -> usize {
        match (fwd, f32) {
            (true, false) if ln || residual => self.fwd16_ln_or_residual,
            (true, false) => self.fwd16,
            (true, true) if residual => self.fwd32_residual,
            (true, true) => self.fwd32,
            (false, false) if ln && residual => self.bwd16_ln_residual,
            (false, false) if ln => self.bwd16_ln,
            (false, false) => self.bwd16,
            (false, true) if ln => self.bwd32_ln,
            (false, true) => self.bwd32,
        }
    }
}

/// Cluster row kernels (sm_90+, kernels-cuda/cluster.cuh): one row per thread-block cluster of
/// C CTAs, row statistics reduced through distributed shared memory, x read from HBM once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterTuning {
    /// The cluster path at all (env `NORMKIT_CUDA_CLUSTER=0` turns it off; measurements).
    pub on: bool,
    /// Forces C CTAs of T threads at every N of the tables, where the chunks fit (env
    /// `NORMKIT_CUDA_CLUSTER_CT=C,T`; measurements: it applies to every N alike, so the path
    /// still depends on N alone).
    pub shape: Option<(u32, u32)>,
    /// Every cap raised to at least this N (env `NORMKIT_CUDA_CLUSTER_CAP`; measurements; 0: none).
    pub cap_raise: usize,
    /// Largest N per flag class (see [`ClusterCaps`] for the measurements).
    pub caps: ClusterCaps,
    /// Forward, 16-bit. Shape (not yet swept, first measurement in kernels-cuda/NOTES.md
    /// "cluster"): a CTA slice of at most 32 KiB at 256 threads (8 chunks of 16 bytes per thread
    /// for 16-bit, 4 of 32 bytes for f32), the cluster growing with N to 16, then 512 threads per
    /// CTA (a 1024-thread, 64-register variant for N = 1M spilled once the weight loads were
    /// batched; past 524288 the next path runs: the re-reading kernels of
    /// [`ClusterTuning::reread`], else the split path). The residual kernels stop at 256
    /// threads (their element-wise twin needs more than 128 registers), so at 262144 elements;
    /// beyond, the next path.
    pub fwd16: Vec<ClusterConfig>,
    /// Forward, f32 (same shape as [`ClusterTuning::fwd16`]).
    pub fwd32: Vec<ClusterConfig>,
    /// Backward, 16-bit: 4 chunks per thread; dW/dB in registers up to 256 threads, in shared
    /// memory (the `cls` kernels) at 512 — except where the prefetching twins run (`clp`:
    /// LayerNorm at every size, RMSNorm at 512 threads; registers).
    pub bwd16: Vec<ClusterConfig>,
    /// Backward, f32: 2 chunks per thread.
    pub bwd32: Vec<ClusterConfig>,
    /// The prefetching 16-bit backward twins (`nk_bwd_clp_*`) where they fit (env
    /// `NORMKIT_CUDA_CLUSTER_PF=0` turns them off; measurements: the plain kernels do the same
    /// arithmetic). H100 2026-11-22 (NOTES v5): ln_bwd 512×262144 63% against 51.5% on the split
    /// path.
    pub prefetch: bool,
    /// RMSNorm backward takes the prefetching twin only above this many threads per CTA: at 256
    /// threads the plain kernel keeps two CTAs per SM (kernels-cuda/variants.rs, NOTES v5).
    pub prefetch_rms_above_threads: u32,
    /// The staged cluster forward (`nk_fwd_cs_*`, cluster.cuh `fwd_cstage`): each CTA's slice of
    /// the row in shared memory, filled by bulk copies that stream the cluster's next row in
    /// while the current one is written; x read once at every N its slice fits. Tried before
    /// every other forward path from [`ClusterTuning::staged_min_n`] on (env
    /// `NORMKIT_CUDA_CSTAGE=0` turns it off).
    pub staged: bool,
    /// The smallest N of the staged cluster forward, RMSNorm with or without residual (env
    /// `NORMKIT_CUDA_CSTAGE_MIN_N` sets both minima). Chosen by N and the flags alone, so the
    /// forward stays batch-invariant. H100 (NOTES v10, 16-bit, same binary with the path off):
    /// at 65536 rms_fwd 203 vs 201 µs, addrms_fwd 404 vs 383 (the register and cluster kernels
    /// keep it); at 131072 59.4 vs 63.2 and 105 vs 110; at 262144 212 vs 248 and 410 vs 456.
    pub staged_min_n: usize,
    /// The same for LayerNorm: ln_fwd 2048×65536 212 vs 238 µs, 256×131072 68.0 vs 72.0.
    pub staged_min_n_ln: usize,
    /// Forces clusters of C CTAs (any of 1 to 16) of T threads on the staged forward at every N
    /// (env `NORMKIT_CUDA_CSTAGE_CT=C,T`; measurements). H200, against the default shapes
    /// (bench/results/nvidia-h200-2026-11-29/ring/call4): clusters of 6, 10 and 12 CTAs, which
    /// fill SMs that clusters of 8 leave idle, were slower at 512×262144 (rms_fwd +0.2 to +25%,
    /// ln_fwd +23 to +26%, addrms_fwd +19 to +75%).
    pub staged_shape: Option<(u32, u32)>,
    /// Staged forward: the cluster is the fewest CTAs (a power of two, at most 16) whose slices
    /// of the row (x, and r with the residual) take at most this many bytes each; rows that
    /// need more on 16 CTAs take the next path (env
    /// `NORMKIT_CUDA_CSTAGE_SLICE`). See kernels-cuda/NOTES.md v10 for the measurements.
    pub staged_slice: usize,
    /// Threads per CTA of the staged forward.
    pub staged_threads: u32,
    /// The staged forward runs the next row's pass 1 this many stages behind its refills (env
    /// `NORMKIT_CUDA_CSTAGE_LAG`; default `None`: half the slice's stages). No bits change.
    pub staged_lag: Option<u32>,
    /// The staged forward on one cluster per row (env `NORMKIT_CUDA_CSTAGE_GRID=rows`;
    /// measurements) instead of the resident clusters walking the rows. No bits change.
    pub staged_grid_rows: bool,
    /// The staged forward's L2 prefetch: each CTA starts this many stages of the next row's
    /// slice (x and, with it, the residual) on their way into L2 at the top of a row, so HBM
    /// streams through the row's statistics chain; a hint, no bits change. Only the kernels
    /// where it measured faster carry the code (cluster.cuh, `L2PF`): 16-bit add + RMSNorm
    /// (`pf_res`, 2 stages), LayerNorm without the residual and per-row FP8 RMSNorm without it
    /// (`pf_ln`, 4 stages). H200 (bench/results/nvidia-h200-2026-11-28/pf/call1, `summary-pf.md`,
    /// off / 2 / 4 / 8 / 32 stages of the next row, 4 / 8 of the row after, each twice):
    /// addrms_fwd 512×262144 317.5 → 296.6 µs with 2 stages (4 or more: +2%), ln_fwd 512×262144
    /// 200.6 → 197.0 with 4, rms_fwd_fp8_row 2048×65536 204.1 → 200.0 with 4; the row after next,
    /// or whole slices, slower everywhere; FP8 with the residual +7-15% at 4 stages.
    pub staged_pf_res: u32,
    /// See [`ClusterTuning::staged_pf_res`].
    pub staged_pf_ln: u32,
    /// `NORMKIT_CUDA_CSTAGE_PF=S[:D]`: S stages of the row D ahead (1 or 2) in every kernel that
    /// carries the prefetch, instead of the two defaults above (`0`: none; measurements).
    pub staged_pf: Option<(u32, u32)>,
    /// The re-reading cluster forward (`nk_fwd_clr_*`, cluster.cuh `fwd_cluster_reread`): rows of
    /// at least [`ClusterTuning::reread_min_n`] that neither the register nor the staged cluster
    /// kernels take, for the calls [`ClusterTuning::reread_ops`] names, on clusters of C CTAs of
    /// T threads (`Some((C, T))`, T 256 or 512): x read once from HBM, the output pass reading it
    /// again from L2, instead of the split path's two reads from HBM. Chosen by N, the dtypes and
    /// the flags, so a row's bits never depend on M. Env `NORMKIT_CUDA_CLUSTER_REREAD` (`C[,T]`,
    /// or `0`: off). H200 (rr/call1–3): 8 × 512 the fastest overall; 16 × 512 +2 to +12% at
    /// N = 1M, 4 × 512 +0 to +60%, 16 × 256 −2 to +8%, 8 × 256 (two rows' CTAs on an SM, 33 rows
    /// in flight) up to +75% at 8 rows; 1024-thread CTAs at 64 registers +5 to +60%; clusters
    /// of 6, 10, 12 × 512 (ring/call4) +10 to +51%.
    pub reread: Option<(u32, u32)>,
    /// See [`ClusterTuning::reread`] (env `NORMKIT_CUDA_CLUSTER_REREAD_MIN_N`).
    pub reread_min_n: usize,
    /// Which calls take the re-reading cluster forward (env `NORMKIT_CUDA_CLUSTER_REREAD_OPS`).
    /// H200, against the split path in one call each (bench/results/nvidia-h200-2026-11-29/rr,
    /// calls 1–3, clusters of 8 × 512): 16-bit RMSNorm 128×1M 235.2 → 218.2 µs (−7%), 256×1M −6%,
    /// 8×1M −1.6%; f32 at 128×524288 RMSNorm 339.4 → 220.8 (−35%), LayerNorm 377.3 → 268.6
    /// (−29%), with the residual 459.1 → 345.2 (−25%) — taken. 16-bit LayerNorm +13 to +23%
    /// (its centred pass is a third read, from L2), 16-bit with the residual +1 to +8%: the
    /// split path keeps them.
    pub reread_ops: RereadOps,
    /// KB of each CTA's slice of its next row that the re-reading forward prefetches into L2
    /// after its pass 1 (0: none; env `NORMKIT_CUDA_CLUSTER_REREAD_PF`). A hint: no bit changes.
    /// H200 (rr/call2): 64 KB +2 to +7% at N = 1M, 256 KB +9 to +33% (the rows ahead crowd the
    /// ones being read again out of L2): off. Pass 1 through a shared-memory ring of bulk copies
    /// that run on into the next row (ring/call3) was slower too (+7 to +43%).
    pub reread_pf_kb: u32,
}

/// The calls of [`ClusterTuning::reread`]: by the dtype class and the flags. Env
/// `NORMKIT_CUDA_CLUSTER_REREAD_OPS`: a comma list of `rms16`, `ln16`, `res16`, `f32`, `res32`,
/// or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RereadOps {
    /// 16-bit RMSNorm without the residual.
    pub rms16: bool,
    /// 16-bit LayerNorm without the residual.
    pub ln16: bool,
    /// 16-bit, with the residual.
    pub res16: bool,
    /// f32 without the residual.
    pub f32: bool,
    /// f32 with the residual.
    pub res32: bool,
}

impl RereadOps {
    /// Where it measured faster than the split path on an H200 ([`ClusterTuning::reread_ops`]).
    pub const MEASURED: RereadOps = RereadOps { rms16: true, ln16: false, res16: false, f32: true, res32: true };
    /// Every call.
    pub const ALL: RereadOps = RereadOps { rms16: true, ln16: true, res16: true, f32: true, res32: true };
    /// Whether a call of these flags takes the path.
    pub fn covers(&self, f32: bool, ln: bool, residual: bool) -> bool {
        match (f32, residual) {
            (false, false) => {
                if ln {
                    self.ln16
                } else {
                    self.rms16
                }
            }
            (false, true) => self.res16,
            (true, false) => self.f32,
            (true, true) => self.res32,
        }
    }
    fn parse(v: &str) -> Option<RereadOps> {
        let mut o = RereadOps { rms16: false, ln16: false, res16: false, f32: false, res32: false };
        for w in v.split(',').map(str::trim) {
            match w {
                "all" => o = RereadOps::ALL,
                "rms16" => o.rms16 = true,
                "ln16" => o.ln16 = true,
                "res16" => o.res16 = true,
                "f32" => o.f32 = true,
                "res32" => o.res32 = true,
                _ => return None,
            }
        }
        Some(o)
    }
}

/// Row-batch backward (kernels-cuda/rows.cuh): 16-bit rows of `min_n` < N ≤ `max_n` in 16-byte
/// layouts, every batch size. They replaced a small-batch entry of one chunk per thread and one
/// row per 128-thread CTA at N = 1024, M ≤ 8192 (H100 2026-11-22, NOTES v7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsTuning {
    /// The row-batch path at all (env `NORMKIT_CUDA_ROWS=off` or `0` turns it off; measurements).
    pub on: bool,
    /// Groups per CTA (env `NORMKIT_CUDA_ROWS=R`; measurements). `None`: `cta_threads / group`.
    pub rpc: Option<u32>,
    /// N above which the row-batch kernels run (exclusive).
    pub min_n: usize,
    /// N up to which they run (inclusive).
    pub max_n: usize,
    /// Threads per CTA by default: two CTAs of 122–128 registers per SM. H100 (NOTES v7): at
    /// 4096×1024 four groups of 128 per CTA ran 47 / 54 / 39% (rms / addrms / ln_bwd) against
    /// 52 / 61 / 45% with two; at 4096×2048 one group of 256 per CTA against two: 66 / 72 / 56%
    /// vs 58 / 66 / 47%.
    pub cta_threads: u32,
}

/// How the transposed FP8 output is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp8Transpose {
    /// Through the row kernel's shared-memory tile where a tile of at least `min_tm` rows fits,
    /// else by the separate kernel (measurements: slower than `Separate` on an H100, NOTES.md).
    Fused,
    /// By the separate kernel (`nk_fwd_q_transpose`) reading y_q back: the default where the
    /// quantised twin's own tiles ([`Fp8Tuning::twin_tm`]) do not run (H100
    /// 2026-11-25, bf16 → e4m3 with yT: 32768×4096 394 µs against 626 fused, 2048×8192 54.8
    /// against 82.3, 4096×1024 18.7 against 29.0).
    Separate,
    /// One byte store per element from the row kernel's registers: the uncoalesced baseline a
    /// fused transpose replaces (measurements; `nk_fwd_q_row4_st_ah`, 16-bit aligned N ≤ 16384).
    Strided,
}

/// The quantised (FP8) forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8Tuning {
    /// Threads per CTA of the row kernel when a row needs fewer (groups per CTA = this / group).
    pub cta_threads: u32,
    /// How yT is written (env `NORMKIT_CUDA_FP8_T=separate|fused|strided`).
    pub transpose: Fp8Transpose,
    /// The largest tile of the fused transpose, rows (a power of two; env `NORMKIT_CUDA_FP8_TM`).
    pub max_tm: u32,
    /// The smallest tile worth fusing, rows (below it the separate kernel runs).
    pub min_tm: u32,
    /// Shared memory the fused tile may take per CTA, bytes (two CTAs per SM at 116 KiB).
    pub tile_smem: usize,
    /// The quantised register forward (`nk_fwd_regq*`) where it applies (env
    /// `NORMKIT_CUDA_FP8_REG=0`: the FP8 row kernels instead; measurements).
    pub reg: bool,
    /// The largest N of the FP8 row kernels; longer rows take the split path (env
    /// `NORMKIT_CUDA_FP8_ROW_MAX`; above 32768 no row kernel has the registers, so raising it
    /// changes nothing).
    pub row_max_n: usize,
    /// The quantised register forward on a grid of one CTA per `rows_per_cta` rows, as the plain
    /// forward runs, instead of a persistent grid (env `NORMKIT_CUDA_FP8_GRID=rows`; measurements:
    /// every CTA then takes part in the amax's arrival count).
    pub reg_grid_rows: bool,
    /// Calls of at least this many elements (M·N) run the per-row bf16 add + RMSNorm twin
    /// (`nk_fwd_regqdr_bf16_rms_res`; not its pairs) on a grid of one CTA per row group, as the
    /// plain forward runs, instead of the persistent grid: per row there is no amax to commit,
    /// so a CTA ends with its rows and the next one's loads start (the same kernel and group,
    /// so the same bits). 2^22 on Hopper's tables; never on HBM3e Hopper (not measured there).
    /// H100, by environment on its first build, main against the rows grid at every size, O G G O
    /// (bench/results/nvidia-h100-2026-12-06/s16/call3, `summary-G-O.md`): 32768×4096 336.6 →
    /// 309.7 µs (99.9% of the copy ceiling), 16384×4096 and 65536×512 −9%, 8192×8192 171.1 →
    /// 156.8, 2048×8192 −5.9%, 1024×4096 −4.6%, 4096×1024 −5%, 2048×4096 −0.6%; 1–128 rows the
    /// same (the grid is the rows either way); but 512×4096 +24% (the pairs, which lost with the
    /// rows grid at every size measured, `summary-GP.md`). The landed rule against main, old new
    /// new old (`s16/call4`): no cell slower by more than 0.2%. f16 (its twin at (256, 1)) keeps
    /// the persistent grid: slower with the rows grid at N = 8192 and mid sizes (`s16/call5`).
    /// Env `NORMKIT_CUDA_FP8_ROW_RES_GRID` (E; `off`: never).
    pub row_res_rows_min_elems: u64,
    /// The quantised register forward's twin (`nk_fwd_regqd_*`: 256-thread bound, so the row's,
    /// the weight's and the bias's chunks stay in registers where the 1024-thread `nk_fwd_regq*`
    /// spills; weight and device scale loaded once per CTA; a programmatic dependent) wherever
    /// the group fits its bound (env `NORMKIT_CUDA_FP8_TWIN=0`: the plain kernel; same bits).
    pub reg_twin: bool,
    /// Per-row LayerNorm runs the twin only where each CTA of its persistent grid walks at most
    /// this many row groups: beyond, the plain kernel's 8 CTAs per SM (64 registers, against the
    /// twin's 125) hide the per-row chain (two reductions) better. H100, NOTES v14: twin faster
    /// at 1.9 walks (1024×4096 −2%, 4096×1024 −4%) and 7.8 (2048×8192 −2%), slower at 15.5
    /// (65536×512 +2%) and 62 (32768×4096 +4%). Per-row RMSNorm (without a bias) takes its twin
    /// at every M: its y and max are its own (nk_reg.cuh, QF), so choosing by M would break batch
    /// invariance, and it was the faster at every shape measured (NOTES v17: 32768×4096 166.0
    /// → 144.8 µs against v16's rule, 16384×3072 80.0 → 71.8 against the plain kernel).
    pub row_twin_walks: u64,
    /// Per-tensor scaling: past this many walks the twin takes twice the table's rows per CTA
    /// (groups of at most 128 threads: the same group, the same bits). Default 8 (env
    /// `NORMKIT_CUDA_FP8_WIDE=N`; `off`: never): H100, NOTES v14 and v15, 32768×4096 rms 145 →
    /// 142 µs, add + rms 340 → 329; the A/B of this default is in
    /// bench/results/nvidia-h100-2026-11-27/pair/call3 (the stall NOTES v14.3 suspected was the
    /// test's CPU oracle, not the kernel: NOTES v15).
    pub wide_cta_walks: u64,
    /// Which per-row calls take [`Fp8Tuning::wide_cta_walks`]'s rule too. Default
    /// [`WideRow::Never`]; [`WideRow::Residual`] on HBM3e Hopper ([`Tuning::for_device`]): H200,
    /// by environment (bench/results/nvidia-h200-2026-11-28/wide/call1, `summary-RW.md`)
    /// addrms_fwd_fp8_row 16384×4096 −3.4%, 32768×4096 240.2 → 233.2 µs, 65536×4096 −2.4%,
    /// 8192×4096 −2%, but 16384×3072 +1.1% (3 chunks of 4 per thread); rms_fwd_fp8_row +1 to +3%.
    /// Env `NORMKIT_CUDA_FP8_WIDE_ROW` (`0`, `res`, `1`).
    pub wide_row: WideRow,
    /// The calls that take the twin's yT tiles double their rows per CTA
    /// ([`Fp8Tuning::wide_cta_walks`]) only up to this many rows, where the rows are a multiple
    /// of 16 (odd M, whose contiguous yT rows are byte-aligned, 40961×4096: 645 µs with the
    /// doubled rows, 670 without; wide/call1). Default u64::MAX; 40960 on
    /// HBM3e Hopper ([`Tuning::for_device`]): H200, one row per CTA by environment
    /// (bench/results/nvidia-h200-2026-11-28/tpf/call3, `summary-TW.md`) rms_fwd_fp8_t 65536×4096
    /// −3.3%, 49152×4096 −2.9%, but 32768×4096 +4.1%, 16384×4096 +5.8%. Env
    /// `NORMKIT_CUDA_FP8_TILE_WIDE` (rows; `off`: no limit).
    pub tile_wide_max_rows: u64,
    /// Calls of `pair_rows.0..=pair_rows.1` rows run the quantised twin in pairs
    /// (`nk_fwd_regqp{|r}_*`: group G's row on 2G threads of 2 chunks, the same bits) where the
    /// doubled CTA fits its 256 threads and no yT tile is taken; (1, 0): never. Default 1..=512
    /// for RMSNorm with the residual, per tensor or per row (the pair kernels compiled; the other
    /// quantised kernels keep a single accumulator, NOTES v18). H100, `rowmax/call4/summary-
    /// pairs.md` (pairs against none, one build, N = 4096): with the residual per row 1–512 rows
    /// −5 to −11%, per tensor 8 and 128 rows −5 / −8%; 2048 rows +8 to +16%. Env
    /// `NORMKIT_CUDA_FP8_PAIR` (`0`, `all`, `LO:HI`).
    pub pair_rows: (u64, u64),
    /// Pairs for every op that has pair kernels, at every M; env `NORMKIT_CUDA_FP8_PAIR=all`.
    pub pair_every_op: bool,
    /// The quantised twin writes yT through its own shared-memory tile of up to this many rows
    /// (`nk_fwd_regqd{|r}t_*`: a power of two ≥ 8, at least the CTA's rows, within
    /// [`Fp8Tuning::tile_smem`]); 0: the twin writes y_q only and the separate transpose follows.
    /// Env `NORMKIT_CUDA_FP8_TWIN_TM` (`0`, 8, 16, 32).
    pub twin_tm: u32,
    /// CTAs per cluster of the twin's yT tiles: the cluster's tiles make a supertile of
    /// `twin_cluster · tm` rows, and each CTA writes a share of its columns, so a yT row gets one
    /// run of that many bytes (env `NORMKIT_CUDA_FP8_TWIN_CL`: 1, 2, 4, 8). H100, bf16 → e4m3
    /// with yT, tiles forced, against the separate transpose's 251.0 µs at 32768×4096 (NOTES
    /// v16): clusters of 1 (16-byte runs) 549.8, of 2 219.6, of 4 235.9, of 8 283.9.
    pub twin_cluster: u32,
    /// The twin's yT tiles only where the supertiles number at least this percentage of the
    /// clusters resident at once (a CTA runs its tile's rows one group at a time, so a few rows
    /// are faster spread over CTAs with the separate transpose after them; env
    /// `NORMKIT_CUDA_FP8_TWIN_TW`, 0: at every M). H100 (NOTES v16, clusters of 2, 16-row
    /// tiles, against the separate transpose): 8192×4096 57.6 against 67.6
    /// µs, 16384×2048 58.2 against 67.4, 8192×2048 31.4 against 33.5; 4096×4096 (128
    /// supertiles, about one per resident cluster) 36.1 against 33.4, 1024×4096 22.3 against 12.3.
    pub twin_tile_fill: u64,
    /// The N range of the twin's yT tiles (inclusive; env `NORMKIT_CUDA_FP8_TWIN_N=LO:HI`).
    /// H100 (NOTES v16, tiles forced): N = 8192 (8-row tiles within `tile_smem`) 52.0 against
    /// 33.3 µs at 2048 rows, 82.1 against 67.7 at 4096; N = 512 75.8 against 67.3 at 65536
    /// rows; N = 1024 11.9 against 12.0 at 4096 rows.
    pub twin_tile_n: (usize, usize),
    /// Rows past the register kernels' reach (N > 32768 for 16-bit x) run the staged cluster
    /// forward with an FP8 output (`nk_fwd_csq_*`: the row's slices staged in shared memory
    /// across a cluster, x read once) where every tensor but y is x's 16-bit dtype, Gemma
    /// casting, 16-byte layouts and 16 CTAs hold the row in slices of
    /// [`ClusterTuning::staged_slice`]; else the split path (x read twice, three times per row).
    /// Env `NORMKIT_CUDA_FP8_STAGED=0`: the split path. The measurement is in NOTES v19.
    pub staged: bool,
    /// The quantised twin (and its pairs), launched as a programmatic dependent, with dynamic
    /// shared memory padding (unused by the kernels: the same code and bits) that leaves at most
    /// K = ⌈grid / SMs⌉ of its CTAs on an SM, where K is at most this (0: never) — as
    /// [`Tuning::fwd_twin_cap_auto`] does for the 16-bit twin. Default 2. H100, one build by
    /// environment, off / 1 / 2 / 2 / 1 / off, bf16 → e4m3 (bench/results/nvidia-h100-2026-11-28/
    /// pad/call1, `summary-p1.md`, `summary-p2.md`): per row 128×4096 3.36 → 2.33 µs, 32×4096
    /// 2.58 → 2.14, 256×4096 3.59 → 2.88 (K = 2; K = 1 pads nothing there); per tensor 128×4096
    /// 4.55 → 3.76, 256×4096 4.62 → 4.32; add + RMSNorm per row 128×4096 3.22 → 2.77; no cell
    /// slower by more than 1%. Env `NORMKIT_CUDA_FP8_TWIN_CAP` (N; `0` / `off`: never).
    pub twin_cap_auto: u32,
    /// Calls of at least this many elements (M·N) take the quantised twin's build at two
    /// 256-thread CTAs per SM (`nk_fwd_regqd*_x2`: the same code, so the same bits; compiled for
    /// bf16 per-tensor RMSNorm with the residual only). 2^25 on HBM3e Hopper
    /// ([`Tuning::for_device`]); never elsewhere. H200, the bound on the one build against main
    /// (bench/results/nvidia-h200-2026-11-28/pf/call1): addrms_fwd_fp8 32768×4096 255.8 → 239.1
    /// µs, 16384×4096 and 8192×8192 −5.5%, 4096×8192 −1.8%, but 2048×8192 +1.2%, 1024×8192 +5%,
    /// 512×8192 +10%, 4096×1024 +9.5%. On an H100 the one-CTA build is the faster past 2^25
    /// (bench/results/nvidia-h100-2026-12-06/yt64/call1, `summary-X0.md`, D X0 X0 D:
    /// addrms_fwd_fp8 32768×4096 336.7 → 321.1 µs, 16384×4096 173.5 → 163.6, 8192×8192 173.4 →
    /// 163.4). Env `NORMKIT_CUDA_FP8_TWIN_X2` (E; `off`: never).
    pub twin_x2_min_elems: u64,
    /// K > 0: the quantised RMSNorm twin without the residual (not its yT tiles), scaled per
    /// tensor, has its group's first thread prefetch into L2, by one bulk copy per row, the row K
    /// walks past the one whose registers it has just asked for, so that those loads find it in
    /// L2 (the twin has one row in flight per group: its per-row build waited on them, NOTES
    /// v27); per-row scaling has its own distance, [`Fp8Tuning::row_l2_ahead`]. 0: none (the
    /// default); 1 on HBM3e Hopper ([`Tuning::for_device`]). On an H100 K = 1 per tensor was
    /// slower (bench/results/nvidia-h100-2026-12-06/h100t/call1, `summary-P.md`: 32768×4096
    /// 140.0 → 148.6 µs, 8192×8192 / 16384×4096 / 32768×2048 / 65536×4096 +6%). H200, one build by
    /// environment against main, main K=1 K=2 off off K=2 K=1 main
    /// (bench/results/nvidia-h200-2026-11-28/rowq/call15, `summary-pf1.md`): K = 1 per row
    /// 32768×4096 124.4 → 108.5 µs, 8192×8192 −14%, 2048×8192 −6%; per tensor 32768×4096 103.4 →
    /// 100.8, 4096×1024 −4%; per row 128×4096 +1.2%; K = 2 no better. Env
    /// `NORMKIT_CUDA_FP8_L2PF` (K; `0` / `off`: none; it sets [`Fp8Tuning::row_l2_ahead`] too).
    pub twin_l2_ahead: u32,
    /// [`Fp8Tuning::twin_l2_ahead`]'s prefetch for the per-row RMSNorm twin without the residual.
    /// 1 in Hopper's tables (the H100 and the H200; Blackwell follows them, not measured). H100,
    /// one build by environment, two runs with it against the call's two default runs
    /// (bench/results/nvidia-h100-2026-12-06/h100t/call1, `summary-P.md`): rms_fwd_fp8_row
    /// 32768×4096 149.9 → 145.8 µs, 8192×8192 78.9 → 70.6, 32768×2048 −10.8%, 16384×4096 −7.8%,
    /// 2048×8192 −8.2%, 65536×4096 −1.4%, 16384×3072 +1.3%, decode rows ±0.3%; the H200's
    /// measurement is [`Fp8Tuning::twin_l2_ahead`]'s. Env `NORMKIT_CUDA_FP8_ROW_L2PF` (K; `0` /
    /// `off`: none), read after `NORMKIT_CUDA_FP8_L2PF`.
    pub row_l2_ahead: u32,
    /// K > 0: the quantised twin's yT tiles (RMSNorm without the residual, from
    /// [`Fp8Tuning::tile_l2_min_n`]) prefetch into L2, by one bulk copy per row from the group's
    /// first thread, the row K tile walks past the one whose registers they have just asked for.
    /// 0: none (the default); 1 on HBM3e Hopper ([`Tuning::for_device`]). Farther is slower (H200,
    /// bench/results/nvidia-h200-2026-11-28/tpf/call1: rms_fwd_fp8_t 32768×4096 K = 2 +5%, 4 +23%,
    /// 8 +28%). Env `NORMKIT_CUDA_FP8_TILE_L2PF` (K; `0` / `off`: none).
    pub tile_l2_ahead: u32,
    /// The least N at which the twin's yT tiles (RMSNorm without the residual) take
    /// [`Fp8Tuning::tile_l2_ahead`]'s prefetch. Default
    /// 2049. H200 (bench/results/nvidia-h200-2026-11-28/rowq/call17, call18): rms_fwd_fp8_t
    /// 32768×4096 181.6 → 172.2 µs, 16384×4096 −5.5%, 65536×4096 −3.5%; at N = 2048 65536 rows
    /// +3% and 32768 +0.4% with it, within 0.6% of main without it.
    pub tile_l2_min_n: usize,
}

/// Which per-row FP8 calls take the per-tensor twin's doubled rows per CTA
/// ([`Fp8Tuning::wide_row`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WideRow {
    /// None.
    Never,
    /// RMSNorm with the residual, where its rows are whole 4-chunk rows (N = 32 × the group).
    Residual,
    /// Every per-row call.
    Always,
}

/// Where the 16-bit register forward (4 chunks per thread, 16-byte layouts) runs its twin
/// (`nk_fwd_regd_*`): the weight (and bias) loaded with the row rather than per chunk after the
/// previous chunk's store, and the wait for the previous kernel placed right before the first
/// load, launched as a programmatic dependent (with [`Tuning::pdl`]) that triggers the stream's
/// next kernel at entry. Its 256-thread launch bound gives it ~90 registers, so fewer CTAs fit
/// an SM than of the plain kernel; where its first wave holds the whole grid it runs always,
/// and the non-residual forwards also run it on larger grids of `wide_block`-thread CTAs.
/// H100, one call, twin against plain (NOTES v11, `bench/results/nvidia-h100-2026-11-25/
/// decode-diet`): RMSNorm faster at every 128-thread grid measured (2048×1024 −24%, 2048×4096
/// −12%, 65536×512 −3%, 32768×4096 −2%); LayerNorm faster up to 2048 CTAs (−6 to −41%), even at
/// 4096 (−3% / 0%) and slower past them (32768×4096 +9%); the fused residual slower once its
/// grid needs a second wave of the twin (4096×1024 +6%, 1024×4096 +4%); 256-thread CTAs (N =
/// 2048, 8192) slower past one wave (ln 8192×2048 +10%).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TwinTuning {
    /// CTA size of the wider rule (the tables' 128-thread CTAs: N = 512, 1024, 4096).
    pub wide_block: u32,
    /// RMSNorm without residual: the twin on grids of up to this many CTAs per SM.
    pub rms_ctas_per_sm: u32,
    /// LayerNorm without residual: the same.
    pub ln_ctas_per_sm: u32,
    /// The 8-chunk twin (`nk_fwd_regd8_*`, [`Tuning::fwd_k8_wide`]'s rows) for RMSNorm: on grids
    /// of up to this many CTAs per SM (or one wave). H200, call 10 of
    /// bench/results/nvidia-h200-2026-11-28/rowq (one build by environment, D T T D): at N =
    /// 16384 the twin (128 registers, no spill) against the plain 8-chunk kernel (64 registers at
    /// its 1024-thread bound, 16 bytes spilled) 16384×16384 271.5 → 257.4 µs, 1024×16384 −17%,
    /// 8192×16384 −6%: every grid.
    pub k8_rms_ctas_per_sm: u32,
    /// ... for LayerNorm (168 registers, one CTA per SM): 256×16384 10.63 → 7.65 µs (2 CTAs per
    /// SM), but 512×16384 +13% and 16384×16384 +58%.
    pub k8_ln_ctas_per_sm: u32,
}

/// One rule of [`Tuning::fwd_half`]: RMSNorm's or LayerNorm's calls with N in `n` and a row
/// count in `rows` (both inclusive; the table's group at least 16 threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalfRule {
    /// LayerNorm (else RMSNorm).
    pub ln: bool,
    /// The least and the largest N.
    pub n: (usize, usize),
    /// The fewest and the most rows.
    pub rows: (u64, u64),
}

/// Hopper's rules (measured on the H200; the H100 took them with the H200's other forward rules
/// in 2026-12, NOTES v37, bench/results/nvidia-h100-2026-12-06/h100t). One build by environment, every
/// call of N = 4096 and 8192 on half the threads against none (H200,
/// bench/results/nvidia-h200-2026-11-28/rowq/call13, `summary-half.md`), and the A/B of the
/// first rules against main (`summary-ab.md`):
/// - RMSNorm, N in (4096, 8192]: 512×8192 5.89 → 5.03 µs, 2048×8192 20.96 → 18.73, 32768×8192
///   265.5 → 255.5, 512×6000 −19%, 16384×6000 −10%; but 256×8192 +3.8% and 1-128 rows +4-9%.
/// - RMSNorm, N in (2048, 4096]: 8192×4096 −7%, 32768×4096 −1.4%, 2048 rows −0.9%; 512 rows +17%.
/// - LayerNorm, N = 8192: 512 rows −14%, 2048 −13%, 32768 −3.5%; 256 rows +11%. At N = 6000
///   16384 rows were 3.9% slower (the partial-chunk code): LayerNorm takes N = 8192 only.
/// - LayerNorm, N = 4096: 2048 rows −12%, 8192 −4.5%, but 32768 +1.0% and 512 +40%.
/// - N = 512 and 1024 (groups of 16 and 32: the `_sw` builds, halves below a warp), one build by
///   environment, every call there on half the threads against none, D H H D
///   (bench/results/nvidia-h200-2026-11-28/rpc/call5, `summary-half.md`): from 4096 rows
///   ln_fwd 4096×1024 −16%, 8192×512 −16%, 16384×512 −17%, 16384×1024 20.73 → 18.56 µs,
///   65536×512 −5.2%, 65536×1024 −4%; rms_fwd 4096×1024 −10%, 8192×512 −10%, 16384×1024 −4.7%,
///   65536×512 −5.1%, 65536×1024 −3.4%, 16384×512 −0.6%; below it slower (1-2048 rows +7 to
///   +60%). LayerNorm at N = 512 and 1024 only, as at 4096 and 8192 (the partial-chunk code).
///   The first rules' A/B against main (rpc/call6, `summary-ab.md`) had 4096×512 slower (ln_fwd
///   3.36 → 4.38 µs, rms_fwd 3.18 → 3.69; a cell the sweep had not measured): N ≤ 512 from 8192
///   rows (the sweep's 8192×512 −10% and −16%).
/// - LayerNorm, N = 2048 (groups of 64 on 32 threads), one build by environment, D H H D
///   (bench/results/nvidia-h200-2026-11-28/tpf/call1, `summary-LH.md`): 2048×2048 6.36 → 5.82 µs,
///   4096×2048 11.60 → 10.60 (Liger's 10.9 in rpc/call6), 16384×2048 −1.5%, but 8192×2048 +0.3%
///   (Tuning::fwd_rpc's 2 rows per CTA take it from 8192 rows); 1024 rows not measured: 2048 to
///   4096 rows.
/// - LayerNorm, N = 16384 (the table's 512-thread rows on 256 threads of 8 chunks, with the L2
///   prefetch of [`L2_SM90`] from 2^25 elements), every M: one build by environment
///   against [`Tuning::fwd_k8_wide`]'s 8-chunk rows (other bits: a rule by N for LayerNorm), D H
///   HL HL H D (bench/results/nvidia-h200-2026-11-29/fp8w/call2, call3, `summary-HL.md`):
///   256×16384 7.63 → 5.89 µs, 512 rows −16%, 1024 −15%, 2048 −13%, 4096 −8%, 16384×16384
///   279.9 → 270.9, 32768 rows −2.4%; but 1-128 rows +4 to +14% (1 row 2.63 → 3.00: the 8-chunk
///   twin no longer runs there). Without the prefetch 16384 rows and more were 7.5-9% slower.
pub const HALF_SM90_HBM3E: [HalfRule; 10] = [
    HalfRule { ln: false, n: (4097, 8192), rows: (512, u64::MAX) },
    HalfRule { ln: false, n: (2049, 4096), rows: (2048, u64::MAX) },
    HalfRule { ln: true, n: (8192, 8192), rows: (512, u64::MAX) },
    HalfRule { ln: true, n: (4096, 4096), rows: (2048, 8192) },
    HalfRule { ln: false, n: (513, 1024), rows: (4096, u64::MAX) },
    HalfRule { ln: false, n: (257, 512), rows: (8192, u64::MAX) },
    HalfRule { ln: true, n: (512, 512), rows: (8192, u64::MAX) },
    HalfRule { ln: true, n: (1024, 1024), rows: (4096, u64::MAX) },
    HalfRule { ln: true, n: (2048, 2048), rows: (2048, 4096) },
    HalfRule { ln: true, n: (16384, 16384), rows: (1, u64::MAX) },
];

/// Hopper's half-thread rules ([`Tuning::for_sm90`]; the H100's): [`HALF_SM90_HBM3E`] but
/// RMSNorm at N in (2048, 4096] for 2048 to 6144 rows only. H100, the H200's rules against none
/// by environment, old new new old (bench/results/nvidia-h100-2026-12-06/h100t/call2,
/// `summary-ab.md`): rms_fwd 2048×4096 10.56 → 10.32 µs, but 8192×4096 45.75 → 46.09 (+0.8%) and
/// 32768×4096 177.6 → 179.9 (+1.3%; the H100 runs the twin there, the H200 the plain kernel).
/// Its edge (h100t/call3, `summary-ab.md`, the half-thread rows against the twin from 4097
/// rows): 4097×4096 23.44 against 23.74 µs, 6144×4096 34.78 / 34.76, 8192×4096 45.86 / 45.71,
/// 32768×4096 180.2 / 178.5.
/// The other rules held or gained on the H100: ln_fwd 4096×1024 6.76 → 5.67 µs, 8192×512 6.70 →
/// 5.62, 16384×512 −14%, 2048×2048 −8%, 4096×2048 −12%, 512×8192 −15%, 1024×8192 −16%,
/// 2048×8192 −7%, 16384×16384 367.7 → 357.0; rms_fwd 4096×1024 5.88 → 5.42, 8192×512 −7%,
/// 512×8192 −17%, 1024×8192 −18%, 2048×8192 −12%; but rms_fwd 16384×512 +0.8%, ln_fwd
/// 32768×8192 +0.5%.
pub const HALF_SM90: [HalfRule; 10] = {
    let mut rules = HALF_SM90_HBM3E;
    // RMSNorm's rule at N in (2048, 4096], the one the H100 limits.
    assert!(!rules[1].ln && rules[1].n.0 == 2049 && rules[1].n.1 == 4096);
    rules[1].rows.1 = 6144;
    rules
};

/// One rule of [`Tuning::fwd_f32_ctas3`]: calls with N in `n` and a row count in `rows` (both
/// inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsRule {
    /// The least and the largest N.
    pub n: (usize, usize),
    /// The fewest and the most rows.
    pub rows: (u64, u64),
}

/// Hopper's rules (measured on the H200; the H100 took them with the H200's other forward rules
/// in 2026-12, NOTES v37, bench/results/nvidia-h100-2026-12-06/h100t). One build by environment, every
/// f32 forward of rows of at most 256 threads on its three-CTA build against none, old new new
/// old (bench/results/nvidia-h200-2026-11-29/f32o3/call1, `summary-ab.md`): rms_fwd 4096×8192
/// 75.0 → 70.2 µs, 16384×8192 282.1 → 263.1 (−6.7%; the two 256-thread CTAs per SM a row of
/// 8192 f32 gives the 512-thread build hold too few loads in flight), but 1×8192 +6.2%, and every
/// other f32 cell slower: N ≤ 4096 +0.6 to +13% (the 128-thread rows had four CTAs per SM
/// already; at 80 registers a thread's loads issue in fewer batches), the residual +7 to +22%,
/// LayerNorm −0.4 to +10% (3000×3000 −7.8%). So RMSNorm without the residual at N = 8192 from
/// the 4096 rows measured.
pub const O3_SM90: [RowsRule; 1] = [RowsRule { n: (8192, 8192), rows: (4096, u64::MAX) }];

/// One rule of [`Tuning::fwd_rpc`]: 16-bit forwards of one op (RMSNorm or LayerNorm, with or
/// without the fused residual) with N in `n` and a row count in `rows` (both inclusive) launch
/// `rpc` rows per CTA instead of the table's: the table's group, so the same reduction and the
/// same bits (a planner choice by M is allowed); the twin's and pairs' rules then count the
/// grid of these CTAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcRule {
    /// LayerNorm (else RMSNorm).
    pub ln: bool,
    /// With the fused residual add.
    pub residual: bool,
    /// The least and the largest N.
    pub n: (usize, usize),
    /// The fewest and the most rows.
    pub rows: (u64, u64),
    /// Rows per CTA.
    pub rpc: u32,
}

/// Hopper's rules (measured on the H200; the H100 took them with the H200's other forward rules
/// in 2026-12, NOTES v37, bench/results/nvidia-h100-2026-12-06/h100t). Call 2's build by environment,
/// the table's rows per CTA at N = 512, 1024 and 2048 doubled and halved against the table, D
/// R2 RH .. RH R2 D (bench/results/nvidia-h200-2026-11-28/wpre/call3, `summary-RH.md`,
/// `summary-R2.md`): N = 2048 on 2 rows per CTA (128 threads) instead of 4 took rms_fwd
/// 4096×2048 from 10.44 to 9.41 µs and ln_fwd 8192×2048 −3.5% but 4096×2048 +5.1%; halved at N =
/// 1024 and 512, rms_fwd 4096×1024 +18%, 16384×512 +15%; doubled, rms_fwd 2048×1024 −8% but
/// 4096×1024 +11%, ln_fwd 8192×2048 +9%: neither taken. Every 16-bit RMSNorm at N = 2048 on 2 rows
/// and LayerNorm from 8192 rows, against main (rpc/call4, old new new old, `summary-ab.md`):
/// - RMSNorm: 8×2048 1.45 → 1.27 µs, 128×2048 −11%, 2048×2048 −6.5%, 4096×2048 −9.7%, 8192×2048
///   20.48 → 19.37, 32768×2048 −0.4%; but 1024×2048 +0.9%, 16384×2048 +2.1%: to 8192 rows.
/// - With the residual: 8×2048 2.12 → 1.53 µs, 128×2048 2.17 → 1.64, 512×2048 −1.7%, 4096 and
///   8192 rows −0.3 to −0.8%; but 1024×2048 +1.5%, 2048×2048 +1.7%: to 512 rows.
/// - LayerNorm: 8192×2048 −3.5%, 16384×2048 −1.9%, 32768×2048 −1.6%, 65536×2048 −1.1% (f16 alike).
pub const RPC_SM90: [RpcRule; 3] = [
    RpcRule { ln: false, residual: false, n: (1025, 2048), rows: (1, 8192), rpc: 2 },
    RpcRule { ln: false, residual: true, n: (1025, 2048), rows: (1, 512), rpc: 2 },
    RpcRule { ln: true, residual: false, n: (1025, 2048), rows: (8192, u64::MAX), rpc: 2 },
];

/// One rule of [`Tuning::fwd_l2_ahead`]: the forwards of one op (LayerNorm or RMSNorm, without
/// the residual: its kernels carry no prefetch) in f32 or in a 16-bit dtype, with N in `n`
/// (inclusive) and at least `min_elems` elements, prefetch the row `pct` % of a wave's rows
/// further on. The first rule of a call's op, dtype and N decides: a call below its size gets
/// no prefetch (not a later rule's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Rule {
    /// LayerNorm (else RMSNorm).
    pub ln: bool,
    /// f32 tensors (else 16-bit).
    pub f32: bool,
    /// The least and the largest N.
    pub n: (usize, usize),
    /// The fewest elements (M·N) of a call it takes.
    pub min_elems: u64,
    /// The distance, in percent of a wave's rows.
    pub pct: u32,
}

/// Hopper's rules (measured on the H200; the H100 took them with the H200's other forward rules
/// in 2026-12, NOTES v37, bench/results/nvidia-h100-2026-12-06/h100t). The distance: one build by
/// environment at 0, 50, 100 and 200% of a wave, each twice, against main (H200,
/// bench/results/nvidia-h200-2026-11-28/l2w/call1, `summary-p*.md`): 100% no better than 50%
/// anywhere, 200% up to 40% slower (the L2 is not the place for two waves' rows). At 50%:
/// - RMSNorm, 16-bit: rms_fwd 4096×6000 29.12 → 26.39 µs, 16384×6000 −10%, 32768×4096 130.6 →
///   127.3; at N = 16384 and 512 the twin runs (no prefetch).
/// - LayerNorm, 16-bit, N ≤ 8192: ln_fwd 32768×4096 −5%, 32768×8192 −6%, 65536×512 −1.8%; at
///   N = 16384 on the 8-chunk rows +2.5-4.5% (again +2.3% in nvidia-h200-2026-11-29/ring/call6);
///   on the half-thread rows that replaced them there 16384×16384 301.1 → 270.9 µs, 4096 rows
///   78.0 → 72.8, 2048 rows 40.6 → 40.1, but 1024 rows (2^24) 22.1 → 23.2: from 2^25
///   (fp8w/call2, call3: [`HALF_SM90_HBM3E`]).
/// - LayerNorm, f32: 32768×4096 −2.5%, 8192×4096 −3%; RMSNorm in f32 +1.3-1.9%: none.
/// - With the residual every cell slower (+2.5-5%): none.
///
/// The sizes (call 3, `summary-pf.md`: the prefetch on against off in one build): from 2^24
/// elements it helps or is neutral (rms 2048×8192 −0.6%, ln 4096×4096 −7.6%, ln 16384×1024
/// −1.3%), below it costs (1024×8192 +4-5%, 2048×4096 +1.6%). The half-thread LayerNorm (N = 4096
/// for 2048-8192 rows, N = 8192 from 512; its `_l2` build) from 2^25: at 2^24 it was 2.5-3.4%
/// slower with the prefetch (`summary-v1.md`), from 2^25 3.6-10% faster (call 4).
pub const L2_SM90: [L2Rule; 6] = [
    L2Rule { ln: false, f32: false, n: (1, 8192), min_elems: 1 << 24, pct: 50 },
    L2Rule { ln: true, f32: false, n: (4096, 4096), min_elems: 1 << 25, pct: 50 },
    L2Rule { ln: true, f32: false, n: (8192, 8192), min_elems: 1 << 25, pct: 50 },
    L2Rule { ln: true, f32: false, n: (1, 8192), min_elems: 1 << 24, pct: 50 },
    L2Rule { ln: true, f32: true, n: (1, usize::MAX), min_elems: 1 << 24, pct: 50 },
    L2Rule { ln: true, f32: false, n: (16384, 16384), min_elems: 1 << 25, pct: 50 },
];

impl TwinTuning {
    /// Hopper (H100 measurements above).
    pub const SM90: TwinTuning =
        TwinTuning { wide_block: 128, rms_ctas_per_sm: u32::MAX, ln_ctas_per_sm: 16, k8_rms_ctas_per_sm: u32::MAX, k8_ln_ctas_per_sm: 2 };
    /// Hopper with HBM3e (H200): RMSNorm's twin past its first wave only up to 64 CTAs per SM.
    /// There the plain register kernel (the same bits) streams faster: H200, one build by
    /// environment, twin against none past decode (NORMKIT_CUDA_FWD_DECODE=0), each twice
    /// (bench/results/nvidia-h200-2026-11-28/pf/call4, `summary-T0.md`): rms_fwd 32768×4096
    /// 142.4 → 131.9 µs, 16384×4096 (124 CTAs per SM) 71.9 → 67.3, but 65536×512 (62 per SM)
    /// 35.5 → 35.7 and 4096×1024 (8 per SM) 5.17 → 5.69.
    pub const SM90_HBM3E: TwinTuning = TwinTuning { rms_ctas_per_sm: 64, ..TwinTuning::SM90 };
}

/// Where the forward's twin (`nk_fwd_regd_*`, groups of at most 128 threads with 4 chunks each)
/// runs in pairs instead (`nk_fwd_regp_*`: twice the threads, 2 chunks each, the same reduction
/// order, so the same bits at every M). A few rows are bound by each row's latency, which twice
/// the warps per row hide. H100, 2026-11-27, one build, pairs everywhere against never, A B B A
/// (bench/results/nvidia-h100-2026-11-27/pair/call2/summary-sweep.md): RMSNorm with the fused
/// residual faster at 1–16 rows of 4096 (8×4096 1.80 → 1.60 µs), 64–512 rows (128×4096 3.50 →
/// 2.74, 256×4096 4.72 → 4.12), 128×3000 −23%, 512–1024 rows of 512 and 1024 (−14 to −24%),
/// but slower on grids of 32 CTAs (32×4096 +3.6%, 128×1024 +2.6%); RMSNorm and LayerNorm without
/// the residual mixed (rms_fwd 256×4096 −14% but 1×4096 +6%, 2048×4096 +8%; ln_fwd 512×4096
/// +25%): not paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairTuning {
    /// Calls of `lo..=hi` rows only.
    pub rows: (u64, u64),
    /// Not on grids of `lo..=hi` CTAs (of the unpaired twin).
    pub skip_ctas: (u32, u32),
    /// Every op (else RMSNorm with the fused residual only).
    pub every_op: bool,
}

impl PairTuning {
    /// Hopper (H100 measurements above).
    pub const SM90: PairTuning = PairTuning { rows: (1, u64::MAX), skip_ctas: (17, 63), every_op: false };
    /// Wherever the twin runs: every op, every M, every grid (env `NORMKIT_CUDA_FWD_PAIR=all`).
    pub const ALL: PairTuning = PairTuning { rows: (1, u64::MAX), skip_ctas: (1, 0), every_op: true };
}

/// The launch tables, thresholds and overrides of one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    /// Forward row path (and the register-resident forward kernels' groups).
    pub fwd: Vec<RowConfig>,
    /// Backward row path.
    pub bwd: Vec<RowConfig>,
    /// Backward register-resident path (at most 2 chunks per thread, 256-thread CTAs).
    pub bwd_reg: Vec<RowConfig>,
    /// Backward register path, one chunk per thread (groups up to 1024 threads).
    pub bwd_reg1: Vec<RowConfig>,
    /// Backward register path, four chunks per thread (16-bit dtypes, N > 2048).
    pub bwd_reg4: Vec<RowConfig>,
    /// Calls of at most [`Tuning::bwd_reg4_few_max_m`] rows: these rows before
    /// [`Tuning::bwd_reg4`]'s (16-bit, N > 2048), for the register kernels and the backward's
    /// twin. Twice the threads per row at N = 4096 (256, 2 chunks each): a few rows are bound by
    /// each row's latency, many by bandwidth. H100, one call, A B B A against 128 threads
    /// (bench/results/nvidia-h100-2026-11-27/tables): rms_bwd 8×4096 3.75 → 3.63 µs, 128×4096
    /// 6.66 → 6.43, 512×4096 ln_bwd 28.7 → 24.2 and addrms_bwd 19.6 → 16.2; at 4096×4096
    /// ln_bwd / rms_bwd +3% (addrms_bwd −5%), at 32768×4096 +4–5%. The backward promises the
    /// same bits for the same inputs, not across M (the forward's batch invariance rules this
    /// out there: the group sets a row's reduction order). Env `NORMKIT_CUDA_BWD4F_TABLE`
    /// (as `NORMKIT_CUDA_BWD4_TABLE`).
    pub bwd_reg4_few: Vec<RowConfig>,
    /// See [`Tuning::bwd_reg4_few`] (default 1024; env `NORMKIT_CUDA_BWD4F_MAX_M`, `0`: never).
    pub bwd_reg4_few_max_m: usize,
    /// 16-bit backward register kernels past N = 2048 (the 4-chunk and few-row tables), without
    /// `NORMKIT_CUDA_BWD_CTAS_PER_SM`: at most `cap` CTAs (partial rows) per SM for the first
    /// entry whose `max_rows_per_sm` ≥ ⌈M / SMs⌉, instead of the occupancy's 4. Few rows per SM:
    /// one CTA per SM walks two or more rows, and the partial rows (written and read again by the
    /// finalize) shrink from M·N·4 bytes — as much as the data at 256×4096 — to SMs·N·4; many
    /// rows: three CTAs per SM stream better than four. H100, one call, caps 1/2/3 against none,
    /// A B C D D C B A (bench/results/nvidia-h100-2026-11-27/caps): 256×4096 rms/ln/add+rms_bwd
    /// −14/−19/−13% at cap 1, 256×8192 −28/−29/0%; 1024×4096 −25/−18/0% at cap 2, 2048×4096
    /// −9/−11/−9%; 32768×4096 −6/−4/0% at cap 3, 16384×4096 −7/+1/0%; 8192-wide rows from 1024
    /// rows on within ±0.2%. Calls with dW or dB only (measured so). Env
    /// `NORMKIT_CUDA_BWD_CTAS_PER_SM` replaces it.
    pub bwd_reg4_caps: Vec<(usize, u32)>,
    /// Split-row backward: target CTAs per SM for the (chunks × parts) grid.
    pub split_bwd_ctas_per_sm: u32,
    /// 16-bit backward register path: [`Tuning::bwd_reg`] up to this N, then
    /// [`Tuning::bwd_reg4`] (H200: 74% of the copy ceiling at 16384² rms_bwd with 4 chunks per
    /// thread, against 50% for one chunk per thread at N = 8192).
    pub bwd_reg_16bit_max_n: usize,
    /// f32 backward register path: [`Tuning::bwd_reg`] up to this N (the last row of the 2-chunk
    /// table), then [`Tuning::bwd_reg1`] (one chunk per thread, groups up to 1024) to N = 8192.
    pub bwd_reg_f32_max_n: usize,
    /// f32 backward register path: N above which one chunk per thread is used, if below
    /// [`Tuning::bwd_reg_f32_max_n`] (env `NORMKIT_CUDA_BWD_K1_ABOVE`, default 4096; tuning).
    pub bwd_k1_above: usize,
    /// Forward register path with 8 chunks per thread: bf16 RMSNorm without residual only
    /// (N = 65536 with 1024-thread groups; H200: 222 µs against 247 for the staged kernel at
    /// 2048×65536; LayerNorm was slower). Env `NORMKIT_CUDA_FWD_K8=0` turns it off.
    pub fwd_k8: bool,
    /// ... for LayerNorm as well (env `NORMKIT_CUDA_FWD_K8=all`; tuning).
    pub fwd_k8_ln: bool,
    /// The forward's row for bf16 RMSNorm without the residual at N in (`max_n` / 2, `max_n`],
    /// in place of [`Tuning::fwd`]'s: groups of `group` threads with 8 chunks each
    /// (`nk_fwd_reg8_*`), where the table gives 4. Chosen by N, so every M of such an N has the
    /// same bits (other bits than the table's row: a device property, like the table). In
    /// Hopper's tables: on an H200 at N = 16384, 256 threads of 8 chunks against 512 of 4 took
    /// rms_fwd −6% (bench/results/nvidia-h200-2026-11-28/call6); the H100 took it with the H200's
    /// other forward rules (NOTES v37: rms_fwd 1024×16384 −11%).
    /// LayerNorm took it too until 2026-11-29 (ln_fwd 16384×16384 325 → 278 µs against the
    /// table's 512-thread kernel); the half-thread kernel with the L2 prefetch on the table's
    /// rows now beats both from 256 rows ([`HALF_SM90_HBM3E`]), so LayerNorm takes only
    /// [`Tuning::fwd_k8_wide_ln`]. With the residual (no 8-chunk kernel) and in f16 (none
    /// compiled) the table's row stays.
    /// Env `NORMKIT_CUDA_FWD_K8W`.
    pub fwd_k8_wide: Option<RowConfig>,
    /// [`Tuning::fwd_k8_wide`]'s kind of row for LayerNorm only (bf16, no residual); none by
    /// default on every device. Measured on an H200 at N = 8192 (`8192:128:1`, 128 threads of 8
    /// chunks against the table's 256 of 4, A/B in bench/results/nvidia-h200-2026-11-28/rowq/call9):
    /// ln_fwd 1024–32768 rows 5–8% faster (32768×8192 297.0 → 278.8 µs) but 512×8192 +10%,
    /// 4096×8192 +2.6%, 64×6000 +25%: the 8-chunk twin's longer chain per thread costs the rows
    /// that are bound by latency, and a row's kernel may not be chosen by M. Env
    /// `NORMKIT_CUDA_FWD_K8W_LN` (`max_n:group:rows_per_cta` or `off`).
    pub fwd_k8_wide_ln: Option<RowConfig>,
    /// LayerNorm's register forwards whose table group (threads per row, before the pairs'
    /// doubling or the half-thread kernels' halving) is at least this many threads, on rows that
    /// give every thread of the group all its chunks (N = 8 · chunks · G: 8192, 16384, 32768 in
    /// the H200's table), take the row's statistics behind one barrier (the `_1b` kernels: each
    /// warp centres its elements on its own mean, the warps fold by the parallel-axis identity)
    /// instead of two reductions. Other bits, so chosen by N (the table) only: every kernel of an
    /// N takes it or none does. 256 in Hopper's tables (the H200's measurement below; the H100
    /// took it with the H200's other forward rules, NOTES v37: ln_fwd 1024×16384 −15%, 512×8192
    /// −15%, 2048×8192 −7%, 16384×16384 −3.3%, f32 16384×16384 −11%). Old new
    /// new old against the two reductions (bench/results/nvidia-h200-2026-11-29/ln1b/call1):
    /// ln_fwd 1024×32768 59.0 → 47.4 µs, 8×32768 −18%, 1 / 8 × 16384 −8 / −11%, 128–1024 ×
    /// 16384 −6.4%, 16384×16384 271.5 → 267.3, 512×8192 −5.8%, 2048×8192 −5.1%, f16 1024×16384
    /// −12%, f32 8×8192 −9%, f32 4096×8192 −1.6%; 1 / 8 / 64 × 8192 within ±0.7%. Rows of
    /// partial rounds (unequal counts per warp) lost at the decode sizes (1×6000 +5.9%, 64×6000
    /// +1.3%, though 4096×6000 −3.1%), and the 128-thread rows of N = 4096 lost 8% (chan/call4):
    /// neither takes it. Env `NORMKIT_CUDA_FWD_LN1B`.
    pub fwd_ln_one_barrier: Option<u32>,
    /// f32 forwards without the residual on two chunks per thread (`nk_fwd_reg2_*`, 56-60
    /// registers at the 1024-thread bound against the 4-chunk kernels' 113 at 512): where the
    /// first row of this table whose `max_n` is at least N has N = 16 · its group (whole rounds
    /// of two chunks), RMSNorm and LayerNorm of that N run with its group and rows per CTA
    /// instead of the 4-chunk table's (other groups, other bits: chosen by N only, for every M
    /// and layout). [`F32_K2_SM90`] in Hopper's (and so Blackwell's) tables, measured on the
    /// H100; none on the H200 (not measured there). Env `NORMKIT_CUDA_FWD_F32`.
    pub fwd_f32: Vec<RowConfig>,
    /// f32 RMSNorm forwards without the residual whose N and rows one of these rules takes run
    /// the kernel's build for three 256-thread CTAs per SM (`_o3`: 80 registers, no spill, where
    /// the 512-thread bound lets it take 113 and two CTAs of N = 8192's 256 threads fit): the
    /// same code and bits, so chosen by M as well. [`O3_SM90`] in Hopper's tables (measured on
    /// the H200; the H100 took it with the H200's other forward rules, NOTES v37). Env
    /// `NORMKIT_CUDA_FWD_F32_O3`.
    pub fwd_f32_ctas3: Vec<RowsRule>,
    /// Where bf16 forwards without the residual run the 4-chunk table's row on half its threads,
    /// 8 chunks each (`nk_fwd_regh_*`, the same bits as the table's kernels, so chosen by M as
    /// well), where one of these rules takes the call. [`HALF_SM90`] in Hopper's tables (the H100;
    /// NOTES v37), [`HALF_SM90_HBM3E`] on the H200. Env
    /// `NORMKIT_CUDA_FWD_HALF`.
    pub fwd_half: Vec<HalfRule>,
    /// Rows per CTA of 16-bit forwards by op, N and M, where one of these rules takes the call
    /// (the first that does), instead of the table's (the same groups: the same bits). None on
    /// [`RPC_SM90`] in Hopper's tables (measured on the H200; the H100 took them with the H200's
    /// other forward rules, NOTES v37). Env `NORMKIT_CUDA_FWD_RPC`.
    pub fwd_rpc: Vec<RpcRule>,
    /// Where the plain register forwards and the half-thread kernels (16-byte aligned, grids
    /// past their first wave) prefetch into L2 a later CTA's row: the first rule of the call's
    /// op, dtype and N gives the distance, in percent of a wave's rows, if the call has its size;
    /// else no prefetch. A hint, no bit changes. [`L2_SM90`] in Hopper's tables (measured on the
    /// H200; the H100 took them with the H200's other forward rules, NOTES v37). Env
    /// `NORMKIT_CUDA_FWD_L2PF`.
    pub fwd_l2_ahead: Vec<L2Rule>,
    /// Forward register kernels on an occupancy-sized persistent grid instead of one CTA per
    /// `rows_per_cta` rows (env `NORMKIT_CUDA_FWD_GRID=persist`; tuning): one CTA per group of
    /// rows lets the hardware balance the last wave (the persistent grid left the tail ~3% idle
    /// at 32768×4096).
    pub fwd_persistent: bool,
    /// The backward register kernels' prefetching twins (env `NORMKIT_CUDA_PF=0` turns them off;
    /// A/B — both give the same bits).
    pub bwd_reg_prefetch: bool,
    /// ... for f32 as well: off, its prefetching twins ran at 55–58% of the copy ceiling against
    /// 82–91% without (H200, 32768×4096 and 65536×512, NOTES v4).
    pub bwd_reg_prefetch_f32: bool,
    /// Register kernels without their FULL specialisation (env `NORMKIT_CUDA_FULL=0`; A/B).
    pub no_full: bool,
    /// Backward register and row-batch kernels: at most this many CTAs (partial rows) per SM
    /// (env `NORMKIT_CUDA_BWD_CTAS_PER_SM`; tuning).
    pub bwd_ctas_per_sm: Option<u32>,
    /// Finalize: up to this many partial rows, always the one-column-per-thread kernel (split
    /// path at N ≥ 131072, cluster path, M ≤ 16; H100, 128×1M rms_bwd, 9 parts: 47 µs in
    /// finalize_wide).
    pub fin_cols_parts: i64,
    /// Finalize: at N ≥ [`Tuning::fin_cols_min_n`], at most this many partial rows take the
    /// one-column-per-thread kernel (env `NORMKIT_CUDA_FIN_COLS_MAX`, default 64; H100
    /// 512×262144 ln_bwd, 33 parts: 537 µs with finalize_wide, 519 µs with this one).
    pub fin_cols_max: i64,
    /// See [`Tuning::fin_cols_max`].
    pub fin_cols_min_n: usize,
    /// finalize_wide: columns per CTA are 32, or 16 / 8 where N / 32 CTAs would leave fewer than
    /// this many CTAs per SM (H200, 4096×1024 rms_bwd: 32 CTAs of 32 columns took 6.6 µs).
    pub fin_wide_min_ctas_per_sm: u64,
    /// finalize_wide: about this many partial rows per lane (the warp count follows the parts).
    pub fin_wide_parts_per_lane: u64,
    /// Programmatic dependent launches for the row-batch and finalize kernels (env
    /// `NORMKIT_CUDA_PDL=0` turns them off; A/B, NOTES v7).
    pub pdl: bool,
    /// Register forwards of at most this many CTAs run the twin (`nk_fwd_regd_*`, see
    /// [`TwinTuning`]) — a measurement override of [`Tuning::fwd_twin`]'s rules (env
    /// `NORMKIT_CUDA_FWD_DECODE`; 0: never). Default `None`: the rules. No bits change.
    pub fwd_decode_max_ctas: Option<u32>,
    /// Where the register forward runs its twin.
    pub fwd_twin: TwinTuning,
    /// Where the forward's twin runs in pairs.
    pub fwd_pair: PairTuning,
    /// The forward's twin (and its pairs) launched with dynamic shared memory that leaves at most
    /// K CTAs on an SM (the kernels use none: padding only, the same code and bits), so that the
    /// next call's CTAs, launched early as programmatic dependents, cannot stack on the SMs this
    /// grid leaves idle: K = ⌈grid / SMs⌉ where that is at most this (0: never). H100,
    /// bench/results/nvidia-h100-2026-11-28/fwd/call3 (K by environment against the unpadded
    /// launch, bf16): K = 1 at 8–128 rows of 4096 — RMSNorm 128×4096 2.27 → 1.61 µs, add + RMSNorm
    /// 3.34 → 2.09, LayerNorm 2.67 → 1.99; 64×4096 −28 to −41%; 128×2048 −20 to −26% — but +19
    /// to +36% at 256 rows, where K = 2 (the grid's own share) gives −9 to −21%. Default 2.
    pub fwd_twin_cap_auto: u32,
    /// An explicit cap instead: calls of LO..=HI rows, K CTAs per SM. Env
    /// `NORMKIT_CUDA_FWD_TWIN_CAP` (`LO:HI:K`; `auto:N` sets [`Tuning::fwd_twin_cap_auto`]; `off`:
    /// neither).
    pub fwd_twin_cap: Option<(u64, u64, u32)>,
    /// Backward calls of at most this many rows take the register kernel's twin (`nk_bwd_sm*`, a
    /// programmatic dependent; [`Tuning::bwd_small_walk`] rows per CTA; one CTA writes dW/dB
    /// itself, more leave partial rows to the finalize). H100, NOTES v11, against the register
    /// (or row-batch) kernel and its finalize, 2–128 rows 3–27% faster (8×4096 rms_bwd 4.48 →
    /// 3.77 µs, 128×4096 7.84 → 7.17, 16×1024 ln_bwd 4.70 → 3.45) but for rms_bwd 64×4096
    /// (+0.5%); 129–1024 rows walking a row per CTA were slower than the register kernel (up to
    /// +130% at 1024×4096), walking ⌈M / SMs⌉ rows 5–20% faster (NOTES v20). Default 1024. Env
    /// `NORMKIT_CUDA_BWD_SMALL` (0: never).
    pub bwd_small_max_m: usize,
    /// ... but where the row-batch backward applies (16-bit, 512 < N ≤ 2048), at most this many:
    /// 128×2048 rms_bwd row-batch 4.77 µs against the twin's 5.27 (ln 5.75 / 6.35), while at
    /// 64×2048 the twin led (4.71 → 3.81) (H100, NOTES v11).
    pub bwd_small_rows_max_m: usize,
    /// The backward's twin: rows each CTA walks, by M — the first entry whose `max_m` ≥ M gives
    /// R (0: ⌈M / SMs⌉), and the grid is ⌈M / R⌉ CTAs, CTA b taking rows b, b + grid, .. into one
    /// partial dW/dB row (the register kernels' persistent grid); one CTA writes dW/dB itself.
    /// No entry: a CTA per row. Default: one CTA to 3 rows, then one CTA per SM (H100, one
    /// build, walks by environment, A..E E..A, bf16, bench/results/nvidia-h100-2026-11-28/walk,
    /// call 1 (rms / ln / add + rms µs): 2×4096 3.66 / 4.62 / 3.69 → 2.51 / 3.05 / 2.61 (no
    /// finalize), but 4×4096 on one CTA +9 / +4 / +9%; 256×4096 at 2 rows a CTA −17 / −15 / −15%
    /// against the register kernel, 512×4096 at 4 −16 / −18 / −15%, 1024×4096 at 8 −8 / −15 /
    /// −6%, 512×8192 at 4 −5 / −12 / −11%; call 4, the landed plan against d5251db: 3×4096 3.83
    /// / 4.89 / 3.99 → 3.45 / 4.23 / 3.63).
    /// Env `NORMKIT_CUDA_BWD_SMALL_WALK` (`R`: at every M; `M:R,...`: the table; R = 0 as here).
    pub bwd_small_walk: Vec<(usize, u32)>,
    /// ... for f32 rows, at most this many rows (the walking twin at 1024×4096 f32: rms_bwd
    /// +8.6%, ln_bwd −4.7%; at 256×4096 −16 / −25 / −16%; H100, walk/call4). Default 256.
    pub bwd_small_f32_max_m: usize,
    /// Backward calls of LO..=HI rows that take the twin run it with column CTAs in the same
    /// launch (`nk_bwd_smc*`, 16-bit): a CTA per row writes dx, CTAs after them compute dW/dB
    /// from x, dy and the statistics — no partial rows, no finalize kernel. `None`: off.
    /// Default 2..=1024 (H100, bench/results/nvidia-h100-2026-11-28/cols/call1, one build by
    /// environment, A B C D E E D C B A, bf16, rms / ln / add + rms backward against the twin and
    /// its finalize: 2×4096 2.52 / 3.05 / 2.63 → 1.90 / 2.62 / 1.87 µs, 8×4096 3.54 / 4.54 / 3.62
    /// → 1.56 / 1.97 / 1.54, 128×4096 6.41 / 8.61 / 7.16 → 2.70 / 3.22 / 3.21, 512×4096 −23 / −27
    /// / −28%, 1024×4096 −1 / −8 / −11%; one row +18 to +36%, so it keeps the twin alone).
    /// Env `NORMKIT_CUDA_BWD_SMALL_COLS` (`LO:HI`, or `off`).
    pub bwd_small_cols: Option<(usize, usize)>,
    /// Rows each lane of a column CTA adds, by M — the first entry whose `max_m` ≥ M gives R, and
    /// the lanes per chunk are the power of two at or above M / R, at most the CTA's threads.
    /// Default: 1 to 8 rows, 2 to 64, 4 to 128, then 8 (cols/call1, R = 1 / 2 / 4 / 8 at every M:
    /// 3–8 rows fastest at 1 (rms 8×4096 1.56 / 1.82 / 2.01 / 2.50 µs), 16–64 at 2 (64×4096
    /// 2.27 / 1.97 / 2.16 / 2.65), 128 at 4 (4.56 / 2.80 / 2.70 / 2.97), 256–1024 at 8
    /// (512×4096 13.05 / 13.05 / 10.03 / 8.84)). Env `NORMKIT_CUDA_BWD_SMALL_COLS_ROWS` (`R`: at
    /// every M; `M:R,...`: the table).
    pub bwd_small_cols_rows: Vec<(usize, usize)>,
    /// ... and at most this many elements (M·N): 1024×8192 with column CTAs was 31–34% slower
    /// than the twin and its finalize, 512×8192 4–13% faster, 1024×4096 2–12% faster (H100,
    /// cols/call2, A B B A against 543fa35). Default 4 Mi. Env `NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS`.
    pub bwd_small_cols_max_elems: usize,
    /// The backward's twin (and its column CTAs), launched as a programmatic dependent, with
    /// dynamic shared memory padding that leaves at most K = ⌈grid / SMs⌉ of its CTAs on an SM
    /// (at least what the launch uses itself; the kernels read no more: the same code and bits),
    /// where K is at most this (0: never) — as [`Tuning::fwd_twin_cap_auto`] does for the
    /// forward's twin. Default 2. H100, one build by environment (pad/call1, as
    /// [`Fp8Tuning::twin_cap_auto`]): rms / ln / add + rms backward 32×4096 1.88 / 2.44 / 1.89 →
    /// 1.65 / 2.09 / 1.63 µs; 1–8 and 128–256 rows of 1024–8192 within ±1%. Env
    /// `NORMKIT_CUDA_BWD_TWIN_CAP` (N; `0` / `off`: never).
    pub bwd_twin_cap_auto: u32,
    /// The quantised (FP8) forward.
    pub fp8: Fp8Tuning,
    /// Row-batch backward.
    pub rows: RowsTuning,
    /// Cluster row kernels.
    pub cluster: ClusterTuning,
}

const fn rc(max_n: usize, group: u32, rows_per_cta: u32) -> RowConfig {
    RowConfig { max_n, group, rows_per_cta }
}

const fn cc(max_n: usize, c: u32, t: u32) -> ClusterConfig {
    ClusterConfig { max_n, c, t }
}

// Hopper. The shape of the table: about 4 chunks (32 elements) per thread up to N = 32768 and 8
// beyond, small rows packed into 256-thread CTAs, groups of at most 1024 threads; the row path
// ends where the staged row and weights exceed shared memory (the host checks, by dtype sizes).
// Measured on an H200 (2026-11-21, bench/results/nvidia-h200-2026-11-21, copy ceiling 4261 GB/s):
// with this table the row path gives 68% (rms_fwd) / 88% (addrms_fwd) / 49% (rms_bwd) of the
// ceiling at 32768×4096 bf16; the first, register-cached design with the same groups gave 39% /
// 62% / 45%, register-bound at 2 CTAs per SM. The thresholds themselves are not yet swept: the
// next measurement to make is group size × rows per CTA at N = 512..16384.
// Re-measured 2026-11-22 (H200, kernels-cuda/NOTES.md v3): at N = 4096 one row per 128-thread CTA
// (4 chunks per thread, full grid) gives rms_fwd 91% / ln_fwd 72% of the copy ceiling, against
// 88–89% / 70% with two rows per CTA and 87% / 66% with four; 2 or 1 chunks per thread (G = 256 /
// 512) fall to 66% / 38%. N = 512 and 1024: 8 and 4 rows per CTA beat 16 and 8 by 1–2 points.
const ROWS_SM90: [RowConfig; 12] = [
    rc(32, 1, 256),
    rc(64, 2, 128),
    rc(128, 4, 64),
    rc(256, 8, 32),
    rc(512, 16, 8),
    rc(1024, 32, 4),
    rc(2048, 64, 4),
    rc(4096, 128, 1),
    rc(8192, 256, 1),
    rc(16384, 512, 1),
    rc(32768, 1024, 1),
    rc(65536, 1024, 1),
];

/// The f32 forwards on two chunks per thread ([`Tuning::fwd_f32`], env `NORMKIT_CUDA_FWD_F32=on`):
/// N = 1024, 2048 and 4096, one row per CTA of 64, 128 and 256 threads (the 4-chunk table's
/// groups doubled). H100, f32k2/call1 (old new new old against the 4-chunk table; every op's
/// 18 shapes, then rows per CTA mirrored): rms_fwd 8×1024 2.77 → 2.28 µs, 4096×1024 13.19 →
/// 12.44, 16384×1024 −1.4%, 4096×2048 27.61 → 25.91, 1 / 8 / 128 × 4096 −5 / −5 / −3%,
/// 8192 / 32768 × 4096 ±0.1%; ln_fwd alike (8×1024 −16%, 4096×2048 −6%, 8 × 4096 −5%,
/// 32768×4096 +0.1%). Lost: N = 8192 and 16384 on 512 and 1024 threads (+2 to +13% past a
/// few rows), N = 512 (±0.3%), 3000 (partial rounds, +0.5 to +1.2%), the residual (+1 to +3%
/// from 4096 rows), and more rows per CTA (4 at N = 1024: 4096×1024 +7.6%).
pub const F32_K2_SM90: [RowConfig; 3] = [rc(1024, 64, 1), rc(2048, 128, 1), rc(4096, 256, 1)];

// Backward register path: 2 chunks (16 elements) per thread, so a thread's dW/dB partial
// (16 + 16 fp32) and its row data stay in registers; 256-thread CTAs. Past N = 4096 the
// shared-memory row kernel (ROWS_SM90) or the split path runs.
const BWD_REG_SM90: [RowConfig; 9] = [
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

const BWD_REG1_SM90: [RowConfig; 11] = [
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

// Backward register path, four chunks per thread, 16-bit dtypes from N = 4096 (f32 keeps two
// chunks, then one): H200 2026-11-22 at 32768×4096 bf16 with prefetch, G = 128 × 2 rows against
// the 2-chunk G = 256: rms_bwd 76% / 73% of the copy ceiling, addrms_bwd 92% / 79%, ln_bwd 71% /
// 63%; one chunk per thread (G = 512) 58% / 72% / 48%. One row per 128-thread CTA instead of two:
// 78% / 89% / 73% (four rows per CTA: 71 / 87 / 66%).
const BWD_REG4_SM90: [RowConfig; 3] = [rc(4096, 128, 1), rc(8192, 256, 1), rc(16384, 512, 1)];

// Cluster tables (see ClusterTuning's fields for their shape).
const CL_FWD16: [ClusterConfig; 5] = [cc(32768, 2, 256), cc(65536, 4, 256), cc(131072, 8, 256), cc(262144, 16, 256), cc(524288, 16, 512)];
const CL_FWD32: [ClusterConfig; 4] = [cc(32768, 4, 256), cc(65536, 8, 256), cc(131072, 16, 256), cc(262144, 16, 512)];
const CL_BWD16: [ClusterConfig; 5] = [cc(16384, 2, 256), cc(32768, 4, 256), cc(65536, 8, 256), cc(131072, 16, 256), cc(262144, 16, 512)];
const CL_BWD32: [ClusterConfig; 4] = [cc(16384, 4, 256), cc(32768, 8, 256), cc(65536, 16, 256), cc(131072, 16, 512)];

/// A list of rules from the environment: `off` clears `rules`; else the comma-separated entries,
/// each read by `rule` (one entry may give several rules), replace them — unless one is malformed,
/// which leaves `rules` as they were.
fn rule_list<R>(v: Option<&str>, rules: &mut Vec<R>, rule: impl Fn(&str) -> Option<Vec<R>>) {
    match v.map(str::trim) {
        Some("off") => rules.clear(),
        Some(v) => {
            if let Some(r) = v.split(',').map(rule).collect::<Option<Vec<_>>>() {
                *rules = r.into_iter().flatten().collect();
            }
        }
        None => {}
    }
}

/// A bound from the environment: a number, or `max` for `max`; `None` if malformed.
fn or_max<T: std::str::FromStr>(v: &str, max: T) -> Option<T> {
    if v == "max" {
        Some(max)
    } else {
        v.parse().ok()
    }
}

/// `LO:HI` from the environment (each side trimmed); `None` if malformed.
fn lo_hi<T: std::str::FromStr>(v: &str) -> Option<(T, T)> {
    let (lo, hi) = v.split_once(':')?;
    Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?))
}

/// The first entry of a table by rows ([`Tuning::bwd_small_walk`], [`Tuning::bwd_small_cols_rows`])
/// whose `max_m` ≥ M.
pub(crate) fn by_m<T: Copy>(table: &[(usize, T)], m: usize) -> Option<T> {
    table.iter().find(|&&(max_m, _)| m <= max_m).map(|&(_, r)| r)
}

/// A table by rows from the environment: `R` (every M) or `M:R,...` (sorted by M; the first
/// entry whose M ≥ the call's rows gives R). `None` if malformed.
fn by_m_table<T: std::str::FromStr + Ord + Copy>(v: &str) -> Option<Vec<(usize, T)>> {
    let v = v.trim();
    if let Ok(r) = v.parse::<T>() {
        return Some(vec![(usize::MAX, r)]);
    }
    let mut t: Vec<(usize, T)> = v
        .split(',')
        .map(|e| {
            let (m, r) = e.split_once(':')?;
            Some((m.trim().parse().ok()?, r.trim().parse().ok()?))
        })
        .collect::<Option<_>>()?;
    t.sort_unstable();
    Some(t)
}

impl Tuning {
    /// Hopper (H100, H200), without overrides.
    pub fn for_sm90() -> Tuning {
        Tuning {
            fwd: ROWS_SM90.to_vec(),
            bwd: ROWS_SM90.to_vec(),
            bwd_reg: BWD_REG_SM90.to_vec(),
            bwd_reg1: BWD_REG1_SM90.to_vec(),
            bwd_reg4: BWD_REG4_SM90.to_vec(),
            bwd_reg4_few: vec![rc(4096, 256, 1)],
            bwd_reg4_few_max_m: 1024,
            bwd_reg4_caps: vec![(4, 1), (16, 2), (usize::MAX, 3)],
            split_bwd_ctas_per_sm: 8,
            bwd_reg_16bit_max_n: 2048,
            bwd_reg_f32_max_n: 4096,
            bwd_k1_above: 4096,
            fwd_k8: true,
            fwd_k8_ln: false,
            fwd_k8_wide: Some(rc(16384, 256, 1)),
            fwd_k8_wide_ln: None,
            fwd_ln_one_barrier: Some(256),
            fwd_f32: F32_K2_SM90.to_vec(),
            fwd_f32_ctas3: O3_SM90.to_vec(),
            fwd_half: HALF_SM90.to_vec(),
            fwd_l2_ahead: L2_SM90.to_vec(),
            fwd_rpc: RPC_SM90.to_vec(),
            fwd_persistent: false,
            bwd_reg_prefetch: true,
            bwd_reg_prefetch_f32: false,
            no_full: false,
            bwd_ctas_per_sm: None,
            fin_cols_parts: 16,
            fin_cols_max: 64,
            fin_cols_min_n: 65536,
            fin_wide_min_ctas_per_sm: 2,
            fin_wide_parts_per_lane: 4,
            pdl: true,
            fwd_decode_max_ctas: None,
            fwd_twin: TwinTuning::SM90,
            fwd_twin_cap: None,
            fwd_twin_cap_auto: 2,
            fwd_pair: PairTuning::SM90,
            bwd_small_max_m: 1024,
            bwd_small_rows_max_m: 64,
            bwd_small_walk: vec![(3, 3), (usize::MAX, 0)],
            bwd_small_f32_max_m: 256,
            bwd_small_cols: Some((2, 1024)),
            bwd_small_cols_rows: vec![(8, 1), (64, 2), (128, 4), (usize::MAX, 8)],
            bwd_small_cols_max_elems: 4 << 20,
            bwd_twin_cap_auto: 2,
            fp8: Fp8Tuning {
                cta_threads: 128,
                transpose: Fp8Transpose::Separate,
                max_tm: 32,
                min_tm: 8,
                tile_smem: 116 << 10,
                reg: true,
                row_max_n: 32768,
                reg_grid_rows: false,
                reg_twin: true,
                row_twin_walks: 8,
                wide_cta_walks: 8,
                wide_row: WideRow::Never,
                tile_wide_max_rows: u64::MAX,
                pair_rows: (1, 512),
                pair_every_op: false,
                twin_tm: 16,
                twin_cluster: 2,
                twin_tile_fill: 150,
                twin_tile_n: (2048, 4096),
                staged: true,
                twin_cap_auto: 2,
                twin_x2_min_elems: u64::MAX,
                row_res_rows_min_elems: 1 << 22,
                twin_l2_ahead: 0,
                row_l2_ahead: 1,
                tile_l2_ahead: 0,
                tile_l2_min_n: 2049,
            },
            rows: RowsTuning { on: true, rpc: None, min_n: 512, max_n: 2048, cta_threads: 256 },
            cluster: ClusterTuning {
                on: true,
                shape: None,
                cap_raise: 0,
                caps: ClusterCaps {
                    fwd16_ln_or_residual: 131072,
                    fwd16: 262144,
                    fwd32_residual: 131072,
                    fwd32: 262144,
                    bwd16_ln_residual: 131072,
                    bwd16_ln: 262144,
                    bwd16: 262144,
                    bwd32_ln: 32768,
                    bwd32: 131072,
                },
                fwd16: CL_FWD16.to_vec(),
                fwd32: CL_FWD32.to_vec(),
                bwd16: CL_BWD16.to_vec(),
                bwd32: CL_BWD32.to_vec(),
                prefetch: true,
                prefetch_rms_above_threads: 256,
                staged: true,
                staged_min_n: 131072,
                staged_min_n_ln: 65536,
                staged_shape: None,
                staged_slice: 65536,
                staged_threads: 256,
                staged_lag: None,
                staged_grid_rows: false,
                staged_pf_res: 2,
                staged_pf_ln: 4,
                staged_pf: None,
                reread: Some((8, 512)),
                reread_min_n: 262144,
                reread_ops: RereadOps::MEASURED,
                reread_pf_kb: 0,
            },
        }
    }

    /// Blackwell (B200). Not measured: Hopper's tables (their shape follows per-thread work and
    /// shared-memory capacity, which sm_100 has at least as much of).
    pub fn for_sm100() -> Tuning {
        Self::for_sm90()
    }

    /// The tables for a device of compute capability `major` whose DRAM peaks at `mem_gbps`:
    /// [`Tuning::for_cc`], with Hopper's HBM3e parts (H200: 4.8 TB/s nominal; the H100 SXM's
    /// HBM3 computes to ~3350 GB/s from clock × bus width) taking the forward's twin for RMSNorm
    /// on at most [`TwinTuning::SM90_HBM3E`]'s CTAs per SM past its first wave, the f32 forwards
    /// on four chunks per thread, and the FP8 rules measured there only (per-tensor twin's and
    /// yT tiles' L2 prefetch, the tiles' and per-row doubled rows per CTA). The H100 measured
    /// the twin rule +0.8% at rms_fwd 32768×4096, the f32 rule +6-7% at N = 1024 / 2048, the
    /// per-tensor and tile prefetch +6% / +9-16% (bench/results/nvidia-h100-2026-12-06/h100t/
    /// call1, `summary-H.md`, `summary-P.md`, `summary-T.md`): Hopper's tables keep the rest.
    pub fn for_device(major: i32, mem_gbps: f64) -> Tuning {
        let mut t = Self::for_cc(major);
        if major == 9 && mem_gbps >= 3800.0 {
            t.fwd_twin = TwinTuning::SM90_HBM3E;
            t.fwd_half = HALF_SM90_HBM3E.to_vec();
            t.fwd_f32.clear();
            t.fp8.twin_l2_ahead = 1;
            t.fp8.twin_x2_min_elems = 1 << 25;
            t.fp8.row_res_rows_min_elems = u64::MAX;
            t.fp8.tile_l2_ahead = 1;
            t.fp8.tile_wide_max_rows = 40960;
            t.fp8.wide_row = WideRow::Residual;
        }
        t
    }

    /// The tables for compute capability `major`: Blackwell's from 10 on, else Hopper's.
    pub fn for_cc(major: i32) -> Tuning {
        if major >= 10 {
            Self::for_sm100()
        } else {
            Self::for_sm90()
        }
    }

    /// The DRAM bandwidth `NORMKIT_CUDA_MEM_GBPS` names (GB/s, finite and positive), which the
    /// backend passes to [`Tuning::for_device`] instead of the device's own: an H100 runs the
    /// H200's tables with 4800 (measurements of one device's rules on another).
    pub fn mem_gbps_override(get: impl Fn(&str) -> Option<String>) -> Option<f64> {
        get("NORMKIT_CUDA_MEM_GBPS").and_then(|v| v.trim().parse::<f64>().ok()).filter(|g| g.is_finite() && *g > 0.0)
    }

    /// This tuning with the overrides of [`ENV_OVERRIDES`] applied, `get` returning a variable's
    /// value (`std::env::var(name).ok()` in the backend, a map in tests). Unset variables and
    /// malformed values leave the defaults.
    pub fn with_env(mut self, get: impl Fn(&str) -> Option<String>) -> Tuning {
        let on_unless_0 = |name: &str| get(name).is_none_or(|v| v != "0");
        self.fwd = merge(self.fwd, get("NORMKIT_CUDA_FWD_TABLE").as_deref());
        self.bwd_reg = merge(self.bwd_reg, get("NORMKIT_CUDA_BWD_TABLE").as_deref());
        self.bwd_reg4 = merge(self.bwd_reg4, get("NORMKIT_CUDA_BWD4_TABLE").as_deref());
        self.bwd_reg4_few = merge(self.bwd_reg4_few, get("NORMKIT_CUDA_BWD4F_TABLE").as_deref());
        self.bwd_reg4_few_max_m = get("NORMKIT_CUDA_BWD4F_MAX_M").and_then(|v| v.parse().ok()).unwrap_or(self.bwd_reg4_few_max_m);
        self.bwd_k1_above = get("NORMKIT_CUDA_BWD_K1_ABOVE").and_then(|v| v.parse().ok()).unwrap_or(self.bwd_k1_above);
        self.fwd_k8 = on_unless_0("NORMKIT_CUDA_FWD_K8");
        self.fwd_k8_ln = get("NORMKIT_CUDA_FWD_K8").is_some_and(|v| v == "all");
        let k8_row = |name: &str, row: &mut Option<RowConfig>| match get(name).as_deref().map(str::trim) {
            Some("off") => *row = None,
            Some(v) => {
                if let Some(&r) = merge(Vec::new(), Some(v)).first() {
                    *row = Some(r);
                }
            }
            None => {}
        };
        k8_row("NORMKIT_CUDA_FWD_K8W", &mut self.fwd_k8_wide);
        k8_row("NORMKIT_CUDA_FWD_K8W_LN", &mut self.fwd_k8_wide_ln);
        match get("NORMKIT_CUDA_FWD_F32").as_deref().map(str::trim) {
            Some("off") => self.fwd_f32.clear(),
            Some("on") => self.fwd_f32 = F32_K2_SM90.to_vec(),
            v => self.fwd_f32 = merge(std::mem::take(&mut self.fwd_f32), v),
        }
        rule_list(get("NORMKIT_CUDA_FWD_F32_O3").as_deref(), &mut self.fwd_f32_ctas3, |e| {
            let f: Vec<&str> = e.split(':').map(str::trim).collect();
            let [lo, hi, rlo, rhi] = f[..] else { return None };
            let n = (lo.parse().ok()?, or_max(hi, usize::MAX)?);
            let rows = (rlo.parse().ok()?, or_max(rhi, u64::MAX)?);
            (n.0 <= n.1 && rows.0 <= rows.1).then(|| vec![RowsRule { n, rows }])
        });
        match get("NORMKIT_CUDA_FWD_LN1B").as_deref().map(str::trim) {
            Some("off") => self.fwd_ln_one_barrier = None,
            Some(v) => {
                if let Some(g) = v.parse::<u32>().ok().filter(|g| g.is_power_of_two() && *g >= 128) {
                    self.fwd_ln_one_barrier = Some(g);
                }
            }
            None => {}
        }
        rule_list(get("NORMKIT_CUDA_FWD_HALF").as_deref(), &mut self.fwd_half, |e| {
            let f: Vec<&str> = e.split(':').map(str::trim).collect();
            let [op, lo, hi, rlo, rhi] = f[..] else { return None };
            let n = (lo.parse().ok()?, hi.parse().ok()?);
            let rows = (rlo.parse().ok()?, or_max(rhi, u64::MAX)?);
            let ops: &[bool] = match op {
                "rms" => &[false],
                "ln" => &[true],
                "all" => &[false, true],
                _ => return None,
            };
            (n.0 <= n.1 && rows.0 <= rows.1).then(|| ops.iter().map(|&ln| HalfRule { ln, n, rows }).collect())
        });
        self.bwd_reg_prefetch = on_unless_0("NORMKIT_CUDA_PF");
        self.no_full = get("NORMKIT_CUDA_FULL").is_some_and(|v| v == "0");
        self.fwd_persistent = get("NORMKIT_CUDA_FWD_GRID").is_some_and(|v| v == "persist");
        self.bwd_ctas_per_sm = get("NORMKIT_CUDA_BWD_CTAS_PER_SM").and_then(|v| v.parse().ok()).filter(|&c| c > 0);
        self.fin_cols_max = get("NORMKIT_CUDA_FIN_COLS_MAX").and_then(|v| v.parse().ok()).unwrap_or(self.fin_cols_max);
        self.pdl = on_unless_0("NORMKIT_CUDA_PDL");
        if let Some(v) = get("NORMKIT_CUDA_FWD_DECODE").and_then(|v| v.parse().ok()) {
            self.fwd_decode_max_ctas = Some(v);
        }
        match get("NORMKIT_CUDA_FWD_TWIN_CAP").as_deref().map(str::trim) {
            Some("off") => {
                self.fwd_twin_cap = None;
                self.fwd_twin_cap_auto = 0;
            }
            Some(v) if v.starts_with("auto:") => {
                if let Ok(k) = v["auto:".len()..].trim().parse() {
                    self.fwd_twin_cap_auto = k;
                }
            }
            Some(v) => {
                let cap = v.rsplit_once(':').and_then(|(range, k)| Some((lo_hi::<u64>(range)?, k.trim().parse::<u32>().ok()?)));
                if let Some(((lo, hi), k)) = cap.filter(|&((lo, hi), k)| lo <= hi && k > 0) {
                    self.fwd_twin_cap = Some((lo, hi, k));
                }
            }
            None => {}
        }
        match get("NORMKIT_CUDA_FWD_PAIR").as_deref().map(str::trim) {
            Some("0" | "off") => self.fwd_pair.rows = (1, 0),
            Some("all") => self.fwd_pair = PairTuning::ALL,
            Some(v) => {
                if let Some(rows) = lo_hi(v) {
                    self.fwd_pair.rows = rows;
                }
            }
            None => {}
        }
        self.bwd_small_max_m = get("NORMKIT_CUDA_BWD_SMALL").and_then(|v| v.parse().ok()).unwrap_or(self.bwd_small_max_m);
        if let Some(t) = get("NORMKIT_CUDA_BWD_SMALL_WALK").and_then(|v| by_m_table(&v)) {
            self.bwd_small_walk = t;
        }
        match get("NORMKIT_CUDA_BWD_SMALL_COLS").as_deref().map(str::trim) {
            Some("off") => self.bwd_small_cols = None,
            Some(v) => {
                if let Some(rows) = lo_hi::<usize>(v).filter(|&(lo, hi)| lo <= hi) {
                    self.bwd_small_cols = Some(rows);
                }
            }
            None => {}
        }
        self.bwd_small_cols_max_elems =
            get("NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS").and_then(|v| v.parse().ok()).unwrap_or(self.bwd_small_cols_max_elems);
        if let Some(t) = get("NORMKIT_CUDA_BWD_SMALL_COLS_ROWS").and_then(|v| by_m_table(&v)).filter(|t| t.iter().all(|&(_, r)| r > 0)) {
            self.bwd_small_cols_rows = t;
        }
        let cap = |name: &str, cur: u32| match get(name).as_deref().map(str::trim) {
            Some("off") => 0,
            Some(v) => v.parse().unwrap_or(cur),
            None => cur,
        };
        // A bound that `off` lifts (u64::MAX); a malformed value keeps the current one.
        let limit = |name: &str, cur: u64| match get(name).as_deref().map(str::trim) {
            Some("off") => u64::MAX,
            Some(v) => v.parse().unwrap_or(cur),
            None => cur,
        };
        self.bwd_twin_cap_auto = cap("NORMKIT_CUDA_BWD_TWIN_CAP", self.bwd_twin_cap_auto);
        self.fp8.twin_cap_auto = cap("NORMKIT_CUDA_FP8_TWIN_CAP", self.fp8.twin_cap_auto);
        self.fp8.twin_l2_ahead = cap("NORMKIT_CUDA_FP8_L2PF", self.fp8.twin_l2_ahead);
        self.fp8.row_l2_ahead = cap("NORMKIT_CUDA_FP8_L2PF", self.fp8.row_l2_ahead);
        self.fp8.row_l2_ahead = cap("NORMKIT_CUDA_FP8_ROW_L2PF", self.fp8.row_l2_ahead);
        self.fp8.tile_l2_ahead = cap("NORMKIT_CUDA_FP8_TILE_L2PF", self.fp8.tile_l2_ahead);
        match get("NORMKIT_CUDA_FWD_L2PF").as_deref().map(str::trim) {
            Some("off" | "0") => self.fwd_l2_ahead.clear(),
            Some(v) => {
                // `P`: every op at every size; else `op:dt:min_n:max_n:min_elems:P,...`.
                let every = |pct: u32| -> Vec<L2Rule> {
                    (0..4).map(|i| L2Rule { ln: i & 1 != 0, f32: i & 2 != 0, n: (1, usize::MAX), min_elems: 0, pct }).collect()
                };
                let rule = |e: &str| -> Option<L2Rule> {
                    let f: Vec<&str> = e.split(':').map(str::trim).collect();
                    let [op, dt, lo, hi, elems, pct] = f[..] else { return None };
                    let ln = match op {
                        "rms" => false,
                        "ln" => true,
                        _ => return None,
                    };
                    let f32 = match dt {
                        "f32" => true,
                        "16" => false,
                        _ => return None,
                    };
                    let n = (lo.parse().ok()?, or_max(hi, usize::MAX)?);
                    (n.0 <= n.1).then_some(L2Rule { ln, f32, n, min_elems: elems.parse().ok()?, pct: pct.parse().ok()? })
                };
                if let Ok(p) = v.parse::<u32>() {
                    self.fwd_l2_ahead = every(p);
                } else if let Some(r) = v.split(',').map(rule).collect::<Option<Vec<_>>>() {
                    self.fwd_l2_ahead = r;
                }
            }
            None => {}
        }
        rule_list(get("NORMKIT_CUDA_FWD_RPC").as_deref(), &mut self.fwd_rpc, |e| {
            let f: Vec<&str> = e.split(':').map(str::trim).collect();
            let [op, lo, hi, rlo, rhi, r] = f[..] else { return None };
            let n = (lo.parse().ok()?, or_max(hi, usize::MAX)?);
            let rows = (rlo.parse().ok()?, or_max(rhi, u64::MAX)?);
            let rpc: u32 = r.parse().ok()?;
            let ops: &[(bool, bool)] = match op {
                "rms" => &[(false, false)],
                "addrms" => &[(false, true)],
                "ln" => &[(true, false)],
                "addln" => &[(true, true)],
                "all" => &[(false, false), (false, true), (true, false), (true, true)],
                _ => return None,
            };
            (n.0 <= n.1 && rows.0 <= rows.1 && (1..=1024).contains(&rpc))
                .then(|| ops.iter().map(|&(ln, residual)| RpcRule { ln, residual, n, rows, rpc }).collect())
        });
        self.fp8.twin_x2_min_elems = limit("NORMKIT_CUDA_FP8_TWIN_X2", self.fp8.twin_x2_min_elems);
        self.fp8.row_res_rows_min_elems = limit("NORMKIT_CUDA_FP8_ROW_RES_GRID", self.fp8.row_res_rows_min_elems);
        self.fp8.reg = on_unless_0("NORMKIT_CUDA_FP8_REG");
        self.fp8.reg_grid_rows = get("NORMKIT_CUDA_FP8_GRID").is_some_and(|v| v == "rows");
        self.fp8.reg_twin = on_unless_0("NORMKIT_CUDA_FP8_TWIN");
        self.fp8.staged = on_unless_0("NORMKIT_CUDA_FP8_STAGED");
        if let Some(w) = get("NORMKIT_CUDA_FP8_TWIN").and_then(|v| v.trim().parse::<u64>().ok()).filter(|&w| w > 0) {
            self.fp8.row_twin_walks = w;
        }
        match get("NORMKIT_CUDA_FP8_PAIR").as_deref().map(str::trim) {
            Some("0") => self.fp8.pair_rows = (1, 0),
            Some("all") => (self.fp8.pair_rows, self.fp8.pair_every_op) = ((1, u64::MAX), true),
            Some(v) => {
                if let Some(rows) = lo_hi(v) {
                    self.fp8.pair_rows = rows;
                }
            }
            None => {}
        }
        match get("NORMKIT_CUDA_FP8_WIDE_ROW").as_deref().map(str::trim) {
            Some("0") => self.fp8.wide_row = WideRow::Never,
            Some("res") => self.fp8.wide_row = WideRow::Residual,
            Some("1") => self.fp8.wide_row = WideRow::Always,
            _ => {}
        }
        self.fp8.tile_wide_max_rows = limit("NORMKIT_CUDA_FP8_TILE_WIDE", self.fp8.tile_wide_max_rows);
        self.fp8.wide_cta_walks = limit("NORMKIT_CUDA_FP8_WIDE", self.fp8.wide_cta_walks);
        if let Some(tm) =
            get("NORMKIT_CUDA_FP8_TWIN_TM").and_then(|v| v.trim().parse::<u32>().ok()).filter(|t| matches!(t, 0 | 8 | 16 | 32))
        {
            self.fp8.twin_tm = tm;
        }
        if let Some(c) = get("NORMKIT_CUDA_FP8_TWIN_CL").and_then(|v| v.trim().parse::<u32>().ok()).filter(|c| matches!(c, 1 | 2 | 4 | 8)) {
            self.fp8.twin_cluster = c;
        }
        if let Some(w) = get("NORMKIT_CUDA_FP8_TWIN_TW").and_then(|v| v.trim().parse::<u64>().ok()) {
            self.fp8.twin_tile_fill = w;
        }
        if let Some((lo, hi)) = get("NORMKIT_CUDA_FP8_TWIN_N").and_then(|v| {
            let (a, b) = v.trim().split_once(':')?;
            Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?))
        }) {
            self.fp8.twin_tile_n = (lo, hi);
        }
        self.fp8.row_max_n = get("NORMKIT_CUDA_FP8_ROW_MAX").and_then(|v| v.parse().ok()).unwrap_or(self.fp8.row_max_n);
        match get("NORMKIT_CUDA_FP8_T").as_deref() {
            Some("separate") => self.fp8.transpose = Fp8Transpose::Separate,
            Some("strided") => self.fp8.transpose = Fp8Transpose::Strided,
            Some("fused") => self.fp8.transpose = Fp8Transpose::Fused,
            _ => {}
        }
        if let Some(tm) =
            get("NORMKIT_CUDA_FP8_TM").and_then(|v| v.parse::<u32>().ok()).filter(|t| t.is_power_of_two() && (4..=64).contains(t))
        {
            self.fp8.max_tm = tm;
            self.fp8.min_tm = self.fp8.min_tm.min(tm);
        }
        if let Some(c) =
            get("NORMKIT_CUDA_FP8_CTA").and_then(|v| v.parse::<u32>().ok()).filter(|t| t.is_power_of_two() && (32..=512).contains(t))
        {
            self.fp8.cta_threads = c;
        }
        match get("NORMKIT_CUDA_ROWS") {
            Some(v) if v == "off" || v == "0" => {
                self.rows.on = false;
                self.rows.rpc = None;
            }
            Some(v) => {
                self.rows.on = true;
                self.rows.rpc = v.trim().parse().ok().filter(|&r| r >= 1);
            }
            None => {}
        }
        self.cluster.on = on_unless_0("NORMKIT_CUDA_CLUSTER");
        self.cluster.shape = get("NORMKIT_CUDA_CLUSTER_CT").and_then(|v| {
            let (c, t) = v.split_once(',')?;
            Some((c.trim().parse().ok()?, t.trim().parse().ok()?))
        });
        self.cluster.cap_raise = get("NORMKIT_CUDA_CLUSTER_CAP").and_then(|v| v.parse().ok()).unwrap_or(0);
        self.cluster.prefetch = on_unless_0("NORMKIT_CUDA_CLUSTER_PF");
        if let Some(v) = get("NORMKIT_CUDA_CSTAGE") {
            self.cluster.staged = v != "0";
        }
        if let Some(v) = get("NORMKIT_CUDA_CSTAGE_MIN_N").and_then(|v| v.parse().ok()) {
            self.cluster.staged_min_n = v;
            self.cluster.staged_min_n_ln = v;
        }
        self.cluster.staged_shape = get("NORMKIT_CUDA_CSTAGE_CT").and_then(|v| {
            let (c, t) = v.split_once(',')?;
            let (c, t): (u32, u32) = (c.trim().parse().ok()?, t.trim().parse().ok()?);
            // (Two CTAs at least: plan.rs staged_shape says why.)
            ((2..=16).contains(&c) && t.is_power_of_two() && (32..=512).contains(&t)).then_some((c, t))
        });
        self.cluster.staged_slice =
            get("NORMKIT_CUDA_CSTAGE_SLICE").and_then(|v| v.parse().ok()).filter(|&b| b >= 1024).unwrap_or(self.cluster.staged_slice);
        self.cluster.staged_grid_rows = get("NORMKIT_CUDA_CSTAGE_GRID").is_some_and(|v| v == "rows");
        if let Some(l) = get("NORMKIT_CUDA_CSTAGE_LAG").and_then(|v| v.parse().ok()).filter(|&l| l >= 1) {
            self.cluster.staged_lag = Some(l);
        }
        match get("NORMKIT_CUDA_CLUSTER_REREAD").as_deref().map(str::trim) {
            Some("0" | "off") => self.cluster.reread = None,
            Some(v) => {
                let (c, t) = v.split_once(',').unwrap_or((v, "512"));
                if let (Ok(c), Ok(t)) = (c.trim().parse::<u32>(), t.trim().parse::<u32>()) {
                    if (2..=16).contains(&c) && (t == 256 || t == 512) {
                        self.cluster.reread = Some((c, t));
                    }
                }
            }
            None => {}
        }
        if let Some(v) = get("NORMKIT_CUDA_CLUSTER_REREAD_MIN_N").and_then(|v| v.parse().ok()) {
            self.cluster.reread_min_n = v;
        }
        if let Some(o) = get("NORMKIT_CUDA_CLUSTER_REREAD_OPS").as_deref().and_then(RereadOps::parse) {
            self.cluster.reread_ops = o;
        }
        if let Some(v) = get("NORMKIT_CUDA_CLUSTER_REREAD_PF").and_then(|v| v.parse().ok()) {
            self.cluster.reread_pf_kb = v;
        }
        if let Some(v) = get("NORMKIT_CUDA_CSTAGE_PF") {
            let (s, d) = v.split_once(':').unwrap_or((v.as_str(), "1"));
            if let (Ok(s), Ok(d)) = (s.trim().parse::<u32>(), d.trim().parse::<u32>()) {
                if (1..=2).contains(&d) && s <= 64 {
                    self.cluster.staged_pf = Some((s, d));
                }
            }
        }
        self
    }
}

/// `base` with rows replaced or added from a tuning override `"max_n:group:rows_per_cta,..."`.
/// Malformed entries are ignored.
fn merge(base: Vec<RowConfig>, spec: Option<&str>) -> Vec<RowConfig> {
    let Some(spec) = spec else { return base };
    let mut rows = base;
    for e in spec.split(',') {
        let v: Vec<usize> = e.split(':').filter_map(|x| x.trim().parse().ok()).collect();
        if let [max_n, g, r] = v[..] {
            if g.is_power_of_two() && g <= 1024 && r >= 1 && g * r <= 1024 {
                let row = rc(max_n, g as u32, r as u32);
                match rows.iter_mut().find(|x| x.max_n == max_n) {
                    Some(x) => *x = row,
                    None => rows.push(row),
                }
            }
        }
    }
    rows.sort_by_key(|r| r.max_n);
    rows
}

/// The table row for hidden size `n`, or `None` for the split-row path.
pub fn pick(table: &[RowConfig], n: usize) -> Option<RowConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}

/// The cluster table row for hidden size `n`.
pub fn pick_cluster(table: &[ClusterConfig], n: usize) -> Option<ClusterConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn no_environment_is_the_default() {
        assert_eq!(Tuning::for_sm90().with_env(env(&[])), Tuning::for_sm90());
        assert_eq!(Tuning::for_cc(10), Tuning::for_cc(9));
    }

    #[test]
    fn every_override_parses_as_before() {
        let t = Tuning::for_sm90().with_env(env(&[
            ("NORMKIT_CUDA_FWD_TABLE", "1024:128:1,100000:1024:1,bad,64:3:1"),
            ("NORMKIT_CUDA_BWD_TABLE", "1024:32:8"),
            ("NORMKIT_CUDA_BWD4_TABLE", "8192:512:2"),
            ("NORMKIT_CUDA_BWD_K1_ABOVE", "2048"),
            ("NORMKIT_CUDA_FWD_K8", "all"),
            ("NORMKIT_CUDA_PF", "0"),
            ("NORMKIT_CUDA_FULL", "0"),
            ("NORMKIT_CUDA_FWD_GRID", "persist"),
            ("NORMKIT_CUDA_BWD_CTAS_PER_SM", "0"),
            ("NORMKIT_CUDA_FIN_COLS_MAX", "16"),
            ("NORMKIT_CUDA_PDL", "0"),
            ("NORMKIT_CUDA_ROWS", " 2 "),
            ("NORMKIT_CUDA_CLUSTER", "0"),
            ("NORMKIT_CUDA_CLUSTER_CT", "8, 256"),
            ("NORMKIT_CUDA_CLUSTER_CAP", "1048576"),
            ("NORMKIT_CUDA_CLUSTER_PF", "0"),
        ]));
        assert_eq!(pick(&t.fwd, 1000), Some(rc(1024, 128, 1)));
        assert_eq!(t.fwd.last(), Some(&rc(100000, 1024, 1)));
        assert_eq!(t.fwd.len(), ROWS_SM90.len() + 1, "64:3:1 (group not a power of two) is ignored");
        assert_eq!(pick(&t.bwd_reg, 1024), Some(rc(1024, 32, 8)));
        assert_eq!(t.bwd, ROWS_SM90.to_vec(), "no override reaches the backward row table");
        assert_eq!(pick(&t.bwd_reg4, 8192), Some(rc(8192, 512, 2)));
        assert_eq!(t.bwd_k1_above, 2048);
        assert!(t.fwd_k8 && t.fwd_k8_ln && !t.bwd_reg_prefetch && t.no_full && t.fwd_persistent && !t.pdl);
        assert_eq!(t.bwd_ctas_per_sm, None, "0 is no cap");
        assert_eq!(t.fin_cols_max, 16);
        assert_eq!((t.rows.on, t.rows.rpc), (true, Some(2)));
        assert!(!t.cluster.on && !t.cluster.prefetch);
        assert_eq!((t.cluster.shape, t.cluster.cap_raise), (Some((8, 256)), 1048576));
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_FWD_K8", "0"), ("NORMKIT_CUDA_ROWS", "off")]));
        assert!(!t.fwd_k8 && !t.fwd_k8_ln && !t.rows.on);
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_ROWS", "x"), ("NORMKIT_CUDA_BWD_CTAS_PER_SM", "3")]));
        assert_eq!((t.rows.on, t.rows.rpc, t.bwd_ctas_per_sm), (true, None, Some(3)));
    }

    #[test]
    fn the_decode_overrides_parse() {
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_FWD_DECODE", "0"), ("NORMKIT_CUDA_BWD_SMALL", "3")]));
        assert_eq!((t.fwd_decode_max_ctas, t.bwd_small_max_m), (Some(0), 3));
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_FWD_DECODE", "x"), ("NORMKIT_CUDA_BWD_SMALL", "-1")]));
        assert_eq!((t.fwd_decode_max_ctas, t.bwd_small_max_m), (None, 1024), "malformed values keep the defaults");
        assert!(ENV_OVERRIDES.contains(&"NORMKIT_CUDA_FWD_DECODE") && ENV_OVERRIDES.contains(&"NORMKIT_CUDA_BWD_SMALL"));
    }

    #[test]
    fn the_twin_cap_parses() {
        let d = Tuning::for_sm90();
        let t = d.clone().with_env(env(&[("NORMKIT_CUDA_FWD_TWIN_CAP", "32:256:2")]));
        assert_eq!((d.fwd_twin_cap, d.fwd_twin_cap_auto, t.fwd_twin_cap), (None, 2, Some((32, 256, 2))));
        for bad in ["9:2:1", "1:2", "1:2:0", "x", "auto:x"] {
            let b = d.clone().with_env(env(&[("NORMKIT_CUDA_FWD_TWIN_CAP", bad)]));
            assert_eq!((b.fwd_twin_cap, b.fwd_twin_cap_auto), (None, 2), "{bad}");
        }
        let off = t.with_env(env(&[("NORMKIT_CUDA_FWD_TWIN_CAP", "off")]));
        assert_eq!((off.fwd_twin_cap, off.fwd_twin_cap_auto), (None, 0));
        assert_eq!(d.clone().with_env(env(&[("NORMKIT_CUDA_FWD_TWIN_CAP", "auto:1")])).fwd_twin_cap_auto, 1);
        assert!(ENV_OVERRIDES.contains(&"NORMKIT_CUDA_FWD_TWIN_CAP"));
    }

    #[test]
    fn the_column_overrides_parse() {
        let d = Tuning::for_sm90();
        assert_eq!((d.bwd_small_cols, d.bwd_small_cols_rows.clone()), (Some((2, 1024)), vec![(8, 1), (64, 2), (128, 4), (usize::MAX, 8)]));
        let t = d.clone().with_env(env(&[("NORMKIT_CUDA_BWD_SMALL_COLS", "2:128"), ("NORMKIT_CUDA_BWD_SMALL_COLS_ROWS", "2")]));
        assert_eq!((t.bwd_small_cols, t.bwd_small_cols_rows.clone()), (Some((2, 128)), vec![(usize::MAX, 2)]));
        let t = t.with_env(env(&[("NORMKIT_CUDA_BWD_SMALL_COLS", "off"), ("NORMKIT_CUDA_BWD_SMALL_COLS_ROWS", "0")]));
        assert_eq!((t.bwd_small_cols, t.bwd_small_cols_rows.clone()), (None, vec![(usize::MAX, 2)]), "off, and a zero keeps the table");
        let t = d.clone().with_env(env(&[("NORMKIT_CUDA_BWD_SMALL_COLS_ROWS", "64:2, 8:1,9999:8")]));
        assert_eq!(t.bwd_small_cols_rows, vec![(8, 1), (64, 2), (9999, 8)]);
        for bad in ["9:2", "x", "4"] {
            let t = d.clone().with_env(env(&[("NORMKIT_CUDA_BWD_SMALL_COLS", bad)]));
            assert_eq!(t.bwd_small_cols, d.bwd_small_cols, "{bad}");
        }
        let t = d.clone().with_env(env(&[("NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS", "1000")]));
        assert_eq!((d.bwd_small_cols_max_elems, t.bwd_small_cols_max_elems), (4 << 20, 1000));
        for v in ["NORMKIT_CUDA_BWD_SMALL_COLS", "NORMKIT_CUDA_BWD_SMALL_COLS_ROWS", "NORMKIT_CUDA_BWD_SMALL_COLS_ELEMS"] {
            assert!(ENV_OVERRIDES.contains(&v), "{v}");
        }
    }

    #[test]
    fn the_bandwidth_override_parses() {
        let none = |_: &str| None;
        assert_eq!(Tuning::mem_gbps_override(none), None);
        assert_eq!(Tuning::mem_gbps_override(env(&[("NORMKIT_CUDA_MEM_GBPS", " 4800 ")])), Some(4800.0));
        for bad in ["0", "-1", "inf", "NaN", "x", ""] {
            assert_eq!(Tuning::mem_gbps_override(env(&[("NORMKIT_CUDA_MEM_GBPS", bad)])), None, "{bad}");
        }
        assert!(ENV_OVERRIDES.contains(&"NORMKIT_CUDA_MEM_GBPS"));
    }

    #[test]
    fn the_fp8_rows_overrides_parse() {
        let d = Tuning::for_sm90();
        let h = Tuning::for_device(9, 4800.0);
        assert_eq!((d.fp8.wide_row, d.fp8.tile_wide_max_rows, d.fp8.tile_l2_ahead), (WideRow::Never, u64::MAX, 0));
        assert_eq!((h.fp8.wide_row, h.fp8.tile_wide_max_rows, h.fp8.tile_l2_ahead), (WideRow::Residual, 40960, 1));
        let t = d.clone().with_env(env(&[
            ("NORMKIT_CUDA_FP8_WIDE_ROW", "1"),
            ("NORMKIT_CUDA_FP8_TILE_WIDE", "65536"),
            ("NORMKIT_CUDA_FP8_TILE_L2PF", "2"),
        ]));
        assert_eq!((t.fp8.wide_row, t.fp8.tile_wide_max_rows, t.fp8.tile_l2_ahead), (WideRow::Always, 65536, 2));
        let t = h.clone().with_env(env(&[
            ("NORMKIT_CUDA_FP8_WIDE_ROW", "0"),
            ("NORMKIT_CUDA_FP8_TILE_WIDE", "off"),
            ("NORMKIT_CUDA_FP8_TILE_L2PF", "off"),
        ]));
        assert_eq!((t.fp8.wide_row, t.fp8.tile_wide_max_rows, t.fp8.tile_l2_ahead), (WideRow::Never, u64::MAX, 0));
        assert_eq!(d.clone().with_env(env(&[("NORMKIT_CUDA_FP8_WIDE_ROW", "res")])).fp8.wide_row, WideRow::Residual);
        let bad = h.clone().with_env(env(&[("NORMKIT_CUDA_FP8_WIDE_ROW", "2"), ("NORMKIT_CUDA_FP8_TILE_WIDE", "x")]));
        assert_eq!((bad.fp8.wide_row, bad.fp8.tile_wide_max_rows), (WideRow::Residual, 40960), "malformed values keep the defaults");
        for v in ["NORMKIT_CUDA_FP8_WIDE_ROW", "NORMKIT_CUDA_FP8_TILE_WIDE", "NORMKIT_CUDA_FP8_TILE_L2PF"] {
            assert!(ENV_OVERRIDES.contains(&v), "{v}");
        }
    }

    #[test]
    fn the_staged_overrides_parse() {
        let d = Tuning::for_sm90().cluster;
        assert!(d.staged && d.staged_shape.is_none());
        let t = Tuning::for_sm90().with_env(env(&[
            ("NORMKIT_CUDA_CSTAGE", "0"),
            ("NORMKIT_CUDA_CSTAGE_MIN_N", "65536"),
            ("NORMKIT_CUDA_CSTAGE_CT", "8,512"),
        ]));
        assert_eq!(
            (t.cluster.staged, t.cluster.staged_min_n, t.cluster.staged_min_n_ln, t.cluster.staged_shape),
            (false, 65536, 65536, Some((8, 512)))
        );
        // Any cluster of 1 to 16 CTAs (6: not a power of two), not past the kernels' 512-thread
        // bound or a cluster's 16 CTAs.
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_CT", "6,256")]));
        assert_eq!(t.cluster.staged_shape, Some((6, 256)));
        for bad in ["0,256", "8,1024", "32,256", "17,256", "8"] {
            let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_CT", bad), ("NORMKIT_CUDA_CSTAGE_MIN_N", "x")]));
            assert_eq!((t.cluster.staged_shape, t.cluster.staged_min_n), (None, d.staged_min_n), "{bad}");
        }
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_SLICE", "32768")]));
        assert_eq!(t.cluster.staged_slice, 32768);
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_SLICE", "12")]));
        assert_eq!(t.cluster.staged_slice, d.staged_slice);
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_LAG", "3")]));
        assert_eq!(t.cluster.staged_lag, Some(3));
        let t = Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_LAG", "0")]));
        assert_eq!(t.cluster.staged_lag, None);
        assert!(!d.staged_grid_rows && Tuning::for_sm90().with_env(env(&[("NORMKIT_CUDA_CSTAGE_GRID", "rows")])).cluster.staged_grid_rows);
        // The six staged-forward knobs are listed (the others: `every_override_parses_as_before`).
        assert_eq!(ENV_OVERRIDES.iter().filter(|v| v.starts_with("NORMKIT_CUDA_CSTAGE")).count(), 7);
    }
}
