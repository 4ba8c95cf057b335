//! Reports built from fixture JSON: the numbers in the Markdown and the HTML are the input's,
//! and the HTML renders in headless Chromium with charts of non-zero size.
//!
//! The browser test needs Chromium (`cargo xtask toolchains` installs it). Set
//! `NORMKIT_SKIP_BROWSER_TEST=1` to skip it explicitly; otherwise a missing browser fails.

use crate::schema::{self, ResultsFile};
use crate::{peers, report};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A normkit run in the file layout, two GPU shapes and one tiny one, plus a run without a copy
/// ceiling reading.
const RUNS: &str = r#"{"schema_version": 1, "units": {"gbps": "1e9 B/s", "us": "us", "bytes": "B"},
 "tool": "normkit-bench 0.1.0", "date": "2026-11-21T23:10:00Z", "runs": [
 {"backend": "cpu", "device": "Intel(R) Xeon(R) Processor", "driver": "", "copy_gbps": 28.3,
  "machine": {"compute_units": 2, "cache_bytes": 272629760, "memory_bytes": 25000000000},
  "results": [
   {"op": "rms_fwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 17.93, "us": 3743.2},
   {"op": "rms_fwd", "m": 32768, "n": 512, "dtype": "bf16", "gbps": 19.41, "us": 3458.7},
   {"op": "rms_fwd", "m": 4096, "n": 4096, "dtype": "f32", "gbps": 21.07, "us": 6370.9},
   {"op": "rms_fwd", "m": 8, "n": 4096, "dtype": "bf16", "gbps": 4.21, "us": 31.14},
   {"op": "ln_bwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 12.64, "us": 7969.1}],
  "errors": [{"op": "ln_bwd", "m": 256, "n": 65536, "dtype": "bf16", "reason": "device error <boom>"}]}]}"#;

/// A single-run object as another tool (the CUDA helper's own run) writes it.
const SINGLE: &str = r#"{"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "copy_gbps": 3019.0,
 "backend": "cuda", "results": [
   {"op": "rms_fwd", "m": 32768, "n": 4096, "dtype": "bf16", "gbps": 2961.3, "us": 181.4},
   {"op": "rms_fwd", "m": 2048, "n": 65536, "dtype": "bf16", "gbps": 2890.6, "us": 185.8},
   {"op": "rms_fwd", "m": 65536, "n": 512, "dtype": "bf16", "gbps": 2702.2, "us": 198.9},
   {"op": "ln_bwd", "m": 32768, "n": 4096, "dtype": "bf16", "gbps": 2511.7, "us": 320.9}]}"#;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("normkit-report-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The fixtures written to files and read back the way `normkit-bench merge` does.
fn merged(dir: &Path) -> ResultsFile {
    let (a, b, p) = (dir.join("cpu.json"), dir.join("cuda.json"), dir.join("peers.json"));
    std::fs::write(&a, RUNS).unwrap();
    std::fs::write(&b, SINGLE).unwrap();
    std::fs::write(&p, peers::tests_fixture()).unwrap();
    let mut runs = schema::load(&a).unwrap().runs;
    runs.extend(schema::load(&b).unwrap().runs);
    ResultsFile::new(runs, peers::load(&p).unwrap())
}

#[test]
fn markdown_carries_the_input_numbers() {
    let md = report::render_markdown(&merged(&tmp_dir("md")));
    // cpu 4096x4096 bf16: 17.93 GB/s, 17.93/28.3 = 63%, 3743 µs
    assert!(md.contains("| 4096x4096 | bf16 | 17.9 | 63% | 3743 |"), "{md}");
    // the cuda run and the peers share the rms_fwd table: 2961.3 → 2961, 98% of 3019
    assert!(md.contains("| 32768x4096 | bf16 | – | – | – | 2961 | 98% | 181 | 2961 | 98% | 181 | 2970 | 98% | 181 |"), "{md}");
    // latency-bound shape: GB/s in brackets, µs in bold
    assert!(md.contains("| 8x4096 | bf16 | (4.21) | – | **31.1** |"), "{md}");
    assert!(md.contains("| **3019** |") && md.contains("| **28.3** |"), "copy ceilings in the machine table");
    assert!(md.contains("ERROR ln_bwd 256x65536 bf16: device error <boom>"));
    assert!(md.contains("## ln_bwd") && !md.contains("## addrms_fwd"));
    // peers section: QuACK is the fastest on 32768x4096, the cuda run is on the same device
    assert!(
        md.contains(
            "| rms_fwd | 32768x4096 | bf16 | 2970 GB/s (QuACK · H100 80GB HBM3) | 2961 GB/s (cuda · NVIDIA H100 80GB HBM3, 1.00×) |"
        ),
        "{md}"
    );
    // the scoreboard: 181.4 µs against QuACK's 180.9 is behind (0.997×), as is 2048x65536 (0.98×)
    assert!(
        md.contains(
            "**cuda · NVIDIA H100 80GB HBM3: at or ahead of the fastest peer in 0 of 2 cases; geometric mean of the fastest peer's µs over normkit's 0.99×**"
        ),
        "{md}"
    );
}

#[test]
fn html_carries_the_input_numbers_and_is_self_contained() {
    let html = report::render_html(&merged(&tmp_dir("html")));
    for (v, shown) in [("17.93", "17.9"), ("2961.3", "2961"), ("2890.6", "2891"), ("2511.7", "2512"), ("2970.4", "2970")] {
        assert!(html.contains(&format!("data-v=\"{v}\">{shown}</td>")), "{v} shown as {shown}");
    }
    assert!(html.contains("data-v=\"31.14\">31.1</td>"), "µs of the tiny shape");
    assert!(html.contains("copy ceiling · H100 80GB HBM3 3019 GB/s"));
    assert!(html.contains("device error &lt;boom&gt;"), "text is escaped");
    for op in ["rms_fwd", "ln_bwd"] {
        assert!(html.contains(&format!("id=\"chart-{op}-gbps\"")) && html.contains(&format!("id=\"chart-{op}-pct\"")));
    }
    // nothing is fetched: no external URLs in attributes
    for bad in ["src=\"http", "href=\"http", "url(http", "@import", "<link"] {
        assert!(!html.contains(bad), "report.html must be self-contained, found {bad}");
    }
}

#[test]
fn merge_refuses_mixed_versions() {
    let d = tmp_dir("versions");
    let p = d.join("v4.json");
    std::fs::write(&p, RUNS.replace("\"schema_version\": 1", "\"schema_version\": 4")).unwrap();
    let e = schema::load(&p).unwrap_err();
    assert!(e.contains("v4.json") && e.contains("schema_version 4"), "{e}");
}

/// A CPU run and the two candle peers of the same run, as `normkit-bench run` writes them.
const WITH_CANDLE: &str = r#"{"schema_version": 2, "units": {"gbps": "1e9 B/s", "us": "us", "bytes": "B"},
 "tool": "normkit-bench 0.1.0", "date": "2026-11-24T23:10:00Z", "runs": [
 {"backend": "cpu", "device": "Xeon", "driver": "", "copy_gbps": 20.0, "results": [
   {"op": "rms_fwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 17.0, "us": 4000.0},
   {"op": "rms_bwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 8.0, "us": 12000.0},
   {"op": "rms_fwd", "m": 8, "n": 4096, "dtype": "bf16", "gbps": 2.0, "us": 40.0},
   {"op": "ln_fwd", "m": 4096, "n": 4096, "dtype": "f32", "gbps": 16.0, "us": 8400.0}]}],
 "peers": [
 {"backend": "peer", "label": "candle fused · Xeon", "device": "Xeon", "driver": "", "copy_gbps": 20.0, "results": [
   {"op": "rms_fwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 2.0, "us": 34000.0},
   {"op": "rms_fwd", "m": 8, "n": 4096, "dtype": "bf16", "gbps": 0.5, "us": 160.0},
   {"op": "ln_fwd", "m": 4096, "n": 4096, "dtype": "f32", "gbps": 12.0, "us": 11000.0}]},
 {"backend": "peer", "label": "candle unfused · Xeon", "device": "Xeon", "driver": "", "copy_gbps": 20.0, "results": [
   {"op": "rms_fwdbwd", "m": 4096, "n": 4096, "dtype": "bf16", "gbps": 0.1, "us": 1600000.0, "us_baseline": 30000.0}]}]}"#;

#[test]
fn candle_columns_and_speedups_reach_every_output() {
    let d = tmp_dir("candle");
    let p = d.join("candle.json");
    std::fs::write(&p, WITH_CANDLE).unwrap();
    let file = schema::load(&p).unwrap();
    // results.json: the comparisons derived from the runs (the chain against fwd + bwd)
    assert_eq!(file.comparisons.len(), 4, "{:?}", file.comparisons);
    let chain = file.comparisons.iter().find(|c| c.op == "rms_fwdbwd").unwrap();
    assert_eq!((chain.normkit_us, chain.peer_us, chain.speedup), (16000.0, 1600000.0, 100.0));
    let json = file.to_json();
    assert!(json.contains("\"comparisons\"") && json.contains("\"speedup\": 100.0") && json.contains("\"us_baseline\": 30000.0"));
    assert_eq!(schema::parse(&json).unwrap().comparisons, file.comparisons, "read back the same");

    let md = report::render_markdown(&file);
    assert!(md.contains("## Speedup over the peers on the same device"), "{md}");
    assert!(
        md.contains("### rms_fwd · cpu · Xeon") && md.contains("### rms_fwdbwd · cpu · Xeon") && md.contains("### ln_fwd · cpu · Xeon")
    );
    assert!(md.contains("| shape | dtype | normkit µs | normkit GB/s | candle fused µs | GB/s | speedup |"), "{md}");
    // 34000 / 4000 = 8.5×; the tiny shape's GB/s in brackets; the chain: 1.6 s against 4 + 12 ms
    assert!(md.contains("| 4096x4096 | bf16 | 4000 | 17.0 | 34000 | 2.00 | **8.5×** |"), "{md}");
    assert!(md.contains("| 8x4096 | bf16 | 40.0 | (2.00) | 160 | (0.50) | **4.0×** |"), "{md}");
    assert!(md.contains("| 4096x4096 | f32 | 8400 | 16.0 | 11000 | 12.0 | **1.3×** |"), "{md}");
    assert!(md.contains("| 4096x4096 | bf16 | 16000 | "), "normkit's fwd + bwd µs: {md}");
    assert!(md.contains("| 1600000 | 0.10 | **100×** |"), "{md}");
    assert!(md.contains("seeded with dy directly"), "the candle method is said");
    // candle's fused forward is also a column of the rms_fwd table
    assert!(md.contains("candle fused · Xeon GB/s"));

    let html = report::render_html(&file);
    assert!(html.contains("<section id=\"speedup\">") && html.contains("href=\"#speedup\""));
    assert!(html.contains("data-v=\"8.5\">8.5×</td>") && html.contains("data-v=\"100\">100×</td>"), "speedups in the HTML");
    assert!(html.contains("<th class=\"run\" colspan=\"3\">candle unfused</th>"));
}

/// A cuda run of the FP8 ops (rms_fwd_fp8 measured, the others skipped) and a fp8_peers.py file
/// of the same device: torch.compile in e4m3 (compared) and in e5m2 (another format: not compared).
const FP8_RUN: &str = r#"{"schema_version": 3, "units": {"gbps": "1e9 B/s", "us": "us", "bytes": "B"},
 "tool": "normkit-bench 0.1.0", "date": "2026-11-25T10:00:00Z", "runs": [
 {"backend": "cuda", "device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "copy_gbps": 3000.0, "results": [
   {"op": "rms_fwd_fp8", "m": 32768, "n": 4096, "dtype": "bf16", "y_dtype": "e4m3", "gbps": 2700.0, "us": 150.0,
    "bytes": 402792460},
   {"op": "rms_fwd_fp8", "m": 8, "n": 4096, "dtype": "bf16", "y_dtype": "e4m3", "gbps": 20.0, "us": 4.0}],
  "skipped": [{"op": "rms_fwd_fp8_row", "m": 32768, "n": 4096, "dtype": "bf16",
               "reason": "cuda does not support an FP8 `y`"}]}]}"#;

const FP8_PEERS: &str = r#"{"tool": "fp8_peers.py", "date": "2026-11-25T10:30:00Z",
  "env": {"gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132, "l2_bytes": 52428800},
  "copy": [{"bytes_each_way": 2147483648, "GBps": 3010.0}],
  "impl_info": {"compile": "torch.compile(mode=default, dynamic=False), torch 2.9.0"},
  "results": {
    "rms_fwd_fp8|compile|32768x4096|bfloat16": {"op": "rms_fwd_fp8", "impl": "compile", "M": 32768, "N": 4096,
       "dtype": "bfloat16", "y_dtype": "float8_e4m3fn", "status": "ok", "GBps": 1350.0, "time_us": 300.0, "bytes": 402792460},
    "rms_fwd_fp8|compile|8x4096|bfloat16": {"op": "rms_fwd_fp8", "impl": "compile", "M": 8, "N": 4096,
       "dtype": "bfloat16", "y_dtype": "float8_e5m2", "status": "ok", "GBps": 10.0, "time_us": 8.0},
    "rms_fwd_fp8_row|eager|32768x4096|bfloat16": {"op": "rms_fwd_fp8_row", "impl": "eager", "M": 32768, "N": 4096,
       "dtype": "bfloat16", "status": "ok", "GBps": 300.0, "time_us": 1300.0}}}"#;

#[test]
fn fp8_ops_reach_the_report_and_compare_within_one_format() {
    let d = tmp_dir("fp8");
    let (a, p) = (d.join("fp8.json"), d.join("fp8_peers.json"));
    std::fs::write(&a, FP8_RUN).unwrap();
    std::fs::write(&p, FP8_PEERS).unwrap();
    let peer_runs = peers::load(&p).unwrap();
    // the row without a y_dtype is not taken: it could not be matched by format
    assert_eq!(peer_runs.len(), 1, "{peer_runs:?}");
    assert_eq!(peer_runs[0].label, "torch.compile · H100 80GB HBM3");
    assert_eq!(peer_runs[0].results.iter().map(|r| r.y_dtype.as_deref()).collect::<Vec<_>>(), vec![Some("e4m3"), Some("e5m2")]);
    let file = ResultsFile::new(schema::load(&a).unwrap().runs, peer_runs);
    // 32768x4096 in e4m3 on both sides: compared; 8x4096 is e5m2 on the peer's side: not compared
    assert_eq!(file.comparisons.len(), 1, "{:?}", file.comparisons);
    assert_eq!((file.comparisons[0].op.as_str(), file.comparisons[0].speedup), ("rms_fwd_fp8", 2.0));

    let md = report::render_markdown(&file);
    assert!(md.contains("## rms_fwd_fp8\n\ny_q = fp8(rmsnorm(x)·w · scale)"), "{md}");
    assert!(md.contains("y in e4m3, e5m2, 1 byte per element; the dtype column is x's dtype."), "{md}");
    assert!(md.contains("| 32768x4096 | bf16 | 2700 | 90% | 150 | 1350 | 45% | 300 |"), "{md}");
    assert!(md.contains("### rms_fwd_fp8 · cuda · NVIDIA H100 80GB HBM3"), "{md}");
    assert!(md.contains("| 32768x4096 | bf16 | 150 | 2700 | 300 | 1350 | **2.0×** |"), "{md}");
    assert!(md.contains("skipped rms_fwd_fp8_row 32768x4096 bf16: cuda does not support an FP8 `y`"), "{md}");
    let html = report::render_html(&file);
    assert!(html.contains("id=\"op-rms_fwd_fp8\"") && html.contains("y in e4m3, e5m2, 1 byte per element"));
    assert!(html.contains("data-v=\"2700\">2700</td>"));
}

/// The target folder of this build (tests run from `target/<profile>/deps/`).
fn artifact_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    target.join("test-artifacts").join("report")
}

