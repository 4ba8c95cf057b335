//! `cargo xtask test-all`: toolchains, a release build of everything, the whole test suite
//! (unit, integration, conformance, doctests), then one line per backend saying what ran where
//! and what was checked without a device, and the test counts.

use crate::{gpu_check, toolchains, util};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
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

/// The cargo flags that select what to build: everything when both GPU toolchains are present,
/// otherwise the GPU crates whose toolchain is missing are left out (and said so).
fn selection(tools: &toolchains::Tools) -> (Vec<String>, Vec<String>) {
    let mut args = vec!["--workspace".to_string(), "--release".to_string()];
    let mut left_out = Vec::new();
    let gpus = [("cuda", "normkit-cuda", tools.nvcc.is_some(), "nvcc 13.0"), ("hip", "normkit-hip", tools.clang.is_some(), "clang++-22")];
    if gpus.iter().all(|g| g.2) {
        args.push("--all-features".into());
        return (args, left_out);
    }
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

/// Runs `cargo test` with the selection, echoing its output and counting results.
fn run_tests(sel: &[String]) -> Result<(Counts, bool), String> {
    let mut c = util::cargo();
    c.arg("test").args(sel).arg("--no-fail-fast").stdout(Stdio::piped());
    eprintln!("$ {}", util::show(&c));
    let mut child = c.spawn().map_err(|e| format!("cannot run cargo test: {e}"))?;
    let mut counts = Counts::default();
    let stdout = child.stdout.take().ok_or("no stdout from cargo test")?;
    let mut out = std::io::stdout();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading cargo test output: {e}"))?;
        counts.add_line(&line);
        let _ = writeln!(out, "{line}");
    }
    let status = child.wait().map_err(|e| format!("cargo test: {e}"))?;
    Ok((counts, status.success()))
}

/// `normkit-bench probe` from the release build: `(backend, Ok(device) | Err(reason))`.
fn probe() -> Vec<(String, Result<String, String>)> {
    let bin = util::target_dir().join("release/normkit-bench");
    let text = util::output(&mut Command::new(&bin).arg("probe")).unwrap_or_default();
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
    let (counts, tests_ok) = if build.is_ok() { run_tests(&sel)? } else { (Counts::default(), false) };
    eprintln!("tests: {}", util::elapsed(t));

    util::phase("backends");
    let target = util::target_dir();
    let statuses = probe();
    let mut lines = Vec::new();
    for (name, status) in &statuses {
        let mut line = match status {
            Ok(dev) => format!("{name}: ran ({dev})"),
            Err(reason) => format!("{name}: skipped — {reason}"),
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
    lines.extend(left_out);
    println!();
    for l in &lines {
        println!("{l}");
    }
    if let Err(e) = &build {
        println!("BUILD FAILED: {e}");
    }
    println!("{} passed, {} failed, {} ignored ({} test binaries and doctest runs) in {}", counts.passed, counts.failed, counts.ignored, counts.suites, util::elapsed(t0));
    if build.is_err() || !tests_ok || counts.failed > 0 {
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
}
