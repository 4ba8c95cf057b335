//! Reports: `results.json`, `report.md` and a self-contained `report.html` (inline CSS and SVG,
//! no network) from a [`ResultsFile`].

mod html;
mod markdown;
mod svg;
#[cfg(test)]
mod tests;

use crate::compare::Comparison;
use crate::grid::LATENCY_BYTES;
use crate::ops::{Chain, Op};
use crate::schema::{ResultRow, ResultsFile, Run};
use normkit_core::DType;
use std::path::Path;

pub use html::render as render_html;
pub use markdown::render as render_markdown;

/// Writes `results.json`, `report.md` and `report.html` into `dir` (created if missing).
pub fn write(dir: &Path, file: &ResultsFile) -> Result<(), String> {
    write_json(dir, file)?;
    write_file(&dir.join("report.md"), &render_markdown(file))?;
    write_file(&dir.join("report.html"), &render_html(file))
}

/// Writes only `results.json` (after every case, so an interrupted run keeps what it measured).
pub fn write_json(dir: &Path, file: &ResultsFile) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output folder {}: {e}", dir.display()))?;
    write_file(&dir.join("results.json"), &file.to_json())
}

/// Checks early that `dir` can be created and written, before minutes of measuring.
pub fn check_writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output folder {}: {e}", dir.display()))?;
    let probe = dir.join(".normkit-write-test");
    std::fs::write(&probe, b"").map_err(|e| format!("output folder {} is not writable: {e}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Every run of the file, normkit's first, then the peers.
pub(crate) fn all_runs(file: &ResultsFile) -> Vec<&Run> {
    file.runs.iter().chain(&file.peers).collect()
}

/// The ops that have at least one result, in the canonical order.
pub(crate) fn ops_present(runs: &[&Run]) -> Vec<Op> {
    Op::ALL.into_iter().filter(|op| runs.iter().any(|r| r.results.iter().any(|x| x.op == op.name()))).collect()
}

/// What an FP8 op's section says of its `y`: the formats its rows carry (`y_dtype`), or `None`
/// for the other ops.
pub(crate) fn fp8_note(op: Op, runs: &[&Run]) -> Option<String> {
    if !op.is_fp8() {
        return None;
    }
    let mut formats: Vec<&str> =
        runs.iter().flat_map(|r| r.results.iter()).filter(|x| x.op == op.name()).filter_map(|x| x.y_dtype.as_deref()).collect();
    formats.sort_unstable();
    formats.dedup();
    let formats = if formats.is_empty() { "FP8".to_string() } else { formats.join(", ") };
    Some(format!("y in {formats}, 1 byte per element; the dtype column is x's dtype."))
}

/// A table row key: (n, m, dtype), sorted by dtype then hidden size.
pub(crate) type RowKey = (u64, u64, String);

/// The distinct shapes measured for `op` over `runs`, bf16 first, then by N, then by M.
pub(crate) fn row_keys(op: Op, runs: &[&Run]) -> Vec<RowKey> {
    let mut keys: Vec<RowKey> =
        runs.iter().flat_map(|r| r.results.iter()).filter(|x| x.op == op.name()).map(|x| (x.n, x.m, x.dtype.clone())).collect();
    keys.sort_by_key(|k| (dtype_rank(&k.2), k.0, k.1));
    keys.dedup();
    keys
}

pub(crate) fn find<'a>(run: &'a Run, op: Op, key: &RowKey) -> Option<&'a ResultRow> {
    run.results.iter().find(|x| x.op == op.name() && x.n == key.0 && x.m == key.1 && x.dtype == key.2)
}

/// Bytes of one call: as recorded, or from normkit's byte model.
pub(crate) fn row_bytes(r: &ResultRow) -> u64 {
    r.bytes.unwrap_or_else(|| {
        let dt = DType::parse(&r.dtype).unwrap_or(DType::BF16);
        crate::ops::bytes_of(&r.op, r.m as usize, r.n as usize, dt).unwrap_or(0)
    })
}

/// Latency-bound calls are shown in µs and kept out of the GB/s charts.
pub(crate) fn is_latency(r: &ResultRow) -> bool {
    row_bytes(r) < LATENCY_BYTES
}

/// Percent of the run's copy ceiling.
pub(crate) fn pct(run: &Run, r: &ResultRow) -> Option<f64> {
    r.pct_copy.or((run.copy_gbps > 0.0).then(|| 100.0 * r.gbps / run.copy_gbps))
}

