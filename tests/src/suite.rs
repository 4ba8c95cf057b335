//! The categories of the suite: each builds its cases from a [`Grid`], runs them on a backend and
//! returns a [`Summary`] or a failure report listing the failing cases.

use crate::case::{all_bwd_descs, all_fwd_descs, bwd_dtype_combos, fwd_dtype_combos, BwdCase, FwdCase, Inject, Views};
use crate::check::{
    check_backward, check_batch_invariance, check_determinism, check_forward, check_fp8, check_zero_rows, zero_row_cases, Check, Fp8Case,
    Fp8Scale, Ran,
};
use crate::grid::Grid;
use crate::invalid;
use normkit_core::{CastingMode, DType, DTypes, NormDesc, NormError, NormKernel};
use std::time::Instant;

/// One `#[test]` of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// RMSNorm forward: every option combination × every dtype combination on the option shapes.
    FwdRms,
    FwdLayer,
    FwdAddRms,
    FwdAddLayer,
    /// Backward: weight (none/offset 0/offset 1) × bias × d_residual_out × dtypes.
    BwdRms,
    BwdLayer,
    BwdAddRms,
    BwdAddLayer,
    /// Every (M, N) of the grid on a few option combinations, forward.
    FwdShapes,
    BwdShapes,
    /// Hidden sizes of 131072 and more.
    LargeHidden,
    /// Strided rows (odd and even strides, non-zero offsets) on several shapes.
    Strided,
    /// y over x, residual_out over residual, dx over dy.
    InPlace,
    /// A NaN/Inf in one row poisons that row only; rows of zeros and constant rows with eps = 1e-12
    /// stay finite in every casting mode (`check::check_zero_rows`).
    NonFiniteRows,
    /// M = 0 is a no-op.
    EmptyBatch,
    /// The bad-input matrices.
    InvalidForward,
    InvalidBackward,
    /// A row's forward outputs do not depend on the batch.
    BatchInvariance,
    /// Backward (and forward) twice give the same bits.
    Determinism,
    /// FP8 outputs: every format × RMSNorm / LayerNorm / add + RMSNorm × per-tensor (host and
    /// device scale) and per-row scaling, with amax, scale_inv and yT; odd N, N and M off every tile
    /// multiple, M = 1, strided rows; saturation and NaN at each format's edges.
    Fp8,
}

impl Category {
    pub const ALL: [Category; 20] = [
        Category::FwdRms,
        Category::FwdLayer,
        Category::FwdAddRms,
        Category::FwdAddLayer,
        Category::BwdRms,
        Category::BwdLayer,
        Category::BwdAddRms,
        Category::BwdAddLayer,
        Category::FwdShapes,
        Category::BwdShapes,
        Category::LargeHidden,
        Category::Strided,
        Category::InPlace,
        Category::NonFiniteRows,
        Category::EmptyBatch,
        Category::InvalidForward,
        Category::InvalidBackward,
        Category::BatchInvariance,
        Category::Determinism,
        Category::Fp8,
    ];
}

/// What a passing category did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    /// Cases the backend declined through `supports` (with its reason).
    pub skipped: Vec<String>,
}

/// How many failing cases a report lists in full.
const REPORT_CASES: usize = 8;

/// Runs checks, collecting failures.
struct Runner {
    summary: Summary,
    failures: Vec<String>,
    total: usize,
}

impl Runner {
    fn new() -> Self {
        Runner { summary: Summary::default(), failures: Vec::new(), total: 0 }
    }
    fn add(&mut self, what: impl FnOnce() -> String, r: Check) {
        self.total += 1;
        match r {
            Ok(Ran::Passed) => self.summary.passed += 1,
            Ok(Ran::Skipped(reason)) => self.summary.skipped.push(format!("{}: {reason}", what())),
            Err(e) => self.failures.push(e),
        }
    }
    fn finish(self) -> Result<Summary, String> {
        if self.failures.is_empty() {
            return Ok(self.summary);
        }
        let mut s = format!("{} of {} cases failed", self.failures.len(), self.total);
        for f in self.failures.iter().take(REPORT_CASES) {
            s += "\n  - ";
            s += f;
        }
        if self.failures.len() > REPORT_CASES {
            s += &format!("\n  … and {} more", self.failures.len() - REPORT_CASES);
        }
        Err(s)
    }
}

