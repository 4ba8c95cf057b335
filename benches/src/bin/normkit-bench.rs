//! `normkit-bench`: measure normkit's ops, probe the backends, merge reports.
//!
//! ```text
//! normkit-bench [run] [--backend cpu,cuda,hip] [--ops rms_fwd,...|fp8|all] [--fp8] [--fp8-format e4m3]
//!                     [--dtypes bf16,f32] [--shapes MxN,...] [--quick|--full] [--reps N] [--label NAME]
//!                     [--out DIR] [--no-candle] [--candle-all-shapes]
//! normkit-bench probe
//! normkit-bench merge A.json [B.json ...] [--peers peers.json] --out DIR
//! normkit-bench ab --old A[,B...] --new C[,D...] [--threshold PCT] [--out FILE.md]
//! ```

use normkit_benches::backends::{self, Request};
use normkit_benches::grid::{self, Size};
use normkit_benches::ops::{self, Op};
use normkit_benches::progress::Progress;
use normkit_benches::report::{self, fmt_gbps, fmt_us};
use normkit_benches::schema::{self, ResultsFile, Run, SkippedBackend};
use normkit_benches::{candle_peer, peers, runner};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  normkit-bench [run] [OPTIONS]     measure and write results.json, report.md, report.html
  normkit-bench probe               one line per backend: available (device) or unavailable (reason)
  normkit-bench merge FILE.json... [--peers PEERS.json]... --out DIR
                                    merge results (normkit runs, single-run objects from other
                                    tools) and bench_peers.py output into one report
  normkit-bench ab --old PATH[,PATH...] --new PATH[,PATH...] [--threshold PCT] [--out FILE.md]
                                    A/B of two builds run in one call (old, new, new, old):
                                    per case the mean µs of each side's runs and new/old, the
                                    cells slower than PCT% (default 1), and flags where the
                                    sides' graphs had other call counts or set policies, or the
                                    difference is within the runs' spread. PATH: a results.json
                                    or the folder holding one; --old and --new repeat

run options:
  --backend LIST   cpu,cuda,hip (default: every backend available here)
  --ops LIST       rms_fwd,rms_bwd,addrms_fwd,addrms_bwd,ln_fwd,ln_bwd (default: these six), the
                   FP8 forwards rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row (only when
                   named), or the groups default, fp8, all
  --fp8            add the four FP8 forwards (alone, without --ops: only them), on their own grid:
                   bf16 x at 4096x1024, 32768x4096, 2048x8192, 2048x65536, 8x4096, 128x4096 on GPUs
                   (--full adds 16384x16384); y in FP8 at 1 byte/element, per-tensor scale from a
                   1-element device buffer, amax, scale_inv (rms_fwd_fp8_t adds yT, N x M;
                   rms_fwd_fp8_row scales per row). A backend without FP8 kernels skips them, saying so
  --fp8-format F   the FP8 format of y: e4m3 (default), e5m2, e4m3fnuz, e5m2fnuz
  --dtypes LIST    bf16,f16,f32: every shape in each (default: bf16, plus f32 at the first shape)
  --shapes LIST    MxN,... instead of the default grid
  --quick          ~20 s smoke run            --full   adds hidden sizes up to 1M
  --reps N         timed repetitions per case (median reported)
  --label NAME     name of the run in reports
  --out DIR        output folder (default: report)
  --no-candle      leave out candle, which the cpu backend's run otherwise times beside normkit:
                   its fused forward (rms_fwd, ln_fwd) and its unfused forward + backward
                   (rms_fwdbwd, ln_fwdbwd, against normkit's forward + backward), f32 and bf16
  --candle-all-shapes
                   time candle's unfused forward + backward on every shape of the grid (default:
                   the first shape and the latency-bound ones; it takes ~2 s a call in bf16)
  --not-built NAME=REASON
                   a backend this binary was built without, and why (cargo xtask bench passes
                   it): listed in the summary and the report's notes";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("probe") => probe(),
        Some("merge") => merge(&args[1..]),
        Some("ab") => ab(&args[1..]),
        Some("run") => run(&args[1..]),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(a) if !a.starts_with("--") => Err(format!("unknown command `{a}`\n{USAGE}")),
        _ => run(&args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("normkit-bench: error: {e}");
        ExitCode::from(2)
    })
}

