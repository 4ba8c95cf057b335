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

    // The candle version the runner links (the candle peer's reports name it), from the lock file.
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let candle = std::fs::read_to_string(&lock).ok().and_then(|l| locked_version(&l, "candle-core")).unwrap_or_default();
    println!("cargo:rustc-env=NORMKIT_CANDLE_VERSION={candle}");
}

/// The version of package `name` in a `Cargo.lock` (`name = "…"` followed by `version = "…"`).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut lines = lock.lines();
    lines.find(|l| l.trim() == format!("name = \"{name}\""))?;
    let v = lines.next()?.trim().strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(v.to_string())
}
