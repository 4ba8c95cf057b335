//! Launch configuration per architecture, kept as data.
//!
//! Row path: a group of `group` threads normalises one row (thread t owns the 8-element chunks
//! t, t + group, ...), `rows_per_cta` groups share a persistent CTA, and the row is staged in
//! shared memory. A table row applies to every N up to its `max_n`; past the last row, or when the
//! staged row and weights do not fit in shared memory, the split-row path runs. The choice depends
//! on N and the dtypes only — never on M or the layout — so a row's forward output is the same
//! whatever the batch and however it is strided.

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

/// The launch tables of one architecture.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Forward row path.
    pub fwd: &'static [RowConfig],
    /// Backward row path.
    pub bwd: &'static [RowConfig],
    /// Backward register-resident path (at most 2 chunks per thread, 256-thread CTAs).
    pub bwd_reg: &'static [RowConfig],
    /// Backward register path, one chunk per thread (groups up to 1024 threads).
    pub bwd_reg1: &'static [RowConfig],
    /// Backward register path, four chunks per thread (16-bit dtypes, N > 2048).
    pub bwd_reg4: &'static [RowConfig],
    /// Split-row backward: target CTAs per SM for the (chunks × parts) grid.
    pub split_bwd_ctas_per_sm: u32,
}

const fn rc(max_n: usize, group: u32, rows_per_cta: u32) -> RowConfig {
    RowConfig { max_n, group, rows_per_cta }
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
static ROWS_SM90: [RowConfig; 12] = [
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

// Backward register path: 2 chunks (16 elements) per thread, so a thread's dW/dB partial
// (16 + 16 fp32) and its row data stay in registers; 256-thread CTAs. Past N = 4096 the
// shared-memory row kernel (ROWS_SM90) or the split path runs.
static BWD_REG_SM90: [RowConfig; 9] = [
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

static BWD_REG1_SM90: [RowConfig; 11] = [
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
static BWD_REG4_SM90: [RowConfig; 3] = [rc(4096, 128, 1), rc(8192, 256, 1), rc(16384, 512, 1)];

// 16-bit rows of 512 < N ≤ 2048 in 16-byte layouts take the row-batch kernels instead (rows.rs;
// they replaced a small-batch entry of one chunk per thread and one row per 128-thread CTA at
// N = 1024, M ≤ 8192: H100 2026-11-22, NOTES v7).
impl Tuning {
    /// Hopper (H100, H200).
    pub fn for_sm90() -> &'static Tuning {
        static T: Tuning = Tuning {
            fwd: &ROWS_SM90,
            bwd: &ROWS_SM90,
            bwd_reg: &BWD_REG_SM90,
            bwd_reg1: &BWD_REG1_SM90,
            bwd_reg4: &BWD_REG4_SM90,
            split_bwd_ctas_per_sm: 8,
        };
        &T
    }

    /// Blackwell (B200). Not measured: Hopper's tables (their shape follows per-thread work and
    /// shared-memory capacity, which sm_100 has at least as much of).
    pub fn for_sm100() -> &'static Tuning {
        Self::for_sm90()
    }

    /// The tables for compute capability `major`: Blackwell's from 10 on, else Hopper's.
    pub fn for_cc(major: i32) -> &'static Tuning {
        if major >= 10 {
            Self::for_sm100()
        } else {
            Self::for_sm90()
        }
    }
}

impl Tuning {
    /// This table with rows replaced or added from a tuning override `"max_n:group:rows_per_cta,..."`
    /// (the env variables `NORMKIT_CUDA_FWD_TABLE`, `NORMKIT_CUDA_BWD_TABLE`,
    /// `NORMKIT_CUDA_BWD4_TABLE` for measurement runs). Malformed entries are ignored. The result
    /// is leaked: call once per backend.
    pub fn with_overrides(&'static self, fwd: Option<&str>, bwd_reg: Option<&str>, bwd_reg4: Option<&str>) -> &'static Tuning {
        if fwd.is_none() && bwd_reg.is_none() && bwd_reg4.is_none() {
            return self;
        }
        let merge = |base: &'static [RowConfig], spec: Option<&str>| -> &'static [RowConfig] {
            let Some(spec) = spec else { return base };
            let mut rows = base.to_vec();
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
            Box::leak(rows.into_boxed_slice())
        };
        Box::leak(Box::new(Tuning {
            fwd: merge(self.fwd, fwd),
            bwd_reg: merge(self.bwd_reg, bwd_reg),
            bwd_reg4: merge(self.bwd_reg4, bwd_reg4),
            ..*self
        }))
    }
}

/// The table row for hidden size `n`, or `None` for the split-row path.
pub fn pick(table: &[RowConfig], n: usize) -> Option<RowConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}
