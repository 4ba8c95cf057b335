//! What can be checked about the GPU kernels without a GPU: which architectures the build
//! embedded, and a look at the machine code (wide loads and stores, the rsqrt instruction,
//! stack use on NVIDIA; wide loads, cross-lane reductions and wavefront 64 on AMD).

use crate::util;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest `OUT_DIR` of a build script's crate under `<target>/<profile>/build/`.
/// The newest build-script output folder of `krate` that holds kernels: builds with
/// `NORMKIT_KERNELS=skip` (test-all's candle type-check, clippy) write empty placeholders, which
/// say nothing about the kernels and are passed over.
pub(crate) fn newest_out_dir(target: &Path, profile: &str, krate: &str) -> Option<PathBuf> {
    let build = target.join(profile).join("build");
    std::fs::read_dir(build)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{krate}-")))
        .map(|e| e.path().join("out"))
        .filter(|p| p.is_dir() && holds_kernels(p))
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

/// Whether `dir` has a non-empty fatbin, cubin or code object.
fn holds_kernels(dir: &Path) -> bool {
    files_with_ext(dir, &["fatbin", "cubin", "hsaco"]).iter().any(|f| f.metadata().is_ok_and(|m| m.len() > 0))
}

fn files_with_ext(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| exts.iter().any(|e| x == *e))).collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// One line about the CUDA kernels of the last release build.
pub fn cuda(target: &Path, cuobjdump: Option<&Path>) -> String {
    let Some(out) = newest_out_dir(target, "release", "normkit-cuda") else {
        return "no CUDA kernels built".into();
    };
    let bins = files_with_ext(&out, &["fatbin", "cubin"]);
    let Some(bin) = bins.first() else {
        return format!("no fatbin in {}", out.display());
    };
    let Some(cuobjdump) = cuobjdump else {
        return format!("{} built ({} KiB); cuobjdump missing, not inspected", bin.display(), file_kib(bin));
    };
    let list = util::output(Command::new(cuobjdump).args(["--list-elf", "--list-ptx"]).arg(bin)).unwrap_or_default();
    let mut archs: Vec<String> = list
        .lines()
        .filter_map(|l| l.rsplit('.').nth(1).map(|a| if l.contains("PTX") { a.replace("sm_", "compute_") } else { a.to_string() }))
        .collect();
    archs.dedup();
    // Every fatbin of the build (normkit.fatbin and the second unit's normkit_fp8t.fatbin).
    let dump = |flag: &str| -> String {
        bins.iter().map(|b| util::output(Command::new(cuobjdump).arg(flag).arg(b)).unwrap_or_default()).collect::<Vec<_>>().join("\n")
    };
    let sass = dump("--dump-sass");
    let res = dump("--dump-resource-usage");
    let kernels = count(&res, "Function ");
    let max_stack = res.split("STACK:").skip(1).filter_map(|s| s.split_whitespace().next()?.parse::<u32>().ok()).max().unwrap_or(0);
    format!(
        "kernels compiled for {} ({kernels} kernel entries over all archs); SASS: {} LDG.E.128, {} STG.E.128, {} MUFU.RSQ; max stack {max_stack} B",
        if archs.is_empty() { "?".into() } else { archs.join(", ") },
        count(&sass, "LDG.E.128"),
        count(&sass, "STG.E.128"),
        count(&sass, "MUFU.RSQ"),
    )
}

/// One line about the HIP code objects of the last release build.
pub fn hip(target: &Path, objdump: Option<&Path>) -> String {
    let Some(out) = newest_out_dir(target, "release", "normkit-hip") else {
        return "no HIP code objects built".into();
    };
    let objs = files_with_ext(&out, &["hsaco", "co"]);
    if objs.is_empty() {
        return format!("no code objects in {}", out.display());
    }
    // (arch, what was found): archs with identical findings are reported together
    let mut parts: Vec<(String, String)> = Vec::new();
    for obj in &objs {
        let bytes = std::fs::read(obj).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let arch = ["gfx942", "gfx950", "gfx90a", "gfx1100"]
            .into_iter()
            .find(|a| text.contains(&format!("amdhsa--{a}")))
            .unwrap_or("unknown arch");
        let Some(objdump) = objdump else {
            parts.push((arch.to_string(), format!("{} KiB, not disassembled (llvm-objdump-22 missing)", file_kib(obj))));
            continue;
        };
        let asm = util::output(Command::new(objdump).arg("-d").arg(obj)).unwrap_or_default();
        // llvm-readelf sits beside llvm-objdump (same LLVM version suffix).
        let readelf = objdump.to_string_lossy().replace("llvm-objdump", "llvm-readelf");
        let notes = util::output(Command::new(readelf).arg("--notes").arg(obj)).unwrap_or_default();
        let waves: Vec<&str> = notes.lines().filter_map(|l| l.trim().strip_prefix(".wavefront_size:")).map(str::trim).collect();
        let wave = match (waves.first(), waves.iter().all(|w| Some(w) == waves.first())) {
            (Some(w), true) => format!(", wavefront {w} in all {} kernels", waves.len()),
            (Some(_), false) => format!(", mixed wavefront sizes {waves:?}"),
            (None, _) => String::new(),
        };
        parts.push((
            arch.to_string(),
            format!(
                "{} global_load_dwordx4, {} global_store_dwordx4, {} ds_bpermute/DPP, {} v_rsq_f32, {} v_sqrt_f32{}",
                count(&asm, "global_load_dwordx4"),
                count(&asm, "global_store_dwordx4"),
                count(&asm, "ds_bpermute_b32")
                    + count(&asm, "row_shr")
                    + count(&asm, "row_bcast")
                    + count(&asm, "quad_perm")
                    + count(&asm, "DPP"),
                count(&asm, "v_rsq_f32"),
                count(&asm, "v_sqrt_f32"),
                wave
            ),
        ));
    }
    let mut groups: Vec<(Vec<String>, String)> = Vec::new();
    for (arch, found) in parts {
        match groups.iter_mut().find(|g| g.1 == found) {
            Some(g) => g.0.push(arch),
            None => groups.push((vec![arch], found)),
        }
    }
    let text: Vec<String> = groups.into_iter().map(|(archs, found)| format!("{}: {found}", archs.join(", "))).collect();
    format!("{} code objects — {}", objs.len(), text.join("; "))
}

fn file_kib(p: &Path) -> u64 {
    p.metadata().map(|m| m.len() / 1024).unwrap_or(0)
}
