//! The results file and how it is read back.
//!
//! # Layout of `results.json` (schema version 3)
//! ```text
//! { "schema_version": 2, "units": {"gbps": "1e9 B/s", "us": "us", "bytes": "B"},
//!   "tool": "normkit-bench 0.1.0", "date": "2026-11-21T23:40:00Z",
//!   "runs":  [ RUN, ... ],      // normkit runs, one per backend/device
//!   "peers": [ RUN, ... ],      // other implementations: candle (measured in the same run on
//!                               // the CPU), bench_peers.py (after a merge)
//!   "comparisons": [ CMP, ... ] } // normkit against each peer on the same device (derived)
//! RUN = { "device": str, "driver": str, "copy_gbps": num,
//!         "results": [ {"op": "rms_fwd"|...|"rms_fwdbwd"|"ln_fwdbwd"|"rms_fwd_fp8"|..., "m": int, "n": int,
//!                       "dtype": "bf16"|"f16"|"f32", "gbps": num, "us": num,
//!                       "y_dtype": "e4m3"|"e5m2"|...  // FP8 ops only: the format of y
//!                       ...more}, ... ],
//!         "backend", "label", "machine", "versions", "date", "schema_version", "units", "errors", ... }
//! CMP = { "normkit": label, "peer": label, "op", "m", "n", "dtype", "normkit_us", "peer_us",
//!         "normkit_gbps", "peer_gbps", "speedup" }   // speedup = peer_us / normkit_us
//! ```
//! Version 2 adds to version 1 the chain ops `rms_fwdbwd` and `ln_fwdbwd` (a forward and its
//! backward timed as one unit by a peer; see [`crate::ops::Chain`]), a result's `us_baseline`
//! and the `comparisons` list; a version 1 file is a valid version 2 file and is read as one.
//! `comparisons` are recomputed from the runs whenever a file is read or built, never trusted.
//! Version 3 adds the FP8 forwards `rms_fwd_fp8`, `rms_fwd_fp8_t`, `addrms_fwd_fp8` and
//! `rms_fwd_fp8_row` ([`crate::ops::Op::FP8`]; `dtype` stays x's dtype) and a result's `y_dtype`,
//! the FP8 format of their `y`; versions 1 and 2 are subsets of it and are read as version 3.
//!
//! Everything beyond `device`, `driver`, `copy_gbps` and the six keys of a result is optional when
//! reading. A file holding one bare `RUN` object (what other tools write), a JSON list of them, or
//! the layout above are all accepted. A `schema_version` other than 1 or 2, or `units` other than
//! the ones above, anywhere in the input, is an error: numbers in different units are never mixed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The version written.
pub const SCHEMA_VERSION: u32 = 3;
/// The oldest version read (versions 1 and 2 are subsets of version 3).
pub const OLDEST_READ_VERSION: u32 = 1;

/// Units of the numeric fields. Compared as strings when files are merged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Units {
    /// `gbps`, `copy_gbps`: 1e9 bytes per second, bytes read plus bytes written.
    pub gbps: String,
    /// `us`: microseconds per call (median over repetitions).
    pub us: String,
    /// `bytes`, `copy_bytes`: bytes.
    pub bytes: String,
}

impl Default for Units {
    fn default() -> Self {
        Units { gbps: "1e9 B/s".into(), us: "us".into(), bytes: "B".into() }
    }
}

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// Cores (CPU), SMs (CUDA) or CUs (HIP).
    pub compute_units: u32,
    pub clocks: String,
    pub memory_bytes: u64,
    pub cache_bytes: u64,
    /// The host: CPU model, logical cores, OS kernel.
    pub host_cpu: String,
    pub host_cores: u32,
    pub os: String,
}

/// One measured case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    pub op: String,
    pub m: u64,
    pub n: u64,
    pub dtype: String,
    pub gbps: f64,
    pub us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_copy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_max: Option<f64>,
    /// Input sets rotated through, calls per repetition, repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_sets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reps: Option<u64>,
    /// µs already subtracted from `us` (and from `us_min`, `us_max`): a separately timed part of
    /// the measured call that is not the op itself (candle's gradient seeding, see
    /// [`crate::candle_peer`]). `us + us_baseline` is the time of the whole call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_baseline: Option<f64>,
    /// The FP8 format of `y` (`e4m3`, `e5m2`, `e4m3fnuz`, `e5m2fnuz`) of an FP8 op; absent for
    /// the others, whose `y` has x's dtype (`dtype`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y_dtype: Option<String>,
    /// Every case that needs more than one set (its bytes under `Plan::rotate_factor` times the
    /// last-level cache) is timed first as the peer script times it — `n_sets` input sets, at most
    /// `Plan::peer_max_sets`, and one output set (`out_sets` = 1): that is `us` — then with the
    /// general rotation, `n_sets_rotated` sets of inputs and outputs each (at most
    /// `Plan::max_sets`): that policy's median µs is `us_rotated`. Both absent for a case that
    /// needs one set (it is timed once, on one set of each), and in runs before this field.
    /// Before the peer policy covered every rotated case (2026-11-27), only decode-sized cases
    /// (m·n·4 < 4 MB) had it; mid-size ones had `out_sets` = `n_sets` and no `us_rotated`.
    /// See [`crate::runner::set_policy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_rotated: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_sets_rotated: Option<u64>,
    /// Output sets of the `us` timing: 1, every call writing the same outputs as the peer
    /// script's allocator has them (every case the runner times now; a one-set case has one of
    /// each anyway). Older runs: `n_sets` for the cases outside the peer policy of their time
    /// (each input set had its own outputs; mid sizes before 2026-11-27), absent before this
    /// field. `normkit-bench ab` flags comparisons whose `(n_sets, out_sets)` differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_sets: Option<u64>,
}

