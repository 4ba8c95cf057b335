//! The f64 oracle: the contract of `normkit_core` (lib.rs and desc.rs) written out as plain loops,
//! one row at a time, in f64, with the rounding points of each casting mode simulated by
//! [`normkit_core::round_to`]. It shares no code with any backend.
//!
//! Every value comes back as an [`Iv`]: the exact value (`mid`) and the interval a correct fp32
//! kernel may land in (see [`crate::iv`] for the error model). [`crate::OracleBackend`] stores the
//! `mid`s; the checks accept anything in the interval.

use crate::iv::{acc_rel, round_f64, Iv, U32};
use normkit_core::{round_to, CastingMode, DType, NormDesc, NormKind};

/// Relative error allowed on `1/sqrt(v + eps)` beyond the error of `v`: the `eps` add, the square
/// root and the division (or an `rsqrtf`, within 2 ulp = 4u).
const RSQRT_REL: f64 = 6.0 * U32;

/// What is fixed for every row of a forward call.
#[derive(Debug, Clone, Copy)]
pub struct FwdConsts<'a> {
    pub desc: &'a NormDesc,
    /// Dtype of `residual` / `residual_out` (ignored without the fused add).
    pub residual: DType,
    /// The "input dtype" the llama and none casting modes round to.
    pub compute: DType,
    pub weight: Option<&'a [f32]>,
    pub bias: Option<&'a [f32]>,
}

/// The oracle's forward result for one row.
#[derive(Debug, Clone)]
pub struct FwdRow {
    /// `h = x + residual` as stored in the residual's dtype (exactly: one fp32 add, one rounding);
    /// `x` itself without the fused add.
    pub h: Vec<f32>,
    /// `y` before the store's rounding.
    pub y: Vec<Iv>,
    /// LayerNorm mean (fp32 statistic).
    pub mean: Option<Iv>,
    pub rstd: Iv,
}

/// Row statistics as intervals: `(mean, rstd)`; the mean only for LayerNorm.
pub fn row_stats(desc: &NormDesc, h: &[f32]) -> (Option<Iv>, Iv) {
    let n = h.len();
    let nf = n as f64;
    let a = acc_rel(n);
    let eps = desc.eps as f64;
    let rstd_of = |lo_var: f64, mid_var: f64, hi_var: f64| Iv {
        lo: (1.0 - RSQRT_REL) / (hi_var + eps).sqrt(),
        hi: (1.0 + RSQRT_REL) / (lo_var.max(0.0) + eps).sqrt(),
        mid: 1.0 / (mid_var + eps).sqrt(),
    };
    match desc.kind {
        NormKind::Rms => {
            let ms = h.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / nf;
            (None, rstd_of(ms * (1.0 - a), ms, ms * (1.0 + a)))
        }
        NormKind::Layer => {
            let mu = h.iter().map(|&v| v as f64).sum::<f64>() / nf;
            let abs_mean = h.iter().map(|&v| (v as f64).abs()).sum::<f64>() / nf;
            let e_mu = a * abs_mean;
            let var = h.iter().map(|&v| (v as f64 - mu) * (v as f64 - mu)).sum::<f64>() / nf;
            // Σ(h − μ − δ)² = Σ(h − μ)² + n·δ² exactly (Σ(h − μ) = 0): an error δ in the kernel's
            // mean can only raise its variance, by at most δ².
            (Some(Iv::around(mu, e_mu)), rstd_of(var * (1.0 - a), var, (var + e_mu * e_mu) * (1.0 + a)))
        }
    }
}

/// `h = x + residual` as the fused add stores it: one fp32 add, rounded to the residual's dtype.
pub fn residual_add(residual_dtype: DType, x: &[f32], r: &[f32]) -> Vec<f32> {
    x.iter().zip(r).map(|(&a, &b)| round_to(residual_dtype, a + b)).collect()
}