/// The set policy, as the reports' headers state it (see [`crate::runner::set_policy`]).
pub(crate) const SET_POLICY: &str =
    "Every case that moves less than 4 last-level caches' worth per call (decode and mid sizes) is timed as \
the peer script times it: inputs rotated over at most 16 sets (4 caches' worth), writing one set of outputs that every call \
reuses (PyTorch's allocator gives each call the block its predecessor freed), so the outputs stay in the cache; that is the \
main figure. The general rotation (inputs and outputs, a set of each, up to 32 sets) follows it in brackets: µs, the set \
count and, above 4 MB, its % of the copy ceiling — the main figure's % counts output writes the cache may absorb. Larger \
cases are timed once, on one set. A --quick run: 1 cache's worth, at most 8 sets.";

/// The general rotation's figure of a row timed under the peer policy (see
/// [`crate::runner::set_policy`]): its µs, its set count and its % of the run's copy ceiling.
pub(crate) fn rotated(run: &Run, r: &ResultRow) -> Option<(f64, u64, Option<f64>)> {
    let (u, k) = (r.us_rotated?, r.n_sets_rotated?);
    (u > 0.0).then(|| (u, k, pct(run, r).map(|p| p * r.us / u)))
}

/// GB/s with 3 significant digits at most: `2951`, `17.9`, `3.42`.
pub fn fmt_gbps(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Microseconds: `3512`, `18.2`, `1.75`.
pub fn fmt_us(v: f64) -> String {
    fmt_gbps(v)
}

/// `2.4×`, `0.93×`, `31×`.
pub fn fmt_speedup(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}×")
    } else if v >= 1.0 {
        format!("{v:.1}×")
    } else {
        format!("{v:.2}×")
    }
}

pub fn fmt_pct(v: f64) -> String {
    format!("{v:.0}%")
}

/// `32 MiB`, `1.5 GiB`.
pub fn fmt_bytes(b: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    if b == 0 {
        "–".into()
    } else if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / GIB)
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// The date part of an ISO timestamp, and the time to the minute.
pub(crate) fn short_date(iso: &str) -> String {
    iso.get(..16).map_or_else(|| iso.to_string(), |s| s.replace('T', " ") + " UTC")
}

/// One line of the peer comparison: the best peer on a case, and normkit on the same device.
#[derive(Debug, Clone)]
pub(crate) struct PeerRow {
    pub op: Op,
    pub key: RowKey,
    pub latency: bool,
    /// (peer label, GB/s, µs) of the fastest peer.
    pub best: (String, f64, f64),
    /// (run label, GB/s, µs) of each normkit run on the peers' device that measured the case.
    pub normkit: Vec<(String, f64, f64)>,
}

/// The fastest peer per (op, shape, dtype), beside normkit's runs on the same device name.
pub(crate) fn peer_rows(file: &ResultsFile) -> Vec<PeerRow> {
    let peers: Vec<&Run> = file.peers.iter().collect();
    let mut rows = Vec::new();
    for op in ops_present(&peers) {
        for key in row_keys(op, &peers) {
            let cells: Vec<(&Run, &ResultRow)> = peers.iter().filter_map(|p| find(p, op, &key).map(|x| (*p, x))).collect();
            let Some(&(first_run, first)) = cells.first() else { continue };
            let latency = is_latency(first);
            let faster = |a: &ResultRow, b: &ResultRow| if latency { a.us < b.us } else { a.gbps > b.gbps };
            let (best_run, best) = cells.iter().fold((first_run, first), |acc, &(r, x)| if faster(x, acc.1) { (r, x) } else { acc });
            let normkit = file
                .runs
                .iter()
                .filter(|r| r.device == best_run.device)
                .filter_map(|r| find(r, op, &key).map(|x| (r.display_label(), x.gbps, x.us)))
                .collect();
            rows.push(PeerRow { op, key, latency, best: (best_run.display_label(), best.gbps, best.us), normkit });
        }
    }
    rows
}

impl PeerRow {
    /// The fastest peer's µs over normkit's (normkit's run `i` of [`PeerRow::normkit`]): at or
    /// above 1, normkit is at or ahead of every peer on this case.
    pub fn ratio(&self, i: usize) -> f64 {
        self.best.2 / self.normkit[i].2
    }
}

/// Per normkit run: on how many of the cases a peer measured it is at or ahead of the fastest
/// peer, out of how many, and the geometric mean of the ratios (issue 15's scoreboard).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Score {
    pub label: String,
    pub ahead: usize,
    pub cases: usize,
    pub geomean: f64,
}

