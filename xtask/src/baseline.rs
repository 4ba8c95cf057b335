//! The previous build beside the working tree, for the two checks every kernel change is
//! committed with:
//!
//! - `cargo xtask sass-diff REV [--arch sm_90a] [--hip]`: the CUDA kernels' SASS of commit REV
//!   against the working tree's, kernel by kernel, instructions compared without their addresses —
//!   what a change that claims to be neutral must show (identical), and what a kernel change
//!   touched; with `--hip` also the HIP kernels' ISA in the gfx90a, gfx942 and gfx950 code objects
//!   (kernels-common is shared: a change there is neutral only if both are);
//! - `cargo xtask gpu-bundle --baseline REV`: REV's kernels and planner with the working tree's
//!   benchmark runner (`benches/`), as `bin/normkit-bench-base`, so that an A/B in one device
//!   call times both builds with graphs of the same length and the same set policy.
//!
//! REV is checked out as a detached git worktree under `target/xtask/rev-<hash>` and built in its
//! own target folder there; both are kept for the next run.

use crate::util;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The full hash of `rev` (any commit-ish git understands).
fn resolve(root: &Path, rev: &str) -> Result<String, String> {
    let mut c = Command::new("git");
    c.current_dir(root).args(["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]);
    util::output(&mut c)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("`{rev}` is not a commit of this repository"))
}

/// A detached worktree of `rev` (made once, reused), and its hash.
fn worktree(root: &Path, rev: &str) -> Result<(PathBuf, String), String> {
    let hash = resolve(root, rev)?;
    let dir = util::target_dir().join("xtask").join(format!("rev-{}", &hash[..12]));
    if !dir.join("Cargo.toml").is_file() {
        let _ = fs::remove_dir_all(&dir);
        let mut prune = Command::new("git");
        prune.current_dir(root).args(["worktree", "prune"]);
        let _ = util::output(&mut prune);
        let mut c = Command::new("git");
        c.current_dir(root).args(["worktree", "add", "--detach"]).arg(&dir).arg(&hash);
        util::run(&mut c)?;
    }
    Ok((dir, hash))
}

/// Builds crate `krate` in release mode in `tree` (target folder `target`, `env` set) and returns
/// its build-script output folder with the kernels ([`crate::gpu_check::newest_out_dir`]).
fn build_out(tree: &Path, target: &Path, krate: &str, env: &[(&str, &str)]) -> Result<PathBuf, String> {
    let mut c = util::cargo();
    c.current_dir(tree).args(["build", "--release", "-p", krate]).env("CARGO_TARGET_DIR", target).envs(env.iter().copied());
    util::run(&mut c)?;
    crate::gpu_check::newest_out_dir(target, "release", krate).ok_or_else(|| format!("no {krate} kernels under {}", target.display()))
}

/// Builds normkit-cuda's fatbins for `arch` in `tree` (target folder `target`) and returns them:
/// `normkit.fatbin`, and `normkit_fp8t.fatbin` where the revision has that second unit.
fn fatbin(tree: &Path, target: &Path, arch: &str) -> Result<Vec<PathBuf>, String> {
    let out = build_out(tree, target, "normkit-cuda", &[("NORMKIT_CUDA_ARCHS", arch)])?;
    Ok(["normkit.fatbin", "normkit_fp8t.fatbin"].iter().map(|f| out.join(f)).filter(|p| p.is_file()).collect())
}

/// Kernel name → its instructions, from a disassembly listing: `header` names the function a
/// line opens, `instruction` gives a line's instruction (without address or encoding) or `None`.
fn split_functions(
    text: &str,
    header: impl Fn(&str) -> Option<&str>,
    instruction: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(name) = header(line) {
            if let Some((k, v)) = cur.replace((name.to_string(), Vec::new())) {
                out.insert(k, v);
            }
        } else if let (Some((_, body)), Some(ins)) = (cur.as_mut(), instruction(line)) {
            body.push(ins);
        }
    }
    if let Some((k, v)) = cur {
        out.insert(k, v);
    }
    out
}

