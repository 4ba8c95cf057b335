//! Compiles kernels-hip/normkit.hip (the HIP platform header + the shared kernel bodies of
//! kernels-common) ahead of time, one code object per AMD target. The kernels are the typed list
//! of kernels-hip/variants.rs (types: kernels-common/variants.rs): from it this script generates
//! the `NK_KERNEL` instantiation lines normkit.hip includes (`OUT_DIR/nk_kernels.inc`) and the
//! Rust kernel table. No run-time compilation.
//!
//! Compiler, first found wins:
//! 1. `NORMKIT_HIP_CLANG=/path/to/clang++`: that clang, freestanding.
//! 2. ROCm >= 6: `$ROCM_PATH/bin/hipcc` (or `hipcc` on PATH) reporting `HIP version: 6.x`+,
//!    with `--genco`.
//! 3. `clang++-22` on PATH, freestanding (`-nogpuinc -nogpulib`): Debian's clang-22 knows gfx942
//!    and gfx950; `cargo xtask toolchains` installs it.
//!
//! None found: the build fails and says so.
//!
//! Outputs in OUT_DIR: `nk_kernels.inc` (the C++ lines), `normkit_<arch>.hsaco` (raw ELF code
//! objects, embedded by src/kernels.rs with `include_bytes!`) and `kernels.rs` (code objects, the
//! kernel table, the compiler used).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Targets: MI300X/MI300A/MI325X (gfx942), MI350X/MI355X (gfx950), MI200 (gfx90a).
const ARCHS: &[&str] = &["gfx90a", "gfx942", "gfx950"];

enum Compiler {
    /// clang with no HIP headers and no device libraries.
    Freestanding(PathBuf),
    /// ROCm's hipcc (>= 6).
    Hipcc(PathBuf),
}

fn hipcc_major(hipcc: &Path) -> Option<u32> {
    let out = Command::new(hipcc).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("HIP version:"))?;
    line.trim_start_matches("HIP version:").trim().split('.').next()?.parse().ok()
}

