//! `cargo xtask bench` and `cargo xtask report merge`.
//!
//! `bench` is the main job, so it sets itself up: it looks for each GPU vendor's device on this
//! machine (an NVIDIA driver, an AMD kernel driver), provisions the toolchain of each one present
//! (nvcc 13.0 from PyPI, clang-22 from Debian), builds the runner with those backends (cargo's own
//! progress on screen, with an estimate before a first build), and runs it. A backend left out is
//! said so with its reason, and the reason reaches the runner's summary and the report's notes.
//! `report merge` needs no GPU code and builds without it.

use crate::{toolchains, util};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

pub const USAGE: &str = "\
usage: cargo xtask bench [OPTIONS]

Measures every backend this machine has a device for and writes DIR/results.json, report.md and
report.html. On a machine with an NVIDIA driver it installs nvcc 13.0 (PyPI, ~105 MB, once) and
measures the GPU; with an AMD GPU (/dev/kfd) it installs clang-22 (Debian) and measures that;
the CPU is always measured, with candle 0.11 beside it in the same run (its fused forward, and
its unfused forward + backward: the only way to train with candle). Backends without a device are
not built, and the report says why.

options:
  --backend LIST   cpu,cuda,hip: only these (default: every backend with a device here)
  --ops LIST       rms_fwd,rms_bwd,addrms_fwd,addrms_bwd,ln_fwd,ln_bwd (default: these six); the
                   FP8 forwards rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row run only
                   when named; groups: default, fp8, all
  --fp8            add the four FP8 forwards (alone: only them), on their own grid (bf16 x,
                   4096x1024 to 2048x65536 and 8x4096, 128x4096 on GPUs); a backend without FP8
                   kernels lists them as not run
  --fp8-format F   y's FP8 format: e4m3 (default), e5m2, e4m3fnuz, e5m2fnuz
  --dtypes LIST    bf16,f16,f32: every shape in each (default: bf16, plus f32 at the first shape)
  --shapes LIST    MxN,... instead of the default grid
  --quick          ~20 s smoke run (after the build)
  --full           adds hidden sizes up to 1M
  --reps N         timed repetitions per case (median reported)
  --no-candle      leave candle out of the CPU run
  --candle-all-shapes
                   time candle's unfused forward + backward on every shape (default: the
                   grid's first shape and 8x4096; it is slow)
  --label NAME     name of the run in reports
  --out DIR        output folder (default: report)
  -h, --help       this text

The first build compiles the runner in release mode: about 2 minutes on 2 cores for the CPU
and candle, plus about 3.5 minutes for the CUDA kernels (nvcc, sm_90a + sm_100a + PTX) and about
1 minute for the HIP code objects. Later runs rebuild only what changed.";

/// A GPU backend: built (its toolchain is ready) or left out, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gpu {
    Build,
    LeftOut(String),
}

/// Where this machine shows an NVIDIA driver: `Ok(evidence)` or `Err(what was looked for)`.
fn nvidia_driver() -> Result<String, String> {
    if let Ok(v) = std::fs::read_to_string("/proc/driver/nvidia/version") {
        let first = v.lines().next().unwrap_or("").trim().to_string();
        return Ok(format!("NVIDIA driver ({first})"));
    }
    let ldconfig = util::output(Command::new("ldconfig").arg("-p")).or_else(|| util::output(Command::new("/sbin/ldconfig").arg("-p")));
    if ldconfig.is_some_and(|l| l.contains("libcuda.so.1")) {
        return Ok("libcuda.so.1 (the CUDA driver library)".into());
    }
    if Path::new("/dev/nvidia0").exists() {
        return Ok("/dev/nvidia0".into());
    }
    Err("no NVIDIA driver found (no /proc/driver/nvidia/version, no libcuda.so.1, no /dev/nvidia0)".into())
}

/// Where this machine shows an AMD GPU: the amdgpu kernel driver's `/dev/kfd`.
fn amd_gpu() -> Result<String, String> {
    if Path::new("/dev/kfd").exists() {
        Ok("/dev/kfd (the amdgpu kernel driver)".into())
    } else {
        Err("no AMD GPU found (no /dev/kfd)".into())
    }
}

/// What to do with one GPU backend: whether it was asked for, whether its device is here, and
/// whether its toolchain could be provisioned.
fn decide(name: &str, wanted: bool, device: Result<String, String>, provision: impl FnOnce() -> Result<PathBuf, String>) -> Gpu {
    if !wanted {
        return Gpu::LeftOut("not asked for (--backend)".into());
    }
    match device {
        Err(why) => Gpu::LeftOut(why),
        Ok(found) => {
            println!("{name}: found {found}; provisioning its toolchain");
            match provision() {
                Ok(_) => Gpu::Build,
                Err(e) => Gpu::LeftOut(format!("a device is present but its toolchain could not be installed: {e}")),
            }
        }
    }
}

/// The value of `--backend` in `args`, if given.
fn asked_backends(args: &[String]) -> Option<Vec<String>> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--backend=").or_else(|| a.strip_prefix("--backends=")) {
            return Some(v.split(',').map(|s| s.trim().to_string()).collect());
        }
        if a == "--backend" || a == "--backends" {
            return it.next().map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
        }
    }
    None
}