/// Kernel name → its instructions, from `cuobjdump -sass` output: the opcode and operands of
/// each instruction, without the address and the encoding comments (so that a kernel moved in
/// the file but not changed compares equal).
pub fn parse_sass(text: &str) -> BTreeMap<String, Vec<String>> {
    split_functions(
        text,
        |line| line.trim().strip_prefix("Function : ").map(str::trim),
        |line| {
            // `/*0070*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;   /* 0x... */`
            let (addr, ins) = line.trim().strip_prefix("/*")?.split_once("*/")?;
            if addr.len() < 4 || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            Some(ins.split_once(';')?.0.split_whitespace().collect::<Vec<_>>().join(" "))
        },
    )
}

/// Kernel name → its instructions, from `llvm-objdump -d --no-show-raw-insn` of an AMDGPU code
/// object: each instruction without its address comment (branches are relative, so a kernel moved
/// in the file compares equal).
pub fn parse_amdgpu(text: &str) -> BTreeMap<String, Vec<String>> {
    split_functions(
        text,
        // `000000000001ca00 <nk_fwd_row_a>:`
        |line| {
            let (addr, name) = line.strip_suffix(">:")?.split_once(" <")?;
            addr.chars().all(|c| c.is_ascii_hexdigit()).then_some(name)
        },
        |line| {
            let ins = line.strip_prefix('\t')?.split("//").next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
            (!ins.is_empty()).then_some(ins)
        },
    )
}

/// Builds normkit-hip in `tree` (target folder `target`) and returns its code objects by target.
fn hip_objects(tree: &Path, target: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let out = build_out(tree, target, "normkit-hip", &[])?;
    Ok(["gfx90a", "gfx942", "gfx950"].iter().map(|g| (g.to_string(), out.join(format!("normkit_{g}.hsaco")))).collect())
}

fn isa_of(object: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let objdump = util::which("llvm-objdump-22").ok_or("llvm-objdump-22 not found (run `cargo xtask toolchains`)")?;
    let mut c = Command::new(objdump);
    c.args(["-d", "--no-show-raw-insn"]).arg(object);
    let text = util::output(&mut c).ok_or_else(|| format!("`{}` failed", util::show(&c)))?;
    let k = parse_amdgpu(&text);
    if k.is_empty() {
        return Err(format!("no kernels in {}", object.display()));
    }
    Ok(k)
}

/// The comparison of two kernel sets, as text: counts, then each kernel that differs with its
/// instruction counts, then the kernels on one side only.
pub fn compare(old: &BTreeMap<String, Vec<String>>, new: &BTreeMap<String, Vec<String>>) -> (String, usize) {
    let same = old.iter().filter(|(k, v)| new.get(*k) == Some(v)).count();
    let diff: Vec<&String> = old.keys().filter(|k| new.get(*k).is_some_and(|v| v != &old[*k])).collect();
    let only_old: Vec<&String> = old.keys().filter(|k| !new.contains_key(*k)).collect();
    let only_new: Vec<&String> = new.keys().filter(|k| !old.contains_key(*k)).collect();
    let mut s = format!(
        "kernels: old {}, new {}; identical {same}; different {}; only old {}; only new {}\n",
        old.len(),
        new.len(),
        diff.len(),
        only_old.len(),
        only_new.len()
    );
    for k in &diff {
        s.push_str(&format!("  differs: {k} ({} -> {} instructions)\n", old[*k].len(), new[*k].len()));
    }
    for k in &only_old {
        s.push_str(&format!("  only old: {k}\n"));
    }
    for k in &only_new {
        s.push_str(&format!("  only new: {k}\n"));
    }
    (s, diff.len() + only_old.len() + only_new.len())
}

