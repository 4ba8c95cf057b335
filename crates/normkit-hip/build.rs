//! Compiles kernels-hip/normkit.hip (the HIP platform header + the shared kernel bodies of
//! kernels-common) ahead of time, one code object per AMD target, and generates the Rust side of
//! the kernel list (kernels-hip/kernels.def). No run-time compilation.
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
//! Outputs in OUT_DIR: `normkit_<arch>.hsaco` (raw ELF code objects, embedded by
//! src/kernels.rs with `include_bytes!`) and `kernels.rs` (code objects, NK_CONST constants, the
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

fn compile(compiler: &Compiler, arch: &str, src: &Path, include: &Path, out: &Path) -> Result<(), String> {
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
        .arg("-I")
        .arg(include)
        .arg("-o")
        .arg(out)
        .arg(src);
    let o = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!("{cmd:?} failed:\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    }
    Ok(())
}

/// A kernel of kernels.def: symbol, aligned (16-byte accesses), narrow (16-bit tensors only),
/// SPEC of the register-resident kernels (-1 for the others), parameter struct, workgroup bound.
type Entry = (String, bool, bool, i32, String, u32);

/// The entries of kernels.def: `NK_CONST(name, value)` and either
/// `NK_KERNEL(symbol, impl, vec, params, max_threads)` (vec 8 = 16-byte accesses, 1 = scalar) or
/// `NK_KERNEL(symbol, impl, aligned, narrow, params, max_threads, min_blocks)`.
struct List {
    consts: Vec<(String, i64)>,
    kernels: Vec<Entry>,
}

fn parse_list(text: &str) -> List {
    let mut list = List { consts: Vec::new(), kernels: Vec::new() };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        let (Some(open), Some(close)) = (line.find('('), line.rfind(')')) else {
            panic!("kernels.def: cannot parse `{line}`");
        };
        let args: Vec<&str> = line[open + 1..close].split(',').map(str::trim).collect();
        match (&line[..open], args.as_slice()) {
            ("NK_CONST", [name, value]) => {
                let v = value.parse().unwrap_or_else(|_| panic!("kernels.def: `{line}`: not an integer"));
                list.consts.push((name.to_string(), v));
            }
            ("NK_KERNEL", [sym, _imp, vec, params, max]) => {
                let aligned = match *vec {
                    "8" => true,
                    "1" => false,
                    _ => panic!("kernels.def: `{line}`: vector width must be 8 or 1"),
                };
                let max = max.parse().unwrap_or_else(|_| panic!("kernels.def: `{line}`: bad thread count"));
                list.kernels.push((sym.to_string(), aligned, false, -1, params.to_string(), max));
            }
            ("NK_KERNEL", [sym, _imp, aligned, narrow, params, max, _min_blocks]) => {
                let flag = |v: &str| match v {
                    "true" => true,
                    "false" => false,
                    _ => panic!("kernels.def: `{line}`: expected true or false"),
                };
                let max = max.parse().unwrap_or_else(|_| panic!("kernels.def: `{line}`: bad thread count"));
                // The 4th argument is NARROW (true/false) or, for the register-resident kernels,
                // SPEC = dtype code + 4·LN + 8·residual (its dtype code says whether it is 16-bit).
                let (narrow, spec) = match narrow.parse::<i32>() {
                    Ok(spec) => (spec & 3 != 0, spec),
                    Err(_) => (flag(narrow), -1),
                };
                list.kernels.push((sym.to_string(), flag(aligned), narrow, spec, params.to_string(), max));
            }
            _ => panic!("kernels.def: cannot parse `{line}`"),
        }
    }
    list
}

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

    let def = fs::read_to_string(kdir.join("kernels.def")).expect("kernels-hip/kernels.def is readable");
    let list = parse_list(&def);

    if let Some(why) = lint_only() {
        println!("cargo:warning=normkit-hip: kernels not compiled ({why}); this build cannot run on a GPU");
        for arch in ARCHS {
            fs::write(out_dir.join(format!("normkit_{arch}.hsaco")), b"").expect("OUT_DIR is writable");
        }
        write_table(&out_dir, &list, "none (not compiled)", "");
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
                let (compiler, src, common) = (&compiler, &src, &common);
                s.spawn(move || compile(compiler, arch, src, common, &out))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("compiler thread panicked".into()))).collect()
    });
    for r in results {
        if let Err(e) = r {
            panic!("normkit-hip: {e}");
        }
    }

    write_table(&out_dir, &list, compiler_name, &compiler_path);
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

/// `kernels.rs` in OUT_DIR: the code objects, the constants and the kernel list.
fn write_table(out_dir: &Path, list: &List, compiler_name: &str, compiler_path: &str) {
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
    for (name, v) in &list.consts {
        let _ = writeln!(rs, "/// `{name}` of kernels.def.");
        let _ = writeln!(rs, "pub const {name}: usize = {v};");
    }
    for (i, (sym, aligned, narrow, spec, params, max)) in list.kernels.iter().enumerate() {
        let bwd = match params.as_str() {
            "NkFwdParams" => false,
            "NkBwdParams" => true,
            other => panic!("kernels.def: unknown parameter struct {other}"),
        };
        let _ = writeln!(rs, "/// The `{sym}` entry point.");
        let _ = writeln!(
            rs,
            "pub const {}: Kernel = Kernel {{ index: {i}, name: {sym:?}, aligned: {aligned}, narrow: {narrow}, spec: {spec}, max_threads: {max}, bwd: {bwd} }};",
            sym.to_uppercase()
        );
    }
    let _ = writeln!(rs, "/// Every kernel, in kernels.def order (`Kernel::index`).");
    let names: Vec<String> = list.kernels.iter().map(|k| k.0.to_uppercase()).collect();
    let _ = writeln!(rs, "pub const KERNELS: &[Kernel] = &[{}];", names.join(", "));
    fs::write(out_dir.join("kernels.rs"), rs).expect("OUT_DIR is writable");
}
