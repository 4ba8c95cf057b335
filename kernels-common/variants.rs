//! The types of the typed kernel lists (`kernels-cuda/variants.rs`, `kernels-hip/variants.rs`):
//! a kernel is a [`KernelKey`] (its family and the named options it is compiled for) plus its
//! launch bounds ([`Variant`]). Each backend's build script reads its list and generates the C++
//! instantiation lines (`NK_KERNEL(symbol, template, ALIGNED, SPEC, params, max threads, min
//! blocks)`, included by norm.cu / normkit.hip) and the Rust table (`kernels::ALL`, one `Kernel`
//! per entry, `kernels::get(key)`); the crates include this same file, so the planner asks for
//! kernels with the very types the list is written in.
//!
//! Plain Rust, no dependencies: compiled into the build scripts and into the crates.

/// What a kernel does: its implementation template in kernels-common / kernels-cuda and its
/// parameter struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Forward, a group of threads per row, the row staged in shared memory (`nk_row.cuh`).
    FwdRow,
    /// Split forward, pass 1: partial statistics per (row, chunk).
    FwdSplitStats,
    /// Split forward, pass 2: one combine per row.
    FwdSplitReduce,
    /// Split forward, pass 3: writes y.
    FwdSplitApply,
    /// Backward, staged row kernel.
    BwdRow,
    /// Split backward, pass 1: partial sums per (row, chunk).
    BwdSplitStats,
    /// Split backward, pass 2: one (c1, c2) per row.
    BwdSplitReduce,
    /// Split backward, pass 3: dx and the dW/dB partials.
    BwdSplitApply,
    /// dW/dB finalize, one wavefront-wide block of columns per workgroup (HIP).
    BwdFinalize,
    /// dW/dB finalize with several loads in flight per thread.
    BwdFinalizeWide,
    /// dW/dB finalize for few partial rows, one column per thread (CUDA).
    BwdFinalizeCols,
    /// Forward, register-resident rows (`nk_reg.cuh`).
    FwdReg,
    /// Backward, register-resident rows (`nk_reg.cuh`).
    BwdReg,
    /// Forward, one row per thread-block cluster (`kernels-cuda/cluster.cuh`).
    FwdCluster,
    /// Backward, one row per thread-block cluster (`kernels-cuda/cluster.cuh`).
    BwdCluster,
    /// Backward, several rows per thread at a time (`kernels-cuda/rows.cuh`).
    BwdRows,
    /// Quantised (FP8) forward, register-resident rows, optionally with the fused transposed
    /// output (`nk_fp8.cuh`).
    FwdQRow,
    /// Quantised forward, long rows: the max |y| of each (row, chunk), per-row scaling only.
    FwdQSplitAmax,
    /// Quantised forward, long rows: writes y_q.
    FwdQSplitApply,
    /// yT from a quantised y (the separate transpose).
    FwdQTranspose,
    /// Quantised forward on the register-resident forward's body (`fwd_reg` with SPEC + 128).
    FwdRegQ,
}

impl Family {
    /// The implementation template (`nk::<name><ALIGNED, SPEC>`).
    pub const fn template(self) -> &'static str {
        match self {
            Family::FwdRow => "fwd_row",
            Family::FwdSplitStats => "fwd_split_stats",
            Family::FwdSplitReduce => "fwd_split_reduce",
            Family::FwdSplitApply => "fwd_split_apply_pre",
            Family::BwdRow => "bwd_row",
            Family::BwdSplitStats => "bwd_split_stats",
            Family::BwdSplitReduce => "bwd_split_reduce",
            Family::BwdSplitApply => "bwd_split_apply_pre",
            Family::BwdFinalize => "bwd_finalize",
            Family::BwdFinalizeWide => "bwd_finalize_wide",
            Family::BwdFinalizeCols => "bwd_finalize_cols",
            Family::FwdReg => "fwd_reg",
            Family::BwdReg => "bwd_reg",
            Family::FwdCluster => "fwd_cluster",
            Family::BwdCluster => "bwd_cluster",
            Family::BwdRows => "bwd_rows",
            Family::FwdQRow => "fwd_q_row",
            Family::FwdQSplitAmax => "fwd_q_split_amax",
            Family::FwdQSplitApply => "fwd_q_split_apply",
            Family::FwdQTranspose => "fwd_q_transpose",
            Family::FwdRegQ => "fwd_reg",
        }
    }

    /// Takes `NkBwdParams` (else `NkFwdParams`).
    pub const fn bwd(self) -> bool {
        !matches!(
            self,
            Family::FwdRow
                | Family::FwdSplitStats
                | Family::FwdSplitReduce
                | Family::FwdSplitApply
                | Family::FwdReg
                | Family::FwdCluster
                | Family::FwdQRow
                | Family::FwdQSplitAmax
                | Family::FwdQSplitApply
                | Family::FwdQTranspose
                | Family::FwdRegQ
        )
    }
}

/// The dtype a specialised kernel is compiled for (every tensor in it); its code is the `DT` of
/// the kernels (`SPEC & 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dt {
    /// f32 (code 0).
    F32,
    /// f16 (code 1).
    F16,
    /// bf16 (code 2).
    Bf16,
}

