//! `cargo xtask bench` and `cargo xtask report merge`: build the runner in release mode and hand
//! it the arguments. `bench` adds the `cuda` / `hip` features when their toolchains are installed
//! (and falls back to a CPU-only runner, saying why, when that build fails); `report merge` needs
//! no GPU code and builds without them.

use crate::{toolchains, util};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runner's GPU features that this machine has the toolchains for.
fn gpu_features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if toolchains::nvcc_path().is_file() {
        f.push("cuda");
    }
    if Path::new("/usr/bin/clang++-22").is_file() || util::which("clang++-22").is_some() {
        f.push("hip");
    }
    f
}

/// Builds `normkit-bench` (release) with `features`; returns the binary.
fn build(features: &[&str]) -> Result<PathBuf, String> {
    let mut c = util::cargo();
    c.args(["build", "--release", "--quiet", "-p", "normkit-benches", "--bin", "normkit-bench"]);
    if !features.is_empty() {
        c.arg("--features").arg(features.join(","));
    }
    util::run(&mut c)?;
    Ok(util::target_dir().join("release").join("normkit-bench"))
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
        return exec(&build(&[])?, &["help".to_string()]);
    }
    let feats = gpu_features();
    let bin = match build(&feats) {
        Ok(bin) => bin,
        Err(e) if !feats.is_empty() => {
            eprintln!("xtask: warning: building the runner with {} failed ({e}); benchmarking without GPU backends", feats.join(", "));
            build(&[])?
        }
        Err(e) => return Err(e),
    };
    let mut full = vec!["run".to_string()];
    full.extend(args.iter().cloned());
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
