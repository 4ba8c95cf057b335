//! Reads the JSON written by `peers/bench_peers.py` (`--out DIR --tag NAME` → `DIR/NAME.json`)
//! into one [`Run`] per implementation, so peers and normkit share charts and tables.
//!
//! The script's layout: `env` (`gpu`, `nvidia_smi`, versions), `copy` (a list; the first entry's
//! `GBps` is the ceiling), `impl_info` (implementation → versions), and `results`, an object keyed
//! `op|impl|MxN|dtype` whose values hold `op`, `impl`, `M`, `N`, `dtype` (`bfloat16`, `float16`,
//! `float32`), `status`, `GBps`, `time_us`, `bytes`. Its GB/s is the same unit as normkit's
//! (1e9 bytes/s of minimal traffic, weights at x's element size); only `status == "ok"` cells
//! are taken. The script's `rms_fwdbwd` and `ln_fwdbwd` (forward and backward as one unit,
//! bytes = forward + backward) are kept as [`Chain`] rows, which reports compare with normkit's
//! forward + backward ([`crate::compare`]).
//!
//! `benches/peers/fp8_peers.py` writes the same layout for the FP8 ops (`rms_fwd_fp8`, ...), each
//! cell with a `y_dtype` (`float8_e4m3fn`, ...), kept as the row's `y_dtype` (`e4m3`, ...): an FP8
//! row is compared with normkit's only in the same format, and one without a known format is not
//! taken.

use crate::ops::{Chain, Op};
use crate::schema::{Machine, ResultRow, Run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Implementation names of the script and how reports call them.
pub const IMPLS: [(&str, &str); 5] =
    [("eager", "torch eager"), ("compile", "torch.compile"), ("liger", "Liger"), ("quack", "QuACK"), ("flashinfer", "FlashInfer")];

pub fn load(path: &Path) -> Result<Vec<Run>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read peers file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("peers file {}: {e}", path.display()))
}