impl Dt {
    /// The kernels' dtype code (`DT`).
    pub const fn code(self) -> u32 {
        match self {
            Dt::F32 => 0,
            Dt::F16 => 1,
            Dt::Bf16 => 2,
        }
    }
    /// The name part of the symbol.
    pub const fn tag(self) -> &'static str {
        match self {
            Dt::F32 => "f32",
            Dt::F16 => "f16",
            Dt::Bf16 => "bf16",
        }
    }
}

/// Chunks of 8 elements per thread a forward register-resident kernel holds (`FWD_REG_KMAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FwdChunks {
    /// 2 (`nk_fwd_reg2_*`, SPEC + 1024): f32 without the residual only, its own table's
    /// twice-as-large groups at 56-64 registers (the CUDA planner's Tuning::fwd_f32).
    K2,
    /// `REG_KMAX` = 4 (the plain kernels).
    K4,
    /// 8 (`nk_fwd_reg8_*`, SPEC + 16).
    K8,
    /// 16 (`nk_fwd_reg16_*`, SPEC + 32).
    K16,
}

impl FwdChunks {
    /// The most chunks per thread.
    pub const fn get(self) -> usize {
        match self {
            FwdChunks::K2 => 2,
            FwdChunks::K4 => 4,
            FwdChunks::K8 => 8,
            FwdChunks::K16 => 16,
        }
    }

    /// Its SPEC bits (nk_reg.cuh `FWD_REG_KMAX`: + 1024 two chunks, + 16 eight, + 32 sixteen).
    const fn spec(self) -> u32 {
        match self {
            FwdChunks::K2 => 1024,
            FwdChunks::K4 => 0,
            FwdChunks::K8 => 16,
            FwdChunks::K16 => 32,
        }
    }

    /// Its part of a kernel symbol (`nk_fwd_reg2…`, `nk_fwd_reg…`, `nk_fwd_reg8…`, `nk_fwd_reg16…`).
    const fn tag(self) -> &'static str {
        match self {
            FwdChunks::K2 => "2",
            FwdChunks::K4 => "",
            FwdChunks::K8 => "8",
            FwdChunks::K16 => "16",
        }
    }
}

/// Chunks of 8 elements per thread a backward register-resident kernel holds (`BWD_REG_KMAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BwdChunks {
    /// 1 (`nk_bwd_reg1*`, SPEC + 16).
    K1,
    /// `BREG_KMAX` = 2 (the plain kernels).
    K2,
    /// 4 (`nk_bwd_reg4*`, SPEC + 32).
    K4,
}

impl BwdChunks {
    /// The most chunks per thread.
    pub const fn get(self) -> usize {
        match self {
            BwdChunks::K1 => 1,
            BwdChunks::K2 => 2,
            BwdChunks::K4 => 4,
        }
    }

    /// Its SPEC bits (nk_reg.cuh `BWD_REG_KMAX`: + 16 one chunk, + 32 four).
    const fn spec(self) -> u32 {
        match self {
            BwdChunks::K1 => 16,
            BwdChunks::K2 => 0,
            BwdChunks::K4 => 32,
        }
    }

    /// Its part of a kernel symbol (`nk_bwd_reg1…`, `nk_bwd_reg…`, `nk_bwd_reg4…`).
    const fn tag(self) -> &'static str {
        match self {
            BwdChunks::K1 => "1",
            BwdChunks::K2 => "",
            BwdChunks::K4 => "4",
        }
    }
}

/// Threads per group of a row-batch backward kernel (compile-time; `kernels-cuda/rows.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowsGroup {
    /// 128 threads (N ≤ 1024).
    G128,
    /// 256 threads (`g256`, SPEC + 2048; N ≤ 2048).
    G256,
}

impl RowsGroup {
    /// Threads per group.
    pub const fn threads(self) -> u32 {
        match self {
            RowsGroup::G128 => 128,
            RowsGroup::G256 => 256,
        }
    }
}