/// Builds `normkit-bench` (release) with `features`, with cargo's progress on screen; returns the
/// binary. Before a first build, says roughly how long it takes.
fn build(features: &[&str]) -> Result<PathBuf, String> {
    let bin = util::target_dir().join("release").join("normkit-bench");
    if !bin.is_file() {
        // Measured on the 2-core build machine (2026-11-24): the CPU runner alone 17 s; nvcc's
        // three targets about 3.5 minutes; clang's three HIP code objects about 1 minute.
        let mut est: u32 = 20;
        if features.contains(&"cuda") {
            est += 210;
        }
        if features.contains(&"hip") {
            est += 60;
        }
        let est = if est < 60 { format!("{est} seconds") } else { format!("{} minutes", est.div_ceil(60)) };
        println!("first build of the runner: about {est} on 2 cores (cargo's progress below)");
    }
    let mut c = util::cargo();
    c.args(["build", "--release", "-p", "normkit-benches", "--bin", "normkit-bench"]);
    if !features.is_empty() {
        c.arg("--features").arg(features.join(","));
    }
    let t = Instant::now();
    util::run(&mut c)?;
    println!(
        "build: {} ({})",
        util::elapsed(t),
        if features.is_empty() { "cpu".to_string() } else { format!("cpu, {}", features.join(", ")) }
    );
    Ok(bin)
}

/// Runs the built runner from the caller's folder, so relative paths mean what they typed.
fn exec(bin: &Path, args: &[String]) -> Result<(), String> {
    let mut c = Command::new(bin);
    c.args(args);
    util::with_tools_env(&mut c);
    util::run(&mut c)
}

pub fn bench(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return Ok(());
    }
    let asked = asked_backends(args);
    let wants = |name: &str| asked.as_ref().is_none_or(|l| l.iter().any(|b| b == name));
    util::phase("devices and toolchains");
    let cuda = decide("cuda", wants("cuda"), nvidia_driver(), || toolchains::provision_cuda(false));
    let hip = decide("hip", wants("hip"), amd_gpu(), toolchains::provision_hip);
    let mut features = Vec::new();
    let mut left_out = Vec::new();
    for (name, gpu) in [("cuda", &cuda), ("hip", &hip)] {
        match gpu {
            Gpu::Build => {
                println!("{name}: will be built and measured");
                features.push(name);
            }
            Gpu::LeftOut(why) => {
                println!("{name}: not built: {why}");
                left_out.push((name, why.clone()));
            }
        }
    }
    util::phase("build");
    let bin = match build(&features) {
        Ok(bin) => bin,
        Err(e) if !features.is_empty() => {
            eprintln!("xtask: warning: building the runner with {} failed ({e}); benchmarking the CPU only", features.join(", "));
            for f in features.drain(..) {
                left_out.push((f, format!("the build with the `{f}` feature failed: {e}")));
            }
            build(&[])?
        }
        Err(e) => return Err(e),
    };
    util::phase("measure");
    let mut full = vec!["run".to_string()];
    full.extend(args.iter().cloned());
    for (name, why) in left_out {
        // Backends asked for by name but left out are still noted; those not asked for are not.
        if asked.is_none() || wants(name) {
            full.push("--not-built".into());
            full.push(format!("{name}={why}"));
        }
    }
    exec(&bin, &full)
}

pub fn report(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("merge") => {
            let mut full = vec!["merge".to_string()];
            full.extend(args[1..].iter().cloned());
            exec(&build(&[])?, &full)
        }
        _ => Err("usage: cargo xtask report merge A.json [B.json ...] [--peers peers.json] --out DIR".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn backend_lists_are_read_in_both_spellings() {
        assert_eq!(asked_backends(&args("--quick --backend cuda,cpu")), Some(vec!["cuda".into(), "cpu".into()]));
        assert_eq!(asked_backends(&args("--backend=hip")), Some(vec!["hip".into()]));
        assert_eq!(asked_backends(&args("--quick")), None);
    }

    #[test]
    fn a_backend_without_a_device_is_left_out_with_the_reason_and_nothing_is_installed() {
        let never = || -> Result<PathBuf, String> { panic!("provisioned a toolchain for a device that is not there") };
        assert_eq!(decide("cuda", true, Err("no NVIDIA driver found".into()), never), Gpu::LeftOut("no NVIDIA driver found".into()));
        assert_eq!(decide("hip", false, Ok("/dev/kfd".into()), never), Gpu::LeftOut("not asked for (--backend)".into()));
        let ok = || Ok(PathBuf::from("/x/nvcc"));
        assert_eq!(decide("cuda", true, Ok("libcuda.so.1".into()), ok), Gpu::Build);
        let fails = || Err("pip: no network".to_string());
        match decide("cuda", true, Ok("libcuda.so.1".into()), fails) {
            Gpu::LeftOut(why) => assert!(why.contains("could not be installed: pip: no network"), "{why}"),
            Gpu::Build => panic!("built without a toolchain"),
        }
    }

    #[test]
    fn help_is_xtasks_own() {
        assert!(USAGE.starts_with("usage: cargo xtask bench"));
        assert!(!USAGE.contains("probe") && !USAGE.contains("merge"));
    }
}