pub(crate) fn scoreboard(rows: &[PeerRow]) -> Vec<Score> {
    let mut labels: Vec<&str> = Vec::new();
    for r in rows {
        for (l, _, _) in &r.normkit {
            if !labels.contains(&l.as_str()) {
                labels.push(l);
            }
        }
    }
    labels
        .into_iter()
        .map(|label| {
            let ratios: Vec<f64> = rows
                .iter()
                .filter_map(|r| r.normkit.iter().position(|(l, _, _)| l == label).map(|i| r.ratio(i)))
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            let geomean = (ratios.iter().map(|x| x.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
            Score { label: label.to_string(), ahead: ratios.iter().filter(|&&x| x >= 1.0).count(), cases: ratios.len(), geomean }
        })
        .collect()
}

/// The scoreboard as sentences, one per normkit run.
pub(crate) fn score_lines(rows: &[PeerRow]) -> Vec<String> {
    scoreboard(rows)
        .into_iter()
        .map(|s| {
            format!(
                "{}: at or ahead of the fastest peer in {} of {} cases; geometric mean of the fastest peer's µs over normkit's {:.2}×",
                s.label, s.ahead, s.cases, s.geomean
            )
        })
        .collect()
}

/// One table of the speedup section: one normkit run and one op (or chain), a column per peer.
#[derive(Debug)]
pub(crate) struct SpeedupTable<'a> {
    pub normkit: &'a str,
    pub op: &'static str,
    pub what: &'static str,
    /// Peer labels without the device (the same as normkit's).
    pub peers: Vec<&'a str>,
    pub rows: Vec<SpeedupRow<'a>>,
}

#[derive(Debug)]
pub(crate) struct SpeedupRow<'a> {
    pub key: RowKey,
    pub normkit_us: f64,
    pub normkit_gbps: f64,
    /// Moves fewer than [`LATENCY_BYTES`]: read the µs.
    pub latency: bool,
    /// The comparison with each peer of the table, if that peer measured the case.
    pub cells: Vec<Option<&'a Comparison>>,
}

/// The file's comparisons as tables: per normkit run, per op (the six ops, then the chains).
pub(crate) fn speedup_tables(file: &ResultsFile) -> Vec<SpeedupTable<'_>> {
    let names = Op::ALL.map(|o| (o.name(), o.describe())).into_iter().chain(Chain::ALL.map(|c| (c.name(), c.describe())));
    let mut normkits: Vec<&str> = file.comparisons.iter().map(|c| c.normkit.as_str()).collect();
    normkits.dedup();
    let mut tables = Vec::new();
    for nk in normkits {
        for (op, what) in names.clone() {
            let cs: Vec<&Comparison> = file.comparisons.iter().filter(|c| c.normkit == nk && c.op == op).collect();
            if cs.is_empty() {
                continue;
            }
            let mut peers: Vec<&str> = Vec::new();
            for c in &cs {
                if !peers.contains(&c.peer.as_str()) {
                    peers.push(&c.peer);
                }
            }
            let mut keys: Vec<RowKey> = cs.iter().map(|c| (c.n, c.m, c.dtype.clone())).collect();
            keys.sort_by_key(|k| (dtype_rank(&k.2), k.0, k.1));
            keys.dedup();
            let rows = keys
                .into_iter()
                .filter_map(|key| {
                    let cells: Vec<Option<&Comparison>> = peers
                        .iter()
                        .map(|p| cs.iter().copied().find(|c| c.peer == *p && c.n == key.0 && c.m == key.1 && c.dtype == key.2))
                        .collect();
                    let first = cells.iter().flatten().next()?;
                    let dt = DType::parse(&key.2).unwrap_or(DType::BF16);
                    let latency = crate::ops::bytes_of(op, key.1 as usize, key.0 as usize, dt).unwrap_or(0) < LATENCY_BYTES;
                    Some(SpeedupRow { normkit_us: first.normkit_us, normkit_gbps: first.normkit_gbps, latency, key, cells })
                })
                .collect();
            tables.push(SpeedupTable { normkit: nk, op, what, peers: peers.iter().map(|p| short_label(p)).collect(), rows });
        }
    }
    tables
}

/// A peer's label without its device (`candle fused · Intel Xeon` → `candle fused`).
pub(crate) fn short_label(label: &str) -> &str {
    label.split(" · ").next().unwrap_or(label)
}

fn dtype_rank(d: &str) -> u8 {
    match d {
        "bf16" => 0,
        "f16" => 1,
        _ => 2,
    }
}

/// The speedup section's introduction (Markdown; the HTML escapes it).
pub(crate) fn speedup_intro(file: &ResultsFile) -> String {
    let mut s = String::from(
        "speedup = the peer's µs / normkit's µs on the same case and device, which is also normkit's GB/s / the peer's \
         (both count normkit's bytes); above 1×, normkit is faster. `*_fwdbwd`: a forward and its backward timed as one \
         unit by the peer, against normkit's forward µs + backward µs (two calls, the forward saving the statistics the \
         backward reads; bytes = those of the two calls).",
    );
    if file.peers.iter().any(|p| p.label.starts_with("candle")) {
        s.push(' ');
        s.push_str(crate::candle_peer::METHOD);
    }
    s
}