fn dtype_name(s: &str) -> Option<&'static str> {
    match s {
        "bfloat16" | "bf16" => Some("bf16"),
        "float16" | "f16" => Some("f16"),
        "float32" | "f32" => Some("f32"),
        _ => None,
    }
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// The driver version from the `nvidia-smi` CSV the script stores (second column of line 2).
fn driver_of(env: &Value) -> String {
    let smi = env.get("nvidia_smi").and_then(Value::as_str).unwrap_or("");
    smi.lines().nth(1).and_then(|l| l.split(',').nth(1)).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Python's `json.dump` writes non-finite floats as bare `NaN`, `Infinity`, `-Infinity` (the
/// script's accuracy errors can be NaN), which JSON does not allow: they become `null` here.
fn python_json_to_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            in_str = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_str = true;
        } else if let Some(tok) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            out.push_str("null");
            rest = &rest[tok.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

pub fn parse(text: &str) -> Result<Vec<Run>, String> {
    let v: Value = serde_json::from_str(&python_json_to_json(text)).map_err(|e| format!("not valid JSON: {e}"))?;
    let (Some(env), Some(Value::Object(results))) = (v.get("env"), v.get("results")) else {
        return Err("not a bench_peers.py file (expected `env` and a `results` object)".into());
    };
    let device = env.get("gpu").or_else(|| env.get("platform")).and_then(Value::as_str).unwrap_or("unknown device").to_string();
    let copy_gbps = v.get("copy").and_then(|c| c.get(0)).and_then(|c| num(c, "GBps")).unwrap_or(0.0);
    let copy_bytes = v.get("copy").and_then(|c| c.get(0)).and_then(|c| c.get("bytes_each_way")).and_then(Value::as_u64).unwrap_or(0);
    let date = v.get("date").and_then(Value::as_str).unwrap_or("").to_string();
    let mut rows: BTreeMap<String, Vec<ResultRow>> = BTreeMap::new();
    for cell in results.values() {
        if let Some((imp, row)) = row_of(cell, copy_gbps) {
            rows.entry(imp).or_default().push(row);
        }
    }
    let short = device.replace("NVIDIA ", "");
    let runs = rows
        .into_iter()
        .map(|(imp, results)| {
            let pretty = IMPLS.iter().find(|(k, _)| *k == imp).map_or(imp.as_str(), |(_, p)| p);
            let tool = v.get("tool").and_then(Value::as_str).unwrap_or("peers/bench_peers.py");
            let mut versions = BTreeMap::from([("measured by".to_string(), tool.to_string())]);
            if let Some(info) = v.get("impl_info").and_then(|i| i.get(&imp)).and_then(Value::as_str) {
                versions.insert(imp.clone(), info.to_string());
            }
            Run {
                device: device.clone(),
                driver: driver_of(env),
                copy_gbps,
                results,
                backend: "peer".into(),
                label: format!("{pretty} · {short}"),
                schema_version: None,
                units: None,
                date: date.clone(),
                copy_bytes,
                machine: Machine {
                    compute_units: env.get("sm_count").and_then(Value::as_u64).unwrap_or(0) as u32,
                    memory_bytes: env.get("mem_bytes").and_then(Value::as_u64).unwrap_or(0),
                    cache_bytes: env.get("l2_bytes").and_then(Value::as_u64).unwrap_or(0),
                    ..Machine::default()
                },
                versions,
                errors: Vec::new(),
                skipped: Vec::new(),
                notes: Vec::new(),
            }
        })
        .collect();
    Ok(runs)
}

fn row_of(cell: &Value, copy_gbps: f64) -> Option<(String, ResultRow)> {
    if cell.get("status").and_then(Value::as_str) != Some("ok") {
        return None;
    }
    let name = cell.get("op")?.as_str()?;
    let op = Op::parse(name).map(Op::name).or_else(|| Chain::parse(name).map(Chain::name))?;
    let imp = cell.get("impl")?.as_str()?.to_string();
    let dtype = dtype_name(cell.get("dtype")?.as_str()?)?;
    // The FP8 ops' y format (`float8_e4m3fn`, ...), as normkit names it; a row of an FP8 op
    // without a known format is not taken (it could not be matched with normkit's).
    let y_dtype = match cell.get("y_dtype").and_then(Value::as_str) {
        Some(y) => Some(normkit_core::DType::parse(y).filter(|d| d.is_fp8())?.name().to_string()),
        None if Op::parse(name).is_some_and(Op::is_fp8) => return None,
        None => None,
    };
    let (m, n) = (cell.get("M")?.as_u64()?, cell.get("N")?.as_u64()?);
    let gbps = num(cell, "GBps")?;
    let us = num(cell, "time_us")?;
    let row = ResultRow {
        op: op.into(),
        m,
        n,
        dtype: dtype.into(),
        gbps,
        us,
        bytes: cell.get("bytes").and_then(Value::as_u64),
        pct_copy: num(cell, "pct_copy").or((copy_gbps > 0.0).then(|| 100.0 * gbps / copy_gbps)),
        us_min: None,
        us_max: None,
        n_sets: cell.get("n_sets").and_then(Value::as_u64),
        calls: cell.get("per_graph").and_then(Value::as_u64),
        reps: None,
        us_baseline: None,
        y_dtype,
        us_rotated: None,
        n_sets_rotated: None,
        out_sets: None,
    };
    Some((imp, row))
}

/// The peer-script fixture, for the report tests.
#[cfg(test)]
pub(crate) fn tests_fixture() -> &'static str {
    tests::FIXTURE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in the layout bench_peers.py writes (the fields the reader uses, plus some noise).
    pub const FIXTURE: &str = r#"{
      "env": {"gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132, "l2_bytes": 52428800,
              "nvidia_smi": "name, driver_version, clocks.sm\nNVIDIA H100 80GB HBM3, 580.159.04, 1980 MHz"},
      "copy": [{"bytes_each_way": 2147483648, "GBps": 3019.2}],
      "impl_info": {"quack": "quack-kernels 0.6.5", "liger": "liger-kernel 0.8.5"},
      "results": {
        "rms_fwd|quack|32768x4096|bfloat16": {"op": "rms_fwd", "impl": "quack", "M": 32768, "N": 4096,
            "dtype": "bfloat16", "status": "ok", "GBps": 2970.4, "time_us": 180.9, "bytes": 537067520},
        "rms_fwd|liger|32768x4096|bfloat16": {"op": "rms_fwd", "impl": "liger", "M": 32768, "N": 4096,
            "dtype": "bfloat16", "status": "ok", "GBps": 2961.0, "time_us": 181.4},
        "rms_fwd|quack|2048x65536|bfloat16": {"op": "rms_fwd", "impl": "quack", "M": 2048, "N": 65536,
            "dtype": "bfloat16", "status": "ok", "GBps": 2951.0, "time_us": 182.0},
        "ln_bwd|liger|2048x65536|float32": {"op": "ln_bwd", "impl": "liger", "M": 2048, "N": 65536,
            "dtype": "float32", "status": "error", "error": "boom"},
        "rms_fwdbwd|quack|32768x4096|bfloat16": {"op": "rms_fwdbwd", "impl": "quack", "M": 32768, "N": 4096,
            "dtype": "bfloat16", "status": "ok", "GBps": 2000.0, "time_us": 700.0}
      }
    }"#;

    #[test]
    fn reads_the_peer_script_layout() {
        let runs = parse(FIXTURE).unwrap();
        assert_eq!(runs.len(), 2);
        let quack = runs.iter().find(|r| r.label.starts_with("QuACK")).unwrap();
        assert_eq!(quack.results.len(), 3, "fwdbwd kept as a chain row");
        assert!(quack.results.iter().any(|r| r.op == "rms_fwdbwd"));
        assert_eq!(quack.driver, "580.159.04");
        assert_eq!(quack.copy_gbps, 3019.2);
        assert_eq!(quack.results[0].dtype, "bf16");
        assert!(parse("{}").is_err());
    }

    #[test]
    fn python_nan_and_infinity_become_null() {
        let text = r#"{"a": NaN, "b": [-Infinity, Infinity], "s": "NaN \" Infinity", "c": 1.5}"#;
        let fixed = python_json_to_json(text);
        assert_eq!(fixed, r#"{"a": null, "b": [null, null], "s": "NaN \" Infinity", "c": 1.5}"#);
        let with_nan = FIXTURE.replace(r#""GBps": 2961.0"#, r#""GBps": 2961.0, "acc": NaN"#);
        assert_eq!(parse(&with_nan).unwrap().len(), 2);
    }
}