/// One kernel variant: its family and the options it is compiled for, each family with the
/// options that mean something to it. The symbol, the template arguments and the Rust constant
/// follow from it ([`KernelKey::symbol`], [`KernelKey::spec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelKey {
    /// `nk_fwd_row_{a|ah|u}`.
    FwdRow {
        /// 16-byte accesses (else element by element, same chunking and reduction order).
        aligned: bool,
        /// Every tensor f16/bf16: one 16-byte register set per chunk (the `h` suffix).
        narrow: bool,
    },
    /// `nk_fwd_split_stats_{a|ah|u}`.
    FwdSplitStats {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor f16/bf16.
        narrow: bool,
    },
    /// `nk_fwd_split_reduce`.
    FwdSplitReduce,
    /// `nk_fwd_split_apply_pre_{a|ah|u}`.
    FwdSplitApply {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor f16/bf16.
        narrow: bool,
    },
    /// `nk_bwd_row_{a|ah|u}`.
    BwdRow {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor f16/bf16.
        narrow: bool,
    },
    /// `nk_bwd_split_stats_{a|ah|u}`.
    BwdSplitStats {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor f16/bf16.
        narrow: bool,
    },
    /// `nk_bwd_split_reduce`.
    BwdSplitReduce,
    /// `nk_bwd_split_apply_pre_{a|ah|u}`.
    BwdSplitApply {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor f16/bf16.
        narrow: bool,
    },
    /// `nk_bwd_finalize` (HIP).
    BwdFinalize,
    /// `nk_bwd_finalize_wide`.
    BwdFinalizeWide,
    /// `nk_bwd_finalize_cols` (CUDA).
    BwdFinalizeCols,
    /// `nk_fwd_reg{|8|16}_{dt}_{rms|ln}{|_res}_{a|u}`: every tensor in `dtype`, Gemma casting.
    FwdReg {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// Chunks per thread.
        chunks: FwdChunks,
        /// 16-byte accesses (else the element-wise twin: same chunks, same order).
        aligned: bool,
        /// LayerNorm's statistics behind one barrier (SPEC plus 65536, suffix `_1b`; nk_reg.cuh's
        /// CHAN), for the rows the CUDA planner's Tuning::fwd_ln_one_barrier gives it: other
        /// bits than the two reductions, so every kernel of an N takes the same choice.
        one_barrier: bool,
        /// f32 only: the same code compiled for three 256-thread CTAs per SM (80 registers
        /// instead of 113; suffix `_o3`), for the calls of the CUDA planner's
        /// Tuning::fwd_f32_ctas3: the same bits.
        ctas3: bool,
    },
    /// `nk_bwd_reg{|1|4}{|pf}_{dt}_{rms|ln}{|_res}`: 16-byte layouts only.
    BwdReg {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// `d_residual_out` added to dx.
        residual: bool,
        /// Chunks per thread.
        chunks: BwdChunks,
        /// The prefetching twin: the next row copied into shared memory while the current one
        /// is reduced (SPEC + 64; with `residual`, it can read the weight from global memory).
        prefetch: bool,
    },
    /// `nk_fwd_cl_{dt}_{rms|ln}{|_res}_{a|u}` (sm_90+).
    FwdCluster {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// 16-byte accesses (else the element-wise twin).
        aligned: bool,
    },
    /// `nk_fwd_clr_{dt}_{rms|ln}{|_res}_{a|u}` (sm_90+): the re-reading cluster forward
    /// (`fwd_cluster` with SPEC + 32, 512-thread CTAs): one row per cluster, the slice streamed in
    /// pass 1 and read again from L2 for the output, for rows past the registers and the staged
    /// slices.
    FwdClusterReread {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// 16-byte accesses (else the element-wise twin).
        aligned: bool,
    },
    /// `nk_fwd_cs_{dt}_{rms|ln}{|_res}_{a|u}` (sm_90+): the staged cluster forward (`fwd_cluster`
    /// with SPEC + 64): each CTA's slice of the row in shared memory, filled by bulk copies that
    /// stream the cluster's next row in while the current one is written.
    FwdClusterStaged {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// 16-byte accesses and bulk copies (else the element-wise twin).
        aligned: bool,
    },
    /// `nk_fwd_csq{|r}_{dt}_{rms|ln}{|_res}` (sm_90+, 16-bit, 16-byte layouts only): the staged
    /// cluster forward with an FP8 output (`fwd_cluster` with SPEC + 64 + 128), per tensor or per
    /// row (chosen at run time): long rows' x read once.
    FwdClusterStagedQ {
        /// Every tensor's dtype but y's.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// `csqr` (SPEC + 256, RMSNorm only): per-row scaling without a bias, the row's max
        /// found with its sum of squares (y = (x·(w + offset))·rstd).
        per_row: bool,
    },
    /// `nk_bwd_cl{|s}{|p}_{dt}_{rms|ln}{|_res}` (sm_90+, 16-byte layouts only).
    BwdCluster {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// `d_residual_out` added to dx.
        residual: bool,
        /// dW/dB accumulated in shared memory (`cls`, SPEC + 16), else in registers.
        shared_acc: bool,
        /// The prefetching twin (`clp`, SPEC + 32).
        prefetch: bool,
    },
    /// `nk_bwd_rows{R}{|g256}_{dt}_{rms|ln}{|_res}` (16-byte layouts only).
    BwdRows {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// `d_residual_out` added to dx.
        residual: bool,
        /// Rows per thread at a time (1..=15).
        rows: u32,
        /// Threads per group.
        group: RowsGroup,
    },
    /// `nk_fwd_q_row{4|8|16}{|_res}{|_st}_{a|u}{|h}`: the quantised (FP8) forward,
    /// register-resident rows (SPEC = NARROW + 2·chunks/4 + 16·residual + 32·strided).
    FwdQRow {
        /// 16-byte accesses (and 8-byte y_q stores).
        aligned: bool,
        /// Every tensor but y f16/bf16.
        narrow: bool,
        /// Chunks per thread.
        chunks: FwdChunks,
        /// The fused residual add.
        residual: bool,
        /// The strided-store baseline of the transposed output (measurements only).
        strided: bool,
    },
    /// `nk_fwd_q_split_amax_{a|u}{|h}`.
    FwdQSplitAmax {
        /// 16-byte accesses.
        aligned: bool,
        /// Every tensor but y f16/bf16.
        narrow: bool,
    },
    /// `nk_fwd_q_split_apply_{a|u}{|h}`.
    FwdQSplitApply {
        /// 16-byte accesses (and 8-byte y_q stores).
        aligned: bool,
        /// Every tensor but y f16/bf16.
        narrow: bool,
    },
    /// `nk_fwd_q_transpose`.
    FwdQTranspose,
    /// `nk_fwd_regq{|8|16}_{dt}_{rms|ln}{|_res}_{a|u}`: the quantised twin of `FwdReg` (SPEC + 128):
    /// every tensor but y in `dtype`, Gemma casting, y in FP8.
    FwdRegQ {
        /// Every tensor's dtype but y's.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// Chunks per thread.
        chunks: FwdChunks,
        /// 16-byte accesses (and 8-byte y_q stores).
        aligned: bool,
    },
    /// `nk_fwd_regd_{dt}_{rms|ln}{|_res}`: the register forward's twin (CUDA, SPEC plus 256; the
    /// grids of the CUDA planner's `TwinTuning`): 4 chunks, 16-byte accesses, launch bound 256
    /// threads, so a thread's weight (and bias) chunks are loaded into registers with the row's;
    /// a programmatic dependent launch that waits right before its first load and may trigger its
    /// successor at entry (NK_F_TRIGGER). The same arithmetic as `FwdReg`, bit for bit.
    FwdRegDecode {
        /// Every tensor's dtype (16-bit).
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// 8 chunks per thread (SPEC plus 16, `nk_fwd_regd8_*`): the twin of `FwdReg` with
        /// `FwdChunks::K8` (the CUDA planner's `fwd_k8_wide` rows).
        k8: bool,
        /// LayerNorm's statistics behind one barrier (SPEC plus 65536, suffix `_1b`; nk_reg.cuh's
        /// CHAN), for the rows the CUDA planner's Tuning::fwd_ln_one_barrier gives it: other
        /// bits than the two reductions, so every kernel of an N takes the same choice.
        one_barrier: bool,
    },
    /// `nk_fwd_regp_{dt}_{rms|ln}{|_res}`: the decode twin in pairs (CUDA, SPEC plus 256 plus
    /// 1024): a row of the 4-chunk table group G run by 2G threads of 2 chunks each (thread t's
    /// chunks are the even chunks of G-thread t, thread G + t's its odd ones), whose partial sums
    /// are added pairwise before the group sum of G: the bits of `FwdReg` and `FwdRegDecode` at
    /// group G, with twice the warps to hide a few rows' latency.
    FwdRegPair {
        /// Every tensor's dtype (16-bit).
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// LayerNorm's statistics behind one barrier (SPEC plus 65536, suffix `_1b`; nk_reg.cuh's
        /// CHAN), for the rows the CUDA planner's Tuning::fwd_ln_one_barrier gives it: other
        /// bits than the two reductions, so every kernel of an N takes the same choice.
        one_barrier: bool,
    },
    /// `nk_fwd_regh_{dt}_{rms|ln}`: the pairs' converse (CUDA, SPEC plus 256 plus 16 plus 8192):
    /// a row of the 4-chunk table group G run by G / 2 threads of 8 chunks each (thread t's even
    /// chunks are G-thread t's, its odd ones G-thread G / 2 + t's), whose four partial sums are
    /// reduced in the group-G order (`group_sum_half`): the bits of `FwdReg` and `FwdRegDecode`
    /// at group G, with twice the loads in flight per thread, for large batches (the CUDA
    /// planner's `fwd_half`). 16-bit without the residual, G / 2 at least 8 threads.
    FwdRegHalf {
        /// Every tensor's dtype (16-bit).
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// LayerNorm's build with the L2 prefetch of a later CTA's row (SPEC plus 16384,
        /// `nk_fwd_regh_{dt}_ln_l2`; RMSNorm's one build carries it): the same bits.
        l2: bool,
        /// The build for groups G / 2 below a warp (SPEC plus 32768, `nk_fwd_regh_{dt}_{rms|ln}_sw`:
        /// N = 512 and 1024), whose reduction is one butterfly: the other builds' warp-level code
        /// stays as measured (a run-time branch between them spilled 8 more bytes in LayerNorm's).
        sub: bool,
        /// LayerNorm's statistics behind one barrier (SPEC plus 65536, suffix `_1b`; nk_reg.cuh's
        /// CHAN), for the rows the CUDA planner's Tuning::fwd_ln_one_barrier gives it: other
        /// bits than the two reductions, so every kernel of an N takes the same choice.
        one_barrier: bool,
    },
    /// `nk_fwd_regqp{|r}_{dt}_{rms|ln}{|_res}`: the quantised twin in pairs (CUDA, SPEC plus 128
    /// plus 256 plus 1024, + 512 per row): as `FwdRegPair` for `FwdRegQDecode`, a row of group G
    /// run by 2G threads of 2 chunks, the bits of `FwdRegQDecode` (no yT tiles). CUDA compiles it
    /// for RMSNorm with the residual only (the quantised kernels that sum in two accumulators).
    FwdRegQPair {
        /// Every tensor's dtype but y's (16-bit).
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// Per-row scaling (SPEC + 512), else per tensor.
        per_row: bool,
    },
    /// `nk_fwd_regqd{|r}_{dt}_{rms|ln}{|_res}`: the quantised twin with the decode twin's form (CUDA,
    /// SPEC plus 128 plus 256): 4 chunks, 16-byte accesses, launch bound 256 threads (no spills),
    /// the weight (and bias) chunks and the device scale loaded once per CTA of the persistent
    /// grid, a programmatic dependent. The same arithmetic as `FwdRegQ`, bit for bit.
    FwdRegQDecode {
        /// Every tensor's dtype but y's (16-bit).
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// The fused residual add.
        residual: bool,
        /// Per-row scaling (SPEC + 512; `nk_fwd_regqdr_*`), else per tensor: each kernel
        /// carries one mode's code, and so fewer registers.
        per_row: bool,
        /// yT through a shared-memory tile of the CTA's rows (SPEC + 2048; `nk_fwd_regqd{|r}t_*`):
        /// the CTA walks tiles of `tm` consecutive rows and writes each tile transposed once its
        /// rows are quantised, instead of the separate transpose kernel reading y_q back.
        tile: bool,
        /// The same kernel compiled apart under a bound of two 256-thread CTAs per SM (SPEC +
        /// 4096, which the body ignores; `nk_fwd_regqd{|r}{|t}_*_x2`): the same arithmetic, so the
        /// same bits, and fewer registers, for the planner to choose by the call's size.
        two_ctas: bool,
    },
    /// `nk_bwd_sm{|4}_{dt}_{rms|ln}{|_res}`: the register backward's twin for a few rows (CUDA
    /// sm_90+, SPEC plus 256): one row per CTA, a programmatic dependent; for one row dW/dB
    /// written by the kernel itself from registers (no workspace, no finalize kernel), for more
    /// a partial dW/dB row per CTA that the finalize adds in row order.
    BwdSmall {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// `d_residual_out` added to dx.
        residual: bool,
        /// Chunks per thread.
        chunks: BwdChunks,
    },
    /// `nk_bwd_smc{|4}_{dt}_{rms|ln}{|_res}` (SPEC plus 256 + 4096): the twin of
    /// [`KernelKey::BwdSmall`] in one launch with column CTAs: the first `nsplit` CTAs write dx of
    /// their rows, the others dW/dB of their columns from x, dy and the statistics (no partial rows,
    /// no finalize). `slot` carries the column CTAs' row lanes.
    BwdSmallCols {
        /// Every tensor's dtype.
        dtype: Dt,
        /// LayerNorm (else RMSNorm).
        ln: bool,
        /// `d_residual_out` added to dx.
        residual: bool,
        /// Chunks per thread of the row CTAs.
        chunks: BwdChunks,
    },
}

