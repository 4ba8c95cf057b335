//! A small test harness for the device test files (`tests/tests/cuda.rs`, `tests/tests/hip.rs`,
//! built with `harness = false`): the same command line and the same output as libtest, with one
//! difference that matters — when the machine has no device, every test is reported as
//! **ignored** (`test x ... ignored, not run: no device (…)`) instead of returning early and
//! counting as passed. The closing `test result:` line then says `0 passed; …; N ignored`, which is
//! what `cargo xtask test-all` reads.
//!
//! Understood: a name filter (substring, or whole name with `--exact`), `--skip FILTER`, `--list`
//! (`name: test` lines, as libtest and cargo-nextest expect), `--test-threads N` (or `=N`, or
//! `RUST_TEST_THREADS`), `--ignored` (run nothing: no device test is ignored when a device is
//! present), and libtest's output flags, which are accepted and have no effect (`--nocapture`,
//! `--show-output`, `-q`, `--color X`, `--format X`): output is never captured here.

use normkit_core::NormError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One test: its name (as libtest would print it, `module::name`) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    /// Full name, e.g. `cluster::cluster_matches_cpu`.
    pub name: &'static str,
    /// The body; a panic is a failure.
    pub run: fn(),
}

impl Trial {
    /// A trial from a name as `stringify!` writes a path (`cluster :: x` becomes `cluster::x`).
    pub fn new(name: &'static str, run: fn()) -> Trial {
        Trial { name: leak_without_spaces(name), run }
    }
}

fn leak_without_spaces(name: &'static str) -> &'static str {
    if name.contains(' ') {
        Box::leak(name.replace(' ', "").into_boxed_str())
    } else {
        name
    }
}

thread_local! {
    /// Set by a trial whose every case the backend declined ([`mark_not_run`]).
    static NOT_RUN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Called by a trial that ran nothing because the backend declined every case through
/// `supports` (e.g. FP8 outputs on a GPU backend without FP8 kernels): the harness then reports the
/// trial as ignored with `reason`, never as passed. Outside the harness (libtest) it has no effect.
pub fn mark_not_run(reason: String) {
    NOT_RUN.with(|c| *c.borrow_mut() = Some(reason));
}

/// `Trial`s from function paths: `trials![a, module::b]`.
#[macro_export]
macro_rules! trials {
    ($($path:path),* $(,)?) => {
        vec![$($crate::harness::Trial::new(stringify!($path), $path)),*]
    };
}

/// What the command line asked for.
#[derive(Debug, Default, PartialEq)]
struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
    ignored_only: bool,
    threads: Option<usize>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| format!("{name} needs a value"));
        match flag {
            "--exact" => a.exact = true,
            "--list" => a.list = true,
            "--ignored" => a.ignored_only = true,
            "--include-ignored" | "--nocapture" | "--no-capture" | "--show-output" | "-q" | "--quiet" => {}
            "--color" | "--format" | "-Z" | "--logfile" | "--report-time" => {
                if flag != "--report-time" {
                    value(flag)?;
                }
            }
            "--skip" => a.skip.push(value("--skip")?),
            "--test-threads" => {
                let v = value("--test-threads")?;
                a.threads = Some(
                    v.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| format!("--test-threads: `{v}` is not a positive number"))?,
                );
            }
            "--bench" | "--test" => {}
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s => a.filters.push(s.to_string()),
        }
    }
    Ok(a)
}

impl Args {
    fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| if self.exact { name == f } else { name.contains(f.as_str()) };
        (self.filters.is_empty() || self.filters.iter().any(hit)) && !self.skip.iter().any(|s| name.contains(s.as_str()))
    }
}

/// Whether a device backend can run here, for [`run`]: `Err(reason)` when its constructor reports
/// [`NormError::BackendUnavailable`] (no driver, no device), so every test is reported as not
/// run; any other outcome, a start-up failure included, lets the tests run (and fail with it).
pub fn device_present<K>(ctor: impl FnOnce() -> Result<K, NormError>) -> Result<(), String> {
    match ctor() {
        Err(NormError::BackendUnavailable { reason, .. }) => Err(reason),
        _ => Ok(()),
    }
}

