//! A/B of two builds measured in one device call: `normkit-bench ab --old A --new B ...`.
//!
//! Every kernel or launch-path change is compared with the previous build in the same call, in
//! the order old, new, new, old (ABBA), so that a drift of the device over the call (clocks,
//! temperature) weighs on both sides alike. This module pools the runs of each side case by case
//! (mean µs of the runs that measured it), gives new/old, and lists the cells slower than a
//! threshold. It also flags what makes a cell's comparison unfair — the two sides timed with
//! graphs of different call counts (a warm-up-based count once moved a cell by 7% with identical
//! kernels: kernels-cuda/NOTES.md v11) or with another set policy — and cells whose difference is
//! within the spread of the runs themselves.

use crate::schema::{ResultRow, ResultsFile, Run};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A case: (op, m, n, dtype, y_dtype).
type Key = (String, u64, u64, String, Option<String>);

/// One case measured on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRow {
    pub op: String,
    pub m: u64,
    pub n: u64,
    pub dtype: String,
    /// The FP8 format of `y`, for an FP8 op.
    pub y_dtype: Option<String>,
    /// µs of each run that measured the case, in the order given.
    pub old_us: Vec<f64>,
    pub new_us: Vec<f64>,
    /// Means of the above.
    pub old: f64,
    pub new: f64,
    /// What makes this comparison suspect (empty: none).
    pub flags: Vec<String>,
}

impl AbRow {
    /// `new / old`, in time: below 1 the new build is faster.
    pub fn ratio(&self) -> f64 {
        self.new / self.old
    }
}

/// The comparison of two sides, case by case, and the cases only one side measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Ab {
    pub rows: Vec<AbRow>,
    /// Cases measured by one side only: (case, "old" or "new").
    pub one_sided: Vec<(String, &'static str)>,
    /// Devices of the runs (one expected).
    pub devices: Vec<String>,
}

fn key(r: &ResultRow) -> Key {
    (r.op.clone(), r.m, r.n, r.dtype.clone(), r.y_dtype.clone())
}

/// A count of a results file, `?` where the file has none (older schemas).
fn count(c: Option<u64>) -> String {
    c.map_or_else(|| "?".into(), |c| c.to_string())
}

/// `rms_fwd 8x4096 bf16`, with ` → e4m3` for an FP8 op.
fn case_name(k: &Key) -> String {
    let y = k.4.as_ref().map_or_else(String::new, |y| format!(" → {y}"));
    format!("{} {}x{} {}{y}", k.0, k.1, k.2, k.3)
}

impl AbRow {
    fn name(&self) -> String {
        case_name(&(self.op.clone(), self.m, self.n, self.dtype.clone(), self.y_dtype.clone()))
    }
}

/// The rows of one side: per case, the rows of every run that measured it, in order.
fn pool(files: &[ResultsFile]) -> BTreeMap<Key, Vec<(&Run, &ResultRow)>> {
    let mut m: BTreeMap<Key, Vec<(&Run, &ResultRow)>> = BTreeMap::new();
    for f in files {
        for run in &f.runs {
            for r in &run.results {
                m.entry(key(r)).or_default().push((run, r));
            }
        }
    }
    m
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Compares `old` and `new` (each one or more results files of one build).
pub fn compare(old: &[ResultsFile], new: &[ResultsFile]) -> Ab {
    let (po, pn) = (pool(old), pool(new));
    let mut rows = Vec::new();
    let mut one_sided = Vec::new();
    for (k, os) in &po {
        let Some(ns) = pn.get(k) else {
            one_sided.push((case_name(k), "old"));
            continue;
        };
        let old_us: Vec<f64> = os.iter().map(|(_, r)| r.us).collect();
        let new_us: Vec<f64> = ns.iter().map(|(_, r)| r.us).collect();
        let (o, n) = (mean(&old_us), mean(&new_us));
        let mut flags = Vec::new();
        let calls = |v: &[(&Run, &ResultRow)]| v.iter().map(|(_, r)| r.calls).collect::<Vec<_>>();
        let (co, cn) = (calls(os), calls(ns));
        if co.iter().chain(&cn).any(|c| *c != co[0]) {
            let show = |v: &[Option<u64>]| v.iter().map(|&c| count(c)).collect::<Vec<_>>().join("/");
            flags.push(format!("calls per graph differ ({} vs {})", show(&co), show(&cn)));
        }
        // The sets of `us`: (input sets, output sets). Runs before 2026-11-27 timed mid sizes on
        // a set of outputs per input set (13/13 at 4096×1024 on an H100), later ones on one
        // (13/1, the peer script's policy); runs before `out_sets` existed have none (13/?).
        let policy = |r: &ResultRow| (r.n_sets, r.out_sets);
        let p0 = policy(os[0].1);
        if os.iter().chain(ns).any(|(_, r)| policy(r) != p0) {
            let show = |v: &[(&Run, &ResultRow)]| {
                let mut p: Vec<String> = v.iter().map(|(_, r)| format!("{}/{}", count(r.n_sets), count(r.out_sets))).collect();
                p.dedup();
                p.join(", ")
            };
            flags.push(format!("set policy differs (input/output sets {} vs {})", show(os), show(ns)));
        }
        // Within the runs' own spread: the two sides' ranges of means overlap by more than the
        // difference (only with two or more runs a side).
        if old_us.len() > 1 && new_us.len() > 1 {
            let spread = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min);
            if (n - o).abs() < 0.5 * (spread(&old_us) + spread(&new_us)) {
                flags.push("within the runs' spread".into());
            }
        }
        let (a, b) = (&os[0].0.device, &ns[0].0.device);
        if a != b {
            flags.push(format!("devices differ ({a} vs {b})"));
        }
        rows.push(AbRow {
            op: k.0.clone(),
            m: k.1,
            n: k.2,
            dtype: k.3.clone(),
            y_dtype: k.4.clone(),
            old_us,
            new_us,
            old: o,
            new: n,
            flags,
        });
    }
    for k in pn.keys().filter(|k| !po.contains_key(*k)) {
        one_sided.push((case_name(k), "new"));
    }
    let mut devices: Vec<String> = old.iter().chain(new).flat_map(|f| f.runs.iter().map(|r| r.device.clone())).collect();
    devices.sort();
    devices.dedup();
    Ab { rows, one_sided, devices }
}