/// One entry of a kernel list: the variant and its launch bounds (`__launch_bounds__`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// What is compiled.
    pub key: KernelKey,
    /// The largest CTA / workgroup it is compiled for.
    pub max_threads: u32,
    /// The least CTAs per SM it is compiled for (unused on AMD).
    pub min_blocks: u32,
}

/// One compiled kernel, as the generated table describes it (both backends' `kernels::Kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// Position in the list (`ALL` / `KERNELS`, and in the backend's function table).
    pub index: usize,
    /// The extern "C" symbol.
    pub name: &'static str,
    /// The variant.
    pub key: KernelKey,
    /// The largest CTA / workgroup the kernel was compiled for (its launch bounds).
    pub max_threads: u32,
    /// The least CTAs per SM it was compiled for (launch bounds; unused on AMD).
    pub min_blocks: u32,
    /// 16-byte accesses (kernels-common's ALIGNED template argument); else element by element.
    pub aligned: bool,
    /// Every tensor f16/bf16 (the NARROW variants, or a 16-bit specialised kernel).
    pub narrow: bool,
    /// The integer SPEC of the specialised families (dtype code + 4·LayerNorm + 8·residual + the
    /// family's option bits); -1 for the NARROW ones.
    pub spec: i32,
    /// Takes `NkBwdParams` (else `NkFwdParams`).
    pub bwd: bool,
}

