//! `cargo xtask gpu-bundle`: everything a GPU host (no Rust there) needs to verify and benchmark
//! the CUDA backend, in one folder:
//!
//! - `bin/cuda-tests`: the conformance suite and CUDA-specific tests (`tests/tests/cuda.rs`);
//! - `bin/normkit-bench`: the benchmark runner, built with the `cuda` feature;
//! - `peers/bench_peers.py` (from `../shared/peers` or `shared/peers`, when present) and any
//!   wheels already in `OUT/wheels` (kept across runs: e.g. liger-kernel, fetched with `pip download`);
//! - `peers/fp8_peers.py` (from `benches/peers`): PyTorch peers of the FP8 ops, same byte model;
//! - `run.sh`: tests, the soak and fault tests (`soak`: 100,000 calls with device memory
//!   measured, injected and real out-of-memory; alone, one test at a time), compute-sanitizer
//!   (memcheck, racecheck, initcheck) on the kernel tour, the benchmark and the peers, writing
//!   under `$OUT` (or `./out`); and, only when named, `fp8bench` and `fp8peers`: the FP8 ops
//!   with normkit and with PyTorch, merged into one report when both ran.
//!
//! Standard library only. Release builds in `$CARGO_TARGET_DIR` (default `target/`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `args` with `--message-format=json` and returns the executables cargo reports,
/// as (target name, path).
fn cargo_executables(root: &Path, args: &[&str]) -> Result<Vec<(String, PathBuf)>, String> {
    cargo_executables_with(root, args, &|_| {})
}

/// [`cargo_executables`] with `env` applied to the cargo command first.
pub(crate) fn cargo_executables_with(root: &Path, args: &[&str], env: &dyn Fn(&mut Command)) -> Result<Vec<(String, PathBuf)>, String> {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root).args(args).arg("--message-format=json-render-diagnostics");
    env(&mut c);
    let out = c.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo {} failed:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (Some(exe), Some(name)) = (json_str(line, "\"executable\":"), json_target_name(line)) else { continue };
        v.push((name, PathBuf::from(exe)));
    }
    Ok(v)
}

/// The string value after `key` on a JSON line (no escapes expected in paths and names).
fn json_str(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.trim_start().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

fn json_target_name(line: &str) -> Option<String> {
    let t = &line[line.find("\"target\":")?..];
    json_str(t, "\"name\":")
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to).map(|_| ()).map_err(|e| format!("copy {} -> {}: {e}", from.display(), to.display()))
}

/// Copies an executable without its Rust debug information (line tables: half the size; the
/// kernels and symbols stay), when binutils' `strip` is there; a plain copy otherwise.
fn copy_stripped(from: &Path, to: &Path) -> Result<(), String> {
    let stripped = std::process::Command::new("strip").arg("--strip-debug").arg("-o").arg(to).arg(from).status().is_ok_and(|s| s.success());
    if stripped {
        Ok(())
    } else {
        copy(from, to)
    }
}

const RUN_SH: &str = r#"#!/usr/bin/env bash
# normkit GPU bundle: tests, soak, sanitizers, benchmark, peers. Results under $OUT (default ./out).
# Usage: run.sh [tests] [soak] [sanitize] [bench] [peers] [candle] [fp8bench] [fp8peers] [ab]
#        (default: tests soak sanitize bench peers candle; fp8bench, fp8peers and ab run only when named)
#   ab:    bundles made with --baseline REV: the default grid (BENCH_ARGS apply) with REV's build
#          and this one in the order REV, this, this, REV, then `normkit-bench ab`  -> ab/summary.md
#   tests: every test of bin/cuda-tests except the soak:: ones, in parallel        -> tests.log
#   soak:  the soak:: tests alone, --test-threads=1 (they take most of the device's
#          memory, one of them all of it for a moment): 100,000 calls with device
#          memory measured before and after, injected and real out-of-memory      -> soak.log
#   candle: normkit-candle with candle's CUDA build (bundles made with --candle): its tests,
#          the `train` example and the candle bench                  -> candle-*.log
#   fp8bench: normkit-bench --fp8 on the cuda backend: the FP8 forwards (rms_fwd_fp8,
#          rms_fwd_fp8_t, addrms_fwd_fp8, rms_fwd_fp8_row) on the FP8 grid, e4m3 y; a case
#          the backend does not support is listed as not run   -> fp8bench/results.json, fp8bench.log
#          (FP8_BENCH_ARGS: more options, e.g. --full or --fp8-format e5m2)
#   fp8peers: peers/fp8_peers.py: torch.compile and eager of the same ops, CUDA-graph replay,
#          copy ceiling in the same run        -> fp8peers/fp8_peers.json, fp8peers.log
#          (FP8_PEERS_ARGS: more options); with fp8bench: one report of both -> fp8report/
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
STEPS="${*:-tests soak sanitize bench peers candle}"
status=0
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/device.txt"
if has tests; then
  echo "== conformance + CUDA tests"
  "$HERE/bin/cuda-tests" --skip soak:: 2>&1 | tee "$OUT/tests.log" | grep -E "^test |test result|FAIL|panicked" || true
  grep -q "test result: ok" "$OUT/tests.log" || status=1
