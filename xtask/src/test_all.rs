//! `cargo xtask test-all`: toolchains, a release build of everything, the whole test suite
//! (unit, integration, conformance, doctests), then one line per backend saying what ran where
//! and what was checked without a device, and the test counts.

use crate::{gpu_check, toolchains, util};
use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::Instant;

/// Test counts summed over every `test result:` line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
    pub suites: u64,
}

impl Counts {
    /// Adds a libtest summary line: `test result: ok. 12 passed; 0 failed; 1 ignored; ...`.
    pub fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else { return };
        self.suites += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else { continue };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

/// The cargo flags that select what to build: the GPU backends whose toolchain is present (the
/// others left out, and said so). The features are named, never `--all-features`:
/// `normkit-candle/cuda` turns on candle's CUDA build, which links cuBLAS, cuRAND and NVRTC at
/// build time — libraries this machine does not have; it is type-checked on its own
/// ([`candle_cuda_check`]) and linked and run in the GPU bundle.
fn selection(tools: &toolchains::Tools) -> (Vec<String>, Vec<String>) {
    let mut args = vec!["--workspace".to_string(), "--release".to_string()];
    let mut left_out = Vec::new();
    let gpus = [("cuda", "normkit-cuda", tools.nvcc.is_some(), "nvcc 13.0"), ("hip", "normkit-hip", tools.clang.is_some(), "clang++-22")];
    let mut features = Vec::new();
    for (feat, krate, present, tool) in gpus {
        if present {
            features.extend(["normkit", "normkit-conformance", "normkit-benches"].map(|p| format!("{p}/{feat}")));
        } else {
            args.extend(["--exclude".to_string(), krate.to_string()]);
            left_out.push(format!("{feat}: toolchain missing ({tool}), not built"));
        }
    }
    if !features.is_empty() {
        args.extend(["--features".to_string(), features.join(",")]);
    }
    (args, left_out)
}

/// `cargo check -p normkit-candle --features cuda --all-targets`: the candle crate's CUDA ops
/// type-checked against candle's `cuda` build (its kernels compiled by nvcc for sm_90, which
/// candle's build script needs), without linking — the line for the report, `Err` if it failed.
fn candle_cuda_check(tools: &toolchains::Tools) -> Result<String, String> {
    if tools.nvcc.is_none() {
        return Ok("candle-cuda: not checked (nvcc 13.0 missing)".into());
    }
    let t = Instant::now();
    let mut c = util::cargo();
    c.args(["check", "--release", "-p", "normkit-candle", "--features", "cuda", "--all-targets"]).env("CUDA_COMPUTE_CAP", "90");
    // Not NORMKIT_KERNELS=skip: normkit-cuda's build-script run is the same unit as the main
    // build's (its build dependencies and features are unchanged), so a different environment
    // would rerun it in place and overwrite the fatbin the main build made with an empty one.
    // With the same environment it is reused: no second nvcc build.
    match util::run(&mut c) {
        Ok(()) => Ok(format!(
            "candle-cuda: type-checked with candle's cuda feature in {} (linked and run only in the GPU bundle: it needs cuBLAS and a device)",
            util::elapsed(t)
        )),
        Err(e) => Err(format!("candle-cuda: FAILED to type-check: {e}")),
    }
}

/// Counts per test binary or doctest run, keyed by what cargo printed after `Running` or
/// `Doc-tests` (`tests/cuda.rs (target/release/deps/cuda-…)`, `normkit_hip`).
#[derive(Debug, Default)]
pub struct Suites {
    pub total: Counts,
    pub per_suite: Vec<(String, Counts)>,
    current: String,
}

impl Suites {
    pub fn add_line(&mut self, line: &str) {
        let t = line.trim();
        if let Some(src) = t.strip_prefix("Running ").or_else(|| t.strip_prefix("Doc-tests ")) {
            self.current = src.to_string();
        }
        if t.starts_with("test result: ") {
            let mut c = Counts::default();
            c.add_line(t);
            self.total.add_line(t);
            self.per_suite.push((self.current.clone(), c));
        }
    }

    /// The tests of suites whose source names `backend` (`tests/cuda.rs`, `crates/normkit-cuda/…`,
    /// `normkit_cuda` doctests).
    pub fn for_backend(&self, backend: &str) -> Counts {
        let keys = [format!("/{backend}.rs"), format!("normkit-{backend}/"), format!("normkit_{backend}")];
        let mut c = Counts::default();
        for (src, s) in &self.per_suite {
            if keys.iter().any(|k| src.contains(k.as_str())) {
                c.passed += s.passed;
                c.failed += s.failed;
                c.ignored += s.ignored;
                c.suites += 1;
            }
        }
        c
    }
}

/// Runs `cargo test` with the selection, echoing its output and counting results.
fn run_tests(sel: &[String]) -> Result<(Suites, bool), String> {
    // cargo prints `Running …` / `Doc-tests …` on stderr and the results on stdout: one pipe for
    // both keeps them in order, so each result is attributed to its test binary.
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let writer2 = writer.try_clone().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut c = util::cargo();
    c.arg("test").args(sel).arg("--no-fail-fast").stdout(writer).stderr(writer2);
    eprintln!("$ {}", util::show(&c));
    let mut child = c.spawn().map_err(|e| format!("cannot run cargo test: {e}"))?;
    drop(c); // closes our copies of the write ends, so the reader sees EOF when cargo exits
    let mut suites = Suites::default();
    let mut out = std::io::stdout();
    for line in BufReader::new(reader).lines() {
        let line = line.map_err(|e| format!("reading cargo test output: {e}"))?;
        suites.add_line(&line);
        let _ = writeln!(out, "{line}");
    }
    let status = child.wait().map_err(|e| format!("cargo test: {e}"))?;
    Ok((suites, status.success()))
}

/// `normkit-bench probe` from the release build: `(backend, Ok(device) | Err(reason))`.
fn probe() -> Vec<(String, Result<String, String>)> {
    let bin = util::target_dir().join("release/normkit-bench");
    let text = util::output(Command::new(&bin).arg("probe")).unwrap_or_default();
    let mut v: Vec<(String, Result<String, String>)> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(": ")?;
            let status = match rest.split_once(": ") {
                Some(("available", dev)) => Ok(dev.to_string()),
                Some((_, reason)) => Err(reason.to_string()),
                None => Err(rest.to_string()),
            };
            Some((name.to_string(), status))
        })
        .collect();
    for name in ["cpu", "cuda", "hip"] {
        if !v.iter().any(|(n, _)| n == name) {
            v.push((name.into(), Err(format!("not probed ({} did not run)", bin.display()))));
        }
    }
    v
}

