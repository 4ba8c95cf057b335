//! # normkit-benches
//!
//! The benchmark runner behind `cargo xtask bench` (binary `normkit-bench`) and its reports.
//!
//! - [`ops`]: the benchmarked ops and the byte model (every byte read and written, once): the six
//!   ops of a default run, and four FP8 forwards measured when asked for (`--fp8`).
//! - [`grid`]: the default shapes (the `ANCHORS.md` set on GPUs, a scaled-down set on the CPU),
//!   and the FP8 ops' own grid.
//! - [`runner`]: generic over core's [`normkit_core::BenchBackend`]: input sets rotated past the
//!   last-level cache with one set of outputs as the peer script has them, and the general
//!   rotation beside it ([`runner::set_policy`]); the backend's own timing, median of
//!   repetitions, GB/s and % of the copy ceiling measured in the same run.
//! - [`schema`]: `results.json` (schema version 3) and the layouts it accepts when merging.
//! - [`peers`]: the JSON of `peers/bench_peers.py` and of `benches/peers/fp8_peers.py` (the FP8
//!   ops' PyTorch peers, same byte model), as runs beside normkit's.
//! - [`candle_peer`]: candle (`candle_nn::ops`) timed in the same run on the CPU, as two peer
//!   runs: its fused forward and its unfused forward + backward (feature `candle`, default on).
//! - [`compare`]: normkit against each peer on the same device, case by case (the speedup).
//! - [`report`]: `report.md` and a self-contained `report.html` with inline SVG charts.
//! - [`ab`]: two builds measured in one call, case by case (`normkit-bench ab`: the A/B every
//!   kernel change is committed with).
//! - [`backends`]: the backends compiled in (cpu always; cuda, hip behind features), by name.

pub mod ab;
pub mod backends;
pub mod candle_peer;
pub mod compare;
pub mod grid;
mod inputs;
pub mod ops;
pub mod peers;
pub mod progress;
pub mod report;
pub mod runner;
pub mod schema;
pub mod sysinfo;