fi
if has soak; then
  echo "== soak and faults (alone, one test at a time)"
  "$HERE/bin/cuda-tests" soak:: --test-threads=1 2>&1 | tee "$OUT/soak.log" | grep -E "^test |^soak: |test result|FAIL|panicked" || true
  grep -q "test result: ok. 3 passed" "$OUT/soak.log" || { status=1; grep -A3 "panicked" "$OUT/soak.log"; }
fi
if has sanitize; then
  for tool in memcheck racecheck initcheck; do
    echo "== compute-sanitizer --tool $tool (kernel tour)"
    compute-sanitizer --tool $tool --error-exitcode 9 "$HERE/bin/cuda-tests" kernel_tour --test-threads=1 > "$OUT/sanitize-$tool.log" 2>&1
    rc=$?; tail -n 3 "$OUT/sanitize-$tool.log"; echo "exit $rc"; [ $rc -eq 0 ] || status=1
  done
fi
if has bench; then
  echo "== normkit-bench"
  "$HERE/bin/normkit-bench" run --backend cuda ${BENCH_ARGS:-} --out "$OUT/bench" 2>&1 | tail -n 60
fi
if has ab; then
  if [ -x "$HERE/bin/normkit-bench-base" ]; then
    echo "== A/B against $(cat "$HERE/bin/normkit-bench-base.txt" 2>/dev/null | cut -d' ' -f1) (base, new, new, base)"
    mkdir -p "$OUT/ab"
    for t in base1:normkit-bench-base new1:normkit-bench new2:normkit-bench base2:normkit-bench-base; do
      "$HERE/bin/${t#*:}" run --backend cuda ${BENCH_ARGS:-} --out "$OUT/ab/${t%%:*}" > "$OUT/ab/${t%%:*}.log" 2>&1 || { status=1; tail -n 3 "$OUT/ab/${t%%:*}.log"; }
    done
    "$HERE/bin/normkit-bench" ab --old "$OUT/ab/base1,$OUT/ab/base2" --new "$OUT/ab/new1,$OUT/ab/new2" --out "$OUT/ab/summary.md" && tail -n 4 "$OUT/ab/summary.md" || status=1
  else
    echo "== ab: no bin/normkit-bench-base (make the bundle with --baseline REV)"; status=1
  fi
fi
if has candle && [ -x "$HERE/bin/candle-tests" ]; then
  # candle's CUDA build links cuBLAS, cuRAND, NVRTC and the CUDA runtime: the GPU host has them in
  # PyTorch's environment (CUDA 13 wheels); the bundle was linked against stubs of the same names.
  libdir="$(dirname "$(find / -name 'libcublas.so.13' -path '*site-packages*' 2>/dev/null | head -n 1)")"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== normkit-candle on CUDA (libraries from $libdir)"
  "$HERE/bin/candle-tests" 2>&1 | tee "$OUT/candle-tests.log" | grep -E "^test |test result|FAIL|panicked|error" || true
  grep -q "test result: ok" "$OUT/candle-tests.log" || status=1
  "$HERE/bin/candle-train" ${CANDLE_STEPS:-300} 2>&1 | tee "$OUT/candle-train.log" | tail -n 8
  NORMKIT_CANDLE_BENCH_DEVICE=cuda "$HERE/bin/candle-bench" --bench ${CANDLE_BENCH_ARGS:-} 2>&1 | tee "$OUT/candle-bench.log" | grep -v "^$" | tail -n 60