/// Runs `trials` as a test binary's `main` does. `device` is `Err(reason)` when the backend has no
/// device here: every selected test is then reported ignored with that reason, none runs.
pub fn run(backend: &str, device: Result<(), String>, trials: Vec<Trial>) -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(101);
        }
    };
    let total = trials.len();
    let selected: Vec<Trial> = trials.into_iter().filter(|t| args.selects(t.name)).collect();
    let filtered_out = total - selected.len();
    if args.list {
        for t in &selected {
            println!("{}: test", t.name);
        }
        return ExitCode::SUCCESS;
    }
    let t0 = Instant::now();
    println!("\nrunning {} tests", selected.len());
    let (passed, failed, ignored) = match (&device, args.ignored_only) {
        (_, true) => (Vec::new(), Vec::new(), selected.len()),
        (Err(reason), false) => {
            for t in &selected {
                println!("test {} ... ignored, not run: no device ({backend}: {reason})", t.name);
            }
            if !selected.is_empty() {
                println!("{} not run: no device ({backend}: {reason})", selected.len());
            }
            (Vec::new(), Vec::new(), selected.len())
        }
        (Ok(()), false) => {
            let threads = args
                .threads
                .or_else(|| std::env::var("RUST_TEST_THREADS").ok().and_then(|v| v.parse().ok()))
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .clamp(1, selected.len().max(1));
            let (p, f, declined) = run_parallel(&selected, threads);
            (p, f, declined)
        }
    };
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {} failed; {ignored} ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
        passed.len(),
        failed.len(),
        t0.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}

/// Runs the trials on `threads` threads, each taking the next trial in order; a panic fails the
/// trial (its message is printed by the panic hook as it happens); a trial that called
/// [`mark_not_run`] is neither passed nor failed. Returns (passed, failed) names and the number
/// not run.
fn run_parallel(trials: &[Trial], threads: usize) -> (Vec<&'static str>, Vec<&'static str>, usize) {
    let next = AtomicUsize::new(0);
    let declined = AtomicUsize::new(0);
    let results = Mutex::new((Vec::new(), Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = trials.get(i) else { break };
                NOT_RUN.with(|c| c.borrow_mut().take());
                let ok = catch_unwind(AssertUnwindSafe(t.run)).is_ok();
                if let (true, Some(reason)) = (ok, NOT_RUN.with(|c| c.borrow_mut().take())) {
                    println!("test {} ... ignored, not run: {reason}", t.name);
                    declined.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                println!("test {} ... {}", t.name, if ok { "ok" } else { "FAILED" });
                let mut r = results.lock().unwrap_or_else(|p| p.into_inner());
                if ok {
                    r.0.push(t.name)
                } else {
                    r.1.push(t.name)
                }
            });
        }
    });
    let (p, f) = results.into_inner().unwrap_or_else(|p| p.into_inner());
    (p, f, declined.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args, String> {
        parse(&s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn reads_libtest_command_lines() {
        let a = args("kernel_tour --test-threads=1 --nocapture").unwrap();
        assert_eq!(a.filters, ["kernel_tour"]);
        assert_eq!(a.threads, Some(1));
        let a = args("--exact cluster::cluster_matches_cpu --test-threads 4 --color never").unwrap();
        assert!(a.exact && a.selects("cluster::cluster_matches_cpu") && !a.selects("cluster::cluster_matches_cpu_2"));
        let a = args("--list --format terse").unwrap();
        assert!(a.list && a.selects("anything"));
        let a = args("fwd --skip fwd_shapes").unwrap();
        assert!(a.selects("fwd_rms") && !a.selects("fwd_shapes") && !a.selects("bwd_rms"));
        assert!(args("--test-threads 0").unwrap_err().contains("not a positive number"));
        assert!(args("--frobnicate").unwrap_err().contains("unknown option `--frobnicate`"));
    }

    #[test]
    fn paths_lose_stringify_spaces() {
        fn body() {}
        assert_eq!(Trial::new("cluster :: cluster_matches_cpu", body).name, "cluster::cluster_matches_cpu");
        assert_eq!(Trial::new("kernel_tour", body).name, "kernel_tour");
    }

    #[test]
    fn failures_are_counted_not_hidden() {
        fn good() {}
        fn bad() {
            panic!("expected failure inside the harness test");
        }
        fn declined() {
            mark_not_run("declined by supports()".into());
        }
        let trials = [Trial::new("good", good), Trial::new("bad", bad), Trial::new("good2", good), Trial::new("declined", declined)];
        let (p, f, n) = run_parallel(&trials, 2);
        assert_eq!((p.len(), f, n), (2, vec!["bad"], 1), "a declined trial is not run, never passed");
    }
}
