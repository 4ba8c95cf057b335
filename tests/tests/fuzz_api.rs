//! Property-based fuzzing of the public API on the CPU backend (`normkit_conformance::fuzz`):
//! random descriptors, dtypes (invalid ones too), shapes, strides, offsets, in-place views, absurd
//! sizes and hostile data, each call checked for no panic, a typed error with untouched outputs or
//! a result within the suite's tolerance.
//!
//! Runs for `NORMKIT_FUZZ_SECS` seconds (default 60): the first half from a fixed seed, the rest
//! from a fresh one (printed). Case `i` of a run from seed `S` uses the case seed `S + i`; a failure
//! prints its case seed, and `NORMKIT_FUZZ_SEED=<case seed>` replays the run from that case on.

use normkit_conformance::fuzz::{bytes_from_seed, fuzz_one, Outcome};
use normkit_core::cpu::CpuBackend;
use std::time::{Duration, Instant};

const FIXED_SEED: u64 = 0x00F0_221E_5EED;

fn run(cpu: &CpuBackend, seed: u64, budget: Duration, fails: &mut Vec<String>) -> [usize; 3] {
    let t = Instant::now();
    let mut counts = [0usize; 3];
    let mut i = 0u64;
    while t.elapsed() < budget && fails.len() < 5 {
        let case_seed = seed.wrapping_add(i);
        i += 1;
        match fuzz_one(cpu, &bytes_from_seed(case_seed)) {
            Ok(Outcome::Ok) => counts[0] += 1,
            Ok(Outcome::Rejected) => counts[1] += 1,
            Ok(Outcome::Unsupported) => counts[2] += 1,
            Err(e) => fails.push(format!("case seed {case_seed} (replay: NORMKIT_FUZZ_SEED={case_seed}): {e}")),
        }
    }
    counts
}

#[test]
fn fuzz_the_public_api_on_the_cpu() {
    let secs: f64 = std::env::var("NORMKIT_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let budget = Duration::from_secs_f64(secs.max(0.0));
    let cpu = CpuBackend::new();
    let mut fails = Vec::new();
    // Panics are caught and reported per case; keep the default hook from printing each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let seeds: Vec<(u64, &str)> = match std::env::var("NORMKIT_FUZZ_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(s) => vec![(s, "given")],
        None => {
            let fresh = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) ^ 0xA5A5;
            vec![(FIXED_SEED, "fixed"), (fresh, "fresh")]
        }
    };
    let per = budget / seeds.len() as u32;
    for (seed, what) in &seeds {
        let t = Instant::now();
        let [ok, rejected, unsupported] = run(&cpu, *seed, per, &mut fails);
        println!(
            "fuzz ({what} seed {seed}): {} cases in {:.1?}: {ok} ran and matched the oracle, {rejected} rejected with outputs untouched, {unsupported} unsupported",
            ok + rejected + unsupported,
            t.elapsed()
        );
    }
    std::panic::set_hook(hook);
    assert!(fails.is_empty(), "{} fuzz case(s) failed:\n{}", fails.len(), fails.join("\n\n"));
}

/// The corpus of the libFuzzer target (`fuzz/corpus/api`) replayed as a plain test.
#[test]
fn the_committed_fuzz_corpus_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/api");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let cpu = CpuBackend::new();
    for e in entries.flatten() {
        let bytes = std::fs::read(e.path()).expect("corpus file");
        if let Err(msg) = fuzz_one(&cpu, &bytes) {
            panic!("{}: {msg}", e.path().display());
        }
    }
}