fi
if has fp8bench; then
  echo "== normkit-bench, FP8 ops"
  "$HERE/bin/normkit-bench" run --backend cuda --fp8 ${FP8_BENCH_ARGS:-} --out "$OUT/fp8bench" 2>&1 | tee "$OUT/fp8bench.log" | tail -n 40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if has fp8peers && [ -f "$HERE/peers/fp8_peers.py" ]; then
  echo "== FP8 peers (PyTorch)"
  PYTHONUNBUFFERED=1 python3 "$HERE/peers/fp8_peers.py" ${FP8_PEERS_ARGS:-} --out "$OUT/fp8peers" 2>&1 | tee "$OUT/fp8peers.log" | tail -n 40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ -f "$OUT/fp8bench/results.json" ] && [ -f "$OUT/fp8peers/fp8_peers.json" ] && { has fp8bench || has fp8peers; }; then
  echo "== FP8 report: normkit and the FP8 peers"
  "$HERE/bin/normkit-bench" merge "$OUT/fp8bench/results.json" --peers "$OUT/fp8peers/fp8_peers.json" --out "$OUT/fp8report" 2>&1 | tail -n 3
  grep -A 30 '^## Speedup' "$OUT/fp8report/report.md" | head -n 60
fi
if has peers && [ -f "$HERE/peers/bench_peers.py" ]; then
  echo "== peers"
  if ls "$HERE"/wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
  fi
  PYTHONUNBUFFERED=1 python3 "$HERE/peers/bench_peers.py" ${PEERS_ARGS:-} --out "$OUT/peers" 2>&1 | tail -n 40
fi
exit $status
"#;

pub fn run(root: &Path, out: &Path) -> Result<(), String> {
    let bin = out.join("bin");
    fs::create_dir_all(&bin).map_err(|e| format!("create {}: {e}", bin.display()))?;

    let tests =
        cargo_executables(root, &["test", "--release", "-p", "normkit-conformance", "--features", "cuda", "--test", "cuda", "--no-run"])?;
    let (_, t) = tests.iter().find(|(n, _)| n == "cuda").ok_or("cargo reported no `cuda` test executable")?;
    copy_stripped(t, &bin.join("cuda-tests"))?;

    let benches =
        cargo_executables(root, &["build", "--release", "-p", "normkit-benches", "--features", "cuda", "--bin", "normkit-bench"])?;
    let (_, b) = benches.iter().find(|(n, _)| n == "normkit-bench").ok_or("cargo reported no normkit-bench executable")?;
    copy_stripped(b, &bin.join("normkit-bench"))?;

    for cand in [root.join("../shared/peers/bench_peers.py"), root.join("shared/peers/bench_peers.py")] {
        if cand.is_file() {
            let d = out.join("peers");
            fs::create_dir_all(&d).map_err(|e| format!("create {}: {e}", d.display()))?;
            copy(&cand, &d.join("bench_peers.py"))?;
            break;
        }
    }
    let fp8_peers = root.join("benches/peers/fp8_peers.py");
    if fp8_peers.is_file() {
        let d = out.join("peers");
        fs::create_dir_all(&d).map_err(|e| format!("create {}: {e}", d.display()))?;
        copy(&fp8_peers, &d.join("fp8_peers.py"))?;
    }
    fs::create_dir_all(out.join("wheels")).map_err(|e| format!("create wheels/: {e}"))?;

    let run_sh = out.join("run.sh");
    fs::write(&run_sh, RUN_SH).map_err(|e| format!("write {}: {e}", run_sh.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&run_sh, fs::Permissions::from_mode(0o755)).map_err(|e| format!("chmod run.sh: {e}"))?;
    }

    println!(
        "gpu bundle in {}: bin/cuda-tests, bin/normkit-bench, run.sh (steps: tests soak sanitize bench peers candle; \
         fp8bench fp8peers when named)",
        out.display()
    );
    Ok(())
}