/// A list entry (the lists' shorthand).
pub const fn v(key: KernelKey, max_threads: u32, min_blocks: u32) -> Variant {
    Variant { key, max_threads, min_blocks }
}

/// The second template argument of a kernel: NARROW for the generic families, an integer SPEC
/// for the specialised ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// `NARROW` (written `true` / `false`).
    Narrow(bool),
    /// `SPEC` = dtype code + 4·LN + 8·residual + the family's own bits.
    Int(u32),
}

const fn base(dtype: Dt, ln: bool, residual: bool) -> u32 {
    dtype.code() + 4 * ln as u32 + 8 * residual as u32
}

const fn rms_ln(ln: bool) -> &'static str {
    if ln {
        "ln"
    } else {
        "rms"
    }
}

const fn res(residual: bool) -> &'static str {
    if residual {
        "_res"
    } else {
        ""
    }
}

const fn b1(one_barrier: bool) -> &'static str {
    if one_barrier {
        "_1b"
    } else {
        ""
    }
}

fn generic(prefix: &str, aligned: bool, narrow: bool) -> String {
    format!("{prefix}_{}{}", if aligned { "a" } else { "u" }, if narrow { "h" } else { "" })
}

impl KernelKey {
    /// The family.
    pub const fn family(self) -> Family {
        match self {
            KernelKey::FwdRow { .. } => Family::FwdRow,
            KernelKey::FwdSplitStats { .. } => Family::FwdSplitStats,
            KernelKey::FwdSplitReduce => Family::FwdSplitReduce,
            KernelKey::FwdSplitApply { .. } => Family::FwdSplitApply,
            KernelKey::BwdRow { .. } => Family::BwdRow,
            KernelKey::BwdSplitStats { .. } => Family::BwdSplitStats,
            KernelKey::BwdSplitReduce => Family::BwdSplitReduce,
            KernelKey::BwdSplitApply { .. } => Family::BwdSplitApply,
            KernelKey::BwdFinalize => Family::BwdFinalize,
            KernelKey::BwdFinalizeWide => Family::BwdFinalizeWide,
            KernelKey::BwdFinalizeCols => Family::BwdFinalizeCols,
            KernelKey::FwdReg { .. } => Family::FwdReg,
            KernelKey::BwdReg { .. } => Family::BwdReg,
            KernelKey::FwdCluster { .. }
            | KernelKey::FwdClusterReread { .. }
            | KernelKey::FwdClusterStaged { .. }
            | KernelKey::FwdClusterStagedQ { .. } => Family::FwdCluster,
            KernelKey::BwdCluster { .. } => Family::BwdCluster,
            KernelKey::BwdRows { .. } => Family::BwdRows,
            KernelKey::FwdQRow { .. } => Family::FwdQRow,
            KernelKey::FwdQSplitAmax { .. } => Family::FwdQSplitAmax,
            KernelKey::FwdQSplitApply { .. } => Family::FwdQSplitApply,
            KernelKey::FwdQTranspose => Family::FwdQTranspose,
            KernelKey::FwdRegQ { .. } | KernelKey::FwdRegQDecode { .. } | KernelKey::FwdRegQPair { .. } => Family::FwdRegQ,
            KernelKey::FwdRegDecode { .. } | KernelKey::FwdRegPair { .. } | KernelKey::FwdRegHalf { .. } => Family::FwdReg,
            KernelKey::BwdSmall { .. } | KernelKey::BwdSmallCols { .. } => Family::BwdReg,
        }
    }

