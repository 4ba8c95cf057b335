//! Compiles kernels-hip/normkit.hip ahead of time, one code object per AMD target, and generates
//! the Rust side of the kernel list (kernels-hip/kernels.def).
//!
//! Compiler, first found wins:
//! 1. `NORMKIT_HIP_CLANG=/path/to/clang++`: that clang, freestanding.
//! 2. ROCm >= 6: `$ROCM_PATH/bin/hipcc` (or `hipcc` on PATH) reporting `HIP version: 6.x`+,
//!    with `--genco`.
//! 3. `clang++-22` on PATH, freestanding (`-nogpuinc -nogpulib`): Debian's clang-22 knows gfx942
//!    and gfx950; `cargo xtask toolchains` installs it.
//! None found: the build fails and says so.
//!
//! Outputs in OUT_DIR: `normkit_<arch>.hsaco` (raw ELF code objects, embedded by
//! src/kernels.rs with `include_bytes!`) and `kernels.rs` (archs, the kernel table, the compiler
//! used).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Targets: MI300X/MI300A/MI325X (gfx942), MI350X/MI355X (gfx950), MI200 (gfx90a).
const ARCHS: &[&str] = &["gfx90a", "gfx942", "gfx950"];

const SOURCES: &[&str] = &["normkit.hip", "platform.h", "params.h", "norm.h", "kernels.def"];

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
        return if runs(&c) {
            Ok(Compiler::Freestanding(c))
        } else {
            Err(format!("NORMKIT_HIP_CLANG={} does not run", c.display()))
        };
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

fn compile(compiler: &Compiler, arch: &str, src: &Path, out: &Path) -> Result<(), String> {
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
    cmd.args(["--no-gpu-bundle-output", "-mcode-object-version=5", "-O3", "-std=c++17"])
        .arg(format!("--offload-arch={arch}"))
        .arg("-o")
        .arg(out)
        .arg(src);
    let o = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{cmd:?} failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}

/// `(macro, args)` of every entry in kernels.def.
fn parse_list(text: &str) -> Vec<(String, Vec<String>)> {
    let mut v = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        let (Some(open), Some(close)) = (line.find('('), line.rfind(')')) else {
            panic!("kernels.def: cannot parse `{line}`");
        };
        let mac = line[..open].trim().to_string();
        let args: Vec<String> = line[open + 1..close].split(',').map(|a| a.trim().to_string()).collect();
        let want = match mac.as_str() {
            "NK_FWD" => 4,
            "NK_BWD" => 3,
            "NK_FIN" => 1,
            other => panic!("kernels.def: unknown entry {other}"),
        };
        assert_eq!(args.len(), want, "kernels.def: `{line}` needs {want} dtypes");
        for a in &args {
            assert!(["f32", "f16", "bf16"].contains(&a.as_str()), "kernels.def: bad dtype {a}");
        }
        v.push((mac, args));
    }
    v
}

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let kdir = manifest.join("../../kernels-hip");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", kdir.join(s).display());
    }
    for v in ["NORMKIT_HIP_CLANG", "ROCM_PATH"] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    let list = fs::read_to_string(kdir.join("kernels.def")).expect("kernels-hip/kernels.def is readable");
    let entries = parse_list(&list);

    let compiler = match find_compiler() {
        Ok(c) => c,
        Err(e) => panic!("normkit-hip: {e}"),
    };
    let (compiler_name, compiler_path) = match &compiler {
        Compiler::Freestanding(c) => ("clang freestanding", c.display().to_string()),
        Compiler::Hipcc(h) => ("hipcc --genco", h.display().to_string()),
    };

    // One compiler process per target, in parallel (~20 s each for clang-22 at -O3).
    let src = kdir.join("normkit.hip");
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = ARCHS
            .iter()
            .map(|arch| {
                let out = out_dir.join(format!("normkit_{arch}.hsaco"));
                let (compiler, src) = (&compiler, &src);
                s.spawn(move || compile(compiler, arch, src, &out))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("compiler thread panicked".into()))).collect()
    });
    for r in results {
        if let Err(e) = r {
            panic!("normkit-hip: {e}");
        }
    }

    let mut rs = String::new();
    let _ = writeln!(rs, "// Generated by crates/normkit-hip/build.rs from kernels-hip/kernels.def. Do not edit.");
    let _ = writeln!(rs, "/// How the code objects were compiled.");
    let _ = writeln!(rs, "pub const COMPILER: &str = {:?};", format!("{compiler_name} ({compiler_path})"));
    let _ = writeln!(rs, "/// `(arch, code object)` for every target, raw AMDGPU ELF.");
    let _ = writeln!(rs, "pub static CODE_OBJECTS: &[(&str, &[u8])] = &[");
    for arch in ARCHS {
        let _ = writeln!(rs, "    ({arch:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/normkit_{arch}.hsaco\"))),");
    }
    let _ = writeln!(rs, "];");
    let ids = |a: &[String]| a.join("_");
    let mut names = Vec::new();
    let (mut fwd, mut bwd, mut fin) = (Vec::new(), Vec::new(), Vec::new());
    for (mac, args) in &entries {
        let tuple = args.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
        match mac.as_str() {
            "NK_FWD" => {
                for k in ["fwd_row", "fwd_split_stats", "fwd_split_apply"] {
                    names.push(format!("nk_{k}_{}", ids(args)));
                }
                fwd.push(format!("[{tuple}]"));
            }
            "NK_BWD" => {
                for k in ["bwd_row", "bwd_split_sums", "bwd_split_apply"] {
                    names.push(format!("nk_{k}_{}", ids(args)));
                }
                bwd.push(format!("[{tuple}]"));
            }
            _ => {
                names.push(format!("nk_bwd_finalize_{}", ids(args)));
                fin.push(format!("{tuple}"));
            }
        }
    }
    let _ = writeln!(rs, "/// Forward dtype combos `[x, weight, residual, y]`.");
    let _ = writeln!(rs, "pub const FWD_COMBOS: &[[&str; 4]] = &[{}];", fwd.join(", "));
    let _ = writeln!(rs, "/// Backward dtype combos `[x, weight, dy]`.");
    let _ = writeln!(rs, "pub const BWD_COMBOS: &[[&str; 3]] = &[{}];", bwd.join(", "));
    let _ = writeln!(rs, "/// Finalize weight dtypes.");
    let _ = writeln!(rs, "pub const FIN_DTYPES: &[&str] = &[{}];", fin.join(", "));
    let _ = writeln!(rs, "/// Every kernel symbol every code object must export.");
    let _ = writeln!(rs, "pub const KERNELS: &[&str] = &[");
    for n in &names {
        let _ = writeln!(rs, "    {n:?},");
    }
    let _ = writeln!(rs, "];");
    fs::write(out_dir.join("kernels.rs"), rs).expect("OUT_DIR is writable");
}