/// The forward pass of one row.
pub fn forward_row(c: &FwdConsts<'_>, x: &[f32], residual: Option<&[f32]>) -> FwdRow {
    let h = match residual {
        Some(r) => residual_add(c.residual, x, r),
        None => x.to_vec(),
    };
    let (mean, rstd) = row_stats(c.desc, &h);
    let offset = c.desc.weight.map_or(0.0, |w| w.offset as f64);
    let cd = c.compute;
    let mut y = Vec::with_capacity(h.len());
    match c.desc.casting {
        CastingMode::Gemma | CastingMode::Llama => {
            for (j, &hv) in h.iter().enumerate() {
                let hv = Iv::exact(hv as f64);
                let centred = match mean {
                    Some(mu) => hv.sub32(mu),
                    None => hv,
                };
                let mut v = centred.mul32(rstd);
                if c.desc.casting == CastingMode::Llama {
                    v = v.round(cd);
                }
                if let Some(w) = c.weight {
                    v = v.mul32(Iv::exact(w[j] as f64).add32(Iv::exact(offset)));
                }
                if let Some(b) = c.bias {
                    v = v.add32(Iv::exact(b[j] as f64));
                }
                y.push(v);
            }
        }
        CastingMode::None => {
            // Elementwise arithmetic in the input dtype: every elementwise step is rounded to `cd`
            // before the next. The statistics (and eps) stay in fp32, as in the other modes, so
            // eps cannot underflow and rstd cannot overflow the input dtype.
            let (mu_c, rstd_c) = (mean, rstd);
            for (j, &hv) in h.iter().enumerate() {
                let hv = Iv::exact(hv as f64);
                let centred = match mu_c {
                    Some(mu) => hv.sub32(mu).round(cd),
                    None => hv,
                };
                let mut v = centred.mul32(rstd_c).round(cd);
                if let Some(w) = c.weight {
                    let we = Iv::exact(w[j] as f64).add32(Iv::exact(offset)).round(cd);
                    v = v.mul32(we).round(cd);
                }
                if let Some(b) = c.bias {
                    v = v.add32(Iv::exact(b[j] as f64)).round(cd);
                }
                y.push(v);
            }
        }
    }
    FwdRow { h, y, mean, rstd }
}

/// What is fixed for every row of a backward call.
#[derive(Debug, Clone, Copy)]
pub struct BwdConsts<'a> {
    pub desc: &'a NormDesc,
    pub weight: Option<&'a [f32]>,
}

/// Column sums over rows (for `dw`, `db`) as interval endpoints, the exact sum and the sum of
/// magnitudes (for the reduction error).
#[derive(Debug, Clone, Default)]
pub struct ColSums {
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    pub mid: Vec<f64>,
    pub mag: Vec<f64>,
    pub rows: usize,
}

impl ColSums {
    pub fn new(n: usize) -> Self {
        ColSums { lo: vec![0.0; n], hi: vec![0.0; n], mid: vec![0.0; n], mag: vec![0.0; n], rows: 0 }
    }
    fn push(&mut self, j: usize, t: Iv) {
        self.lo[j] += t.lo;
        self.hi[j] += t.hi;
        self.mid[j] += t.mid;
        self.mag[j] += t.mag();
    }
    /// Adds another partial sum (rows of another chunk).
    pub fn merge(&mut self, o: &ColSums) {
        for j in 0..self.lo.len() {
            self.lo[j] += o.lo[j];
            self.hi[j] += o.hi[j];
            self.mid[j] += o.mid[j];
            self.mag[j] += o.mag[j];
        }
        self.rows += o.rows;
    }
    /// The sums as intervals, widened by the fp32 reduction error over the rows.
    pub fn finish(&self) -> Vec<Iv> {
        let a = acc_rel(self.rows.max(1));
        (0..self.lo.len())
            .map(|j| {
                let e = a * self.mag[j];
                Iv { lo: self.lo[j] - e, hi: self.hi[j] + e, mid: self.mid[j] }
            })
            .collect()
    }
}

