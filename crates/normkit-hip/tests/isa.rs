//! ISA checks of every embedded code object (gfx90a, gfx942, gfx950), run on every CI run, no
//! GPU needed: build.rs compiled every kernel for every target; this test reads the results.
//!
//! Two independent readers:
//! - normkit-hip's own std-only ELF reader (kernel descriptors: wavefront size, scratch,
//!   allocated VGPRs, kernarg size), the one the backend uses at start-up;
//! - LLVM's tools: `llvm-readelf --notes` (the code-object metadata: `.vgpr_count`,
//!   `.agpr_count`, `.private_segment_fixed_size`, spill counts, `.wavefront_size`) and
//!   `llvm-objdump -d` (the instructions of each kernel).
//!
//! Fails if any kernel regresses: scratch or VGPR spills appear, the wavefront is not 64, VGPRs exceed
//! the budget of the occupancy the kernel is designed for (`config::designed_waves`), or a 16-byte
//! kernel stops moving its tensors with `global_load_dwordx4` / `global_store_dwordx4`. The FP8
//! kernels (`nk_fwd_q_*`), in addition: the quantising ones convert with the hardware's
//! `v_cvt_pk_fp8_f32` and `v_cvt_pk_bf8_f32` on gfx942 (fnuz formats) and gfx950 (OCP formats),
//! and store y_q 8 bytes at a time (`global_store_dwordx2`) on the 16-byte path; the row kernels
//! stage their fused transposed tile in LDS (`ds_write2_b32` / `ds_write_b64` of a chunk's 8
//! bytes) and the separate transpose reads and writes its LDS tile.
//!
//! Tools: `NORMKIT_LLVM_OBJDUMP` / `NORMKIT_LLVM_READELF`, else `llvm-objdump-22` /
//! `llvm-readelf-22` (installed with clang-22 by `cargo xtask toolchains`), else
//! `$ROCM_PATH/llvm/bin/llvm-objdump` / `llvm-readelf`.

use normkit_hip::config::{occupancy, vgpr_budget};
use normkit_hip::{elf, kernels};
use std::collections::HashMap;
use std::mem::size_of;
use std::path::PathBuf;
use std::process::Command;

/// Least number of 16-byte global loads / stores each aligned (16-byte path) kernel must
/// contain: at least one per tensor it streams (kernels-common's loops over chunks are not
/// unrolled, and f32 takes two per chunk, so real counts are higher). Below these a tensor has
/// fallen off the 16-byte path.
const VECTOR_ACCESS: &[(&str, usize, usize)] = &[
    // x, residual, weight, bias staged in; y and residual_out out.
    ("nk_fwd_row_a", 4, 2),
    ("nk_fwd_row_ah", 4, 2),
    // x and residual in; residual_out out.
    ("nk_fwd_split_stats_a", 2, 1),
    ("nk_fwd_split_stats_ah", 2, 1),
    // x, dy, d_residual_out, weight in; dx out.
    ("nk_bwd_row_a", 4, 1),
    ("nk_bwd_row_ah", 4, 1),
    // x, dy, weight in; only per-row sums out.
    ("nk_bwd_split_stats_a", 3, 0),
    ("nk_bwd_split_stats_ah", 3, 0),
    // x, dy, weight, d_residual_out in; dx out.
    ("nk_bwd_split_apply_pre_a", 4, 1),
    ("nk_bwd_split_apply_pre_ah", 4, 1),
    // h, weight, bias in; y out.
    ("nk_fwd_split_apply_pre_a", 3, 1),
    ("nk_fwd_split_apply_pre_ah", 3, 1),
    // FP8, long rows: h, weight, bias in; y_q out 8 bytes at a time (FP8_Q8_STORES).
    ("nk_fwd_q_split_amax_a", 3, 0),
    ("nk_fwd_q_split_amax_ah", 3, 0),
    ("nk_fwd_q_split_apply_a", 3, 0),
    ("nk_fwd_q_split_apply_ah", 3, 0),
];

