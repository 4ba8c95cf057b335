//! Launch configuration per architecture, kept as data.
//!
//! Row path: a group of `group` threads normalises one row, `rows_per_cta` groups share a CTA.
//! A table row applies to every N up to its `max_n`; past the last row the split-row path runs.
//! The group size is fixed by the register budget: each thread holds at most KC chunks of VEC
//! elements (kernels.def: NK_FWD_ROW_KC_*, NK_BWD_ROW_KC_*), so `max_n = group·KC·VEC`, and
//! groups are packed to 256 threads per CTA (or one group when it is larger).
//! The choice depends on N, the dtype and the layout only — never on M — so a row's forward
//! output is the same whatever the batch.

/// One row of a launch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowConfig {
    pub max_n: usize,
    pub group: u32,
    pub rows_per_cta: u32,
}

/// The launch tables of one architecture.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Forward, 16-byte vector path (VEC = 8, KC = 4: max_n = 32·group).
    pub fwd_vec: &'static [RowConfig],
    /// Forward, scalar path (VEC = 1, KC = 16: max_n = 16·group).
    pub fwd_scalar: &'static [RowConfig],
    /// Backward, vector path (VEC = 8, KC = 2: max_n = 16·group).
    pub bwd_vec: &'static [RowConfig],
    /// Backward, scalar path (VEC = 1, KC = 8: max_n = 8·group).
    pub bwd_scalar: &'static [RowConfig],
    /// Split-row backward: target CTAs per SM for the (chunks × parts) grid.
    pub split_bwd_ctas_per_sm: u32,
}

const fn rc(max_n: usize, group: u32, rows_per_cta: u32) -> RowConfig {
    RowConfig { max_n, group, rows_per_cta }
}

// Initial tables (H100 measurements pending; see bench/results for the figures they gave):
// K = KC chunks per thread at each row's max_n keeps 4 independent 16-byte loads in flight per
// thread per tensor; 256-thread CTAs pack small rows.
static FWD_VEC_SM90: [RowConfig; 10] = [
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
static FWD_SCALAR_SM90: [RowConfig; 10] = [
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
static BWD_VEC_SM90: [RowConfig; 10] = FWD_SCALAR_SM90;
static BWD_SCALAR_SM90: [RowConfig; 10] = [
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

impl Tuning {
    /// Hopper (H100, H200).
    pub fn for_sm90() -> &'static Tuning {
        static T: Tuning = Tuning {
            fwd_vec: &FWD_VEC_SM90,
            fwd_scalar: &FWD_SCALAR_SM90,
            bwd_vec: &BWD_VEC_SM90,
            bwd_scalar: &BWD_SCALAR_SM90,
            split_bwd_ctas_per_sm: 8,
        };
        &T
    }

    /// Blackwell (B200). Not measured yet: Hopper's tables, which the register budget, not the
    /// chip, mostly dictates.
    pub fn for_sm100() -> &'static Tuning {
        Self::for_sm90()
    }

    pub fn for_cc(major: i32) -> &'static Tuning {
        if major >= 10 {
            Self::for_sm100()
        } else {
            Self::for_sm90()
        }
    }
}

/// The table row for hidden size `n`, or `None` for the split-row path.
pub fn pick(table: &[RowConfig], n: usize) -> Option<RowConfig> {
    table.iter().copied().find(|r| n <= r.max_n)
}