/// A seed per case, from the category and the case's index.
fn seed(cat: u64, i: usize) -> u64 {
    cat.wrapping_mul(1_000_003).wrapping_add(i as u64 * 7919 + 11)
}

fn base(rms: bool, residual: bool) -> NormDesc {
    let d = if rms { NormDesc::rms(1e-6) } else { NormDesc::layer(1e-5) };
    d.with_residual(residual)
}

/// Every option combination × dtype combination on the option shapes; views rotate through
/// contiguous, strided (odd, even) and in place.
fn fwd_options<K: NormKernel>(k: &K, grid: &Grid, rms: bool, residual: bool, cat: u64) -> Result<Summary, String> {
    let mut run = Runner::new();
    let mut i = 0usize;
    for &(m, n) in &grid.option_shapes {
        for desc in all_fwd_descs(base(rms, residual)) {
            for dtypes in fwd_dtype_combos(residual) {
                let mut c = FwdCase::new(desc, dtypes, m, n, seed(cat, i));
                c.views = [Views::Contiguous, Views::Strided { odd: true }, Views::Contiguous, Views::Strided { odd: false }][i % 4];
                c.in_place = i % 3 == 1 && c.can_in_place();
                c.residual_in_place = residual && i % 5 >= 3;
                i += 1;
                run.add(|| c.to_string(), check_forward(k, &c));
            }
        }
    }
    run.finish()
}

fn bwd_options<K: NormKernel>(k: &K, grid: &Grid, rms: bool, residual: bool, cat: u64) -> Result<Summary, String> {
    let mut run = Runner::new();
    let mut i = 0usize;
    for &(m, n) in &grid.option_shapes {
        for desc in all_bwd_descs(base(rms, residual)) {
            for dres in if residual { vec![true, false] } else { vec![false] } {
                for dtypes in bwd_dtype_combos() {
                    let mut c = BwdCase::new(desc, dtypes, m, n, seed(cat, i));
                    c.d_residual_out = dres;
                    c.views = [Views::Contiguous, Views::Strided { odd: true }, Views::Contiguous, Views::Strided { odd: false }][i % 4];
                    c.in_place = i % 3 == 1;
                    i += 1;
                    run.add(|| c.to_string(), check_backward(k, &c));
                }
            }
        }
    }
    run.finish()
}

/// The four option combinations of the forward shape sweep.
fn fwd_shape_combos() -> [(NormDesc, DTypes); 4] {
    use DType::*;
    [
        (NormDesc::rms(1e-6), DTypes::uniform(BF16)),
        (NormDesc::layer(1e-5).with_save_stats(true), DTypes::uniform(F32)),
        (
            NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0).with_casting(CastingMode::Llama).with_save_stats(true),
            DTypes::f32_weight(F16),
        ),
        (NormDesc::layer(1e-5).with_residual(true).with_casting(CastingMode::None), DTypes::uniform(BF16)),
    ]
}

/// The four option combinations of the backward shape sweep.
fn bwd_shape_combos() -> [(NormDesc, DTypes); 4] {
    use DType::*;
    [
        (NormDesc::rms(1e-6), DTypes::uniform(BF16)),
        (NormDesc::layer(1e-5), DTypes::uniform(F32)),
        (NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0), DTypes::f32_weight(F16)),
        (NormDesc::layer(1e-5).with_residual(true), DTypes { x: BF16, y: F32, weight: F32, residual: BF16 }),
    ]
}

fn fwd_shapes<K: NormKernel>(k: &K, grid: &Grid, shapes: &[(usize, usize)], cat: u64) -> Result<Summary, String> {
    let combos = fwd_shape_combos();
    let mut run = Runner::new();
    for (si, &(m, n)) in shapes.iter().enumerate() {
        for c in 0..grid.combos_per_shape.min(combos.len()) {
            let (desc, dtypes) = combos[(si + c) % combos.len()];
            let case = FwdCase::new(desc, dtypes, m, n, seed(cat, si * 8 + c));
            run.add(|| case.to_string(), check_forward(k, &case));
        }
    }
    run.finish()
}

