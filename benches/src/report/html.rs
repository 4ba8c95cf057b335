//! `report.html`: one self-contained page (inline CSS, inline SVG, one small inline script that
//! records each chart's measured size in `data-` attributes, for the browser test). No fetches.

use super::svg::{self, esc, Chart, HLine, Point, Series};
use super::{all_runs, find, fmt_bytes, fmt_gbps, fmt_pct, fmt_us, is_latency, ops_present, pct, row_keys, short_date};
use crate::ops::Op;
use crate::schema::{ResultsFile, Run, SkippedBackend};
use std::fmt::Write;

const STYLE: &str = r#"
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1d2433;margin:0;background:#f6f7f9}
main{max-width:1360px;margin:0 auto;padding:18px 20px 40px}
h1{font-size:24px;margin:4px 0 6px}h2{font-size:19px;margin:0 0 4px}h3{font-size:16px;margin:14px 0 2px}
p.meta,p.desc{color:#5b6475;margin:2px 0 10px}
section{background:#fff;border:1px solid #e3e6eb;border-radius:8px;padding:14px 16px;margin:14px 0}
nav a{margin-right:12px;color:#2456a6;text-decoration:none;font-weight:600}
table{border-collapse:collapse;font-size:13px;margin-top:8px}
th,td{padding:3px 8px;border-bottom:1px solid #edf0f3;text-align:left;white-space:nowrap}
th{background:#f1f3f6;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.lat{color:#8a93a3}td.us-main{font-weight:700}span.rot{font-weight:400;color:#5b6475}tr:hover td{background:#fafbfd}
th.run{border-left:2px solid #dde1e7;text-align:center}td.first{border-left:2px solid #dde1e7}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:12px}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 2px;font-size:13px}
.legend span.sw{display:inline-block;width:22px;height:0;border-top:3px solid;vertical-align:middle;margin-right:6px}
.legend span.sw.dashed{border-top-style:dashed}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #eef0f3;border-radius:6px}
svg .title{font-size:14px;font-weight:600;fill:#1d2433}svg .tick{font-size:11px;fill:#5b6475}
svg .axis{font-size:12px;fill:#3a4252}svg .frame{fill:none;stroke:#c9ced6}
svg .grid{stroke:#eceff3;stroke-width:1}svg .line{fill:none;stroke-width:2.4;stroke-linejoin:round}
svg .ceiling{stroke-width:1.6;stroke-dasharray:2 4}svg .ceiling-label{font-size:11px}
div.scroll{overflow-x:auto;max-width:100%}
table.machines td{white-space:normal}
ul.notes{margin:4px 0;padding-left:20px;font-size:13px}
"#;

/// Measures every chart after layout: `data-bbox` = plot width×height, `data-series` = series
/// (line and markers) drawn with a non-zero size.
const SCRIPT: &str = r#"
document.querySelectorAll('svg.chart').forEach(function(svg){
  var b = svg.querySelector('g.plot').getBBox();
  svg.setAttribute('data-bbox', Math.round(b.width) + 'x' + Math.round(b.height));
  var n = 0; svg.querySelectorAll('g.series').forEach(function(g){ var r = g.getBBox(); if (r.width > 0 && r.height > 0) n++; });
  svg.setAttribute('data-series', String(n));
});
document.body.setAttribute('data-scroll-width', String(document.documentElement.scrollWidth));
document.body.setAttribute('data-measured', 'yes');
"#;

const PEER_COLORS: [(&str, &str); 7] = [
    ("torch eager", "#8a8f98"),
    ("torch.compile", "#9467bd"),
    ("Liger", "#ff7f0e"),
    ("QuACK", "#8c564b"),
    ("FlashInfer", "#17becf"),
    ("candle fused", "#e6550d"),
    ("candle unfused", "#a55194"),
];
const EXTRA_COLORS: [&str; 6] = ["#e377c2", "#bcbd22", "#393b79", "#637939", "#17a2b8", "#843c39"];

/// A color per run: cpu blue, cuda green, hip red, peers by implementation, then extras.
fn colors(runs: &[&Run]) -> Vec<&'static str> {
    let mut used: Vec<&'static str> = Vec::new();
    let mut extra = EXTRA_COLORS.iter();
    for r in runs {
        let want = match r.backend.as_str() {
            "cpu" => Some("#1f77b4"),
            "cuda" => Some("#2ca02c"),
            "hip" => Some("#d62728"),
            "peer" => PEER_COLORS.iter().find(|(name, _)| r.label.starts_with(name)).map(|(_, c)| *c),
            _ => None,
        };
        let c = match want {
            Some(c) if !used.contains(&c) => c,
            _ => extra.next().copied().unwrap_or("#444444"),
        };
        used.push(c);
    }
    used
}

pub fn render(file: &ResultsFile) -> String {
    let runs = all_runs(file);
    let colors = colors(&runs);
    let ops = ops_present(&runs);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>normkit benchmark report</title><style>{STYLE}</style></head><body><main>"
    );
    let _ = write!(
        s,
        "<h1>normkit benchmark report</h1><p class=\"meta\">Generated {} by {} (schema {}). GB/s = 1e9 bytes/s of counted traffic: \
         every operand read once and every output written once (weights in x's dtype, statistics f32). \
         % = share of the copy ceiling measured in the same run on the same device. µs = median per call; \
         calls moving under 4 MB are latency-bound (grey GB/s, bold µs) and left out of the charts. {}</p>",
        esc(&short_date(&file.date)),
        esc(&file.tool),
        file.schema_version,
        esc(super::SET_POLICY)
    );
    s.push_str("<nav>");
    for op in &ops {
        let _ = write!(s, "<a href=\"#op-{op}\">{op}</a>");
    }
    if !file.comparisons.is_empty() {
        s.push_str("<a href=\"#speedup\">speedup</a>");
    }
    if !file.peers.is_empty() {
        s.push_str("<a href=\"#peers\">peers</a>");
    }
    s.push_str("<a href=\"#machines\">machines</a></nav>");
    for &op in &ops {
        op_section(&mut s, op, &runs, &colors);
    }
    speedups(&mut s, file);
    peers(&mut s, file);
    machines(&mut s, &runs);
    problems(&mut s, &runs, &file.skipped_backends);
    let _ = writeln!(s, "</main><script>{SCRIPT}</script></body></html>");
    s
}

fn op_section(s: &mut String, op: Op, runs: &[&Run], colors: &[&'static str]) {
    let idx: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].results.iter().any(|x| x.op == op.name())).collect();
    let cols: Vec<&Run> = idx.iter().map(|&i| runs[i]).collect();
    let fp8 = super::fp8_note(op, &cols).map_or_else(String::new, |n| format!(". {n}"));
    let _ = write!(s, "<section class=\"op\" id=\"op-{op}\"><h2>{op}</h2><p class=\"desc\">{}{}</p>", esc(op.describe()), esc(&fp8));
    let (gbps, pcts) = series(op, runs, colors, &idx);
    let mut ceilings: Vec<HLine> = Vec::new();
    for &i in &idx {
        let r = runs[i];
        let label = format!("copy ceiling · {} {} GB/s", short_device(&r.device), fmt_gbps(r.copy_gbps));
        if r.copy_gbps > 0.0 && !ceilings.iter().any(|c| c.label == label) {
            ceilings.push(HLine { y: r.copy_gbps, label, color: colors[i] });
        }
    }
    let hundred = [HLine { y: 100.0, label: "copy ceiling = 100%".into(), color: "#5b6475" }];
    s.push_str("<div class=\"charts\">");
    s.push_str(&svg::render(&Chart {
        id: format!("chart-{op}-gbps"),
        title: format!("{op}: GB/s vs N"),
        y_label: "GB/s",
        series: &gbps,
        lines: &ceilings,
        log_ratio: 20.0,
    }));
    s.push_str(&svg::render(&Chart {
        id: format!("chart-{op}-pct"),
        title: format!("{op}: % of copy ceiling vs N"),
        y_label: "% of copy ceiling",
        series: &pcts,
        lines: &hundred,
        log_ratio: f64::INFINITY,
    }));
    s.push_str("</div><div class=\"legend\">");
    for ser in &gbps {
        let dash = if ser.dashed { " dashed" } else { "" };
        let _ = write!(s, "<span><span class=\"sw{dash}\" style=\"border-color:{}\"></span>{}</span>", ser.color, esc(&ser.label));
    }
    s.push_str("</div>");
    table(s, op, runs, &idx);
    s.push_str("</section>");
}

/// `NVIDIA H100 80GB HBM3` → `H100 80GB HBM3`.
fn short_device(d: &str) -> String {
    d.replace("NVIDIA ", "").replace("AMD ", "")
}

/// One GB/s series and one % series per (run, dtype), latency-bound points left out.
fn series(op: Op, runs: &[&Run], colors: &[&'static str], idx: &[usize]) -> (Vec<Series>, Vec<Series>) {
    let dtypes_used: Vec<String> = {
        let mut d: Vec<String> = idx
            .iter()
            .flat_map(|&i| runs[i].results.iter())
            .filter(|x| x.op == op.name() && !is_latency(x))
            .map(|x| x.dtype.clone())
            .collect();
        d.sort();
        d.dedup();
        d
    };
    let (mut gbps, mut pcts) = (Vec::new(), Vec::new());
    for &i in idx {
        let r = runs[i];
        for dt in &dtypes_used {
            let pts: Vec<_> = r.results.iter().filter(|x| x.op == op.name() && &x.dtype == dt && !is_latency(x)).collect();
            if pts.is_empty() {
                continue;
            }
            let label = if dtypes_used.len() > 1 { format!("{} · {dt}", r.display_label()) } else { r.display_label() };
            let tip = |x: &crate::schema::ResultRow| {
                let p = pct(r, x).map_or_else(String::new, |p| format!(", {}", fmt_pct(p)));
                format!("{label}: {}x{} → {} GB/s{p}, {} µs", x.m, x.n, fmt_gbps(x.gbps), fmt_us(x.us))
            };
            let mk = |val: &dyn Fn(&crate::schema::ResultRow) -> Option<f64>| -> Vec<Point> {
                // One point per N: the largest M (the most bytes) when a run measured several.
                let mut best: Vec<&crate::schema::ResultRow> = Vec::new();
                for x in &pts {
                    match best.iter_mut().find(|b| b.n == x.n) {
                        Some(b) if b.m < x.m => *b = x,
                        Some(_) => {}
                        None => best.push(x),
                    }
                }
                best.into_iter().filter_map(|x| val(x).map(|y| Point { x: x.n as f64, y, tip: tip(x) })).collect()
            };
            let dashed = dt != "bf16";
            gbps.push(Series { label: label.clone(), color: colors[i], dashed, points: mk(&|x| Some(x.gbps)) });
            let p = mk(&|x| pct(r, x));
            if !p.is_empty() {
                pcts.push(Series { label, color: colors[i], dashed, points: p });
            }
        }
    }
    (gbps, pcts)
}

fn table(s: &mut String, op: Op, runs: &[&Run], idx: &[usize]) {
    s.push_str("<div class=\"scroll\"><table class=\"results\"><thead><tr><th rowspan=\"2\">shape (M×N)</th><th rowspan=\"2\">dtype</th>");
    for &i in idx {
        let _ = write!(s, "<th class=\"run\" colspan=\"3\">{}</th>", esc(&runs[i].display_label()));
    }
    s.push_str("</tr><tr>");
    for _ in idx {
        s.push_str("<th class=\"run\">GB/s</th><th>% copy</th><th>µs</th>");
    }
    s.push_str("</tr></thead><tbody>");
    let cols: Vec<&Run> = idx.iter().map(|&i| runs[i]).collect();
    for key in row_keys(op, &cols) {
        let _ = write!(s, "<tr><td>{}×{}</td><td>{}</td>", key.1, key.0, esc(&key.2));
        for r in &cols {
            match find(r, op, &key) {
                Some(x) => {
                    let lat = is_latency(x);
                    let p = pct(r, x);
                    let rotated = super::rotated(r, x).map_or_else(String::new, |(u, k, rp)| {
                        let rp = if lat { String::new() } else { rp.map_or_else(String::new, |rp| format!(", {}", fmt_pct(rp))) };
                        format!("<span class=\"rot\"> ({} on {k} sets{rp})</span>", fmt_us(u))
                    });
                    let _ = write!(
                        s,
                        "<td class=\"num first{}\" data-v=\"{}\">{}</td><td class=\"num{}\" data-v=\"{}\">{}</td><td class=\"num{}\" data-v=\"{}\">{}{rotated}</td>",
                        if lat { " lat" } else { "" },
                        x.gbps,
                        fmt_gbps(x.gbps),
                        if lat { " lat" } else { "" },
                        p.map_or_else(String::new, |p| p.to_string()),
                        if lat { "–".into() } else { p.map_or_else(|| "–".into(), fmt_pct) },
                        if lat { " us-main" } else { "" },
                        x.us,
                        fmt_us(x.us)
                    );
                }
                None => s.push_str("<td class=\"num first\">–</td><td class=\"num\">–</td><td class=\"num\">–</td>"),
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
}

fn machines(s: &mut String, runs: &[&Run]) {
    s.push_str("<section id=\"machines\"><h2>Machines</h2><div class=\"scroll\"><table class=\"machines\"><thead><tr><th>run</th><th>device</th><th>driver</th><th>compute units</th><th>clocks</th><th>memory</th><th>last-level cache</th><th>copy ceiling GB/s</th><th>measured</th><th>host and versions</th></tr></thead><tbody>");
    for r in runs {
        let m = &r.machine;
        let mut host = Vec::new();
        if !m.host_cpu.is_empty() {
            host.push(format!("{} ({} cores), {}", m.host_cpu, m.host_cores, m.os));
        }
        host.extend(r.versions.iter().map(|(k, v)| format!("{k} {v}")));
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-v=\"{}\"><b>{}</b>{}</td><td>{}</td><td style=\"white-space:normal\">{}</td></tr>",
            esc(&r.display_label()),
            esc(&r.device),
            esc(&r.driver),
            if m.compute_units > 0 { m.compute_units.to_string() } else { "–".into() },
            esc(&m.clocks),
            fmt_bytes(m.memory_bytes),
            fmt_bytes(m.cache_bytes),
            r.copy_gbps,
            fmt_gbps(r.copy_gbps),
            if r.copy_bytes > 0 { format!(" ({} each way)", fmt_bytes(r.copy_bytes)) } else { String::new() },
            esc(&short_date(&r.date)),
            esc(&host.join("; "))
        );
    }
    s.push_str("</tbody></table></div></section>");
}

fn problems(s: &mut String, runs: &[&Run], skipped_backends: &[SkippedBackend]) {
    let mut items: Vec<String> =
        skipped_backends.iter().map(|b| format!("backend <b>{}</b> not measured: {}", esc(&b.backend), esc(&b.reason))).collect();
    for r in runs {
        let l = esc(&r.display_label());
        items.extend(r.errors.iter().map(|e| format!("{l} — <b>error</b> {} {}x{} {}: {}", e.op, e.m, e.n, e.dtype, esc(&e.reason))));
        items.extend(r.skipped.iter().map(|e| format!("{l} — skipped {} {}x{} {}: {}", e.op, e.m, e.n, e.dtype, esc(&e.reason))));
        items.extend(r.notes.iter().map(|n| format!("{l} — {}", esc(n))));
    }
    if items.is_empty() {
        return;
    }
    s.push_str("<section id=\"problems\"><h2>Errors, skipped cases and notes</h2><ul class=\"notes\">");
    for i in items {
        let _ = write!(s, "<li>{i}</li>");
    }
    s.push_str("</ul></section>");
}

/// normkit against each peer on the same device, per op and chain (see the Markdown twin).
fn speedups(s: &mut String, file: &ResultsFile) {
    let tables = super::speedup_tables(file);
    if tables.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<section id=\"speedup\"><h2>Speedup over the peers on the same device</h2><p class=\"desc\">{}</p>",
        esc(&super::speedup_intro(file))
    );
    for t in tables {
        let _ = write!(
            s,
            "<h3 id=\"speedup-{}\">{} · {}</h3><p class=\"desc\">{}</p><div class=\"scroll\"><table class=\"speedup\"><thead><tr>\
             <th rowspan=\"2\">shape (M×N)</th><th rowspan=\"2\">dtype</th><th class=\"run\" colspan=\"2\">normkit</th>",
            t.op,
            t.op,
            esc(t.normkit),
            esc(t.what)
        );
        for p in &t.peers {
            let _ = write!(s, "<th class=\"run\" colspan=\"3\">{}</th>", esc(p));
        }
        s.push_str("</tr><tr><th class=\"run\">µs</th><th>GB/s</th>");
        for _ in &t.peers {
            s.push_str("<th class=\"run\">µs</th><th>GB/s</th><th>speedup</th>");
        }
        s.push_str("</tr></thead><tbody>");
        for r in &t.rows {
            let lat = if r.latency { " lat" } else { "" };
            let _ = write!(
                s,
                "<tr><td>{}×{}</td><td>{}</td><td class=\"num first\" data-v=\"{}\">{}</td><td class=\"num{lat}\" data-v=\"{}\">{}</td>",
                r.key.1,
                r.key.0,
                esc(&r.key.2),
                r.normkit_us,
                fmt_us(r.normkit_us),
                r.normkit_gbps,
                fmt_gbps(r.normkit_gbps)
            );
            for c in &r.cells {
                match c {
                    Some(c) => {
                        let _ = write!(
                            s,
                            "<td class=\"num first\" data-v=\"{}\">{}</td><td class=\"num{lat}\" data-v=\"{}\">{}</td><td class=\"num us-main\" data-v=\"{}\">{}</td>",
                            c.peer_us,
                            fmt_us(c.peer_us),
                            c.peer_gbps,
                            fmt_gbps(c.peer_gbps),
                            c.speedup,
                            super::fmt_speedup(c.speedup)
                        );
                    }
                    None => s.push_str("<td class=\"num first\">–</td><td class=\"num\">–</td><td class=\"num\">–</td>"),
                }
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
    }
    s.push_str("</section>");
}

/// The fastest peer per case beside normkit on the same device (peers also appear in every chart).
fn peers(s: &mut String, file: &ResultsFile) {
    let rows = super::peer_rows(file);
    if file.peers.is_empty() {
        return;
    }
    s.push_str(
        "<section id=\"peers\"><h2>Peers</h2><p class=\"desc\">GPU peers measured by <code>peers/bench_peers.py</code> \
        (the FP8 ops by <code>benches/peers/fp8_peers.py</code>; CUDA-graph replay), CPU peers (candle) in the same run as normkit; the same byte model. They are drawn in the charts above. Below: the fastest peer per case and \
        normkit on the same device (µs for latency-bound shapes, GB/s otherwise).</p>",
    );
    s.push_str("<div class=\"scroll\"><table class=\"peers\"><thead><tr><th>op</th><th>shape (M×N)</th><th>dtype</th><th>fastest peer</th><th></th><th>normkit</th></tr></thead><tbody>");
    for r in &rows {
        let fmt = |gbps: f64, us: f64| if r.latency { format!("{} µs", fmt_us(us)) } else { format!("{} GB/s", fmt_gbps(gbps)) };
        let nk: Vec<String> =
            r.normkit.iter().enumerate().map(|(i, (l, g, u))| format!("{} ({}, {:.2}×)", fmt(*g, *u), esc(l), r.ratio(i))).collect();
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}×{}</td><td>{}</td><td class=\"num\" data-v=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            r.op,
            r.key.1,
            r.key.0,
            esc(&r.key.2),
            if r.latency { r.best.2 } else { r.best.1 },
            fmt(r.best.1, r.best.2),
            esc(&r.best.0),
            if nk.is_empty() { "–".into() } else { nk.join(", ") }
        );
    }
    s.push_str("</tbody></table></div>");
    for line in super::score_lines(&rows) {
        let _ = write!(s, "<p><strong>{}</strong></p>", esc(&line));
    }
    s.push_str("</section>");
}