/// The FP8 kernels that store y_q with 8-byte `global_store_dwordx2` on the 16-byte path: the
/// aligned row kernels and split apply kernels.
fn q8_stores(name: &str) -> bool {
    name.starts_with("nk_fwd_q_") && !name.contains("amax") && (name.ends_with("_a") || name.ends_with("_ah"))
}

/// The FP8 kernels that quantise (and so convert f32 to FP8): the row and split apply kernels.
fn quantises(name: &str) -> bool {
    name.starts_with("nk_fwd_q_row") || name.starts_with("nk_fwd_q_split_apply")
}

/// The floors of a kernel: its VECTOR_ACCESS entry, or for the register-resident aligned kernels
/// x and the weight in (plus the residual), y out (plus residual_out) / dx out.
fn floors(name: &str) -> Option<(usize, usize)> {
    if let Some(&(_, l, s)) = VECTOR_ACCESS.iter().find(|(n, ..)| *n == name) {
        return Some((l, s));
    }
    let res = name.contains("_res");
    if name.starts_with("nk_fwd_reg_") && name.ends_with("_a") {
        return Some(if res { (3, 2) } else { (2, 1) });
    }
    // FP8 rows: x and the weight (plus the residual) in, residual_out out; y_q: FP8_Q8_STORES.
    if name.starts_with("nk_fwd_q_row") && (name.ends_with("_a") || name.ends_with("_ah")) {
        return Some(if res { (3, 1) } else { (2, 0) });
    }
    if name.starts_with("nk_bwd_reg") {
        return Some(if res { (3, 1) } else { (2, 1) });
    }
    None
}

fn tool(env: &str, versioned: &str, rocm: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    if Command::new(versioned).arg("--version").output().map(|o| o.status.success()).unwrap_or(false) {
        return PathBuf::from(versioned);
    }
    if let Some(r) = std::env::var_os("ROCM_PATH") {
        let p = PathBuf::from(r).join("llvm/bin").join(rocm);
        if p.is_file() {
            return p;
        }
    }
    panic!("{versioned} not found (set {env}, or run `cargo xtask toolchains` to install clang-22 and its LLVM tools)");
}