fn bwd_shapes<K: NormKernel>(k: &K, grid: &Grid, shapes: &[(usize, usize)], cat: u64) -> Result<Summary, String> {
    let combos = bwd_shape_combos();
    let mut run = Runner::new();
    for (si, &(m, n)) in shapes.iter().enumerate() {
        for c in 0..grid.combos_per_shape.min(combos.len()) {
            let (desc, dtypes) = combos[(si + c) % combos.len()];
            let case = BwdCase::new(desc, dtypes, m, n, seed(cat, si * 8 + c));
            run.add(|| case.to_string(), check_backward(k, &case));
        }
    }
    run.finish()
}

fn large_hidden<K: NormKernel>(k: &K, grid: &Grid) -> Result<Summary, String> {
    let mut run = Runner::new();
    let fwd = fwd_shape_combos();
    let bwd = bwd_shape_combos();
    for (si, &(m, n)) in grid.large.iter().enumerate() {
        // Two combinations each way per shape, rotating.
        for c in 0..2 {
            let (desc, dtypes) = fwd[(si + c) % 4];
            let case = FwdCase::new(desc, dtypes, m, n, seed(11, si * 4 + c));
            run.add(|| case.to_string(), check_forward(k, &case));
            let (desc, dtypes) = bwd[(si + c + 1) % 4];
            let case = BwdCase::new(desc, dtypes, m, n, seed(12, si * 4 + c));
            run.add(|| case.to_string(), check_backward(k, &case));
        }
    }
    run.finish()
}

/// Strided rows with odd and even strides and non-zero offsets, forward and backward, every
/// combination of the shape sweeps.
fn strided<K: NormKernel>(k: &K, grid: &Grid) -> Result<Summary, String> {
    let mut run = Runner::new();
    let mut i = 0;
    for &(m, n) in &grid.view_shapes {
        for odd in [true, false] {
            for (desc, dtypes) in fwd_shape_combos() {
                let mut c = FwdCase::new(desc, dtypes, m, n, seed(13, i));
                c.views = Views::Strided { odd };
                i += 1;
                run.add(|| c.to_string(), check_forward(k, &c));
            }
            for (desc, dtypes) in bwd_shape_combos() {
                let mut c = BwdCase::new(desc, dtypes, m, n, seed(14, i));
                c.views = Views::Strided { odd };
                i += 1;
                run.add(|| c.to_string(), check_backward(k, &c));
            }
        }
    }
    run.finish()
}

/// y over x, residual_out over residual (each alone and both), dx over dy; contiguous and strided.
fn in_place<K: NormKernel>(k: &K, grid: &Grid) -> Result<Summary, String> {
    let mut run = Runner::new();
    let mut i = 0;
    for &(m, n) in &grid.view_shapes {
        for views in [Views::Contiguous, Views::Strided { odd: true }] {
            for (desc, dtypes) in fwd_shape_combos() {
                for (y, r) in [(true, false), (false, true), (true, true)] {
                    if r && !desc.residual {
                        continue;
                    }
                    let mut c = FwdCase::new(desc, dtypes, m, n, seed(15, i));
                    c.views = views;
                    c.in_place = y && c.can_in_place();
                    c.residual_in_place = r;
                    i += 1;
                    run.add(|| c.to_string(), check_forward(k, &c));
                }
            }
            for (desc, dtypes) in bwd_shape_combos() {
                let mut c = BwdCase::new(desc, dtypes, m, n, seed(16, i));
                c.views = views;
                c.in_place = true;
                i += 1;
                run.add(|| c.to_string(), check_backward(k, &c));
            }
        }
    }
    run.finish()
}