    /// The template's ALIGNED argument: 16-byte accesses.
    pub const fn aligned(self) -> bool {
        match self {
            KernelKey::FwdRow { aligned, .. }
            | KernelKey::FwdSplitStats { aligned, .. }
            | KernelKey::FwdSplitApply { aligned, .. }
            | KernelKey::BwdRow { aligned, .. }
            | KernelKey::BwdSplitStats { aligned, .. }
            | KernelKey::BwdSplitApply { aligned, .. }
            | KernelKey::FwdReg { aligned, .. }
            | KernelKey::FwdCluster { aligned, .. }
            | KernelKey::FwdClusterReread { aligned, .. }
            | KernelKey::FwdClusterStaged { aligned, .. }
            | KernelKey::FwdQRow { aligned, .. }
            | KernelKey::FwdQSplitAmax { aligned, .. }
            | KernelKey::FwdQSplitApply { aligned, .. }
            | KernelKey::FwdRegQ { aligned, .. } => aligned,
            KernelKey::BwdReg { .. }
            | KernelKey::BwdCluster { .. }
            | KernelKey::BwdRows { .. }
            | KernelKey::FwdRegDecode { .. }
            | KernelKey::FwdRegPair { .. }
            | KernelKey::FwdRegHalf { .. }
            | KernelKey::FwdRegQDecode { .. }
            | KernelKey::FwdRegQPair { .. }
            | KernelKey::FwdClusterStagedQ { .. }
            | KernelKey::BwdSmall { .. }
            | KernelKey::BwdSmallCols { .. } => true,
            KernelKey::FwdSplitReduce
            | KernelKey::BwdSplitReduce
            | KernelKey::BwdFinalize
            | KernelKey::BwdFinalizeWide
            | KernelKey::BwdFinalizeCols
            | KernelKey::FwdQTranspose => false,
        }
    }

    /// Every tensor f16/bf16: the NARROW variants, or a specialised kernel of a 16-bit dtype.
    pub const fn narrow(self) -> bool {
        if let KernelKey::FwdQRow { narrow, .. } = self {
            return narrow;
        }
        match self.spec() {
            Spec::Narrow(n) => n,
            Spec::Int(s) => s & 3 != 0,
        }
    }

