//! Stamps the runner with the commit it was built from (`NORMKIT_BUILD_GIT`), so a binary carried
//! to another machine reports its own build, not the commit of the folder it runs in.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // Re-run when HEAD moves (checkout: HEAD; commit: the branch's ref) or the index changes.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!("cargo:rerun-if-changed={}", dir.join("index").display());
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(r).display());
        }
    }
    println!("cargo:rerun-if-changed={}", root.join("benches/build.rs").display());
    let stamp = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(head) if !head.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head} (with local changes)")
            } else {
                head
            }
        }
        _ => String::new(),
    };
    println!("cargo:rustc-env=NORMKIT_BUILD_GIT={stamp}");
}