fn runs(cmd: &Path) -> bool {
    Command::new(cmd).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

fn find_compiler() -> Result<Compiler, String> {
    if let Some(c) = env::var_os("NORMKIT_HIP_CLANG") {
        let c = PathBuf::from(c);
        return if runs(&c) { Ok(Compiler::Freestanding(c)) } else { Err(format!("NORMKIT_HIP_CLANG={} does not run", c.display())) };
    }
    let mut hipccs = Vec::new();
    if let Some(root) = env::var_os("ROCM_PATH") {
        hipccs.push(PathBuf::from(root).join("bin/hipcc"));
    }
    hipccs.push(PathBuf::from("hipcc"));
    for h in hipccs {
        match hipcc_major(&h) {
            Some(v) if v >= 6 => return Ok(Compiler::Hipcc(h)),
            Some(v) => println!("cargo:warning=ignoring {} (HIP {v}: gfx942/gfx950 need ROCm >= 6)", h.display()),
            None => {}
        }
    }
    let c = PathBuf::from("clang++-22");
    if runs(&c) {
        return Ok(Compiler::Freestanding(c));
    }
    Err("no HIP compiler found: need ROCm >= 6 (hipcc, ROCM_PATH) or clang++-22 (NORMKIT_HIP_CLANG to \
         point elsewhere). Run `cargo xtask toolchains` to install clang-22 from Debian."
        .into())
}

fn compile(compiler: &Compiler, arch: &str, src: &Path, includes: &[&Path], out: &Path) -> Result<(), String> {
    let mut cmd = match compiler {
        Compiler::Freestanding(c) => {
            let mut cmd = Command::new(c);
            cmd.args(["-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib"]);
            cmd
        }
        Compiler::Hipcc(h) => {
            let mut cmd = Command::new(h);
            cmd.arg("--genco");
            cmd
        }
    };
    // One raw ELF per target (no offload bundle), code object v5: loads on ROCm 5.x .. 7.
    cmd.args(["--no-gpu-bundle-output", "-mcode-object-version=5", "-O3", "-std=c++17"]).arg(format!("--offload-arch={arch}"));
    for dir in includes {
        cmd.arg("-I").arg(dir);
    }
    cmd.arg("-o").arg(out).arg(src);
    let o = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!("{cmd:?} failed:\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    }
    Ok(())
}

#[allow(dead_code)]
#[path = "../../kernels-hip/variants.rs"]
mod list;
#[allow(dead_code)]
#[path = "../../kernels-common/variants.rs"]
mod variants;
#[path = "../../kernels-common/variants_gen.rs"]
mod variants_gen;

/// Where the list lives (named in the generated files).
const SOURCE: &str = "kernels-hip/variants.rs";

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let kdir = manifest.join("../../kernels-hip");
    let common = manifest.join("../../kernels-common");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    for dir in [&kdir, &common] {
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
    for v in ["NORMKIT_HIP_CLANG", "ROCM_PATH"] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    variants_gen::check(list::VARIANTS);
    fs::write(out_dir.join("nk_kernels.inc"), variants_gen::cpp(list::CONSTS, list::VARIANTS, SOURCE)).expect("OUT_DIR is writable");

    if let Some(why) = lint_only() {
        println!("cargo:warning=normkit-hip: kernels not compiled ({why}); this build cannot run on a GPU");
        for arch in ARCHS {
            fs::write(out_dir.join(format!("normkit_{arch}.hsaco")), b"").expect("OUT_DIR is writable");
        }
        write_table(&out_dir, "none (not compiled)", "");
        return;
    }
    let compiler = match find_compiler() {
        Ok(c) => c,
        Err(e) => panic!("normkit-hip: {e}"),
    };
    let (compiler_name, compiler_path) = match &compiler {
        Compiler::Freestanding(c) => ("clang freestanding", c.display().to_string()),
        Compiler::Hipcc(h) => ("hipcc --genco", h.display().to_string()),
    };

    // One compiler process per target, in parallel (~25 s each for clang-22 at -O3).
    let src = kdir.join("normkit.hip");
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = ARCHS
            .iter()
            .map(|arch| {
                let out = out_dir.join(format!("normkit_{arch}.hsaco"));
                let (compiler, src, common, gen) = (&compiler, &src, &common, &out_dir);
                s.spawn(move || compile(compiler, arch, src, &[common, gen], &out))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("compiler thread panicked".into()))).collect()
    });
    for r in results {
        if let Err(e) = r {
            panic!("normkit-hip: {e}");
        }
    }

    write_table(&out_dir, compiler_name, &compiler_path);
}

/// Why the kernels need not be compiled: a clippy run, or `NORMKIT_KERNELS=skip` (for `cargo
/// check` / `cargo doc`). The code objects are then empty and the backend reports itself
/// unavailable.
fn lint_only() -> Option<&'static str> {
    println!("cargo:rerun-if-env-changed=NORMKIT_KERNELS");
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    if env::var("NORMKIT_KERNELS").is_ok_and(|v| v == "skip") {
        return Some("NORMKIT_KERNELS=skip");
    }
    let wrapper = env::var("RUSTC_WORKSPACE_WRAPPER").unwrap_or_default();
    wrapper.contains("clippy-driver").then_some("a clippy build")
}

/// `kernels.rs` in OUT_DIR: the code objects, the compiler and the kernel table.
fn write_table(out_dir: &Path, compiler_name: &str, compiler_path: &str) {
    let mut rs = String::new();
    let _ = writeln!(rs, "/// How the code objects were compiled.");
    let _ = writeln!(rs, "pub const COMPILER: &str = {:?};", format!("{compiler_name} ({compiler_path})"));
    let _ = writeln!(rs, "/// `(arch, code object)` for every target, raw AMDGPU ELF.");
    let _ = writeln!(rs, "pub static CODE_OBJECTS: &[(&str, &[u8])] = &[");
    for arch in ARCHS {
        let _ = writeln!(rs, "    ({arch:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/normkit_{arch}.hsaco\"))),");
    }
    let _ = writeln!(rs, "];");
    rs.push_str(&variants_gen::rust(list::VARIANTS, SOURCE));
    fs::write(out_dir.join("kernels.rs"), rs).expect("OUT_DIR is writable");
}