/// The backward pass of one row: `dx` before the store's rounding; adds the row's terms to the
/// `dw` / `db` column sums when given.
///
/// `x` is the normalised tensor as stored, `mean`/`rstd` the saved fp32 statistics (used as given,
/// never recomputed).
#[allow(clippy::too_many_arguments)]
pub fn backward_row(
    c: &BwdConsts<'_>,
    x: &[f32],
    dy: &[f32],
    d_residual_out: Option<&[f32]>,
    mean: Option<f32>,
    rstd: f32,
    dw: Option<&mut ColSums>,
    db: Option<&mut ColSums>,
) -> Vec<Iv> {
    let n = x.len();
    let nf = n as f64;
    let a = acc_rel(n);
    let offset = c.desc.weight.map_or(0.0, |w| w.offset as f64);
    let rstd_i = Iv::exact(rstd as f64);
    let xhat: Vec<Iv> = x
        .iter()
        .map(|&v| {
            let v = Iv::exact(v as f64);
            match mean {
                Some(m) if c.desc.kind == NormKind::Layer => v.sub32(Iv::exact(m as f64)).mul32(rstd_i),
                _ => v.mul32(rstd_i),
            }
        })
        .collect();
    let g: Vec<Iv> = dy
        .iter()
        .enumerate()
        .map(|(j, &d)| match c.weight {
            Some(w) => Iv::exact(d as f64).mul32(Iv::exact(w[j] as f64).add32(Iv::exact(offset))),
            None => Iv::exact(d as f64),
        })
        .collect();
    // Row means as reductions: interval of the sum of the terms' intervals, widened by the fp32
    // reduction error.
    let row_mean = |terms: &mut dyn Iterator<Item = Iv>| {
        let (mut lo, mut hi, mut mid, mut mag) = (0.0, 0.0, 0.0, 0.0);
        for t in terms {
            lo += t.lo;
            hi += t.hi;
            mid += t.mid;
            mag += t.mag();
        }
        let e = a * mag;
        Iv { lo: (lo - e) / nf, hi: (hi + e) / nf, mid: mid / nf }
    };
    let c1 = row_mean(&mut g.iter().zip(&xhat).map(|(g, xh)| g.mul32(*xh)));
    let c2 = match c.desc.kind {
        NormKind::Layer => Some(row_mean(&mut g.iter().copied())),
        NormKind::Rms => None,
    };
    let mut dx = Vec::with_capacity(n);
    for j in 0..n {
        let mut inner = g[j];
        if let Some(c2) = c2 {
            inner = inner.sub32(c2);
        }
        let mut v = rstd_i.mul32(inner.sub32(xhat[j].mul32(c1)));
        if let Some(d) = d_residual_out {
            v = v.add32(Iv::exact(d[j] as f64));
        }
        dx.push(v);
    }
    if let Some(dw) = dw {
        for j in 0..n {
            dw.push(j, Iv::exact(dy[j] as f64).mul32(xhat[j]));
        }
        dw.rows += 1;
    }
    if let Some(db) = db {
        for (j, &d) in dy.iter().enumerate() {
            db.push(j, Iv::exact(d as f64));
        }
        db.rows += 1;
    }
    dx
}

/// The exact fp32 statistics of a row as a forward pass would save them (for the inputs of a
/// backward case): `(mean, rstd)` rounded once from f64.
pub fn exact_stats(desc: &NormDesc, h: &[f32]) -> (f32, f32) {
    let (mean, rstd) = row_stats(desc, h);
    (mean.map_or(0.0, |m| m.mid as f32), rstd.mid as f32)
}

/// The exact value of an interval stored in `dtype` (what [`crate::OracleBackend`] writes).
pub fn store(dtype: DType, v: &Iv) -> f32 {
    round_f64(dtype, v.mid) as f32
}

/// An FP8 format as the oracle knows it, from first principles (not from normkit-core): mantissa
/// bits, exponent bias, largest finite value, whether it is an fnuz format (no −0, one NaN `0x80`,
/// no infinities) and whether it has IEEE infinities (e5m2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8Fmt {
    pub man: u32,
    pub bias: i32,
    pub max: f64,
    pub fnuz: bool,
    pub ieee: bool,
}