/// A NaN or ±Inf in some rows (at the first, a middle and the last column): those rows' outputs must
/// be non-finite, every other row exact.
fn non_finite_rows<K: NormKernel>(k: &K) -> Result<Summary, String> {
    let mut run = Runner::new();
    let mut i = 0;
    for n in [1, 33, 769, 4096] {
        let inject = vec![
            Inject { row: 1, col: 0, value: f32::NAN },
            Inject { row: 3, col: n / 2, value: f32::INFINITY },
            Inject { row: 6, col: n - 1, value: f32::NEG_INFINITY },
        ];
        for (desc, dtypes) in fwd_shape_combos() {
            let mut c = FwdCase::new(desc, dtypes, 8, n, seed(17, i));
            c.inject = inject.clone();
            i += 1;
            run.add(|| c.to_string(), check_forward(k, &c));
        }
        for (desc, dtypes) in bwd_shape_combos() {
            let mut c = BwdCase::new(desc, dtypes, 8, n, seed(18, i));
            c.inject = inject.clone();
            i += 1;
            run.add(|| c.to_string(), check_backward(k, &c));
        }
    }
    // The other side of row-local propagation: rows of zeros (padding) and constant rows with
    // eps = 1e-12 must stay finite in every casting mode, forward and backward.
    for (desc, dtypes, n) in zero_row_cases() {
        run.add(|| format!("zero rows {} {dtypes:?} N={n}", desc.op_name(false)), check_zero_rows(k, &desc, &dtypes, n));
    }
    run.finish()
}

fn batch_invariance<K: NormKernel>(k: &K, grid: &Grid) -> Result<Summary, String> {
    use DType::*;
    let configs = [
        (NormDesc::rms(1e-6), DTypes::uniform(BF16)),
        (NormDesc::layer(1e-5).with_residual(true).with_casting(CastingMode::Llama).with_save_stats(true), DTypes::f32_weight(F16)),
        (NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0).with_casting(CastingMode::None), DTypes::uniform(F32)),
        (NormDesc::layer(1e-5).with_save_stats(true).with_casting(CastingMode::None), DTypes::uniform(BF16)),
        // Gemma LayerNorm and add + RMSNorm in one 16-bit dtype: on CUDA the decode twins of the
        // register forward (few rows) against the plain kernels (many rows).
        (NormDesc::layer(1e-5).with_save_stats(true), DTypes::uniform(BF16)),
        (NormDesc::rms(1e-6).with_residual(true).with_save_stats(true), DTypes::uniform(F16)),
    ];
    let mut run = Runner::new();
    for (ni, &n) in grid.invariance_ns.iter().enumerate() {
        let ms: Vec<usize> = grid.invariance_ms.iter().copied().filter(|&m| m.saturating_mul(n) <= grid.max_batch_elems).collect();
        for (ci, (desc, dtypes)) in configs.iter().enumerate() {
            let base = FwdCase::new(*desc, *dtypes, 1, n, seed(19, ni * 8 + ci));
            // Three rows of different kinds (unit, large mean, small scale).
            let targets = [500u64, 501, 502];
            run.add(|| base.to_string(), check_batch_invariance(k, &base, &targets, &ms));
        }
    }
    run.finish()
}

fn determinism<K: NormKernel>(k: &K, grid: &Grid) -> Result<Summary, String> {
    let fwd = fwd_shape_combos();
    let bwd = bwd_shape_combos();
    let mut run = Runner::new();
    for (si, &(m, n)) in grid.determinism_shapes.iter().enumerate() {
        for c in 0..4 {
            let (d, t) = fwd[c];
            let f = FwdCase::new(d, t, m, n, seed(20, si * 4 + c));
            let (d, t) = bwd[(c + si) % 4];
            let b = BwdCase::new(d, t, m, n, seed(21, si * 4 + c));
            run.add(|| format!("{f} / {b}"), check_determinism(k, &f, &b));
        }
    }
    run.finish()
}