/// A case that did not produce a number, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseNote {
    pub op: String,
    pub m: u64,
    pub n: u64,
    pub dtype: String,
    pub reason: String,
}

/// The results of one backend on one device (or of one peer implementation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub device: String,
    pub driver: String,
    pub copy_gbps: f64,
    pub results: Vec<ResultRow>,
    /// `cpu`, `cuda`, `hip`, or `peer` for other implementations.
    #[serde(default)]
    pub backend: String,
    /// Short name in charts and tables (`cpu · Intel Xeon`, `quack · H100`).
    #[serde(default)]
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<Units>,
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub copy_bytes: u64,
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// Cases that failed (the message of the error).
    #[serde(default)]
    pub errors: Vec<CaseNote>,
    /// Cases the backend does not support, or that did not fit in memory.
    #[serde(default)]
    pub skipped: Vec<CaseNote>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Run {
    /// The label, or one made from the backend and device.
    pub fn display_label(&self) -> String {
        if !self.label.is_empty() {
            return self.label.clone();
        }
        match self.backend.as_str() {
            "" => self.device.clone(),
            b => format!("{b} · {}", self.device),
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub units: Units,
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub date: String,
    pub runs: Vec<Run>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<Run>,
    /// Backends that were not measured in this run, and why (no device, not built, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_backends: Vec<SkippedBackend>,
    /// normkit against each peer on the same device, per case ([`crate::compare`]); derived
    /// from `runs` and `peers` by [`ResultsFile::new`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<crate::compare::Comparison>,
}

/// A backend the run did not measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedBackend {
    pub backend: String,
    pub reason: String,
}

impl ResultsFile {
    pub fn new(runs: Vec<Run>, peers: Vec<Run>) -> Self {
        let comparisons = crate::compare::compare(&runs, &peers);
        ResultsFile {
            schema_version: SCHEMA_VERSION,
            units: Units::default(),
            tool: format!("normkit-bench {}", env!("CARGO_PKG_VERSION")),
            date: crate::sysinfo::utc_now(),
            runs,
            peers,
            skipped_backends: Vec::new(),
            comparisons,
        }
    }

    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Reads a results file in any of the accepted layouts. Errors name the file.
pub fn load(path: &Path) -> Result<ResultsFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a results file in any of the accepted layouts (see the module docs).
pub fn parse(text: &str) -> Result<ResultsFile, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let (file_version, file_units, runs, peers) = match &v {
        Value::Array(items) => (None, None, items.clone(), Vec::new()),
        Value::Object(o) if o.contains_key("runs") => {
            let version = o.get("schema_version").map(version_of).transpose()?;
            let units = o.get("units").map(units_of).transpose()?;
            let list = |key: &str| -> Result<Vec<Value>, String> {
                match o.get(key) {
                    None | Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(a)) => Ok(a.clone()),
                    Some(_) => Err(format!("`{key}` must be a list of runs")),
                }
            };
            (version, units, list("runs")?, list("peers")?)
        }
        Value::Object(o) if o.contains_key("env") && o.get("results").is_some_and(Value::is_object) => {
            return Err("this is a bench_peers.py file: pass it with --peers".into());
        }
        Value::Object(o) if o.contains_key("results") => (None, None, vec![v.clone()], Vec::new()),
        _ => return Err("expected a run object (with `results`), a list of runs, or an object with `runs`".into()),
    };
    check_version(file_version)?;
    check_units(file_units.as_ref())?;
    let runs = runs.into_iter().enumerate().map(|(i, r)| run_of(r).map_err(|e| format!("run {i}: {e}"))).collect::<Result<_, _>>()?;
    let peers =
        peers.into_iter().enumerate().map(|(i, r)| run_of(r).map_err(|e| format!("peer run {i}: {e}"))).collect::<Result<_, _>>()?;
    let mut file = ResultsFile::new(runs, peers);
    if let Value::Object(o) = &v {
        if let Some(Value::String(d)) = o.get("date") {
            file.date = d.clone();
        }
        if let Some(skipped) = o.get("skipped_backends") {
            file.skipped_backends = serde_json::from_value(skipped.clone()).map_err(|e| format!("skipped_backends: {e}"))?;
        }
    }
    Ok(file)
}

fn version_of(v: &Value) -> Result<u32, String> {
    v.as_u64().map(|x| x as u32).ok_or_else(|| format!("`schema_version` must be an integer, got {v}"))
}

