//! Paths and process helpers shared by the tasks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or(manifest.clone(), Path::to_path_buf)
}

/// Where `cargo xtask toolchains` installs: `$NORMKIT_TOOLS`, else `~/.cache/normkit/tools`.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("NORMKIT_TOOLS") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/normkit/tools"),
    }
}

/// The cargo target folder (`CARGO_TARGET_DIR` or `<root>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                root().join(p)
            }
        }
        _ => root().join("target"),
    }
}

/// `cargo`, as the one running us.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    with_tools_env(&mut c);
    c
}

/// Points build scripts and tests at the provisioned tools: `NORMKIT_TOOLS`, and the nvcc,
/// cuobjdump and clang folders first on `PATH`.
pub fn with_tools_env(c: &mut Command) {
    let tools = tools_dir();
    let mut path = vec![tools.join("cuda-13.0/nvidia/cu13/bin"), tools.join("cuobjdump/nvidia/cu13/bin")];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    if let Ok(joined) = std::env::join_paths(path) {
        c.env("PATH", joined);
    }
    c.env("NORMKIT_TOOLS", tools);
}

/// The first `name` on `PATH`, or at one of `extra` paths.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A command in words, for logs.
pub fn show(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `c` with inherited output; `Err` names the command when it fails or cannot start.
pub fn run(c: &mut Command) -> Result<(), String> {
    eprintln!("$ {}", show(c));
    let status = c.status().map_err(|e| format!("cannot run `{}`: {e}", show(c)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", show(c)))
    }
}

/// Runs `c` and returns its stdout (stderr passed through); `None` if it fails or cannot start.
pub fn output(c: &mut Command) -> Option<String> {
    let out = c.stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `1m05s`, `42.0s`.
pub fn elapsed(t: Instant) -> String {
    let s = t.elapsed().as_secs_f64();
    if s >= 60.0 {
        format!("{}m{:02}s", s as u64 / 60, s as u64 % 60)
    } else {
        format!("{s:.1}s")
    }
}

/// Prints a phase header.
pub fn phase(name: &str) {
    eprintln!("\n==> {name}");
}