fn sass_of(fatbins: &[PathBuf], arch: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    let cuobjdump = crate::toolchains::cuobjdump_path();
    let mut all = BTreeMap::new();
    for fatbin in fatbins {
        let mut c = Command::new(&cuobjdump);
        c.args(["-sass", "-arch", arch]).arg(fatbin);
        let text = util::output(&mut c).ok_or_else(|| format!("`{}` failed (run `cargo xtask toolchains`)", util::show(&c)))?;
        let k = parse_sass(&text);
        if k.is_empty() {
            return Err(format!("no {arch} kernels in {}", fatbin.display()));
        }
        all.extend(k);
    }
    Ok(all)
}

/// `cargo xtask sass-diff REV [--arch ARCH] [--out FILE]`.
pub fn sass_diff(args: &[String]) -> Result<(), String> {
    let usage = "usage: cargo xtask sass-diff REV [--arch sm_90a|sm_100a] [--hip] [--out FILE]";
    let (mut rev, mut arch, mut out, mut hip) = (None, "sm_90a".to_string(), None, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--arch" => arch = it.next().ok_or(usage)?.clone(),
            "--out" => out = Some(PathBuf::from(it.next().ok_or(usage)?)),
            "--hip" => hip = true,
            s if s.starts_with("--") || rev.is_some() => return Err(usage.into()),
            s => rev = Some(s.to_string()),
        }
    }
    let rev = rev.ok_or(usage)?;
    if !matches!(arch.as_str(), "sm_90a" | "sm_100a") {
        return Err(format!("--arch: sm_90a or sm_100a, not `{arch}`"));
    }
    let root = util::root();
    let (tree, hash) = worktree(&root, &rev)?;
    util::phase(&format!("{arch} kernels of {}", &hash[..12]));
    let old = sass_of(&fatbin(&tree, &tree.join("target"), &arch)?, &arch)?;
    util::phase(&format!("{arch} kernels of the working tree"));
    let new = sass_of(&fatbin(&root, &util::target_dir().join("xtask/head"), &arch)?, &arch)?;
    let (text, mut changed) = compare(&old, &new);
    let mut report = format!(
        "# {arch} SASS of {} (old) against the working tree (new), instruction by instruction without addresses\n{text}",
        &hash[..12]
    );
    if hip {
        util::phase(&format!("HIP code objects of {}", &hash[..12]));
        let olds = hip_objects(&tree, &tree.join("target"))?;
        util::phase("HIP code objects of the working tree");
        let news = hip_objects(&root, &util::target_dir().join("xtask/head"))?;
        for ((gfx, o), (_, n)) in olds.iter().zip(&news) {
            let (text, c) = compare(&isa_of(o)?, &isa_of(n)?);
            report.push_str(&format!("# {gfx} ISA, the same comparison (llvm-objdump-22 -d)\n{text}"));
            changed += c;
        }
    }
    print!("{report}");
    if let Some(p) = out {
        fs::write(&p, &report).map_err(|e| format!("write {}: {e}", p.display()))?;
    }
    println!("{}", if changed == 0 { "every kernel identical" } else { "some kernels differ (listed above)" });
    Ok(())
}