fn units_of(v: &Value) -> Result<Units, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("bad `units`: {e}"))
}

fn check_version(v: Option<u32>) -> Result<(), String> {
    match v {
        Some(v) if !(OLDEST_READ_VERSION..=SCHEMA_VERSION).contains(&v) => Err(format!(
            "schema_version {v} is not supported (this tool reads versions {OLDEST_READ_VERSION} to {SCHEMA_VERSION} and writes \
             {SCHEMA_VERSION}); refusing to mix versions"
        )),
        _ => Ok(()),
    }
}

fn check_units(u: Option<&Units>) -> Result<(), String> {
    let ours = Units::default();
    match u {
        Some(u) if *u != ours => Err(format!(
            "units {{gbps: {:?}, us: {:?}, bytes: {:?}}} differ from normkit's {{gbps: {:?}, us: {:?}, bytes: {:?}}}; refusing to mix units",
            u.gbps, u.us, u.bytes, ours.gbps, ours.us, ours.bytes
        )),
        _ => Ok(()),
    }
}

fn run_of(v: Value) -> Result<Run, String> {
    let run: Run = serde_json::from_value(v).map_err(|e| format!("not a run: {e}"))?;
    check_version(run.schema_version)?;
    check_units(run.units.as_ref())?;
    if !(run.copy_gbps.is_finite() && run.copy_gbps >= 0.0) {
        return Err(format!("copy_gbps must be a finite number ≥ 0, got {}", run.copy_gbps));
    }
    for r in &run.results {
        check_row(r).map_err(|e| format!("result {} {}x{} {}: {e}", r.op, r.m, r.n, r.dtype))?;
    }
    Ok(run)
}

fn check_row(r: &ResultRow) -> Result<(), String> {
    if crate::ops::Op::parse(&r.op).is_none() && crate::ops::Chain::parse(&r.op).is_none() {
        return Err(format!("unknown op `{}`", r.op));
    }
    if !matches!(r.dtype.as_str(), "bf16" | "f16" | "f32") {
        return Err(format!("dtype must be bf16, f16 or f32, got `{}`", r.dtype));
    }
    if let Some(y) = &r.y_dtype {
        if !normkit_core::DType::parse(y).is_some_and(normkit_core::DType::is_fp8) {
            return Err(format!("y_dtype must be an FP8 format (e4m3, e5m2, e4m3fnuz, e5m2fnuz), got `{y}`"));
        }
    }
    if !(r.gbps.is_finite() && r.gbps >= 0.0 && r.us.is_finite() && r.us >= 0.0) {
        return Err("gbps and us must be finite numbers ≥ 0".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SINGLE: &str = r#"{"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "copy_gbps": 3019.0,
        "results": [{"op": "rms_fwd", "m": 32768, "n": 4096, "dtype": "bf16", "gbps": 2950.5, "us": 182.1}]}"#;

    #[test]
    fn accepts_single_object_list_and_runs_forms() {
        let a = parse(SINGLE).unwrap();
        assert_eq!(a.runs.len(), 1);
        assert_eq!(a.runs[0].results[0].gbps, 2950.5);
        let b = parse(&format!("[{SINGLE}, {SINGLE}]")).unwrap();
        assert_eq!(b.runs.len(), 2);
        let c = parse(&a.to_json()).unwrap();
        assert_eq!(c.runs, a.runs);
    }

    #[test]
    fn refuses_other_versions_and_units() {
        let v4 = SINGLE.replacen('{', r#"{"schema_version": 4, "#, 1);
        assert!(parse(&v4).unwrap_err().contains("schema_version 4"));
        for old in [1, 2] {
            let v = SINGLE.replacen('{', &format!(r#"{{"schema_version": {old}, "#), 1);
            assert_eq!(parse(&v).unwrap().runs.len(), 1, "version {old} is read as version 3");
        }
        let tb = r#"{"schema_version": 1, "units": {"gbps": "TB/s", "us": "us", "bytes": "B"}, "runs": []}"#;
        assert!(parse(tb).unwrap_err().contains("refusing to mix units"));
        let bad_op = SINGLE.replace("rms_fwd", "softmax");
        assert!(parse(&bad_op).unwrap_err().contains("unknown op `softmax`"));
        assert!(parse(r#"{"env": {}, "results": {}}"#).unwrap_err().contains("--peers"));
    }

    #[test]
    fn fp8_rows_carry_their_format() {
        let fp8 = SINGLE.replace(r#""op": "rms_fwd""#, r#""op": "rms_fwd_fp8_row", "y_dtype": "e4m3""#);
        let f = parse(&fp8).unwrap();
        assert_eq!(f.runs[0].results[0].y_dtype.as_deref(), Some("e4m3"));
        assert!(f.to_json().contains(r#""y_dtype": "e4m3""#));
        assert!(!parse(SINGLE).unwrap().to_json().contains("y_dtype"), "absent for the other ops");
        let bad = fp8.replace(r#""y_dtype": "e4m3""#, r#""y_dtype": "bf16""#);
        assert!(parse(&bad).unwrap_err().contains("y_dtype must be an FP8 format"));
    }
}
