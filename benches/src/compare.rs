//! normkit against each peer measured on the same device: per case, the two times and their
//! ratio, the `speedup` (the peer's µs / normkit's µs, which is also normkit's GB/s / the
//! peer's, both sides counting the same bytes).
//!
//! A peer's row is matched with the normkit run whose `device` has the same name. A chain row
//! (`rms_fwdbwd`, `ln_fwdbwd`: forward and backward timed as one unit, see [`Chain`]) is
//! matched with the sum of normkit's forward and backward rows of the same shape and dtype: two
//! calls, the forward saving the statistics the backward reads, which is how normkit trains.
//! An FP8 op's rows match only when their `y_dtype` (the FP8 format of `y`) is the same.

use crate::ops::{Chain, Op};
use crate::schema::{ResultRow, Run};
use serde::{Deserialize, Serialize};

/// One case measured by normkit and by a peer on the same device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The label of the normkit run and of the peer run.
    pub normkit: String,
    pub peer: String,
    pub op: String,
    pub m: u64,
    pub n: u64,
    pub dtype: String,
    /// For a chain, normkit's forward µs + backward µs.
    pub normkit_us: f64,
    pub peer_us: f64,
    pub normkit_gbps: f64,
    pub peer_gbps: f64,
    /// `peer_us / normkit_us`: above 1, normkit is faster.
    pub speedup: f64,
}

/// normkit's row for `op` (an op or a chain) at one shape and dtype: the measured row, or for a
/// chain the sum of its forward and backward rows (µs and bytes added, GB/s recomputed);
/// `None` when a part was not measured.
pub fn normkit_row(run: &Run, op: &str, m: u64, n: u64, dtype: &str) -> Option<ResultRow> {
    let find = |name: &str| run.results.iter().find(|x| x.op == name && x.m == m && x.n == n && x.dtype == dtype);
    if Op::parse(op).is_some() {
        return find(op).cloned();
    }
    let [fwd, bwd] = Chain::parse(op)?.parts().map(|p| find(p.name()));
    let (fwd, bwd) = (fwd?, bwd?);
    let us = fwd.us + bwd.us;
    let bytes = crate::report::row_bytes(fwd) + crate::report::row_bytes(bwd);
    let gbps = if us > 0.0 { bytes as f64 / us / 1e3 } else { 0.0 };
    Some(ResultRow {
        op: op.to_string(),
        m,
        n,
        dtype: dtype.to_string(),
        gbps,
        us,
        bytes: Some(bytes),
        pct_copy: (run.copy_gbps > 0.0).then(|| 100.0 * gbps / run.copy_gbps),
        us_min: None,
        us_max: None,
        n_sets: None,
        calls: None,
        reps: None,
        us_baseline: None,
        y_dtype: fwd.y_dtype.clone(),
        us_rotated: None,
        n_sets_rotated: None,
        out_sets: None,
    })
}

/// Every (normkit run, peer run on the same device, case both measured), in the order of the
/// runs, then of the peers, then of the peer's results.
pub fn compare(runs: &[Run], peers: &[Run]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for r in runs {
        for p in peers.iter().filter(|p| p.device == r.device) {
            for x in &p.results {
                let Some(nk) = normkit_row(r, &x.op, x.m, x.n, &x.dtype) else { continue };
                // an FP8 op is compared only with the same FP8 format of y
                if nk.us <= 0.0 || x.us <= 0.0 || nk.y_dtype != x.y_dtype {
                    continue;
                }
                out.push(Comparison {
                    normkit: r.display_label(),
                    peer: p.display_label(),
                    op: x.op.clone(),
                    m: x.m,
                    n: x.n,
                    dtype: x.dtype.clone(),
                    normkit_us: nk.us,
                    peer_us: x.us,
                    normkit_gbps: nk.gbps,
                    peer_gbps: x.gbps,
                    speedup: x.us / nk.us,
                });
            }
        }
    }
    out
}

/// An empty run, for tests.
#[cfg(test)]
pub(crate) fn tests_run() -> Run {
    Run {
        device: String::new(),
        driver: String::new(),
        copy_gbps: 0.0,
        results: Vec::new(),
        backend: String::new(),
        label: String::new(),
        schema_version: None,
        units: None,
        date: String::new(),
        copy_bytes: 0,
        machine: crate::schema::Machine::default(),
        versions: Default::default(),
        errors: Vec::new(),
        skipped: Vec::new(),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use normkit_core::DType;

    fn row(op: &str, m: u64, n: u64, dtype: &str, us: f64) -> ResultRow {
        let dt = DType::parse(dtype).unwrap();
        let bytes = crate::ops::bytes_of(op, m as usize, n as usize, dt).unwrap();
        ResultRow {
            op: op.into(),
            m,
            n,
            dtype: dtype.into(),
            gbps: bytes as f64 / us / 1e3,
            us,
            bytes: Some(bytes),
            pct_copy: None,
            us_min: None,
            us_max: None,
            n_sets: None,
            calls: None,
            reps: None,
            us_baseline: None,
            y_dtype: None,
            us_rotated: None,
            n_sets_rotated: None,
            out_sets: None,
        }
    }

    fn run(backend: &str, label: &str, device: &str, results: Vec<ResultRow>) -> Run {
        Run { device: device.into(), copy_gbps: 20.0, results, backend: backend.into(), label: label.into(), ..tests_run() }
    }

    #[test]
    fn a_chain_is_compared_with_normkits_forward_plus_backward() {
        let nk = run(
            "cpu",
            "cpu",
            "Xeon",
            vec![row("rms_fwd", 64, 4096, "bf16", 100.0), row("rms_bwd", 64, 4096, "bf16", 300.0), row("ln_fwd", 64, 4096, "bf16", 120.0)],
        );
        let fused = run("peer", "candle fused", "Xeon", vec![row("rms_fwd", 64, 4096, "bf16", 250.0)]);
        let unfused = run(
            "peer",
            "candle unfused",
            "Xeon",
            // ln_bwd was not measured by normkit: no comparison for ln_fwdbwd
            vec![row("rms_fwdbwd", 64, 4096, "bf16", 2000.0), row("ln_fwdbwd", 64, 4096, "bf16", 900.0)],
        );
        let elsewhere = run("peer", "QuACK", "H100", vec![row("rms_fwd", 64, 4096, "bf16", 1.0)]);
        let c = compare(std::slice::from_ref(&nk), &[fused, unfused, elsewhere]);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].op.as_str(), c[0].peer.as_str(), c[0].normkit_us, c[0].speedup), ("rms_fwd", "candle fused", 100.0, 2.5));
        assert_eq!((c[1].op.as_str(), c[1].normkit_us, c[1].peer_us, c[1].speedup), ("rms_fwdbwd", 400.0, 2000.0, 5.0));
        // the same bytes on both sides: the GB/s ratio is the speedup
        assert!((c[1].normkit_gbps / c[1].peer_gbps - 5.0).abs() < 1e-12);
        let chain = normkit_row(&nk, "rms_fwdbwd", 64, 4096, "bf16").unwrap();
        assert_eq!(chain.bytes, Some(Chain::RmsFwdBwd.bytes(64, 4096, DType::BF16)));
        assert!((chain.pct_copy.unwrap() - 100.0 * chain.gbps / 20.0).abs() < 1e-12);
    }
}
