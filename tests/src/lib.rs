//! # normkit-conformance
//!
//! The backend-agnostic conformance suite of normkit, and the f64 oracle it checks against.
//!
//! Written once over any [`normkit_core::NormKernel`] and instantiated per backend with
//! [`conformance_suite!`]. It touches a backend's memory only through `upload`, `download` and
//! `synchronize` (outputs are uploaded already poisoned with NaN rather than `alloc`ated, whose
//! contents are unspecified), so device backends work unchanged.
//!
//! ## Adding a backend
//! One file in `tests/tests/`. A backend that is always present (the CPU) uses libtest:
//!
//! ```text
//! normkit_conformance::conformance_suite!(Ok::<_, NormError>(CpuBackend::new()), normkit_conformance::Grid::cpu());
//! ```
//!
//! A device backend's file is built with `harness = false` (a `[[test]]` entry in
//! `tests/Cargo.toml`) and hands its trials to [`harness::run`], which reports every test as
//! ignored — not run, never passed — on a machine without the device:
//!
//! ```text
//! fn main() -> std::process::ExitCode {
//!     let trials = normkit_conformance::conformance_trials!(CudaBackend::new(), normkit_conformance::Grid::full());
//!     normkit_conformance::harness::run("cuda", probe(), trials)
//! }
//! ```
//!
//! The constructor expression must evaluate to `Result<K, NormError>`; it is evaluated once per
//! generated test. Any constructor error fails the test ([`run_test`]). The macro expands to one `#[test]` per [`Category`] (`fwd_rms`, `bwd_add_layer`, `fwd_shapes`,
//! `strided`, `in_place`, `non_finite_rows`, `empty_batch`, `invalid_forward`, `batch_invariance`,
//! `determinism`, …); each prints one progress line and, on failure, panics with a report naming
//! every failing case (op, dtypes, M, N, strides and offsets, options, seed) and its worst element
//! (got, expected, allowed range).
//!
//! `NORMKIT_CONFORMANCE_GRID=smoke|cpu|full` overrides the grid of every instantiation (a quick
//! smoke run on a GPU, or the full grid on the CPU).
//!
//! Cases a backend declines through `supports` (returning `Unsupported`) are skipped and counted in
//! the progress line; a case `supports` accepts must then run.
//!
//! Device-only checks (raw-pointer views that overlap, `NormError::Aliasing`) cannot be written with
//! safe host references; [`invalid::snapshot`] and [`invalid::expect_untouched`] help a backend's own
//! test file check that a rejected call left its outputs bitwise untouched.
//!
//! ## Layout
//! - [`oracle`]: the contract as plain f64 loops, with the casting modes' rounding points.
//! - [`iv`]: the tolerance model (error intervals) with its reasoning.
//! - [`check`]: run a case, poison outputs, check gaps and untouched inputs, compare with the oracle.
//! - [`invalid`]: the bad-input matrix and `M = 0`.
//! - [`fuzz`]: random calls through the public API (descriptors, dtypes, shapes, views, absurd
//!   sizes, hostile data), shared by `tests/tests/fuzz_api.rs` and the `cargo fuzz` target in
//!   `fuzz/`.
//! - [`concurrency`]: one backend shared by several threads, every result bitwise equal to the
//!   same call made alone.
//! - [`suite`]: the categories, one `#[test]` each; [`grid`]: the shapes they visit.
//! - [`harness`]: the test harness of the device test files, which reports tests as not run
//!   (ignored) on a machine without the device.
//! - [`OracleBackend`]: the oracle as a backend, to exercise the suite without a production backend
//!   (and as the correct core of the mutation tests in `tests/tests/mutants.rs`).

pub mod case;
pub mod check;
pub mod concurrency;
pub mod data;
pub mod device;
pub mod fuzz;
pub mod grid;
pub mod harness;
pub mod invalid;
pub mod iv;
pub mod oracle;
mod oracle_backend;
pub mod par;
pub mod rng;
pub mod suite;

pub use case::{BwdCase, FwdCase, Inject, Views};
pub use check::{check_backward, check_batch_invariance, check_determinism, check_forward, Check, Ran};
pub use grid::{Grid, GRID_ENV};
pub use oracle_backend::OracleBackend;
pub use suite::{run_category, run_test, Category, Summary};

/// Expands to one `#[test]` per [`Category`] for the backend built by `$ctor`
/// (an expression of type `Result<K, NormError>`, evaluated in each test) on `$grid` (a [`Grid`]).
///
/// ```text
/// normkit_conformance::conformance_suite!(Ok::<_, normkit_core::NormError>(normkit_core::cpu::CpuBackend::new()), normkit_conformance::Grid::cpu());
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($ctor:expr, $grid:expr $(,)?) => {
        $crate::__with_categories!(__conformance_tests, ($ctor, $grid));
    };
}

/// The same tests as [`conformance_suite!`], as a `Vec` of [`harness::Trial`]s for a device test
/// file built with `harness = false` (see [`harness`]): on a machine without the device they are
/// reported as not run instead of passing.
#[macro_export]
macro_rules! conformance_trials {
    ($ctor:expr, $grid:expr $(,)?) => {
        $crate::__with_categories!(__conformance_trials, ($ctor, $grid))
    };
}

/// The category list, once: calls `$crate::$callback!` with `(ctor, grid)` and `name => Category`.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_categories {
    ($callback:ident, $args:tt) => {
        $crate::$callback! {
            $args
            fwd_rms => FwdRms,
            fwd_layer => FwdLayer,
            fwd_add_rms => FwdAddRms,
            fwd_add_layer => FwdAddLayer,
            bwd_rms => BwdRms,
            bwd_layer => BwdLayer,
            bwd_add_rms => BwdAddRms,
            bwd_add_layer => BwdAddLayer,
            fwd_shapes => FwdShapes,
            bwd_shapes => BwdShapes,
            large_hidden => LargeHidden,
            strided => Strided,
            in_place => InPlace,
            non_finite_rows => NonFiniteRows,
            empty_batch => EmptyBatch,
            invalid_forward => InvalidForward,
            invalid_backward => InvalidBackward,
            batch_invariance => BatchInvariance,
            determinism => Determinism,
            fwd_fp8 => Fp8,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    (($ctor:expr, $grid:expr) $($name:ident => $cat:ident,)*) => {
        $(
            #[test]
            fn $name() {
                $crate::run_test(|| $ctor, $grid, $crate::Category::$cat);
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_trials {
    (($ctor:expr, $grid:expr) $($name:ident => $cat:ident,)*) => {
        vec![$({
            fn $name() {
                $crate::run_test(|| $ctor, $grid, $crate::Category::$cat);
            }
            $crate::harness::Trial::new(stringify!($name), $name)
        }),*]
    };
}
