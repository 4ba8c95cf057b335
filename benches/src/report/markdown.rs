//! `report.md`: the machines, then one table per op with every run side by side.

use super::{all_runs, find, fmt_bytes, fmt_gbps, fmt_pct, fmt_us, is_latency, ops_present, pct, row_keys, short_date};
use crate::schema::{ResultsFile, Run, SkippedBackend};
use std::fmt::Write;

pub fn render(file: &ResultsFile) -> String {
    let runs = all_runs(file);
    let mut s = String::new();
    let _ = writeln!(s, "# normkit benchmark report\n");
    let _ = writeln!(
        s,
        "Generated {} by {} (schema {}). GB/s = 1e9 bytes per second of counted traffic: every operand read \
         once and every output written once (weights in x's dtype, statistics f32). `%` = share of the copy \
         ceiling measured in the same run on the same device. µs = median time per call. Calls moving \
         under 4 MB are latency-bound: read their µs. {}\n",
        short_date(&file.date),
        file.tool,
        file.schema_version,
        super::SET_POLICY
    );
    machines(&mut s, &runs);
    for op in ops_present(&runs) {
        let cols: Vec<&Run> = runs.iter().copied().filter(|r| r.results.iter().any(|x| x.op == op.name())).collect();
        let fp8 = super::fp8_note(op, &cols).map_or_else(String::new, |n| format!(". {n}"));
        let _ = writeln!(s, "\n## {op}\n\n{}{fp8}\n", op.describe());
        let mut header = String::from("| shape | dtype |");
        let mut rule = String::from("|---|---|");
        for r in &cols {
            let _ = write!(header, " {} GB/s | % | µs |", r.display_label());
            rule.push_str("---:|---:|---:|");
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for key in row_keys(op, &cols) {
            let _ = write!(s, "| {}x{} | {} |", key.1, key.0, key.2);
            for r in &cols {
                match find(r, op, &key) {
                    Some(x) if is_latency(x) => {
                        let rotated = super::rotated(r, x).map_or_else(String::new, |(u, k, _)| format!(" ({} on {k} sets)", fmt_us(u)));
                        let _ = write!(s, " ({}) | – | **{}**{rotated} |", fmt_gbps(x.gbps), fmt_us(x.us));
                    }
                    Some(x) => {
                        let p = pct(r, x).map_or_else(|| "–".into(), fmt_pct);
                        let rotated = super::rotated(r, x).map_or_else(String::new, |(u, k, p)| {
                            format!(" ({} on {k} sets{})", fmt_us(u), p.map_or_else(String::new, |p| format!(", {}", fmt_pct(p))))
                        });
                        let _ = write!(s, " {} | {p} | {}{rotated} |", fmt_gbps(x.gbps), fmt_us(x.us));
                    }
                    None => s.push_str(" – | – | – |"),
                }
            }
            s.push('\n');
        }
    }
    speedups(&mut s, file);
    peers(&mut s, file);
    problems(&mut s, &runs, &file.skipped_backends);
    s
}

/// normkit against each peer on the same device: µs, GB/s and the speedup, per op and chain.
fn speedups(s: &mut String, file: &ResultsFile) {
    let tables = super::speedup_tables(file);
    if tables.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Speedup over the peers on the same device\n\n{}", super::speedup_intro(file));
    for t in tables {
        let _ = writeln!(s, "\n### {} · {}\n\n{}\n", t.op, t.normkit, t.what);
        let mut header = String::from("| shape | dtype | normkit µs | normkit GB/s |");
        let mut rule = String::from("|---|---|---:|---:|");
        for p in &t.peers {
            let _ = write!(header, " {p} µs | GB/s | speedup |");
            rule.push_str("---:|---:|---:|");
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for r in &t.rows {
            let gbps = |g: f64| if r.latency { format!("({})", fmt_gbps(g)) } else { fmt_gbps(g) };
            let _ = write!(s, "| {}x{} | {} | {} | {} |", r.key.1, r.key.0, r.key.2, fmt_us(r.normkit_us), gbps(r.normkit_gbps));
            for c in &r.cells {
                match c {
                    Some(c) => {
                        let _ = write!(s, " {} | {} | **{}** |", fmt_us(c.peer_us), gbps(c.peer_gbps), super::fmt_speedup(c.speedup));
                    }
                    None => s.push_str(" – | – | – |"),
                }
            }
            s.push('\n');
        }
    }
}

/// The fastest peer per case beside normkit on the same device.
fn peers(s: &mut String, file: &ResultsFile) {
    let rows = super::peer_rows(file);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Peers: the fastest per case, and normkit on the same device\n");
    let _ = writeln!(
        s,
        "GPU peers measured by `peers/bench_peers.py` (the FP8 ops by `benches/peers/fp8_peers.py`; CUDA-graph replay), CPU peers (candle) in the same run as normkit; the same \
         byte model. µs for latency-bound shapes, GB/s otherwise.\n"
    );
    let _ = writeln!(s, "| op | shape | dtype | fastest peer | normkit (peer µs / normkit µs) |\n|---|---|---|---|---|");
    for r in &rows {
        let fmt = |gbps: f64, us: f64| if r.latency { format!("{} µs", fmt_us(us)) } else { format!("{} GB/s", fmt_gbps(gbps)) };
        let nk: Vec<String> =
            r.normkit.iter().enumerate().map(|(i, (l, g, u))| format!("{} ({l}, {:.2}×)", fmt(*g, *u), r.ratio(i))).collect();
        let _ = writeln!(
            s,
            "| {} | {}x{} | {} | {} ({}) | {} |",
            r.op,
            r.key.1,
            r.key.0,
            r.key.2,
            fmt(r.best.1, r.best.2),
            r.best.0,
            if nk.is_empty() { "–".into() } else { nk.join(", ") }
        );
    }
    for line in super::score_lines(&rows) {
        let _ = writeln!(s, "\n**{line}**");
    }
}

fn machines(s: &mut String, runs: &[&Run]) {
    let _ = writeln!(s, "## Machines\n");
    let _ = writeln!(s, "| run | device | driver | compute units | clocks | memory | last-level cache | copy ceiling GB/s | measured |");
    let _ = writeln!(s, "|---|---|---|---:|---|---:|---:|---:|---|");
    for r in runs {
        let m = &r.machine;
        let cu = if m.compute_units > 0 { m.compute_units.to_string() } else { "–".into() };
        let copy = if r.copy_gbps > 0.0 { format!("**{}**", fmt_gbps(r.copy_gbps)) } else { "–".into() };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {cu} | {} | {} | {} | {copy} | {} |",
            r.display_label(),
            r.device,
            dash(&r.driver),
            dash(&m.clocks),
            fmt_bytes(m.memory_bytes),
            fmt_bytes(m.cache_bytes),
            dash(&short_date(&r.date))
        );
    }
    for r in runs {
        let mut extra = Vec::new();
        if !r.machine.host_cpu.is_empty() {
            extra.push(format!("host {} ({} cores), {}", r.machine.host_cpu, r.machine.host_cores, r.machine.os));
        }
        if r.copy_bytes > 0 {
            extra.push(format!("copy ceiling over {} each way", fmt_bytes(r.copy_bytes)));
        }
        if !r.versions.is_empty() {
            extra.push(r.versions.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "));
        }
        if !extra.is_empty() {
            let _ = writeln!(s, "\n- **{}**: {}", r.display_label(), extra.join("; "));
        }
    }
}

fn problems(s: &mut String, runs: &[&Run], skipped_backends: &[SkippedBackend]) {
    let any = runs.iter().any(|r| !r.errors.is_empty() || !r.skipped.is_empty() || !r.notes.is_empty());
    if !any && skipped_backends.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Errors, skipped cases and notes\n");
    for b in skipped_backends {
        let _ = writeln!(s, "- backend {} not measured: {}", b.backend, b.reason);
    }
    for r in runs {
        for e in &r.errors {
            let _ = writeln!(s, "- {} — ERROR {} {}x{} {}: {}", r.display_label(), e.op, e.m, e.n, e.dtype, e.reason);
        }
        for e in &r.skipped {
            let _ = writeln!(s, "- {} — skipped {} {}x{} {}: {}", r.display_label(), e.op, e.m, e.n, e.dtype, e.reason);
        }
        for n in &r.notes {
            let _ = writeln!(s, "- {} — {n}", r.display_label());
        }
    }
}

fn dash(s: &str) -> &str {
    if s.is_empty() {
        "–"
    } else {
        s
    }
}