/// The FP8 format of `dtype`, `None` for the others.
pub fn fp8_fmt(dtype: DType) -> Option<Fp8Fmt> {
    Some(match dtype.name() {
        "e4m3" => Fp8Fmt { man: 3, bias: 7, max: 448.0, fnuz: false, ieee: false },
        "e5m2" => Fp8Fmt { man: 2, bias: 15, max: 57344.0, fnuz: false, ieee: true },
        "e4m3fnuz" => Fp8Fmt { man: 3, bias: 8, max: 240.0, fnuz: true, ieee: false },
        "e5m2fnuz" => Fp8Fmt { man: 2, bias: 16, max: 57344.0, fnuz: true, ieee: false },
        _ => return None,
    })
}

impl Fp8Fmt {
    /// The value of a bit pattern (NaN for the NaN patterns, ±Inf for e5m2's infinities; the fnuz
    /// pattern `0x80`, which would be −0 elsewhere, is NaN).
    pub fn decode(&self, b: u8) -> f64 {
        if self.fnuz && b == 0x80 {
            return f64::NAN;
        }
        let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((b & 0x7F) >> self.man) as i32;
        let m = (b & ((1 << self.man) - 1)) as i32;
        let top = (1 << (7 - self.man)) - 1;
        if !self.fnuz && self.ieee && e == top {
            return if m == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if !self.fnuz && !self.ieee && e == top && m == (1 << self.man) - 1 {
            return f64::NAN;
        }
        let v = if e == 0 {
            m as f64 * 2f64.powi(1 - self.bias - self.man as i32)
        } else {
            (1.0 + m as f64 / (1 << self.man) as f64) * 2f64.powi(e - self.bias)
        };
        sign * v
    }

    /// The two FP8 values around `v` (`v` itself twice when representable), saturated: beyond the
    /// largest finite value both are ±max.
    pub fn neighbours(&self, v: f64) -> (f64, f64) {
        let a = v.abs();
        if a >= self.max {
            return (self.max.copysign(v), self.max.copysign(v));
        }
        // The quantum at |v|: 2^(max(e, emin) − man).
        let emin = 1 - self.bias;
        let e = if a == 0.0 { emin } else { (a.log2().floor() as i32).max(emin) };
        let q = 2f64.powi(e - self.man as i32);
        let (lo, hi) = ((a / q).floor() * q, (a / q).ceil() * q);
        if v < 0.0 {
            (-hi, -lo)
        } else {
            (lo, hi)
        }
    }

    /// Saturating round to nearest, ties to even (even = the neighbour whose last mantissa bit is
    /// 0, i.e. an even multiple of its quantum).
    pub fn round(&self, v: f64) -> f64 {
        if v.is_nan() {
            return f64::NAN;
        }
        let (lo, hi) = self.neighbours(v);
        if lo == hi {
            return lo;
        }
        let (dl, dh) = (v - lo, hi - v);
        if dl < dh {
            lo
        } else if dh < dl {
            hi
        } else {
            let q = hi - lo;
            if (lo / q).rem_euclid(2.0) == 0.0 {
                lo
            } else {
                hi
            }
        }
    }
}

/// The FP8 values a kernel may write for one element: `y` as an interval (the oracle's, before
/// the store), `scale` as an interval, `u_in` the unit roundoff of the input dtype. The exact
/// value is `y.mid · scale.mid`; a kernel may deviate from it by its fp32 error (the interval
/// product, with one more f32 rounding for the multiply) and by the input dtype's rounding, so the
/// allowed values are the FP8 roundings of that range — a single value (the round-to-nearest-even
/// one) wherever the range does not reach a midpoint, else both neighbours of the exact value (more
/// only where the fp32 error itself exceeds the FP8 spacing, as on rows whose statistics cancel).
/// Returns `(lo, hi, rne)`: the allowed values lie in `[lo, hi]`.
pub fn fp8_allowed(fmt: &Fp8Fmt, y: &Iv, scale: &Iv, u_in: f64) -> (f64, f64, f64) {
    let p = y.mul32(*scale);
    let exact = p.mid;
    let slack = exact.abs() * u_in;
    let (lo, hi) = (p.lo.min(exact - slack), p.hi.max(exact + slack));
    // Rounding is monotone: a kernel value in [lo, hi] rounds into [R(lo), R(hi)]. Where the fp32
    // error is far below the FP8 spacing (every row but those whose statistics cancel, such as an
    // f32 LayerNorm of a row with a large mean) that is R(exact) or, near a midpoint, one of the
    // two neighbours of the exact value.
    (fmt.round(lo), fmt.round(hi), fmt.round(exact))
}

/// `max |y|` over intervals (NaN-free): the interval of a kernel's amax.
pub fn amax_of(ys: &[Iv]) -> Iv {
    let mut r = Iv::exact(0.0);
    for y in ys {
        let (lo, hi) = if y.lo <= 0.0 && y.hi >= 0.0 { (0.0, y.mag()) } else { (y.lo.abs().min(y.hi.abs()), y.mag()) };
        r = Iv { lo: r.lo.max(lo), hi: r.hi.max(hi), mid: r.mid.max(y.mid.abs()) };
    }
    r
}

/// The per-row scale `max_finite / max(amax, floor)` as an interval (one f32 division).
pub fn row_scale(fmt: &Fp8Fmt, amax: &Iv, floor: f64) -> Iv {
    let d = 1.0 + crate::iv::OP;
    Iv { lo: fmt.max / amax.hi.max(floor) / d, hi: fmt.max / amax.lo.max(floor) * d, mid: fmt.max / amax.mid.max(floor) }
}

#[cfg(test)]
mod tests {
    //! The oracle checked against first principles: hand-computed values, and the backward pass
    //! against central finite differences of the forward pass.
    use super::*;
    use crate::rng::Rng;

