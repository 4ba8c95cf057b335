//! normkit's project tasks, run as `cargo xtask <task>` (the alias is in `.cargo/config.toml`).
//!
//! ```text
//! cargo xtask toolchains        install nvcc 13.0, cuobjdump, clang-22, chromium (idempotent)
//! cargo xtask test-all          toolchains, release build, every test; one line per backend
//! cargo xtask bench [ARGS]      provision, build and run the benchmark runner (`cargo xtask bench --help`)
//! cargo xtask report merge A.json B.json ... [--peers peers.json] --out DIR
//! cargo xtask kernels         inspect the GPU kernels of the last release build (no GPU needed)
//! cargo xtask gpu-bundle [--out DIR] [--candle] [--baseline REV]   the bundle of files to run the GPU suite on a GPU host
//! cargo xtask sass-diff REV [--arch sm_90a] [--hip] [--out FILE]   REV's GPU kernels' SASS / ISA against the working tree's
//! ```
//! Standard library only: the tasks shell out to cargo, pip, apt and the built tools.

mod baseline;
mod bench;
mod gpu_bundle;
mod gpu_check;
mod test_all;
mod toolchains;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>
  toolchains                   install nvcc 13.0 (PyPI), cuobjdump, clang-22/lld-22/llvm-22 and chromium (apt)
                               into ${NORMKIT_TOOLS:-~/.cache/normkit/tools}; skips what is present
  test-all                     toolchains, release build of the workspace, all tests and doctests;
                               prints one line per backend (ran / skipped and why) and the test counts
  bench [--backend L] [--ops L] [--dtypes L] [--shapes MxN,..] [--quick|--full] [--out DIR]
                               the main job: finds the GPUs here, installs their toolchains, builds and
                               runs normkit-bench; writes DIR/results.json, report.md, report.html
                               (`cargo xtask bench --help` for every option)
  report merge A.json [B.json ...] [--peers peers.json] --out DIR
                               one report from several machines' results and bench_peers.py output
  kernels                      what the last release build's GPU kernels hold (archs, ISA), no device needed
  gpu-bundle [--out DIR] [--candle] [--baseline REV]
                               package what a GPU host needs to build and test normkit (default gpu-bundle/);
                               --candle adds normkit-candle's CUDA tests, example and bench (bin/candle-*);
                               --baseline adds bin/normkit-bench-base: commit REV's kernels and planner with
                               this tree's benchmark runner, for an A/B in one device call
  sass-diff REV [--arch sm_90a|sm_100a] [--hip] [--out FILE]
                               the CUDA kernels' SASS of commit REV against the working tree's, kernel by
                               kernel without addresses (identical / differs / only on one side); --hip
                               adds the HIP kernels' ISA of the gfx90a, gfx942 and gfx950 code objects";

/// Rust ignores SIGPIPE, so `println!` into a closed pipe (`cargo xtask bench --help | head`)
/// panics; a command-line tool should end quietly instead, as with the default disposition.
#[cfg(unix)]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: restores the default action of SIGPIPE before any other thread exists; `signal` is
    // the C library's, which the standard library links on every unix target.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    default_sigpipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let result = match args.first().map(String::as_str) {
        Some("toolchains") => {
            let t = toolchains::provision();
            if t.problems.is_empty() {
                Ok(())
            } else {
                Err(format!("{} toolchain(s) could not be installed", t.problems.len()))
            }
        }
        Some("test-all") => test_all::run(),
        Some("bench") => bench::bench(rest),
        Some("report") => bench::report(rest),
        Some("gpu-bundle") => gpu_bundle_cmd(rest),
        Some("sass-diff") => baseline::sass_diff(rest),
        Some("kernels") => {
            let target = util::target_dir();
            println!("cuda: {}", gpu_check::cuda(&target, Some(&toolchains::cuobjdump_path())));
            println!("hip: {}", gpu_check::hip(&target, util::which("llvm-objdump-22").as_deref()));
            Ok(())
        }
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown task `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn gpu_bundle_cmd(args: &[String]) -> Result<(), String> {
    let mut out = util::root().join("gpu-bundle");
    let (mut candle, mut base) = (false, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(it.next().ok_or("--out needs a folder")?),
            "--candle" => candle = true,
            "--baseline" => base = Some(it.next().ok_or("--baseline needs a commit")?.clone()),
            _ => return Err("usage: cargo xtask gpu-bundle [--out DIR] [--candle] [--baseline REV]".into()),
        }
    }
    gpu_bundle::run(&util::root(), &out)?;
    if candle {
        gpu_bundle::candle(&util::root(), &out)?;
    }
    if let Some(rev) = base {
        gpu_bundle::baseline(&out, &rev)?;
    }
    gpu_bundle::report_size(&out);
    Ok(())
}

#[cfg(test)]
mod readme_tests {
    /// Every README code block marked `<!-- example: PATH -->` is exactly the file at PATH (an
    /// example that CI compiles), so the README cannot show code that does not build.
    #[test]
    fn readme_examples_are_the_example_files() {
        let root = crate::util::root();
        let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
        let mut found = 0;
        for (i, _) in readme.match_indices("<!-- example: ") {
            let rest = &readme[i + "<!-- example: ".len()..];
            let path = &rest[..rest.find(" -->").expect("closed marker")];
            let body = &rest[rest.find("```").expect("a code block after the marker")..];
            let body = &body[body.find('\n').expect("fence line") + 1..];
            let body = &body[..body.find("```").expect("closing fence")];
            let file = std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(body, file, "README's block for {path} differs from the file");
            found += 1;
        }
        assert!(found >= 2, "the README's engine examples are marked ({found} found)");
    }
}