fn probe() -> Result<ExitCode, String> {
    for (name, status) in backends::probe() {
        match status {
            Ok(device) => println!("{name}: available: {device}"),
            Err(reason) => println!("{name}: unavailable: {reason}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Options of `run`.
struct RunArgs {
    backends: Option<Vec<String>>,
    /// Backends left out of the build (`--not-built`), with the reason.
    not_built: Vec<SkippedBackend>,
    req: Request,
    out: PathBuf,
    /// Time candle beside the cpu backend (`--no-candle` turns it off).
    candle: bool,
    /// `--candle-all-shapes`.
    candle_all_shapes: bool,
}

/// The ops of a run: `--ops` (or every default op), with the FP8 ops added by `--fp8`.
fn ops_of(given: Option<Vec<Op>>, fp8: bool) -> Vec<Op> {
    match (given, fp8) {
        (None, false) => Op::DEFAULT.to_vec(),
        (None, true) => Op::FP8.to_vec(),
        (Some(ops), false) => ops,
        (Some(mut ops), true) => {
            ops.extend(Op::FP8.into_iter().filter(|op| !ops.contains(op)).collect::<Vec<_>>());
            ops
        }
    }
}

fn value<'a>(it: &mut impl Iterator<Item = &'a String>, flag: &str) -> Result<&'a String, String> {
    it.next().ok_or_else(|| format!("{flag} needs a value"))
}

fn parse_run(args: &[String]) -> Result<RunArgs, String> {
    let mut r = RunArgs {
        backends: None,
        not_built: Vec::new(),
        req: Request::new(&Op::DEFAULT),
        out: PathBuf::from("report"),
        candle: true,
        candle_all_shapes: false,
    };
    let (mut ops, mut fp8) = (None, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--backend" | "--backends" => {
                let list: Vec<String> = value(&mut it, a)?.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
                if let Some(bad) = list.iter().find(|b| !backends::is_known(b)) {
                    return Err(format!("unknown backend `{bad}` (known: {})", backends::NAMES.join(", ")));
                }
                r.backends = Some(list);
            }
            "--ops" => ops = Some(ops::parse_ops(value(&mut it, a)?)?),
            "--fp8" => fp8 = true,
            "--fp8-format" => r.req.fp8_format = ops::parse_fp8_format(value(&mut it, a)?)?,
            "--dtypes" => {
                r.req.dtypes =
                    Some(value(&mut it, a)?.split(',').filter(|s| !s.trim().is_empty()).map(ops::parse_dtype).collect::<Result<_, _>>()?)
            }
            "--shapes" => r.req.shapes = Some(grid::parse_shapes(value(&mut it, a)?)?),
            "--quick" => r.req.size = Size::Quick,
            "--full" => r.req.size = Size::Full,
            "--reps" => r.req.reps = Some(value(&mut it, a)?.parse().map_err(|_| "--reps needs a positive integer".to_string())?),
            "--label" => r.req.label = Some(value(&mut it, a)?.clone()),
            "--out" => r.out = PathBuf::from(value(&mut it, a)?),
            "--no-candle" => r.candle = false,
            "--candle-all-shapes" => r.candle_all_shapes = true,
            "--not-built" => {
                let v = value(&mut it, a)?;
                let (backend, reason) = v.split_once('=').ok_or_else(|| format!("--not-built needs NAME=REASON, got `{v}`"))?;
                r.not_built.push(SkippedBackend { backend: backend.to_string(), reason: reason.to_string() });
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    if r.req.dtypes.as_ref().is_some_and(Vec::is_empty) {
        return Err("--dtypes needs at least one of bf16, f16, f32".into());
    }
    r.req.ops = ops_of(ops, fp8);
    Ok(r)
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let a = parse_run(args)?;
    report::check_writable(&a.out)?;
    let mut failed = false;
    let mut skipped = a.not_built.clone();
    let built_without = |name: &str| a.not_built.iter().any(|b| b.backend == name);
    let names: Vec<String> = match &a.backends {
        Some(list) => list.iter().filter(|n| !built_without(n)).cloned().collect(),
        None => backends::probe()
            .into_iter()
            .filter_map(|(name, status)| match status {
                Ok(_) => Some(name.to_string()),
                Err(_) if built_without(name) => None,
                Err(reason) => {
                    eprintln!("{name}: skipped: {reason}");
                    skipped.push(SkippedBackend { backend: name.to_string(), reason });
                    None
                }
            })
            .collect(),
    };
    // candle has no FP8 ops: a run of them only has nothing for it to time
    let with_candle = a.candle && names.iter().any(|n| n == "cpu") && a.req.ops.iter().any(|op| !op.is_fp8());
    let candle_cases = if with_candle && candle_peer::BUILT { candle_peer::cases(&a.req, a.candle_all_shapes) } else { Vec::new() };
    let total: usize = names.iter().map(|n| a.req.cases(runner::device_kind(n)).len()).sum::<usize>() + candle_cases.len();
    let mut progress = Progress::new(total);
    let mut runs: Vec<Run> = Vec::new();
    for name in &names {
        let before = runs.clone();
        let out = a.out.clone();
        let mut save = |run: &Run| {
            let mut all = before.clone();
            all.push(run.clone());
            if let Err(e) = report::write_json(&out, &ResultsFile::new(all, Vec::new())) {
                eprintln!("normkit-bench: warning: {e}");
            }
        };
        match backends::run(name, &a.req, &mut progress, &mut save) {
            Ok(r) => {
                failed |= !r.errors.is_empty();
                progress.advance(r.results.len() + r.errors.len() + r.skipped.len());
                runs.push(r);
            }
            Err(e) => {
                eprintln!("normkit-bench: {e}");
                skipped.push(SkippedBackend { backend: name.clone(), reason: e });
                failed = true;
            }
        }
    }
    if runs.is_empty() {
        let why: Vec<String> = skipped.iter().map(|b| format!("{}: {}", b.backend, b.reason)).collect();
        return Err(format!("no backend ran ({})", why.join("; ")));
    }
    let mut candle_runs = Vec::new();
    if let (true, Some(cpu)) = (with_candle, runs.iter().find(|r| r.backend == "cpu")) {
        let mut save = |peers: &[Run]| {
            if let Err(e) = report::write_json(&a.out, &ResultsFile::new(runs.clone(), peers.to_vec())) {
                eprintln!("normkit-bench: warning: {e}");
            }
        };
        progress.note(&format!("candle {}: {} cases beside the cpu backend", candle_peer::version(), candle_cases.len()));
        match candle_peer::run(&candle_cases, &a.req.plan(runner::device_kind("cpu")), cpu, &mut progress, &mut save) {
            Ok(r) => {
                failed |= r.iter().any(|r| !r.errors.is_empty());
                candle_runs = r;
            }
            Err(e) => skipped.push(SkippedBackend { backend: "candle".into(), reason: e }),
        }
    }
    let mut file = ResultsFile::new(runs, candle_runs);
    file.skipped_backends = skipped;
    report::write(&a.out, &file)?;
    print_summary(&file);
    println!("wrote {0}/results.json, {0}/report.md, {0}/report.html", a.out.display());
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn print_summary(file: &ResultsFile) {
    // An FP8 op's dtype reads `bf16→e4m3` (x's dtype, y's format); the columns widen to fit.
    let dtype_of = |x: &schema::ResultRow| x.y_dtype.as_ref().map_or_else(|| x.dtype.clone(), |y| format!("{}→{y}", x.dtype));
    let rows = file.runs.iter().flat_map(|r| &r.results);
    let op_w = rows.clone().map(|x| x.op.len()).max().unwrap_or(0).max(11);
    let dt_w = rows.map(|x| dtype_of(x).chars().count()).max().unwrap_or(0).max(5);
    println!("{:<8} {:<op_w$} {:>13} {:<dt_w$} {:>8} {:>6} {:>10}", "backend", "op", "shape", "dtype", "GB/s", "%copy", "µs");
    for r in &file.runs {
        for x in &r.results {
            let pct = x.pct_copy.map_or_else(|| "–".into(), |p| format!("{p:.0}%"));
            // `{:<w$}` pads by chars, and `→` is one
            println!(
                "{:<8} {:<op_w$} {:>13} {:<dt_w$} {:>8} {:>6} {:>10}",
                r.backend,
                x.op,
                format!("{}x{}", x.m, x.n),
                dtype_of(x),
                fmt_gbps(x.gbps),
                pct,
                fmt_us(x.us)
            );
        }
        println!(
            "{:<8} copy ceiling {} GB/s on {}; {} errors, {} cases skipped",
            r.backend,
            fmt_gbps(r.copy_gbps),
            r.device,
            r.errors.len(),
            r.skipped.len()
        );
        for (op, reason, count) in skipped_by_op(r) {
            println!("{:<8} not run: {op} ({count} case{}): {reason}", r.backend, if count == 1 { "" } else { "s" });
        }
    }
    for p in &file.peers {
        println!("{:<8} {}: {} cases, {} errors", "peer", p.display_label(), p.results.len(), p.errors.len());
    }
    for c in &file.comparisons {
        println!(
            "{:<8} {:<11} {:>13} {:<5} normkit {} µs, {} {} µs: {:.2}×",
            "vs peer",
            c.op,
            format!("{}x{}", c.m, c.n),
            c.dtype,
            fmt_us(c.normkit_us),
            c.peer.split(" · ").next().unwrap_or(&c.peer),
            fmt_us(c.peer_us),
            c.speedup
        );
    }
    for b in &file.skipped_backends {
        println!("{:<8} not measured: {}", b.backend, b.reason);
    }
    // The last line: what was measured, and every backend that was not (details above and in the
    // report's notes).
    let measured: Vec<&str> = file.runs.iter().map(|r| r.backend.as_str()).collect();
    let not: Vec<&str> = file.skipped_backends.iter().map(|b| b.backend.as_str()).collect();
    println!("measured: {}; skipped backends: {}", measured.join(", "), if not.is_empty() { "none".to_string() } else { not.join(", ") });
}

/// The run's skipped cases, one line per (op, reason), in the order first seen, with a count.
fn skipped_by_op(r: &Run) -> Vec<(&str, &str, usize)> {
    let mut out: Vec<(&str, &str, usize)> = Vec::new();
    for s in &r.skipped {
        match out.iter_mut().find(|(op, reason, _)| *op == s.op && *reason == s.reason) {
            Some(e) => e.2 += 1,
            None => out.push((&s.op, &s.reason, 1)),
        }
    }
    out
}

fn merge(args: &[String]) -> Result<ExitCode, String> {
    let (mut inputs, mut peer_files, mut out) = (Vec::new(), Vec::new(), None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--peers" => peer_files.push(PathBuf::from(value(&mut it, a)?)),
            "--out" => out = Some(PathBuf::from(value(&mut it, a)?)),
            s if s.starts_with("--") => return Err(format!("unknown option `{s}`\n{USAGE}")),
            s => inputs.push(PathBuf::from(s)),
        }
    }
    let out = out.ok_or("merge needs --out DIR")?;
    if inputs.is_empty() && peer_files.is_empty() {
        return Err("merge needs at least one results file".into());
    }
    let (mut runs, mut peer_runs) = (Vec::new(), Vec::new());
    for path in &inputs {
        let f = schema::load(path)?;
        runs.extend(f.runs);
        peer_runs.extend(f.peers);
    }
    for path in &peer_files {
        peer_runs.extend(peers::load(path)?);
    }
    report::check_writable(&out)?;
    let file = ResultsFile::new(runs, peer_runs);
    report::write(&out, &file)?;
    let (n_runs, n_peers, n_files, dir) = (file.runs.len(), file.peers.len(), inputs.len() + peer_files.len(), out.display());
    println!(
        "merged {n_runs} runs and {n_peers} peer runs from {n_files} files; wrote {dir}/results.json, {dir}/report.md, {dir}/report.html"
    );
    Ok(ExitCode::SUCCESS)
}

/// A results file named directly or as the folder holding `results.json`.
fn load_results(path: &str) -> Result<ResultsFile, String> {
    let p = PathBuf::from(path);
    schema::load(&if p.is_dir() { p.join("results.json") } else { p })
}

fn ab(args: &[String]) -> Result<ExitCode, String> {
    let (mut old, mut new, mut out, mut threshold) = (Vec::new(), Vec::new(), None, 1.0);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--old" | "--new" => {
                let side = if a == "--old" { &mut old } else { &mut new };
                for p in value(&mut it, a)?.split(',').filter(|p| !p.is_empty()) {
                    side.push(load_results(p)?);
                }
            }
            "--threshold" => {
                threshold =
                    value(&mut it, a)?.parse().ok().filter(|t: &f64| t.is_finite() && *t >= 0.0).ok_or("--threshold needs a percentage")?
            }
            "--out" => out = Some(PathBuf::from(value(&mut it, a)?)),
            s => return Err(format!("unknown argument `{s}`\n{USAGE}")),
        }
    }
    if old.is_empty() || new.is_empty() {
        return Err("ab needs --old and --new results".into());
    }
    let cmp = normkit_benches::ab::compare(&old, &new);
    if cmp.rows.is_empty() {
        return Err("the two sides have no case in common".into());
    }
    let md = normkit_benches::ab::markdown(&cmp, threshold);
    match out {
        Some(path) => {
            std::fs::write(&path, &md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("{} cells compared; wrote {}", cmp.rows.len(), path.display());
        }
        None => print!("{md}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn bad_command_lines_are_explained() {
        let err = |s: &str| parse_run(&args(s)).err().unwrap_or_default();
        assert!(err("--backend cpu,rocm").contains("unknown backend `rocm` (known: cpu, cuda, hip)"));
        assert!(err("--ops rms_fwd,softmax").contains("unknown op `softmax`"));
        assert!(err("--dtypes bf16,f8").contains("unknown dtype `f8`"));
        assert!(err("--shapes 4096x").contains("bad shape `4096x`"));
        assert!(err("--out").contains("--out needs a value"));
        assert!(err("--fast").contains("unknown option `--fast`"));
        assert!(err("--not-built cuda").contains("--not-built needs NAME=REASON"));
        let nb = parse_run(&args("--not-built cuda=no_driver")).unwrap();
        assert_eq!(nb.not_built, vec![SkippedBackend { backend: "cuda".into(), reason: "no_driver".into() }]);
        let ok = parse_run(&args("--backend cpu --ops ln_bwd --shapes 8x4096 --dtypes f32 --quick --out x")).unwrap();
        assert!(ok.candle && !ok.candle_all_shapes, "candle is on by default");
        let no = parse_run(&args("--no-candle --candle-all-shapes")).unwrap();
        assert!(!no.candle && no.candle_all_shapes);
        assert_eq!(ok.req.cases(normkit_benches::grid::DeviceKind::Cpu).len(), 1);
        assert!(err("--fp8-format bf16").contains("unknown FP8 format `bf16`"));
    }

    #[test]
    fn fp8_ops_run_only_when_asked_for() {
        let ops = |s: &str| parse_run(&args(s)).unwrap().req.ops;
        assert_eq!(ops(""), Op::DEFAULT.to_vec());
        assert_eq!(ops("--fp8"), Op::FP8.to_vec());
        assert_eq!(ops("--ops fp8"), Op::FP8.to_vec());
        assert_eq!(ops("--ops rms_fwd --fp8"), [&[Op::RmsFwd][..], &Op::FP8].concat());
        assert_eq!(ops("--ops rms_fwd_fp8_t,rms_fwd_fp8_row"), vec![Op::RmsFwdFp8T, Op::RmsFwdFp8Row]);
        let r = parse_run(&args("--fp8 --fp8-format e5m2")).unwrap();
        assert_eq!(r.req.fp8_format, normkit_core::DType::F8E5M2);
        assert!(r.req.cases(normkit_benches::grid::DeviceKind::Gpu).iter().all(|c| c.y_dtype() == normkit_core::DType::F8E5M2));
    }

    #[test]
    fn unwritable_output_fails_before_measuring() {
        let file = std::env::temp_dir().join(format!("normkit-bench-not-a-dir-{}", std::process::id()));
        std::fs::write(&file, b"").unwrap();
        let e = run(&args(&format!("--backend cpu --quick --out {}/sub", file.display()))).unwrap_err();
        assert!(e.contains("cannot create output folder"), "{e}");
        let _ = std::fs::remove_file(file);
    }
}