    fn fwd_consts<'a>(desc: &'a NormDesc, w: Option<&'a [f32]>, b: Option<&'a [f32]>) -> FwdConsts<'a> {
        FwdConsts { desc, residual: DType::F32, compute: DType::F32, weight: w, bias: b }
    }

    /// The oracle's FP8 formats from first principles, against hand values and the float8 crate.
    #[test]
    fn fp8_formats_from_first_principles() {
        let e4 = fp8_fmt(DType::F8E4M3).unwrap();
        assert_eq!(e4.decode(0x7E), 448.0);
        assert!(e4.decode(0x7F).is_nan());
        assert_eq!(e4.round(460.0), 448.0);
        assert_eq!(e4.round(1e9), 448.0);
        assert_eq!(e4.round(1.0625), 1.0, "tie to even");
        assert_eq!(e4.round(1.1875), 1.25, "tie to even, upwards");
        assert_eq!(e4.neighbours(1.1), (1.0, 1.125));
        let e5 = fp8_fmt(DType::F8E5M2).unwrap();
        assert_eq!(e5.decode(0x7C), f64::INFINITY);
        let fz = fp8_fmt(DType::F8E4M3Fnuz).unwrap();
        assert_eq!(fz.decode(0x7F), 240.0);
        assert!(fz.decode(0x80).is_nan());
        for c in 0..=255u8 {
            let (a, b) = (e4.decode(c), normkit_core::F8E4M3::from_bits(c).to_f64());
            assert!(a == b || (a.is_nan() && b.is_nan()), "{c:#x}");
            let (a, b) = (e5.decode(c), normkit_core::F8E5M2::from_bits(c).to_f64());
            assert!(a == b || (a.is_nan() && b.is_nan()), "{c:#x}");
            // Every finite value rounds to itself.
            for f in [e4, e5, fz] {
                let v = f.decode(c);
                if v.is_finite() {
                    assert_eq!(f.round(v), v, "{f:?} {c:#x}");
                }
            }
        }
    }

    #[test]
    fn rms_of_three_four() {
        let desc = NormDesc::rms(1e-6).without_weight();
        let row = forward_row(&fwd_consts(&desc, None, None), &[3.0, 4.0], None);
        let rstd = 1.0 / (12.5f64 + 1e-6f32 as f64).sqrt();
        assert!((row.rstd.mid - rstd).abs() < 1e-15);
        assert!((row.y[0].mid - 3.0 * rstd).abs() < 1e-15 && (row.y[1].mid - 4.0 * rstd).abs() < 1e-15);
        assert!(row.y[0].lo < row.y[0].mid && row.y[0].mid < row.y[0].hi);
    }

    #[test]
    fn layer_norm_of_a_constant_row_is_the_bias() {
        let desc = NormDesc::layer(1e-5);
        let (w, b) = ([2.0f32; 4], [0.5f32; 4]);
        let row = forward_row(&fwd_consts(&desc, Some(&w), Some(&b)), &[7.0; 4], None);
        assert_eq!(row.mean.map(|m| m.mid), Some(7.0));
        for y in &row.y {
            assert_eq!(y.mid, 0.5);
        }
    }

    #[test]
    fn llama_rounds_x_hat_before_the_weight() {
        let desc = NormDesc::rms(1e-6).with_casting(CastingMode::Llama);
        let w = [3.0f32; 3];
        let x = [0.3f32, -1.7, 2.9].map(|v| round_to(DType::BF16, v));
        let c = FwdConsts { desc: &desc, residual: DType::BF16, compute: DType::BF16, weight: Some(&w), bias: None };
        let row = forward_row(&c, &x, None);
        for (j, y) in row.y.iter().enumerate() {
            let xhat = x[j] as f64 * row.rstd.mid;
            assert_eq!(y.mid, round_f64(DType::BF16, xhat) * 3.0);
        }
    }

    /// `L = Σ dy·y`; the backward pass must give `∂L/∂x`, `∂L/∂w`, `∂L/∂b`.
    #[test]
    fn backward_matches_finite_differences() {
        let mut rng = Rng::new(42);
        for desc in [NormDesc::rms(1e-6).with_weight_offset(1.0), NormDesc::layer(1e-5)] {
            let n = 6;
            let x: Vec<f32> = (0..n).map(|_| (rng.normal() + 0.5) as f32).collect();
            let w: Vec<f32> = (0..n).map(|_| (0.5 * rng.normal()) as f32).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
            let dy: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
            let bias = desc.bias.then_some(&b[..]);
            let loss = |x: &[f32], w: &[f32], b: Option<&[f32]>| -> f64 {
                let row = forward_row(&fwd_consts(&desc, Some(w), b), x, None);
                row.y.iter().zip(&dy).map(|(y, &d)| y.mid * d as f64).sum()
            };
            let (mean, rstd) = exact_stats(&desc, &x);
            let mut dw = ColSums::new(n);
            let mut db = ColSums::new(n);
            let dx =
                backward_row(&BwdConsts { desc: &desc, weight: Some(&w) }, &x, &dy, None, Some(mean), rstd, Some(&mut dw), Some(&mut db));
            let h = 1e-3f32;
            let fd = |f: &dyn Fn(f32) -> f64| (f(h) - f(-h)) / (2.0 * h as f64);
            for j in 0..n {
                let gx = fd(&|d| {
                    let mut xp = x.clone();
                    xp[j] += d;
                    loss(&xp, &w, bias)
                });
                let gw = fd(&|d| {
                    let mut wp = w.clone();
                    wp[j] += d;
                    loss(&x, &wp, bias)
                });
                // The saved statistics are rounded to f32, so agreement is to ~1e-6; the finite
                // difference itself is good to ~h² ≈ 1e-6 relative.
                assert!((dx[j].mid - gx).abs() < 1e-3 * (1.0 + gx.abs()), "{desc:?} dx[{j}]: {} vs {gx}", dx[j].mid);
                assert!((dw.mid[j] - gw).abs() < 1e-3 * (1.0 + gw.abs()), "{desc:?} dw[{j}]: {} vs {gw}", dw.mid[j]);
                if let Some(b) = bias {
                    let gb = fd(&|d| {
                        let mut bp = b.to_vec();
                        bp[j] += d;
                        loss(&x, &w, Some(&bp))
                    });
                    assert!((db.mid[j] - gb).abs() < 1e-3 * (1.0 + gb.abs()), "{desc:?} db[{j}]: {} vs {gb}", db.mid[j]);
                }
            }
        }
    }
}