fn join_us(v: &[f64]) -> String {
    v.iter().map(|u| format!("{u:.2}")).collect::<Vec<_>>().join(" / ")
}

/// The comparison as Markdown: a table, then the best and worst cell and the cells slower than
/// `threshold_pct`.
pub fn markdown(ab: &Ab, threshold_pct: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Device: {}. Time per call, mean of each side's runs; new/old below 1: the new build is faster.\n",
        ab.devices.join(", ")
    );
    let _ = writeln!(s, "| op | shape | dtype | old µs | new µs | new/old | old runs | new runs | notes |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---|---|---|");
    for r in &ab.rows {
        let dt = r.y_dtype.as_ref().map_or_else(|| r.dtype.clone(), |y| format!("{} → {y}", r.dtype));
        let _ = writeln!(
            s,
            "| {} | {}x{} | {dt} | {:.2} | {:.2} | {:.3} | {} | {} | {} |",
            r.op,
            r.m,
            r.n,
            r.old,
            r.new,
            r.ratio(),
            join_us(&r.old_us),
            join_us(&r.new_us),
            r.flags.join("; ")
        );
    }
    let mut sorted: Vec<&AbRow> = ab.rows.iter().collect();
    sorted.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    if let (Some(best), Some(worst)) = (sorted.first(), sorted.last()) {
        let _ = writeln!(
            s,
            "\n{} cells; fastest change {:.3} ({}); slowest {:.3} ({})",
            sorted.len(),
            best.ratio(),
            best.name(),
            worst.ratio(),
            worst.name()
        );
    }
    let slower: Vec<String> = sorted
        .iter()
        .rev()
        .filter(|r| r.ratio() > 1.0 + threshold_pct / 100.0)
        .map(|r| {
            let note = if r.flags.is_empty() { String::new() } else { format!(" ({})", r.flags.join("; ")) };
            format!("{} {:.3}{note}", r.name(), r.ratio())
        })
        .collect();
    let _ = writeln!(s, "\nslower by more than {threshold_pct}%: {}", if slower.is_empty() { "none".into() } else { slower.join(", ") });
    if !ab.one_sided.is_empty() {
        let v: Vec<String> = ab.one_sided.iter().map(|(c, side)| format!("{c} ({side} only)")).collect();
        let _ = writeln!(s, "\nmeasured on one side only: {}", v.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ResultsFile;

    fn row(op: &str, m: u64, n: u64, us: f64, calls: u64) -> ResultRow {
        ResultRow {
            op: op.into(),
            m,
            n,
            dtype: "bf16".into(),
            gbps: 1.0,
            us,
            bytes: None,
            pct_copy: None,
            us_min: None,
            us_max: None,
            n_sets: Some(16),
            calls: Some(calls),
            reps: Some(15),
            us_baseline: None,
            y_dtype: None,
            us_rotated: None,
            n_sets_rotated: None,
            out_sets: Some(1),
        }
    }

    fn file(rows: Vec<ResultRow>) -> ResultsFile {
        let run = Run { device: "NVIDIA H100 80GB HBM3".into(), backend: "cuda".into(), results: rows, ..crate::compare::tests_run() };
        ResultsFile::new(vec![run], vec![])
    }

    #[test]
    fn pools_the_runs_and_lists_the_slower_cells() {
        let old = [
            file(vec![row("rms_fwd", 1, 4096, 2.0, 256), row("ln_bwd", 8, 4096, 4.0, 256)]),
            file(vec![row("rms_fwd", 1, 4096, 2.2, 256)]),
        ];
        let new = [
            file(vec![row("rms_fwd", 1, 4096, 1.0, 256), row("ln_bwd", 8, 4096, 4.2, 255)]),
            file(vec![row("addrms_fwd", 8, 4096, 3.0, 256)]),
        ];
        let ab = compare(&old, &new);
        assert_eq!(ab.rows.len(), 2);
        let ln = ab.rows.iter().find(|r| r.op == "ln_bwd").unwrap();
        assert!((ln.ratio() - 1.05).abs() < 1e-12);
        assert_eq!(ln.flags, vec!["calls per graph differ (256 vs 255)".to_string()]);
        let rms = ab.rows.iter().find(|r| r.op == "rms_fwd").unwrap();
        assert_eq!((rms.old_us.clone(), rms.new_us.clone()), (vec![2.0, 2.2], vec![1.0]));
        assert!((rms.old - 2.1).abs() < 1e-12 && rms.flags.is_empty());
        assert_eq!(ab.one_sided, vec![("addrms_fwd 8x4096 bf16".to_string(), "new")]);
        let md = markdown(&ab, 1.0);
        assert!(md.contains("slower by more than 1%: ln_bwd 8x4096 bf16 1.050 (calls per graph differ (256 vs 255))"), "{md}");
        assert!(md.contains("fastest change 0.476 (rms_fwd 1x4096 bf16)"), "{md}");
        assert!(md.contains("addrms_fwd 8x4096 bf16 (new only)"), "{md}");
        assert!(md.contains("| rms_fwd | 1x4096 | bf16 | 2.10 | 1.00 | 0.476 | 2.00 / 2.20 | 1.00 |  |"), "{md}");
    }

    #[test]
    fn a_difference_inside_the_spread_is_flagged() {
        let side = |a: f64, b: f64| [file(vec![row("rms_bwd", 128, 4096, a, 64)]), file(vec![row("rms_bwd", 128, 4096, b, 64)])];
        let ab = compare(&side(7.0, 7.4), &side(7.1, 7.5));
        assert_eq!(ab.rows[0].flags, vec!["within the runs' spread".to_string()]);
        let ab = compare(&side(7.0, 7.1), &side(8.0, 8.1));
        assert!(ab.rows[0].flags.is_empty());
        let md = markdown(&ab, 1.0);
        assert!(md.contains("slower by more than 1%: rms_bwd 128x4096 bf16 1.142"), "{md}");
    }

    #[test]
    fn another_set_policy_is_flagged() {
        let mut r = row("rms_fwd", 128, 4096, 2.0, 256);
        r.out_sets = None;
        let ab = compare(&[file(vec![r])], &[file(vec![row("rms_fwd", 128, 4096, 2.0, 256)])]);
        assert_eq!(ab.rows[0].flags, vec!["set policy differs (input/output sets 16/? vs 16/1)".to_string()]);
        assert!(markdown(&ab, 1.0).contains("slower by more than 1%: none"));
    }

    /// A results file from before the peer policy covered mid sizes (4096×1024: 13 input sets,
    /// 13 output sets, no `us_rotated`) against a later one (13 input sets, one output set, the
    /// rotation in `us_rotated`): compared, and flagged, in either order.
    #[test]
    fn a_mid_size_case_of_an_older_runner_is_flagged() {
        let mid = |out_sets: u64, us: f64, rotated: Option<f64>| {
            let mut r = row("rms_fwd", 4096, 1024, us, 256);
            (r.n_sets, r.out_sets, r.us_rotated, r.n_sets_rotated) = (Some(13), Some(out_sets), rotated, rotated.map(|_| 13));
            r
        };
        let old = [file(vec![mid(13, 7.67, None)])];
        let new = [file(vec![mid(1, 7.40, Some(7.66))])];
        for (a, b, want) in [(&old, &new, "13/13 vs 13/1"), (&new, &old, "13/1 vs 13/13")] {
            let ab = compare(a, b);
            assert_eq!(ab.rows.len(), 1);
            assert_eq!(ab.rows[0].flags, vec![format!("set policy differs (input/output sets {want})")]);
            let md = markdown(&ab, 1.0);
            assert!(md.contains(&format!("set policy differs (input/output sets {want})")), "{md}");
        }
    }
}