/// The FP8 cases (see [`Category::Fp8`]).
fn fp8<K: NormKernel>(k: &K) -> Result<Summary, String> {
    use DType::*;
    let combos = [
        (NormDesc::rms(1e-6), DTypes::uniform(BF16)),
        (NormDesc::layer(1e-5).with_casting(CastingMode::Llama), DTypes::f32_weight(F16)),
        (NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0).with_casting(CastingMode::None), DTypes::uniform(BF16)),
        (NormDesc::rms(1e-6).with_residual(true), DTypes { x: BF16, y: BF16, weight: F32, residual: F32 }),
        (NormDesc::layer(1e-5), DTypes::uniform(F32)),
    ];
    // N: 1, odd, and around 16/32/64/128-element tiles; M: 1 and off every tile multiple.
    let shapes = [(1, 1), (1, 33), (3, 127), (17, 129), (2, 1000), (65, 64), (33, 255)];
    let mut run = Runner::new();
    let mut i = 0usize;
    for fmt in DType::FP8 {
        let max = fmt.max_finite() as f32;
        for (ci, &(desc, dtypes)) in combos.iter().enumerate() {
            for (si, &(m, n)) in shapes.iter().enumerate() {
                // The rows reach |y| ≈ 4: a scale of max/8 uses the whole range without saturating
                // most values; max·4 saturates nearly everything; per row scales each row itself.
                let scale =
                    [Fp8Scale::Host(max / 8.0), Fp8Scale::Device(max / 8.0), Fp8Scale::PerRow, Fp8Scale::Host(max * 4.0)][(ci + si) % 4];
                let mut base = FwdCase::new(desc, DTypes { y: fmt, ..dtypes }, m, n, seed(22, i));
                base.views = [Views::Contiguous, Views::Strided { odd: true }, Views::Strided { odd: false }][i % 3];
                if si == 3 && ci % 2 == 0 {
                    base.inject = vec![crate::Inject { row: 2, col: n / 2, value: f32::NAN }];
                }
                let c = Fp8Case { base, scale, amax: i % 5 != 4, transposed: i % 4 != 3 };
                i += 1;
                run.add(|| c.to_string(), check_fp8(k, &c));
            }
        }
        // The edges of each format: a scale that puts y right at and beyond max finite, and far
        // below the smallest subnormal (underflow to ±0, never −0 in fnuz).
        for (ei, scale) in [max, max * 1.0625, 1e30, 1e-12].into_iter().enumerate() {
            let base = FwdCase::new(NormDesc::rms(1e-6).without_weight(), DTypes { y: fmt, ..DTypes::uniform(F32) }, 4, 37, seed(23, ei));
            let c = Fp8Case { base, scale: Fp8Scale::Host(scale), amax: true, transposed: true };
            run.add(|| c.to_string(), check_fp8(k, &c));
        }
    }
    for c in fp8_path_cases() {
        run.add(|| c.to_string(), check_fp8(k, &c));
    }
    run.finish()
}

/// FP8 cases sized for the GPU paths (e4m3, and e5m2fnuz where the conversion is software): the
/// row kernel with several fused-transpose tiles and a partial last one (70 × 4096), 512-thread
/// groups (16384), 16 chunks per thread with the separate transpose (40000), and split rows with
/// per-row scaling and the separate transpose (70000), with and without the residual.
pub fn fp8_path_cases() -> Vec<Fp8Case> {
    use DType::*;
    let rms = NormDesc::rms(1e-6);
    let res = NormDesc::rms(1e-6).with_residual(true);
    let list: [(NormDesc, DTypes, usize, usize, Fp8Scale, Views); 8] = [
        (rms, DTypes { y: F8E4M3, ..DTypes::uniform(BF16) }, 70, 4096, Fp8Scale::Device(16.0), Views::Contiguous),
        (res, DTypes { y: F8E4M3, ..DTypes::uniform(BF16) }, 70, 4096, Fp8Scale::PerRow, Views::Contiguous),
        (rms, DTypes { y: F8E5M2Fnuz, ..DTypes::uniform(F16) }, 37, 4096, Fp8Scale::Host(64.0), Views::Strided { odd: false }),
        (NormDesc::layer(1e-5), DTypes { y: F8E4M3, ..DTypes::f32_weight(BF16) }, 33, 16384, Fp8Scale::PerRow, Views::Contiguous),
        (rms, DTypes { y: F8E4M3, ..DTypes::uniform(BF16) }, 9, 40000, Fp8Scale::PerRow, Views::Contiguous),
        (rms, DTypes { y: F8E4M3, ..DTypes::uniform(BF16) }, 3, 70000, Fp8Scale::PerRow, Views::Contiguous),
        (res, DTypes { y: F8E4M3Fnuz, ..DTypes::uniform(F32) }, 3, 70001, Fp8Scale::Device(32.0), Views::Strided { odd: true }),
        (rms, DTypes { y: F8E4M3, ..DTypes::uniform(F32) }, 5, 4099, Fp8Scale::Host(100.0), Views::Strided { odd: true }),
    ];
    list.into_iter()
        .enumerate()
        .map(|(i, (desc, dtypes, m, n, scale, views))| {
            let mut base = FwdCase::new(desc, dtypes, m, n, seed(24, i));
            base.views = views;
            Fp8Case { base, scale, amax: true, transposed: i != 3 }
        })
        .collect()
}