/// ` [26 tests of its own: 26 passed, 0 failed]`, or ` [26 tests of its own: 26 not run: no
/// device]` when the device harness reported them ignored: a test that did not run is never
/// counted as passed.
fn own_tests(own: &Counts) -> String {
    if own.suites == 0 {
        return String::new();
    }
    let all = own.passed + own.failed + own.ignored;
    let mut parts = Vec::new();
    if own.passed + own.failed > 0 {
        parts.push(format!("{} passed, {} failed", own.passed, own.failed));
    }
    if own.ignored > 0 {
        parts.push(format!("{} not run: no device", own.ignored));
    }
    format!(" [{all} tests of its own: {}]", parts.join(", "))
}

pub fn run() -> Result<(), String> {
    let t0 = Instant::now();
    util::phase("toolchains");
    let tools = toolchains::provision();
    let (sel, left_out) = selection(&tools);

    util::phase("build (release, all targets)");
    let t = Instant::now();
    let build = util::run(util::cargo().arg("build").args(&sel).arg("--all-targets"));
    eprintln!("build: {}", util::elapsed(t));

    util::phase("tests (unit, integration, conformance, doctests)");
    let t = Instant::now();
    let (suites, tests_ok) = if build.is_ok() { run_tests(&sel)? } else { (Suites::default(), false) };
    let counts = suites.total;
    eprintln!("tests: {}", util::elapsed(t));

    util::phase("candle with CUDA (type-check)");
    let candle_cuda = candle_cuda_check(&tools);

    util::phase("backends");
    let target = util::target_dir();
    let statuses = probe();
    let mut lines = Vec::new();
    for (name, status) in &statuses {
        let own = suites.for_backend(name);
        let tests = own_tests(&own);
        let mut line = match status {
            Ok(dev) => format!("{name}: ran ({dev}){tests}"),
            Err(reason) => format!("{name}: skipped — {reason}{tests}"),
        };
        let device_free = match name.as_str() {
            "cuda" if tools.nvcc.is_some() => Some(gpu_check::cuda(&target, tools.cuobjdump.as_deref())),
            "hip" if tools.clang.is_some() => Some(gpu_check::hip(&target, tools.llvm_objdump.as_deref())),
            _ => None,
        };
        if let Some(checked) = device_free {
            line.push_str(&format!("; checked without a device: {checked}"));
        }
        lines.push(line);
    }
    lines.push(candle_cuda.clone().unwrap_or_else(|e| e));
    lines.extend(left_out);
    println!();
    for l in &lines {
        println!("{l}");
    }
    if let Err(e) = &build {
        println!("BUILD FAILED: {e}");
    }
    println!(
        "{} not run (ignored: no device for them here), {} test binaries and doctest runs, {} in all",
        counts.ignored,
        counts.suites,
        util::elapsed(t0)
    );
    // Last, alone on its line: the plain closing line CI reads. Only tests that executed count.
    println!("{} passed, {} failed (tests that ran)", counts.passed, counts.failed);
    if build.is_err() || !tests_ok || counts.failed > 0 || candle_cuda.is_err() {
        return Err("test-all failed".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_libtest_summaries() {
        let mut c = Counts::default();
        c.add_line("test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.50s");
        c.add_line("test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out");
        c.add_line("running 5 tests");
        assert_eq!(c, Counts { passed: 15, failed: 2, ignored: 1, suites: 2 });
    }

    #[test]
    fn attributes_results_to_backends() {
        let mut s = Suites::default();
        for l in [
            "     Running tests/cuda.rs (target/release/deps/cuda-0123)",
            "test result: ok. 7 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out",
            "     Running unittests src/lib.rs (target/release/deps/normkit_hip-4567)",
            "test result: ok. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
            "   Doc-tests normkit_core",
            "test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        ] {
            s.add_line(l);
        }
        assert_eq!(s.total.passed, 15);
        assert_eq!(s.for_backend("cuda"), Counts { passed: 7, failed: 0, ignored: 2, suites: 1 });
        assert_eq!(s.for_backend("hip"), Counts { passed: 3, failed: 1, ignored: 0, suites: 1 });
        assert_eq!(s.for_backend("cpu").suites, 0);
    }

    #[test]
    fn tests_without_a_device_are_not_run_never_passed() {
        let skipped = Counts { passed: 0, failed: 0, ignored: 26, suites: 1 };
        assert_eq!(own_tests(&skipped), " [26 tests of its own: 26 not run: no device]");
        let ran = Counts { passed: 25, failed: 1, ignored: 0, suites: 1 };
        assert_eq!(own_tests(&ran), " [26 tests of its own: 25 passed, 1 failed]");
        assert_eq!(own_tests(&Counts::default()), "");
    }
}