    /// The template's second argument (SPEC bits as the kernels read them: `nk_reg.cuh`,
    /// `cluster.cuh`, `rows.cuh`).
    pub const fn spec(self) -> Spec {
        match self {
            KernelKey::FwdRow { narrow, .. }
            | KernelKey::FwdSplitStats { narrow, .. }
            | KernelKey::FwdSplitApply { narrow, .. }
            | KernelKey::BwdRow { narrow, .. }
            | KernelKey::BwdSplitStats { narrow, .. }
            | KernelKey::BwdSplitApply { narrow, .. }
            | KernelKey::FwdQSplitAmax { narrow, .. }
            | KernelKey::FwdQSplitApply { narrow, .. } => Spec::Narrow(narrow),
            KernelKey::FwdQRow { narrow, chunks, residual, strided, .. } => {
                Spec::Int(narrow as u32 + 2 * (chunks.get() as u32 / 4) + 16 * residual as u32 + 32 * strided as u32)
            }
            KernelKey::FwdQTranspose => Spec::Narrow(false),
            KernelKey::FwdSplitReduce
            | KernelKey::BwdSplitReduce
            | KernelKey::BwdFinalize
            | KernelKey::BwdFinalizeWide
            | KernelKey::BwdFinalizeCols => Spec::Narrow(false),
            KernelKey::FwdReg { dtype, ln, residual, chunks, one_barrier, .. } => {
                Spec::Int(base(dtype, ln, residual) + 65536 * one_barrier as u32 + chunks.spec())
            }
            KernelKey::FwdRegDecode { dtype, ln, residual, k8, one_barrier } => {
                Spec::Int(base(dtype, ln, residual) + 256 + 16 * k8 as u32 + 65536 * one_barrier as u32)
            }
            KernelKey::FwdRegPair { dtype, ln, residual, one_barrier } => {
                Spec::Int(base(dtype, ln, residual) + 256 + 1024 + 65536 * one_barrier as u32)
            }
            KernelKey::FwdRegHalf { dtype, ln, l2, sub, one_barrier } => {
                Spec::Int(base(dtype, ln, false) + 256 + 16 + 8192 + 16384 * l2 as u32 + 32768 * sub as u32 + 65536 * one_barrier as u32)
            }
            KernelKey::FwdRegQDecode { dtype, ln, residual, per_row, tile, two_ctas } => {
                Spec::Int(base(dtype, ln, residual) + 128 + 256 + 512 * per_row as u32 + 2048 * tile as u32 + 4096 * two_ctas as u32)
            }
            KernelKey::FwdRegQPair { dtype, ln, residual, per_row } => {
                Spec::Int(base(dtype, ln, residual) + 128 + 256 + 512 * per_row as u32 + 1024)
            }
            KernelKey::BwdSmall { dtype, ln, residual, chunks } => Spec::Int(base(dtype, ln, residual) + chunks.spec() + 256),
            KernelKey::BwdSmallCols { dtype, ln, residual, chunks } => Spec::Int(base(dtype, ln, residual) + chunks.spec() + 256 + 4096),
            KernelKey::BwdReg { dtype, ln, residual, chunks, prefetch } => {
                Spec::Int(base(dtype, ln, residual) + chunks.spec() + 64 * prefetch as u32)
            }
            KernelKey::FwdCluster { dtype, ln, residual, .. } => Spec::Int(base(dtype, ln, residual)),
            KernelKey::FwdClusterReread { dtype, ln, residual, .. } => Spec::Int(base(dtype, ln, residual) + 32),
            KernelKey::FwdClusterStaged { dtype, ln, residual, .. } => Spec::Int(base(dtype, ln, residual) + 64),
            KernelKey::FwdClusterStagedQ { dtype, ln, residual, per_row } => {
                Spec::Int(base(dtype, ln, residual) + 64 + 128 + 256 * per_row as u32)
            }
            KernelKey::FwdRegQ { dtype, ln, residual, chunks, .. } => Spec::Int(base(dtype, ln, residual) + chunks.spec() + 128),
            KernelKey::BwdCluster { dtype, ln, residual, shared_acc, prefetch } => {
                Spec::Int(base(dtype, ln, residual) + 16 * shared_acc as u32 + 32 * prefetch as u32)
            }
            KernelKey::BwdRows { dtype, ln, residual, rows, group } => Spec::Int(
                base(dtype, ln, residual)
                    + 128 * rows
                    + match group {
                        RowsGroup::G128 => 0,
                        RowsGroup::G256 => 2048,
                    },
            ),
        }
    }