fn run(cmd: &PathBuf, args: &[&str], file: &PathBuf) -> String {
    let out = Command::new(cmd).args(args).arg(file).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", cmd.display()));
    assert!(out.status.success(), "{} {args:?} failed: {}", cmd.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The metadata of each kernel: `key -> value` of the `amdhsa.kernels` entries (flat keys).
fn metadata(notes: &str) -> HashMap<String, HashMap<String, String>> {
    let mut all = HashMap::new();
    let Some(start) = notes.find("amdhsa.kernels:") else { return all };
    for entry in notes[start..].split("\n  - ").skip(1) {
        let mut kv = HashMap::new();
        for line in entry.lines() {
            let l = line.trim_start_matches([' ', '-']);
            if let Some((k, v)) = l.split_once(':') {
                if k.starts_with('.') && !v.trim().is_empty() {
                    kv.entry(k.to_string()).or_insert_with(|| v.trim().to_string());
                }
            }
        }
        if let Some(name) = kv.get(".name").cloned() {
            all.insert(name, kv);
        }
    }
    all
}

/// The disassembly of each function.
fn functions(disasm: &str) -> HashMap<String, String> {
    let mut map: HashMap<String, String> = HashMap::new();
    let mut cur: Option<String> = None;
    for line in disasm.lines() {
        if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")).map(|(_, n)| n.to_string()) {
            cur = Some(name);
            continue;
        }
        if let Some(c) = &cur {
            let body = map.entry(c.clone()).or_default();
            body.push_str(line);
            body.push('\n');
        }
    }
    map
}

fn count(body: &str, insn: &str) -> usize {
    body.lines().filter(|l| l.split_whitespace().next() == Some(insn)).count()
}

#[test]
fn every_kernel_of_every_target_passes_the_isa_checks() {
    let objdump = tool("NORMKIT_LLVM_OBJDUMP", "llvm-objdump-22", "llvm-objdump");
    let readelf = tool("NORMKIT_LLVM_READELF", "llvm-readelf-22", "llvm-readelf");
    let dir = std::env::temp_dir().join(format!("normkit-hip-isa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut failures = Vec::new();
    let mut report = String::new();
    assert!(kernels::CODE_OBJECTS.len() >= 2, "gfx942 and gfx950 at least");
    for want in ["gfx942", "gfx950"] {
        assert!(kernels::code_object(want).is_some(), "no code object for {want}");
    }
    for &(arch, bytes) in kernels::CODE_OBJECTS {
        let co = elf::parse(bytes).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(co.arch(), Some(arch), "{arch}: e_flags machine");
        let path = dir.join(format!("{arch}.hsaco"));
        std::fs::write(&path, bytes).expect("write code object");
        let meta = metadata(&run(&readelf, &["--notes"], &path));
        let funcs = functions(&run(&objdump, &["-d"], &path));
        report.push_str(&format!("{arch} ({})\n", kernels::COMPILER));
        for k in kernels::KERNELS {
            let mut fail = |msg: String| failures.push(format!("{arch} {}: {msg}", k.name));
            let Some(desc) = co.kernel(k.name) else {
                fail("missing from the symbol table".into());
                continue;
            };
            let Some(md) = meta.get(k.name) else {
                fail("missing from the metadata notes".into());
                continue;
            };
            let num = |key: &str| md.get(key).and_then(|v| v.parse::<u32>().ok());
            let (vgpr, agpr) = (num(".vgpr_count").unwrap_or(u32::MAX), num(".agpr_count").unwrap_or(0));
            let waves = occupancy(k.name).unwrap_or(1);
            let budget = vgpr_budget(waves);
            // Descriptor (the hardware's view) and metadata must agree and both be within budget.
            if desc.wavefront_size != 64 || num(".wavefront_size") != Some(64) {
                fail(format!("wavefront {} / {:?}, want 64", desc.wavefront_size, md.get(".wavefront_size")));
            }
            if desc.private_segment_fixed_size != 0 || num(".private_segment_fixed_size") != Some(0) {
                fail(format!("scratch {} bytes per work-item (spills or stack)", desc.private_segment_fixed_size));
            }
            if num(".vgpr_spill_count").unwrap_or(0) != 0 {
                fail(format!(".vgpr_spill_count = {:?}", md.get(".vgpr_spill_count")));
            }
            // SGPR spills are allowed only into VGPR lanes (v_writelane / v_readlane, no memory):
            // the scratch check above fails if any reaches memory. The shared bodies keep every
            // dtype code, flag, stride and pointer in SGPRs, so clang-22 spills 8-75 of them on
            // the larger kernels; reported, not failed.
            let sgpr_spills = num(".sgpr_spill_count").unwrap_or(0);
            if desc.vgprs_allocated > budget || vgpr + agpr > budget {
                fail(format!(
                    "{vgpr} VGPRs + {agpr} AGPRs ({} allocated) exceed the budget {budget} of {waves} waves/SIMD",
                    desc.vgprs_allocated
                ));
            }
            if desc.vgprs_allocated < vgpr {
                fail(format!("descriptor allocates {} VGPRs but the metadata says {vgpr}", desc.vgprs_allocated));
            }
            let param_bytes = if k.bwd { size_of::<normkit_hip::params::BwdParams>() } else { size_of::<normkit_hip::params::FwdParams>() };
            if (desc.kernarg_size as usize) < param_bytes {
                fail(format!("kernarg {} bytes < {param_bytes}", desc.kernarg_size));
            }
            let body = funcs.get(k.name).map(String::as_str).unwrap_or("");
            let (ld, st) = (count(body, "global_load_dwordx4"), count(body, "global_store_dwordx4"));
            if body.contains("scratch_store") || body.contains("scratch_load") {
                fail("scratch instructions in the body".into());
            }
            if let Some((min_ld, min_st)) = floors(k.name) {
                if ld < min_ld || st < min_st {
                    fail(format!("{ld} global_load_dwordx4 / {st} global_store_dwordx4, want >= {min_ld} / {min_st}"));
                }
                // On the 16-byte path no tensor element is loaded on its own.
                let short = count(body, "global_load_ushort") + count(body, "global_load_short_d16");
                if short != 0 {
                    fail(format!("{short} element-wise 16-bit global loads on the 16-byte path"));
                }
            } else if k.aligned {
                fail("aligned kernel without an entry in VECTOR_ACCESS".into());
            }
            if k.name.starts_with("nk_fwd_row") || k.name.starts_with("nk_bwd_row") {
                // Rows are staged in LDS 16 bytes at a time.
                if count(body, "ds_write_b128") == 0 {
                    fail("row kernel without ds_write_b128: the LDS staging is gone".into());
                }
            }
            if k.name.contains("row") || k.name.contains("stats") || k.name.contains("_reg_") {
                // Cross-lane reductions go through ds_bpermute (the 64-lane xor shuffle).
                if count(body, "ds_bpermute_b32") == 0 {
                    fail("no ds_bpermute_b32: the wavefront reduction is gone".into());
                }
            }
            let mut fp8 = String::new();
            if k.name.starts_with("nk_fwd_q_") {
                let (c8, cb8) = (count(body, "v_cvt_pk_fp8_f32"), count(body, "v_cvt_pk_bf8_f32"));
                let st8 = count(body, "global_store_dwordx2");
                let tile_st = count(body, "ds_write2_b32") + count(body, "ds_write_b64");
                let lds_rd = count(body, "ds_read_b32") + count(body, "ds_read2_b32") + count(body, "ds_read_b64");
                let lds_wr = count(body, "ds_write_b32") + count(body, "ds_write_b8") + tile_st;
                if quantises(k.name) {
                    // gfx942 converts to e4m3fnuz / e5m2fnuz, gfx950 to e4m3 / e5m2 in hardware;
                    // gfx90a has no FP8 conversion (software for every format).
                    let hw = matches!(arch, "gfx942" | "gfx950");
                    if hw && (c8 == 0 || cb8 == 0) {
                        fail(format!("{c8} v_cvt_pk_fp8_f32 / {cb8} v_cvt_pk_bf8_f32: the hardware FP8 conversion is gone"));
                    }
                    if !hw && c8 + cb8 != 0 {
                        fail(format!("{c8} + {cb8} FP8 conversion instructions on a target without them"));
                    }
                }
                if q8_stores(k.name) && st8 == 0 {
                    fail("no global_store_dwordx2: y_q is no longer stored 8 bytes at a time".into());
                }
                if k.name.starts_with("nk_fwd_q_row") && (tile_st == 0 || lds_rd == 0) {
                    // The reductions write single words; a chunk's 8 bytes into the tile are the
                    // fused transpose.
                    fail(format!("{tile_st} ds_write2_b32 / ds_write_b64, {lds_rd} LDS reads: the fused transpose tile is gone"));
                }
                if k.name == "nk_fwd_q_transpose" && (lds_wr == 0 || lds_rd == 0 || desc.group_segment_fixed_size < 8 * 1024) {
                    fail(format!(
                        "{lds_wr} LDS writes / {lds_rd} reads, {} bytes of LDS: the staged tile is gone",
                        desc.group_segment_fixed_size
                    ));
                }
                fp8 = format!(" cvt fp8 {c8:>2} bf8 {cb8:>2} dwordx2 st {st8:>2} lds wr {lds_wr:>2} rd {lds_rd:>2}");
            }
            report.push_str(&format!(
                "  {:24} vgpr {vgpr:>3} agpr {agpr:>2} alloc {:>3}/{budget:<3} ({waves} w/SIMD) scratch {} sgpr-spill-to-vgpr {sgpr_spills:>2} lds {:>4} dwordx4 ld {ld:>3} st {st:>3}{fp8}\n",
                k.name, desc.vgprs_allocated, desc.private_segment_fixed_size, desc.group_segment_fixed_size
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{report}");
    assert!(failures.is_empty(), "ISA checks failed:\n{}\n\n{report}", failures.join("\n"));
}