fn count(r: Result<usize, String>) -> Result<Summary, String> {
    r.map(|passed| Summary { passed, skipped: Vec::new() })
}

/// Runs one category on `k`.
pub fn run_category<K: NormKernel>(k: &K, grid: &Grid, cat: Category) -> Result<Summary, String> {
    match cat {
        Category::FwdRms => fwd_options(k, grid, true, false, 1),
        Category::FwdLayer => fwd_options(k, grid, false, false, 2),
        Category::FwdAddRms => fwd_options(k, grid, true, true, 3),
        Category::FwdAddLayer => fwd_options(k, grid, false, true, 4),
        Category::BwdRms => bwd_options(k, grid, true, false, 5),
        Category::BwdLayer => bwd_options(k, grid, false, false, 6),
        Category::BwdAddRms => bwd_options(k, grid, true, true, 7),
        Category::BwdAddLayer => bwd_options(k, grid, false, true, 8),
        Category::FwdShapes => fwd_shapes(k, grid, &grid.sweep_shapes(), 9),
        Category::BwdShapes => bwd_shapes(k, grid, &grid.sweep_shapes(), 10),
        Category::LargeHidden => large_hidden(k, grid),
        Category::Strided => strided(k, grid),
        Category::InPlace => in_place(k, grid),
        Category::NonFiniteRows => non_finite_rows(k),
        Category::EmptyBatch => count(invalid::check_empty_batch(k)),
        Category::InvalidForward => count(invalid::check_invalid_forward(k)),
        Category::InvalidBackward => count(invalid::check_invalid_backward(k)),
        Category::BatchInvariance => batch_invariance(k, grid),
        Category::Determinism => determinism(k, grid),
        Category::Fp8 => fp8(k),
    }
}

/// What a generated test calls: constructs the backend, runs the category on `grid` (or the one
/// named by `NORMKIT_CONFORMANCE_GRID`) and panics with the report if it fails. Prints one progress
/// line. A backend that cannot be created fails the test: device test files decide beforehand,
/// through [`crate::harness::run`], whether their tests run at all.
pub fn run_test<K: NormKernel>(ctor: impl FnOnce() -> Result<K, NormError>, grid: Grid, cat: Category) {
    let k = match ctor() {
        Ok(k) => k,
        Err(e) => panic!("the backend constructor failed: {e} ({e:?})"),
    };
    let grid = Grid::or_from_env(grid);
    let t = Instant::now();
    match run_category(&k, &grid, cat) {
        Ok(s) if s.passed == 0 && !s.skipped.is_empty() => {
            // Nothing ran: the backend declined every case. Not a pass — the device harness reports
            // the test as not run (ignored); under libtest the line says so.
            let reason = format!("every case declined by supports() (first: {})", s.skipped[0]);
            println!("{} {:?} [{} grid]: NOT RUN, {reason}", k.name(), cat, grid.name);
            crate::harness::mark_not_run(reason);
        }
        Ok(s) => {
            let skipped = if s.skipped.is_empty() {
                String::new()
            } else {
                format!(", {} declined by supports() (first: {})", s.skipped.len(), s.skipped[0])
            };
            println!("{} {:?} [{} grid]: {} cases passed in {:.1?}{skipped}", k.name(), cat, grid.name, s.passed, t.elapsed());
        }
        Err(report) => panic!("{} {:?} [{} grid] on {}: {report}", k.name(), cat, grid.name, k.device_name()),
    }
}