    /// The extern "C" symbol.
    pub fn symbol(self) -> String {
        match self {
            KernelKey::FwdRow { aligned, narrow } => generic("nk_fwd_row", aligned, narrow),
            KernelKey::FwdSplitStats { aligned, narrow } => generic("nk_fwd_split_stats", aligned, narrow),
            KernelKey::FwdSplitApply { aligned, narrow } => generic("nk_fwd_split_apply_pre", aligned, narrow),
            KernelKey::BwdRow { aligned, narrow } => generic("nk_bwd_row", aligned, narrow),
            KernelKey::BwdSplitStats { aligned, narrow } => generic("nk_bwd_split_stats", aligned, narrow),
            KernelKey::BwdSplitApply { aligned, narrow } => generic("nk_bwd_split_apply_pre", aligned, narrow),
            KernelKey::FwdQSplitAmax { aligned, narrow } => generic("nk_fwd_q_split_amax", aligned, narrow),
            KernelKey::FwdQSplitApply { aligned, narrow } => generic("nk_fwd_q_split_apply", aligned, narrow),
            KernelKey::FwdQRow { aligned, narrow, chunks, residual, strided } => {
                generic(&format!("nk_fwd_q_row{}{}{}", chunks.get(), res(residual), if strided { "_st" } else { "" }), aligned, narrow)
            }
            KernelKey::FwdQTranspose => "nk_fwd_q_transpose".to_owned(),
            KernelKey::FwdSplitReduce
            | KernelKey::BwdSplitReduce
            | KernelKey::BwdFinalize
            | KernelKey::BwdFinalizeWide
            | KernelKey::BwdFinalizeCols => format!("nk_{}", self.family().template()),
            KernelKey::FwdReg { dtype, ln, residual, chunks, aligned, one_barrier, ctas3 } => {
                let ks = chunks.tag();
                format!(
                    "nk_fwd_reg{ks}_{}_{}{}_{}{}{}",
                    dtype.tag(),
                    rms_ln(ln),
                    res(residual),
                    if aligned { "a" } else { "u" },
                    b1(one_barrier),
                    if ctas3 { "_o3" } else { "" }
                )
            }
            KernelKey::BwdReg { dtype, ln, residual, chunks, prefetch } => {
                format!("nk_bwd_reg{}{}_{}_{}{}", chunks.tag(), if prefetch { "pf" } else { "" }, dtype.tag(), rms_ln(ln), res(residual))
            }
            KernelKey::FwdRegDecode { dtype, ln, residual, k8, one_barrier } => {
                format!("nk_fwd_regd{}_{}_{}{}{}", if k8 { "8" } else { "" }, dtype.tag(), rms_ln(ln), res(residual), b1(one_barrier))
            }
            KernelKey::FwdRegPair { dtype, ln, residual, one_barrier } => {
                format!("nk_fwd_regp_{}_{}{}{}", dtype.tag(), rms_ln(ln), res(residual), b1(one_barrier))
            }
            KernelKey::FwdRegHalf { dtype, ln, l2, sub, one_barrier } => format!(
                "nk_fwd_regh_{}_{}{}{}{}",
                dtype.tag(),
                rms_ln(ln),
                if l2 { "_l2" } else { "" },
                if sub { "_sw" } else { "" },
                b1(one_barrier)
            ),
            KernelKey::FwdRegQDecode { dtype, ln, residual, per_row, tile, two_ctas } => format!(
                "nk_fwd_regqd{}{}_{}_{}{}{}",
                if per_row { "r" } else { "" },
                if tile { "t" } else { "" },
                dtype.tag(),
                rms_ln(ln),
                res(residual),
                if two_ctas { "_x2" } else { "" }
            ),
            KernelKey::FwdRegQPair { dtype, ln, residual, per_row } => {
                format!("nk_fwd_regqp{}_{}_{}{}", if per_row { "r" } else { "" }, dtype.tag(), rms_ln(ln), res(residual))
            }
            KernelKey::BwdSmall { dtype, ln, residual, chunks } => {
                format!("nk_bwd_sm{}_{}_{}{}", chunks.tag(), dtype.tag(), rms_ln(ln), res(residual))
            }
            KernelKey::BwdSmallCols { dtype, ln, residual, chunks } => {
                format!("nk_bwd_smc{}_{}_{}{}", chunks.tag(), dtype.tag(), rms_ln(ln), res(residual))
            }
            KernelKey::FwdRegQ { dtype, ln, residual, chunks, aligned } => {
                let ks = chunks.tag();
                format!("nk_fwd_regq{ks}_{}_{}{}_{}", dtype.tag(), rms_ln(ln), res(residual), if aligned { "a" } else { "u" })
            }
            KernelKey::FwdCluster { dtype, ln, residual, aligned } => {
                format!("nk_fwd_cl_{}_{}{}_{}", dtype.tag(), rms_ln(ln), res(residual), if aligned { "a" } else { "u" })
            }
            KernelKey::FwdClusterReread { dtype, ln, residual, aligned } => {
                format!("nk_fwd_clr_{}_{}{}_{}", dtype.tag(), rms_ln(ln), res(residual), if aligned { "a" } else { "u" })
            }
            KernelKey::FwdClusterStaged { dtype, ln, residual, aligned } => {
                format!("nk_fwd_cs_{}_{}{}_{}", dtype.tag(), rms_ln(ln), res(residual), if aligned { "a" } else { "u" })
            }
            KernelKey::FwdClusterStagedQ { dtype, ln, residual, per_row } => {
                format!("nk_fwd_csq{}_{}_{}{}", if per_row { "r" } else { "" }, dtype.tag(), rms_ln(ln), res(residual))
            }
            KernelKey::BwdCluster { dtype, ln, residual, shared_acc, prefetch } => format!(
                "nk_bwd_cl{}{}_{}_{}{}",
                if shared_acc { "s" } else { "" },
                if prefetch { "p" } else { "" },
                dtype.tag(),
                rms_ln(ln),
                res(residual)
            ),
            KernelKey::BwdRows { dtype, ln, residual, rows, group } => format!(
                "nk_bwd_rows{rows}{}_{}_{}{}",
                match group {
                    RowsGroup::G128 => "",
                    RowsGroup::G256 => "g256",
                },
                dtype.tag(),
                rms_ln(ln),
                res(residual)
            ),
        }
    }
}