fn chromium() -> Option<PathBuf> {
    let candidates =
        [std::env::var("NORMKIT_CHROMIUM").unwrap_or_default(), "/usr/bin/chromium".into(), "/usr/bin/chromium-browser".into()];
    candidates.into_iter().filter(|c| !c.is_empty()).map(PathBuf::from).find(|p| p.exists())
}

fn chromium_cmd(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c.arg("--window-size=1400,2000").arg("--virtual-time-budget=3000");
    c
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((be(16), be(20)))
}

#[test]
fn html_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var("NORMKIT_SKIP_BROWSER_TEST").is_ok_and(|v| v == "1") {
            eprintln!("SKIPPED: Chromium not found and NORMKIT_SKIP_BROWSER_TEST=1");
            return;
        }
        panic!(
            "Chromium not found at /usr/bin/chromium (run `cargo xtask toolchains`, set NORMKIT_CHROMIUM, or NORMKIT_SKIP_BROWSER_TEST=1)"
        );
    };
    let out = artifact_dir();
    std::fs::create_dir_all(&out).unwrap();
    let file = merged(&tmp_dir("browser"));
    report::write(&out, &file).unwrap();
    let page = format!("file://{}", out.join("report.html").canonicalize().unwrap().display());
    let profile = tmp_dir("chromium-profile");

    let dom = chromium_cmd(&bin, &profile).arg("--dump-dom").arg(&page).output().expect("run chromium --dump-dom");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("data-measured=\"yes\""), "the measuring script did not run:\n{}", &dom[..dom.len().min(2000)]);
    let scroll = dom.split("data-scroll-width=\"").nth(1).and_then(|r| r.split('"').next()).and_then(|w| w.parse::<u32>().ok());
    assert!(scroll.is_some_and(|w| w <= 1400), "the page is wider than the window: {scroll:?}");
    let charts: Vec<&str> = dom.split("<svg class=\"chart\"").skip(1).collect();
    assert_eq!(charts.len(), 4, "two charts for each of rms_fwd and ln_bwd");
    for c in &charts {
        let attr = |name: &str| c.split(&format!("{name}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
        let (w, h) = attr("data-bbox")
            .split_once('x')
            .map(|(w, h)| (w.parse::<u32>().unwrap_or(0), h.parse::<u32>().unwrap_or(0)))
            .unwrap_or((0, 0));
        assert!(w > 300 && h > 200, "chart {} measured {w}x{h}", attr("id"));
        assert!(attr("data-series").parse::<u32>().unwrap_or(0) >= 1, "chart {} draws no line", attr("id"));
    }

    let png = out.join("report.png");
    let _ = std::fs::remove_file(&png);
    let status =
        chromium_cmd(&bin, &profile).arg(format!("--screenshot={}", png.display())).arg(&page).output().expect("run chromium --screenshot");
    let bytes = std::fs::read(&png).unwrap_or_else(|_| panic!("no screenshot written: {}", String::from_utf8_lossy(&status.stderr)));
    assert_eq!(png_size(&bytes), Some((1400, 2000)), "screenshot is a 1400x2000 PNG");
    assert!(bytes.len() > 40_000, "screenshot of {} bytes looks blank", bytes.len());
    eprintln!("report screenshot: {}", png.display());
}

/// Every row timed under the peer policy shows the general rotation beside its main figure: µs
/// and sets for a latency-bound shape, and its % of the copy ceiling above 4 MB (where the main
/// figure's % counts output writes the L2 may absorb).
#[test]
fn the_rotated_figure_follows_the_main_one() {
    let json = r#"{"device": "NVIDIA H100 80GB HBM3", "driver": "", "copy_gbps": 3000.0, "backend": "cuda", "results": [
      {"op": "rms_fwd", "m": 4096, "n": 1024, "dtype": "bf16", "gbps": 2239.4, "us": 7.5, "bytes": 16795648,
       "n_sets": 13, "out_sets": 1, "us_rotated": 8.4, "n_sets_rotated": 13},
      {"op": "rms_fwd", "m": 1, "n": 4096, "dtype": "bf16", "gbps": 18.6, "us": 1.32, "bytes": 24580,
       "n_sets": 16, "out_sets": 1, "us_rotated": 1.4, "n_sets_rotated": 32},
      {"op": "rms_fwd", "m": 32768, "n": 4096, "dtype": "bf16", "gbps": 2961.3, "us": 181.4, "n_sets": 1, "out_sets": 1}]}"#;
    let dir = tmp_dir("rotated");
    let path = dir.join("cuda.json");
    std::fs::write(&path, json).unwrap();
    let file = ResultsFile::new(schema::load(&path).unwrap().runs, vec![]);
    let md = report::render_markdown(&file);
    // 2239.4 GB/s = 75% of 3000; rotated: 75% × 7.5 / 8.4 = 67%
    assert!(md.contains("| 4096x1024 | bf16 | 2239 | 75% | 7.50 (8.40 on 13 sets, 67%) |"), "{md}");
    assert!(md.contains("| 1x4096 | bf16 | (18.6) | – | **1.32** (1.40 on 32 sets) |"), "{md}");
    assert!(md.contains("| 32768x4096 | bf16 | 2961 | 99% | 181 |"), "one set: nothing beside it\n{md}");
    assert!(md.contains("Every case that moves less than 4 last-level caches' worth per call"), "{md}");
    let html = report::render_html(&file);
    assert!(html.contains("data-v=\"7.5\">7.50<span class=\"rot\"> (8.40 on 13 sets, 67%)</span></td>"), "{html}");
    assert!(html.contains("data-v=\"1.32\">1.32<span class=\"rot\"> (1.40 on 32 sets)</span></td>"), "{html}");
}