/// Copies `from` over `to`, file by file (folders made as needed).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    for e in fs::read_dir(from).map_err(|e| format!("read {}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(|err| format!("copy {} -> {}: {err}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// The bench binary of `rev` with the working tree's runner: `benches/` of the working tree
/// over REV's worktree (its other crates, kernels and planner untouched), built there. Returns
/// the executable and REV's short hash.
pub fn bench_binary(rev: &str) -> Result<(PathBuf, String), String> {
    let root = util::root();
    let (tree, hash) = worktree(&root, rev)?;
    // Reset REV's own benches/ first, so a second run starts from REV again.
    let mut reset = Command::new("git");
    reset.current_dir(&tree).args(["checkout", "--", "benches"]);
    util::run(&mut reset)?;
    copy_tree(&root.join("benches"), &tree.join("benches"))?;
    let target = tree.join("target");
    let exes = crate::gpu_bundle::cargo_executables_with(
        &tree,
        &["build", "--release", "-p", "normkit-benches", "--features", "cuda", "--bin", "normkit-bench"],
        &|c| {
            c.env("CARGO_TARGET_DIR", &target);
            util::with_tools_env(c);
        },
    )
    .map_err(|e| format!("{e}\n(REV's crates may predate the working tree's runner: pick a later REV)"))?;
    let (_, exe) = exes.into_iter().find(|(n, _)| n == "normkit-bench").ok_or("cargo reported no normkit-bench executable")?;
    Ok((exe, hash[..12].to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "
\tcode for sm_90a
\t\tFunction : nk_a
\t.headerflags\t@\"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* 0x00000a00ff017b82 */
                                                                              /* 0x000fe20000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                        /* 0x0000000000007919 */
        /*0020*/                   EXIT ;                                    /* 0x000000000000794d */
\t\t..........

\t\tFunction : nk_b
        /*0000*/                   MOV R2, 0x1 ;
        /*0010*/                   EXIT ;
";

    const AMD: &str = "
target/x/normkit_gfx942.hsaco:\tfile format elf64-amdgpu

Disassembly of section .text:

000000000001ca00 <nk_fwd_row_a>:
\ts_load_dwordx4 s[56:59], s[2:3], 0xa0                      // 00000001CA00: C00A0E01 000000A0
\ts_cbranch_scc1 12                                          // 00000001CA08: BF85000C
\ts_endpgm                                                   // 00000001CA0C: BF810000

000000000001cb00 <nk_bwd_row_a>:
\tv_mov_b32_e32 v1, 0                                        // 00000001CB00: 7E020280
";

    #[test]
    fn amdgpu_isa_is_compared_without_addresses() {
        let a = parse_amdgpu(AMD);
        assert_eq!(a["nk_fwd_row_a"], vec!["s_load_dwordx4 s[56:59], s[2:3], 0xa0", "s_cbranch_scc1 12", "s_endpgm"]);
        assert_eq!(a.len(), 2);
        let moved =
            AMD.replace("00000001CA08", "00000002CA08").replace("000000000001cb00", "000000000002cb00").replace("x/normkit", "y/normkit");
        assert_eq!(compare(&a, &parse_amdgpu(&moved)).1, 0);
        let changed = AMD.replace("v_mov_b32_e32 v1, 0", "v_mov_b32_e32 v1, 1");
        let (text, n) = compare(&a, &parse_amdgpu(&changed));
        assert_eq!(n, 1);
        assert!(text.contains("  differs: nk_bwd_row_a (1 -> 1 instructions)"), "{text}");
    }

    #[test]
    fn sass_is_compared_without_addresses() {
        let old = parse_sass(OLD);
        assert_eq!(old["nk_a"], vec!["LDC R1, c[0x0][0x28]", "S2R R0, SR_TID.X", "EXIT"]);
        assert_eq!(old["nk_b"].len(), 2);
        // The same kernels at other addresses and with other spacing: identical.
        let moved = OLD.replace("/*0010*/", "/*0110*/").replace("S2R R0,", "S2R  R0,");
        let (text, changed) = compare(&old, &parse_sass(&moved));
        assert_eq!(changed, 0, "{text}");
        assert!(text.starts_with("kernels: old 2, new 2; identical 2; different 0; only old 0; only new 0"));
        // A changed operand, a kernel gone and one added.
        let new = OLD.replace("MOV R2, 0x1", "MOV R2, 0x2").replace("nk_a", "nk_c");
        let (text, changed) = compare(&old, &parse_sass(&new));
        assert_eq!(changed, 3);
        assert!(text.contains("identical 0; different 1; only old 1; only new 1"), "{text}");
        assert!(text.contains("  differs: nk_b (2 -> 2 instructions)\n  only old: nk_a\n  only new: nk_c\n"), "{text}");
    }
}
