//! `cargo xtask bench` and `cargo xtask report merge`: build the runner in release mode (with
//! the `cuda` / `hip` features when their toolchains are installed) and hand it the arguments.

use crate::{toolchains, util};
use std::path::Path;

/// The runner's features that this machine can build.
fn features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if toolchains::nvcc_path().is_file() {
        f.push("cuda");
    }
    if Path::new("/usr/bin/clang++-22").is_file() || util::which("clang++-22").is_some() {
        f.push("hip");
    }
    f
}

/// `cargo run --release -p normkit-benches --bin normkit-bench [--features ...] -- args`.
fn runner(args: &[String]) -> Result<(), String> {
    let feats = features();
    let mut c = util::cargo();
    // Run from the caller's folder, so that relative --out and input paths mean what they typed.
    if let Ok(cwd) = std::env::current_dir() {
        c.current_dir(cwd);
    }
    c.args(["run", "--release", "--quiet", "--manifest-path"]).arg(util::root().join("Cargo.toml"));
    c.args(["-p", "normkit-benches", "--bin", "normkit-bench"]);
    if !feats.is_empty() {
        c.arg("--features").arg(feats.join(","));
    }
    c.arg("--").args(args);
    util::run(&mut c)
}

pub fn bench(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return runner(&["help".to_string()]);
    }
    let mut full = vec!["run".to_string()];
    full.extend(args.iter().cloned());
    runner(&full)
}

pub fn report(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("merge") => {
            let mut full = vec!["merge".to_string()];
            full.extend(args[1..].iter().cloned());
            runner(&full)
        }
        _ => Err("usage: cargo xtask report merge A.json [B.json ...] [--peers peers.json] --out DIR".into()),
    }
}