/// Adds `bin/normkit-bench-base`: the bench binary of another commit with this tree's runner
/// (see [`crate::baseline::bench_binary`]), and a note of which commit it is.
pub fn baseline(out: &Path, rev: &str) -> Result<(), String> {
    let (exe, hash) = crate::baseline::bench_binary(rev)?;
    let bin = out.join("bin");
    copy_stripped(&exe, &bin.join("normkit-bench-base"))?;
    fs::write(bin.join("normkit-bench-base.txt"), format!("{hash} (kernels and planner), with the runner of the bundle's tree\n"))
        .map_err(|e| format!("write the baseline note: {e}"))?;
    println!("baseline: bin/normkit-bench-base is {hash}'s kernels and planner with this tree's runner");
    Ok(())
}

/// Says how large the bundle is, and what to do when it is over what a device call carries
/// (64 MiB in all): the binaries compress about 3 to 6 times with `xz`.
pub fn report_size(out: &Path) {
    let size = dir_size(out);
    println!("gpu bundle: {:.1} MiB", size as f64 / (1 << 20) as f64);
    if size > 60 << 20 {
        println!("  over the 60 MiB a device call can carry: compress the binaries (xz -T2 -6 bin/*) and decompress them there");
    }
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = fs::read_dir(p) else { return 0 };
    rd.filter_map(|e| e.ok())
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                dir_size(&path)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

/// The libraries candle's CUDA build links (cudarc's `dynamic-linking`, candle-kernels' runtime):
/// link name, the SONAME it has in CUDA 13 (what the GPU host's PyTorch wheels and driver
/// provide), and the prefix of the symbols it exports.
const CANDLE_CUDA_LIBS: [(&str, &str, &str); 5] = [
    ("cuda", "libcuda.so.1", "cu"),
    ("nvrtc", "libnvrtc.so.13", "nvrtc"),
    ("curand", "libcurand.so.10", "curand"),
    ("cublasLt", "libcublasLt.so.13", "cublasLt"),
    ("cublas", "libcublas.so.13", "cublas"),
];

/// `--candle`: normkit-candle's tests, `train` example and bench built with candle's CUDA
/// feature, into `bin/candle-tests`, `bin/candle-train`, `bin/candle-bench`.
///
/// This machine has nvcc but neither the CUDA driver nor cuBLAS, cuRAND or NVRTC, which candle's
/// CUDA build links at build time. The binaries are linked against stubs: shared libraries with
/// the real SONAMEs that define every symbol cudarc references (listed by `nm` from the cudarc
/// rlib of this very build) as an empty function, plus nvcc's own `libcudart`. At run time the
/// GPU host's real libraries (the driver, PyTorch's CUDA 13 wheels) are loaded in their place:
/// the stubs' code never runs. The binaries can only run there.
pub fn candle(root: &Path, out: &Path) -> Result<(), String> {
    let target = crate::util::target_dir();
    let stubs = target.join("cuda-stubs");
    let lib = stubs.join("lib");
    fs::create_dir_all(&lib).map_err(|e| format!("create {}: {e}", lib.display()))?;
    let env = |c: &mut Command| {
        crate::util::with_tools_env(c);
        c.env("CUDA_COMPUTE_CAP", "90").env("CUDA_HOME", &stubs);
    };
    // 1. The crate's rlibs (cudarc with candle's features): no link yet.
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root).args(["build", "--release", "-p", "normkit-candle", "--features", "cuda", "--lib"]);
    env(&mut c);
    crate::util::run(&mut c)?;
    // 2. Every symbol the cudarc rlibs leave undefined, sorted into the stub libraries.
    let deps = target.join("release/deps");
    let mut symbols: Vec<String> = Vec::new();
    for e in fs::read_dir(&deps).map_err(|e| format!("read {}: {e}", deps.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("libcudarc-") && name.ends_with(".rlib") {
            let text =
                crate::util::output(Command::new("nm").args(["--undefined-only", "--format=posix"]).arg(e.path())).unwrap_or_default();
            symbols.extend(text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string));
        }
    }
    symbols.sort();
    symbols.dedup();
    for (link, soname, prefix) in CANDLE_CUDA_LIBS {
        let mine: Vec<&String> = symbols
            .iter()
            .filter(|s| s.starts_with(prefix) && s[prefix.len()..].starts_with(|c: char| c.is_ascii_uppercase() || c == '_'))
            .filter(|s| prefix != "cublas" || !s.starts_with("cublasLt"))
            .collect();
        let src = stubs.join(format!("{link}.c"));
        let body: String = mine.iter().map(|s| format!("void {s}(void) {{}}\n")).collect();
        fs::write(&src, format!("/* generated by cargo xtask gpu-bundle --candle: link-time stand-ins */\n{body}"))
            .map_err(|e| format!("write {}: {e}", src.display()))?;
        crate::util::run(
            Command::new("cc")
                .args(["-shared", "-fPIC", "-o"])
                .arg(lib.join(format!("lib{link}.so")))
                .arg(format!("-Wl,-soname,{soname}"))
                .arg(&src),
        )?;
        println!("stub {soname}: {} symbols", mine.len());
    }
    let cudart = crate::toolchains::nvcc_path().parent().and_then(Path::parent).map(|p| p.join("lib/libcudart.so.13")).unwrap_or_default();
    let link = lib.join("libcudart.so");
    let _ = fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&cudart, &link).map_err(|e| format!("link {}: {e}", link.display()))?;
    // 3. The binaries, linked against the stubs.
    let bin = out.join("bin");
    let build = |args: &[&str]| cargo_executables_with(root, args, &env);
    let tests = build(&["test", "--release", "-p", "normkit-candle", "--features", "cuda", "--tests", "--no-run"])?;
    let (_, t) = tests.iter().find(|(n, _)| n == "cuda").ok_or("cargo reported no normkit-candle `cuda` test executable")?;
    copy_stripped(t, &bin.join("candle-tests"))?;
    let ex = build(&["build", "--release", "-p", "normkit-candle", "--features", "cuda", "--example", "train"])?;
    let (_, e) = ex.iter().find(|(n, _)| n == "train").ok_or("cargo reported no `train` example")?;
    copy_stripped(e, &bin.join("candle-train"))?;
    let be = build(&["bench", "--no-run", "-p", "normkit-candle", "--features", "cuda", "--bench", "candle"])?;
    let (_, b) = be.iter().find(|(n, _)| n == "candle").ok_or("cargo reported no `candle` bench executable")?;
    copy_stripped(b, &bin.join("candle-bench"))?;
    println!("gpu bundle: bin/candle-tests, bin/candle-train, bin/candle-bench (run.sh candle)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RUN_SH;

    /// The default steps are unchanged; the FP8 steps run only when named and write under $OUT.
    #[test]
    fn run_sh_has_the_ab_step_on_request() {
        assert!(RUN_SH.contains("if has ab; then"));
        assert!(RUN_SH.contains(r#"for t in base1:normkit-bench-base new1:normkit-bench new2:normkit-bench base2:normkit-bench-base; do"#));
        assert!(RUN_SH.contains(r#"ab --old "$OUT/ab/base1,$OUT/ab/base2" --new "$OUT/ab/new1,$OUT/ab/new2" --out "$OUT/ab/summary.md""#));
    }

    #[test]
    fn run_sh_has_the_fp8_steps_on_request() {
        assert!(RUN_SH.contains(r#"STEPS="${*:-tests soak sanitize bench peers candle}""#));
        for step in ["fp8bench", "fp8peers"] {
            assert!(RUN_SH.contains(&format!("if has {step}")), "{step}");
        }
        assert!(RUN_SH.contains(r#"run --backend cuda --fp8 ${FP8_BENCH_ARGS:-} --out "$OUT/fp8bench""#));
        assert!(RUN_SH.contains(r#"python3 "$HERE/peers/fp8_peers.py" ${FP8_PEERS_ARGS:-} --out "$OUT/fp8peers""#));
        assert!(RUN_SH.contains(r#"--peers "$OUT/fp8peers/fp8_peers.json" --out "$OUT/fp8report""#));
    }
}
