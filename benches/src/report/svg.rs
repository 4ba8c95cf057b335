//! Inline SVG line charts: x = hidden size N on a log₂ axis, y = GB/s (linear, or log₁₀ when the
//! series span more than 20×) or % of the copy ceiling; horizontal reference lines for ceilings.

use std::fmt::Write;

#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// Tooltip (`<title>`).
    pub tip: String,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<Point>,
}

/// A horizontal reference line (a copy ceiling, 100%).
#[derive(Debug, Clone)]
pub struct HLine {
    pub y: f64,
    pub label: String,
    pub color: &'static str,
}

#[derive(Debug)]
pub struct Chart<'a> {
    pub id: String,
    pub title: String,
    pub y_label: &'a str,
    pub series: &'a [Series],
    pub lines: &'a [HLine],
    /// Use a log₁₀ y axis when the values span more than this factor.
    pub log_ratio: f64,
}

const W: f64 = 660.0;
const H: f64 = 380.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 46.0;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `512`, `4K`, `1M`.
pub fn fmt_n(n: f64) -> String {
    let n = n as u64;
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}

struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl YAxis {
    fn new(values: &[f64], log_ratio: f64) -> YAxis {
        let pos: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0 && v.is_finite()).collect();
        let max = pos.iter().copied().fold(0.0, f64::max);
        let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
        if max <= 0.0 {
            return YAxis { log: false, lo: 0.0, hi: 1.0 };
        }
        if max / min > log_ratio {
            YAxis { log: true, lo: 10f64.powf((min * 0.8).log10().floor()), hi: 10f64.powf((max * 1.25).log10().ceil()) }
        } else {
            YAxis { log: false, lo: 0.0, hi: nice_ceil(max * 1.08) }
        }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut d = self.lo;
            while d <= self.hi * 1.0001 {
                for k in [1.0, 2.0, 5.0] {
                    if d * k <= self.hi * 1.0001 {
                        t.push(d * k);
                    }
                }
                d *= 10.0;
            }
            t
        } else {
            let step = nice_ceil(self.hi / 6.0);
            (0..).map(|i| i as f64 * step).take_while(|v| *v <= self.hi * 1.0001).collect()
        }
    }
}

/// The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) that is ≥ v.
fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0].into_iter().map(|k| k * p).find(|c| *c >= v * 0.9999).unwrap_or(10.0 * p)
}

fn fmt_tick(v: f64) -> String {
    if v >= 1000.0 && v % 1000.0 == 0.0 {
        format!("{}k", v / 1000.0)
    } else if v >= 1.0 || v == 0.0 {
        format!("{v}")
    } else {
        format!("{v:.2}")
    }
}

pub fn render(c: &Chart<'_>) -> String {
    let xs: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.x)).filter(|x| *x > 0.0).collect();
    let ys: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.y)).chain(c.lines.iter().map(|l| l.y)).collect();
    let (x_lo, x_hi) = xs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let (x_lo, x_hi) = if xs.is_empty() { (1.0, 2.0) } else { (x_lo.log2() - 0.5, x_hi.log2() + 0.5) };
    let y = YAxis::new(&ys, c.log_ratio);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x.log2() - x_lo) / (x_hi - x_lo) * pw;
    let py = |v: f64| TOP + ph - y.frac(v).clamp(0.0, 1.0) * ph;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" id="{}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{}">"#,
        esc(&c.id),
        esc(&c.title)
    );
    let _ = write!(s, r#"<text class="title" x="{LEFT}" y="20">{}</text>"#, esc(&c.title));
    let _ = write!(s, r#"<g class="plot"><rect class="frame" x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/>"#);
    for t in y.ticks() {
        let yy = py(t);
        let _ = write!(s, r#"<line class="grid" x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}"/>"#, LEFT + pw);
        let _ = write!(s, r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 6.0, yy + 4.0, fmt_tick(t));
    }
    let mut xt: Vec<f64> = xs.clone();
    xt.sort_by(f64::total_cmp);
    xt.dedup();
    for x in xt {
        let xx = px(x);
        let _ = write!(s, r#"<line class="grid" x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{}"/>"#, TOP + ph);
        let _ = write!(s, r#"<text class="tick" x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"#, TOP + ph + 16.0, fmt_n(x));
    }
    let _ =
        write!(s, r#"<text class="axis" x="{}" y="{}" text-anchor="middle">hidden size N (log scale)</text>"#, LEFT + pw / 2.0, H - 8.0);
    let _ = write!(
        s,
        r#"<text class="axis" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}{}</text>"#,
        TOP + ph / 2.0,
        esc(c.y_label),
        if y.log { " (log scale)" } else { "" }
    );
    // Labels of lines closer than a text line go alternately to the right and the left end.
    let mut placed: Vec<(f64, bool)> = Vec::new();
    for l in c.lines {
        let yy = py(l.y);
        let _ = write!(
            s,
            r#"<line class="ceiling" stroke="{}" x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}"><title>{}</title></line>"#,
            l.color,
            LEFT + pw,
            esc(&l.label)
        );
        let right = !placed.iter().any(|&(y, r)| r && (y - yy).abs() < 13.0);
        let (x, anchor) = if right { (LEFT + pw - 4.0, "end") } else { (LEFT + 4.0, "start") };
        let ty = if !right && placed.iter().any(|&(y, r)| !r && (y - yy).abs() < 13.0) { yy + 13.0 } else { yy - 4.0 };
        placed.push((yy, right));
        let _ = write!(
            s,
            r#"<text class="ceiling-label" fill="{}" x="{x}" y="{ty:.1}" text-anchor="{anchor}">{}</text>"#,
            l.color,
            esc(&l.label)
        );
    }
    for (i, ser) in c.series.iter().enumerate() {
        let mut pts: Vec<&Point> = ser.points.iter().filter(|p| p.x > 0.0).collect();
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        let path: Vec<String> = pts.iter().map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y))).collect();
        let dash = if ser.dashed { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = write!(s, r#"<g class="series" data-label="{}" data-index="{i}">"#, esc(&ser.label));
        let _ = write!(s, r#"<polyline class="line" stroke="{}"{dash} points="{}"/>"#, ser.color, path.join(" "));
        for p in pts {
            let (cx, cy) = (px(p.x), py(p.y));
            if ser.dashed {
                // squares for the non-default dtypes, so a lone point is told apart too
                let _ = write!(
                    s,
                    r#"<rect class="dot" fill="{}" x="{:.1}" y="{:.1}" width="7" height="7"><title>{}</title></rect>"#,
                    ser.color,
                    cx - 3.5,
                    cy - 3.5,
                    esc(&p.tip)
                );
            } else {
                let _ = write!(
                    s,
                    r#"<circle class="dot" fill="{}" cx="{cx:.1}" cy="{cy:.1}" r="3.5"><title>{}</title></circle>"#,
                    ser.color,
                    esc(&p.tip)
                );
            }
        }
        s.push_str("</g>");
    }
    s.push_str("</g></svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_nice() {
        assert_eq!(nice_ceil(3260.0), 4000.0);
        assert_eq!(nice_ceil(108.0), 120.0);
        assert_eq!(nice_ceil(21.0), 25.0);
        let lin = YAxis::new(&[10.0, 20.0], 20.0);
        assert!(!lin.log && lin.hi == 25.0);
        let log = YAxis::new(&[15.0, 3000.0], 20.0);
        assert!(log.log && log.lo == 10.0 && log.hi == 10000.0);
        assert_eq!(fmt_n(1048576.0), "1M");
        assert_eq!(fmt_n(4096.0), "4K");
        assert_eq!(fmt_n(769.0), "769");
    }
}
