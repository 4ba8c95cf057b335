//! `cargo xtask toolchains`: installs what the GPU kernels and the report test need, on a
//! Debian 12 machine without a GPU (see TOOLCHAINS.md). Idempotent: whatever is present is
//! left alone, so a second run takes well under a second.
//!
//! - nvcc 13.0 from PyPI wheels into `$TOOLS/cuda-13.0` (pinned; a mix of 13.0 nvcc with newer
//!   headers does not work),
//! - cuobjdump / nvdisasm 13.2 into `$TOOLS/cuobjdump` (SASS checks without a GPU),
//! - clang-22, lld-22, llvm-22 (HIP code objects for gfx942/gfx950) and chromium (the HTML report
//!   test) and Debian's HIP 5.2 runtime (host tests of the no-device path), with one `apt-get update`.

use crate::util::{self, tools_dir, which};
use std::path::PathBuf;
use std::process::Command;

const CUDA_WHEELS: [&str; 5] = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];
const CUOBJDUMP_WHEELS: [&str; 2] = ["nvidia-cuda-cuobjdump==13.2.51", "nvidia-cuda-nvdisasm==13.2.51"];
/// Debian packages and a file each that proves it is installed.
/// `libamdhip64-5` is Debian's HIP 5.2 runtime: it cannot run normkit's gfx942/gfx950 code objects,
/// but with it the HIP backend's host tests reach the runtime and check the "no AMD GPU"
/// (`hipErrorNoDevice`) path on machines without one, as CI is.
const APT: [(&str, &str); 5] = [
    ("clang-22", "/usr/bin/clang++-22"),
    ("lld-22", "/usr/bin/ld.lld-22"),
    ("llvm-22", "/usr/bin/llvm-objdump-22"),
    ("chromium", "/usr/bin/chromium"),
    ("libamdhip64-5", "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"),
];

/// What is installed after provisioning; a `None` tool could not be installed.
#[derive(Debug, Default)]
pub struct Tools {
    pub nvcc: Option<PathBuf>,
    pub cuobjdump: Option<PathBuf>,
    pub clang: Option<PathBuf>,
    pub llvm_objdump: Option<PathBuf>,
    pub chromium: Option<PathBuf>,
    /// Why a tool is missing, one line each.
    pub problems: Vec<String>,
}

pub fn nvcc_path() -> PathBuf {
    tools_dir().join("cuda-13.0/nvidia/cu13/bin/nvcc")
}

pub fn cuobjdump_path() -> PathBuf {
    tools_dir().join("cuobjdump/nvidia/cu13/bin/cuobjdump")
}

/// The dist-info folder pip leaves for `name==version`.
fn dist_info(target: &std::path::Path, wheel: &str) -> PathBuf {
    let (name, version) = wheel.split_once("==").unwrap_or((wheel, ""));
    target.join(format!("{}-{version}.dist-info", name.replace('-', "_")))
}

/// Installs `wheels` into `target` unless every one is already there. Returns what it did.
/// `size` is what the download weighs, for the progress line.
fn pip_install(target: PathBuf, wheels: &[&str], no_deps: bool, size: &str) -> Result<String, String> {
    let missing: Vec<&str> = wheels.iter().copied().filter(|w| !dist_info(&target, w).is_dir()).collect();
    if missing.is_empty() {
        return Ok(format!("present ({})", target.display()));
    }
    ensure_pip()?;
    // pip prints each wheel it downloads with its size (a progress bar too on a terminal).
    println!("pip: downloading {} from PyPI into {} ({size})", missing.join(" "), target.display());
    let mut c = Command::new("python3");
    c.args(["-m", "pip", "install", "--disable-pip-version-check", "--upgrade", "--target"]).arg(&target);
    if no_deps {
        c.arg("--no-deps");
    }
    // --target installs into a private folder, never into the system's Python.
    c.env("PIP_BREAK_SYSTEM_PACKAGES", "1").env("PIP_ROOT_USER_ACTION", "ignore").args(wheels);
    util::run(&mut c)?;
    Ok(format!("installed {} into {}", missing.join(" "), target.display()))
}

