//! Compiles kernels-cuda/norm.cu (with kernels-common) ahead of time into fatbins — sm_90a and
//! sm_100a machine code plus compute_90 PTX. The kernels are the typed list of
//! kernels-cuda/variants.rs (types: kernels-common/variants.rs): from it this script generates
//! the `NK_KERNEL` instantiation lines norm.cu includes (`OUT_DIR/nk_kernels.inc`) and the Rust
//! kernel table (`OUT_DIR/kernels.rs`). The kernels of `own_unit` are compiled in a second
//! translation unit (norm.cu with `NK_UNIT_FP8T`, `nk_kernels_fp8t.inc`) into
//! `normkit_fp8t.fatbin`, a second module, so that adding them leaves the others' code as it
//! was. The two nvcc runs go in parallel. No run-time compilation.
//!
//! nvcc: `NORMKIT_NVCC`, else `${NORMKIT_TOOLS:-$HOME/.cache/normkit/tools}/cuda-13.0/nvidia/cu13/bin/nvcc`
//! (provisioned by `cargo xtask toolchains`).
//!
//! Under `cargo clippy` (or with `NORMKIT_KERNELS=skip`, for `cargo check` / `cargo doc`) nvcc is
//! not run: the kernel table is still generated, the fatbin is empty, and a backend built that way
//! reports itself unavailable. The lint step then takes seconds instead of minutes.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)]
#[path = "../../kernels-cuda/variants.rs"]
mod list;
#[allow(dead_code)]
#[path = "../../kernels-common/variants.rs"]
mod variants;
#[path = "../../kernels-common/variants_gen.rs"]
mod variants_gen;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let common = root.join("kernels-common");
    let cuda = root.join("kernels-cuda");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    println!("cargo:rerun-if-env-changed=NORMKIT_NVCC");
    println!("cargo:rerun-if-env-changed=NORMKIT_TOOLS");
    println!("cargo:rerun-if-env-changed=NORMKIT_NVCC_FLAGS");
    println!("cargo:rerun-if-env-changed=NORMKIT_CUDA_ARCHS");
    println!("cargo:rerun-if-changed=build.rs");
    for dir in [&common, &cuda] {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
        }
    }

    variants_gen::check(list::VARIANTS);
    let source = "kernels-cuda/variants.rs";
    let (apart, main): (Vec<_>, Vec<_>) = list::VARIANTS.iter().copied().partition(|v| list::own_unit(v.key));
    fs::write(out.join("nk_kernels.inc"), variants_gen::cpp(list::CONSTS, &main, source)).expect("write nk_kernels.inc");
    fs::write(out.join("nk_kernels_fp8t.inc"), variants_gen::cpp(list::CONSTS, &apart, source)).expect("write nk_kernels_fp8t.inc");
    fs::write(out.join("kernels.rs"), variants_gen::rust(list::VARIANTS, source)).expect("write kernels.rs");

    let units = [(out.join("normkit.fatbin"), None), (out.join("normkit_fp8t.fatbin"), Some("-DNK_UNIT_FP8T"))];
    if let Some(why) = lint_only() {
        println!("cargo:warning=normkit-cuda: kernels not compiled ({why}); this build cannot run on a GPU");
        for (fatbin, _) in &units {
            fs::write(fatbin, b"").expect("write the empty fatbin");
        }
        return;
    }
    let nvcc = find_nvcc();
    let children: Vec<_> = units
        .iter()
        .map(|(fatbin, define)| {
            let mut cmd = nvcc_command(&nvcc, &common, &cuda, &out, fatbin);
            cmd.args(define.iter());
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run nvcc at {}: {e}; run `cargo xtask toolchains` to install it", nvcc.display()));
            (child, define)
        })
        .collect();
    for (mut child, define) in children {
        let status = child.wait().expect("wait for nvcc");
        if !status.success() {
            panic!("nvcc failed ({status}) compiling kernels-cuda/norm.cu{}", define.map(|d| format!(" ({d})")).unwrap_or_default());
        }
    }
}

/// nvcc compiling kernels-cuda/norm.cu into `fatbin` (NORMKIT_NVCC_FLAGS appended).
fn nvcc_command(nvcc: &Path, common: &Path, cuda: &Path, out: &Path, fatbin: &Path) -> Command {
    let mut cmd = Command::new(nvcc);
    cmd.arg("-std=c++17")
        .arg("-O3")
        .arg("-fatbin")
        .args(gencodes())
        .arg("-I")
        .arg(common)
        .arg("-I")
        .arg(cuda)
        .arg("-I")
        .arg(out)
        .arg("-o")
        .arg(fatbin)
        .arg(cuda.join("norm.cu"));
    if let Ok(extra) = env::var("NORMKIT_NVCC_FLAGS") {
        cmd.args(extra.split_whitespace());
    }
    cmd
}

/// The nvcc targets: sm_90a and sm_100a SASS plus compute_90 PTX; `NORMKIT_CUDA_ARCHS=sm_90a`
/// builds the sm_90a SASS alone (a third of the compile time, for iterating on an H100/H200; such
/// a build does not run on sm_100).
fn gencodes() -> Vec<&'static str> {
    match env::var("NORMKIT_CUDA_ARCHS").as_deref() {
        Ok("sm_90a") => vec!["-gencode=arch=compute_90a,code=sm_90a"],
        _ => vec![
            "-gencode=arch=compute_90a,code=sm_90a",
            "-gencode=arch=compute_100a,code=sm_100a",
            "-gencode=arch=compute_90,code=compute_90",
        ],
    }
}

/// Why the kernels need not be compiled: a clippy run, or `NORMKIT_KERNELS=skip`.
fn lint_only() -> Option<&'static str> {
    println!("cargo:rerun-if-env-changed=NORMKIT_KERNELS");
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    if env::var("NORMKIT_KERNELS").is_ok_and(|v| v == "skip") {
        return Some("NORMKIT_KERNELS=skip");
    }
    // cargo clippy runs the crates through clippy-driver and tells build scripts so.
    let wrapper = env::var("RUSTC_WORKSPACE_WRAPPER").unwrap_or_default();
    wrapper.contains("clippy-driver").then_some("a clippy build")
}

fn find_nvcc() -> PathBuf {
    if let Ok(p) = env::var("NORMKIT_NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return p;
        }
        panic!("NORMKIT_NVCC={} does not exist; unset it or run `cargo xtask toolchains`", p.display());
    }
    let tools = env::var("NORMKIT_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env::var("HOME").unwrap_or_default()).join(".cache/normkit/tools"));
    let p = tools.join("cuda-13.0/nvidia/cu13/bin/nvcc");
    if p.is_file() {
        return p;
    }
    panic!("nvcc 13.0 not found at {} (nor NORMKIT_NVCC set): run `cargo xtask toolchains` to install it", p.display());
}
