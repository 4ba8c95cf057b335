//! libFuzzer target over the public API on the CPU backend: the bytes are decoded into a case by
//! `normkit_conformance::fuzz::FuzzCase::decode` (the same generator and runner as the seeded test
//! `tests/tests/fuzz_api.rs`), and any failed property or panic aborts with the case printed.
//!
//! Run from the repository root: `cargo +nightly fuzz run api` (corpus in `fuzz/corpus/api`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use normkit_core::cpu::CpuBackend;

fuzz_target!(|data: &[u8]| {
    let cpu = CpuBackend::new();
    if let Err(report) = normkit_conformance::fuzz::fuzz_one(&cpu, data) {
        panic!("{report}");
    }
});