fn ensure_pip() -> Result<(), String> {
    if util::output(Command::new("python3").args(["-m", "pip", "--version"])).is_some() {
        return Ok(());
    }
    if which("python3").is_none() {
        apt_install(&["python3", "python3-pip"])?;
    } else {
        apt_install(&["python3-pip"])?;
    }
    Ok(())
}

/// `apt-get install` as root, or through sudo.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let root = util::output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0");
    let apt = |args: &[&str]| -> Command {
        let mut c = if root { Command::new("apt-get") } else { Command::new("sudo") };
        if !root {
            c.arg("apt-get");
        }
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if !root && which("sudo").is_none() {
        return Err(format!("need root to install {} (run: sudo apt-get install -y --no-install-recommends {0})", packages.join(" ")));
    }
    util::run(&mut apt(&["update", "-q"]))?;
    let mut c = apt(&["install", "-y", "-q", "--no-install-recommends"]);
    c.args(packages);
    util::run(&mut c)
}

/// nvcc 13.0 (and cuobjdump when `inspect`): installs what is missing, says what it did. Returns
/// nvcc's path.
pub fn provision_cuda(inspect: bool) -> Result<PathBuf, String> {
    let tools = tools_dir();
    let what = pip_install(tools.join("cuda-13.0"), &CUDA_WHEELS, false, "about 105 MB of wheels, 280 MB installed")
        .map_err(|e| format!("nvcc 13.0: {e}"))?;
    println!("nvcc 13.0: {what}");
    if inspect {
        let what = pip_install(tools.join("cuobjdump"), &CUOBJDUMP_WHEELS, true, "about 5 MB").map_err(|e| format!("cuobjdump: {e}"))?;
        println!("cuobjdump/nvdisasm 13.2: {what}");
    }
    let nvcc = nvcc_path();
    match util::output(Command::new(&nvcc).arg("--version")) {
        Some(v) => {
            println!("nvcc: {}", v.lines().last().unwrap_or("").trim());
            Ok(nvcc)
        }
        None => Err(format!("{} is installed but does not run", nvcc.display())),
    }
}

/// The Debian packages of `APT` whose file is missing, installed with one `apt-get update`.
fn provision_apt(packages: &[(&str, &str)]) -> Result<(), String> {
    let missing: Vec<&str> = packages.iter().filter(|(_, file)| !std::path::Path::new(file).is_file()).map(|(p, _)| *p).collect();
    if missing.is_empty() {
        println!("apt: present ({})", packages.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", "));
        return Ok(());
    }
    println!("apt: installing {} from Debian (about 150 MB for clang-22 + llvm-22)", missing.join(" "));
    apt_install(&missing).map_err(|e| format!("apt ({}): {e}", missing.join(" ")))?;
    println!("apt: installed {}", missing.join(" "));
    Ok(())
}

/// clang-22 and lld-22 (the HIP code objects): installs what is missing. Returns clang's path.
pub fn provision_hip() -> Result<PathBuf, String> {
    provision_apt(&APT[..2])?;
    Ok(PathBuf::from("/usr/bin/clang++-22"))
}

/// Installs everything `test-all` uses and says what it did, one line per tool.
pub fn provision() -> Tools {
    let mut t = Tools::default();
    if let Err(e) = provision_cuda(true) {
        t.problems.push(e);
    }
    if let Err(e) = provision_apt(&APT) {
        t.problems.push(e);
    }
    let exists = |p: PathBuf| p.is_file().then_some(p);
    t.nvcc = exists(nvcc_path()).filter(|_| t.problems.iter().all(|p| !p.starts_with("nvcc")));
    t.cuobjdump = exists(cuobjdump_path());
    t.clang = exists(PathBuf::from("/usr/bin/clang++-22"));
    t.llvm_objdump = exists(PathBuf::from("/usr/bin/llvm-objdump-22"));
    t.chromium = exists(PathBuf::from("/usr/bin/chromium"));
    for p in &t.problems {
        println!("toolchain problem: {p}");
    }
    t
}
