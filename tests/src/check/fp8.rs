//! FP8 outputs: one forward case with an FP8 `y` (per-tensor host or device scale, or per row),
//! `amax`, `scale_inv` and the transposed `yT`, every output poisoned beforehand and every gap
//! checked, then each value against the oracle:
//!
//! - `y_q`: the oracle computes `y` in f64 (an interval for the kernel's fp32 value), the exact
//!   `y·scale`, and its two FP8 neighbours (saturated at ±max). A kernel's value must be one of
//!   them, and exactly the round-to-nearest-even one wherever the exact value is farther from a
//!   midpoint than the kernel's fp32 error plus the input dtype's rounding
//!   ([`crate::oracle::fp8_allowed`]). Values are decoded by the oracle's own format table, so an
//!   fnuz `0x80` (a negative zero elsewhere) is NaN, and fails.
//! - `amax` (per tensor): within the interval of `max |y|` (NaN rows ignored), widened by one
//!   rounding of the input dtype. `scale_inv`: exactly `1/scale` per tensor; per row within the
//!   interval of `amax_r / max_finite`.
//! - `yT`: bitwise the transpose of the kernel's own `y_q`.
//! - A row with an injected NaN: at least one NaN in its `y_q` (NaN stays NaN).

use super::forward::FwdData;
use super::*;
use crate::oracle::{amax_of, fp8_allowed, fp8_fmt, row_scale};
use normkit_core::{Fp8, Scale, FP8_ROW_AMAX_FLOOR};

/// How an FP8 case is scaled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fp8Scale {
    /// A host scale.
    Host(f32),
    /// The same, from a one-element buffer.
    Device(f32),
    /// Per row.
    PerRow,
}

/// One FP8 forward case: `base.dtypes.y` is the FP8 format.
#[derive(Debug, Clone, PartialEq)]
pub struct Fp8Case {
    pub base: FwdCase,
    pub scale: Fp8Scale,
    /// Whether `amax` is asked for (per tensor and per row).
    pub amax: bool,
    /// Whether `yT` is asked for (with its own stride when `base.views` is strided).
    pub transposed: bool,
}

impl std::fmt::Display for Fp8Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} fp8({:?}{}{})", self.base, self.scale, if self.amax { " amax" } else { "" }, if self.transposed { " yT" } else { "" })
    }
}

/// The layout of `yT` (N × M): contiguous, or with its own odd or even pad.
fn t_layout(v: Views, m: usize, n: usize) -> Layout {
    match v {
        Views::Contiguous => Layout::contiguous(n, m),
        Views::Strided { odd } => Layout::strided(n, m, m + if odd { 3 } else { 16 }).with_offset(if odd { 5 } else { 32 }),
    }
}

/// The outputs of an FP8 case.
struct Fp8Out {
    fwd: FwdOut,
    amax: Option<HostBuf>,
    scale_inv: HostBuf,
    y_t: Option<(HostBuf, Layout)>,
}

fn run_fp8<K: NormKernel>(k: &K, c: &Fp8Case, data: &FwdData) -> Result<Fp8Out, String> {
    let (m, n, v, dt) = (c.base.m, c.base.n, c.base.views, c.base.dtypes);
    let lx = v.layout(Mat::X, m, n);
    let ly = v.layout(Mat::Y, m, n);
    let lr = v.layout(Mat::Residual, m, n);
    let lro = v.layout(Mat::ResidualOut, m, n);
    let lt = t_layout(v, m, n);
    let (sw, sb) = (v.span(Vector::Weight, n), v.span(Vector::Bias, n));
    let h_x = place_mat(dt.x, &data.x, &lx, v.mat_len(&lx), gap_bits(dt.x));
    let h_y = data::buf_of_bits(dt.y, v.mat_len(&ly), poison_bits(dt.y));
    let h_r = data.residual.as_ref().map(|r| place_mat(dt.residual, r, &lr, v.mat_len(&lr), gap_bits(dt.residual)));
    let h_ro = c.base.desc.residual.then(|| data::buf_of_bits(dt.residual, v.mat_len(&lro), poison_bits(dt.residual)));
    let h_w = data.weight.as_ref().map(|w| place_vec(dt.weight, w, &sw, v.vec_len(&sw), gap_bits(dt.weight)));
    let h_b = data.bias.as_ref().map(|b| place_vec(dt.weight, b, &sb, v.vec_len(&sb), gap_bits(dt.weight)));
    let per_row = c.scale == Fp8Scale::PerRow;
    let poison32 = |len| data::buf_of_bits(DType::F32, len, poison_bits(DType::F32));
    // Scalars at an offset of 1 with a poisoned element before and after.
    let h_amax = c.amax.then(|| poison32(3));
    let h_inv = poison32(if per_row { m + 2 } else { 3 });
    let h_scale = match c.scale {
        Fp8Scale::Device(s) => Some(HostBuf::from_f32(DType::F32, &[f32::NAN, s, f32::NAN])),
        _ => None,
    };
    let h_t = c.transposed.then(|| data::buf_of_bits(dt.y, v.mat_len(&lt), poison_bits(dt.y)));

    let b_x = up(k, &h_x, "x")?;
    let mut b_y = up(k, &h_y, "y")?;
    let b_r = h_r.as_ref().map(|h| up(k, h, "residual")).transpose()?;
    let mut b_ro = h_ro.as_ref().map(|h| up(k, h, "residual_out")).transpose()?;
    let b_w = h_w.as_ref().map(|h| up(k, h, "weight")).transpose()?;
    let b_b = h_b.as_ref().map(|h| up(k, h, "bias")).transpose()?;
    let mut b_amax = h_amax.as_ref().map(|h| up(k, h, "amax")).transpose()?;
    let mut b_inv = up(k, &h_inv, "scale_inv")?;
    let b_scale = h_scale.as_ref().map(|h| up(k, h, "scale")).transpose()?;
    let mut b_t = h_t.as_ref().map(|h| up(k, h, "transposed")).transpose()?;
    let result = {
        let mut a = Forward::new(InOut::separate(MatRef::with_layout(&b_x, lx), MatMut::with_layout(&mut b_y, ly)));
        if let (Some(r), Some(ro)) = (b_r.as_ref(), b_ro.as_mut()) {
            a = a.residual(InOut::separate(MatRef::with_layout(r, lr), MatMut::with_layout(ro, lro)));
        }
        a.weight = b_w.as_ref().map(|b| VecRef::with_span(b, sw.offset, sw.len));
        a.bias = b_b.as_ref().map(|b| VecRef::with_span(b, sb.offset, sb.len));
        let inv = VecMut::with_span(&mut b_inv, 1, if per_row { m } else { 1 });
        let mut q = match (c.scale, b_scale.as_ref()) {
            (Fp8Scale::Host(s), _) => Fp8::per_tensor(Scale::Host(s)).scale_inv(inv),
            (Fp8Scale::Device(_), Some(b)) => Fp8::per_tensor(Scale::Device(VecRef::with_span(b, 1, 1))).scale_inv(inv),
            _ => Fp8::per_row(inv),
        };
        q.amax = b_amax.as_mut().map(|b| VecMut::with_span(b, 1, 1));
        q.transposed = b_t.as_mut().map(|b| MatMut::with_layout(b, lt));
        k.forward(&c.base.desc, a.fp8(q))
    };
    result.map_err(|e| format!("forward returned an error: {e} ({e:?})"))?;
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let y = dl(k, &b_y, "y")?;
    check_mat_gaps("y", &h_y, &y, &ly)?;
    let residual_out = match (&b_ro, &h_ro) {
        (Some(b), Some(h)) => {
            let got = dl(k, b, "residual_out")?;
            check_mat_gaps("residual_out", h, &got, &lro)?;
            Some((got, lro))
        }
        _ => None,
    };
    let one = Span { offset: 1, len: 1 };
    let amax = match (&b_amax, &h_amax) {
        (Some(b), Some(h)) => {
            let got = dl(k, b, "amax")?;
            check_vec_gaps("amax", h, &got, &one)?;
            Some(got)
        }
        _ => None,
    };
    let scale_inv = dl(k, &b_inv, "scale_inv")?;
    check_vec_gaps("scale_inv", &h_inv, &scale_inv, &Span { offset: 1, len: if per_row { m } else { 1 } })?;
    let y_t = match (&b_t, &h_t) {
        (Some(b), Some(h)) => {
            let got = dl(k, b, "transposed")?;
            check_mat_gaps("transposed", h, &got, &lt)?;
            Some((got, lt))
        }
        _ => None,
    };
    check_unchanged("x", &h_x, &dl(k, &b_x, "x")?)?;
    if let (Some(b), Some(h)) = (&b_scale, &h_scale) {
        check_unchanged("scale", h, &dl(k, b, "scale")?)?;
    }
    Ok(Fp8Out { fwd: FwdOut { y, y_layout: ly, residual_out, mean: None, rstd: None }, amax, scale_inv, y_t })
}

fn check_fp8_values(c: &Fp8Case, data: &FwdData, out: &Fp8Out) -> Result<(), String> {
    let (m, n, dt) = (c.base.m, c.base.n, c.base.dtypes);
    let fmt = fp8_fmt(dt.y).ok_or_else(|| format!("{} is not an FP8 dtype", dt.y))?;
    let consts =
        FwdConsts { desc: &c.base.desc, residual: dt.residual, compute: dt.x, weight: data.weight.as_deref(), bias: data.bias.as_deref() };
    let u_in = dt.x.unit_roundoff();
    let y_bits = out.fwd.y.as_bytes();
    let ly = out.fwd.y_layout;
    let inv = out.scale_inv.to_f32_vec();
    let mut t = Tally::default();
    let mut clean_rows = Vec::new();
    // Converted once: per row it made the check quadratic in M (132 s at 4301 rows of 4096 on a
    // 2-core machine; the "stall" of NOTES v14.3).
    let r_out = out.fwd.residual_out.as_ref().map(|(vals, l)| (vals.to_f32_vec(), l));
    for i in 0..m {
        let yrow = &y_bits[ly.offset + i * ly.stride..ly.offset + i * ly.stride + n];
        if c.base.inject.iter().any(|inj| inj.row == i) {
            if !yrow.iter().any(|&b| fmt.decode(b).is_nan()) {
                t.fail(format!("row {i} has a NaN input but no NaN in y_q (NaN must stay NaN)"));
            }
            continue;
        }
        let o = oracle::forward_row(&consts, &data.x[i * n..(i + 1) * n], data.residual.as_ref().map(|r| &r[i * n..(i + 1) * n]));
        let scale = match c.scale {
            Fp8Scale::Host(s) | Fp8Scale::Device(s) => Iv::exact(s as f64),
            Fp8Scale::PerRow => {
                let s = row_scale(&fmt, &amax_of(&o.y), FP8_ROW_AMAX_FLOOR as f64);
                let want = Iv { lo: 1.0 / s.hi, hi: 1.0 / s.lo, mid: 1.0 / s.mid }.mul32(Iv::exact(1.0));
                t.iv("scale_inv", i, 0, &want, DType::F32, inv[1 + i]);
                s
            }
        };
        for (j, y) in o.y.iter().enumerate() {
            let got = fmt.decode(yrow[j]);
            let (lo, hi, rne) = fp8_allowed(&fmt, y, &scale, u_in);
            let ok = got >= lo && got <= hi;
            t.record(if ok { 0.0 } else { f64::INFINITY }, || {
                format!(
                    "y_q[{i},{j}] ({}): got {got:e} (bits {:#04x}), exact y·scale = {:e}, round-to-nearest-even {rne:e}, allowed [{lo:e}, {hi:e}]",
                    dt.y,
                    yrow[j],
                    y.mid * scale.mid
                )
            });
        }
        if let Some((vals, l)) = &r_out {
            for (j, &want) in o.h.iter().enumerate() {
                t.exact("residual_out", i, j, want, vals[l.offset + i * l.stride + j]);
            }
        }
        clean_rows.push(amax_of(&o.y));
    }
    if let Some(a) = &out.amax {
        let want = amax_of(&clean_rows);
        let want = Iv { lo: want.lo * (1.0 - u_in), hi: want.hi * (1.0 + u_in), mid: want.mid };
        t.iv("amax", 0, 0, &want, DType::F32, a.get_f32(1));
    }
    if let Fp8Scale::Host(s) | Fp8Scale::Device(s) = c.scale {
        t.exact("scale_inv", 0, 0, 1.0 / s, inv[1]);
    }
    if let Some((yt, lt)) = &out.y_t {
        let tb = yt.as_bytes();
        'outer: for i in 0..m {
            for j in 0..n {
                let (a, b) = (y_bits[ly.offset + i * ly.stride + j], tb[lt.offset + j * lt.stride + i]);
                if a != b {
                    t.fail(format!(
                        "yT[{j},{i}] has bits {b:#04x}, but y_q[{i},{j}] has {a:#04x}: yT must be bitwise the transpose of y_q"
                    ));
                    break 'outer;
                }
            }
        }
    }
    t.into_result()
}

/// The full check of one FP8 case: supports → run (poisoned outputs, gaps) → values.
pub fn check_fp8<K: NormKernel>(k: &K, c: &Fp8Case) -> Check {
    let ctx = |e: String| format!("{c}\n    {e}");
    if let Some(reason) = supported(k, Direction::Forward, &c.base.desc, &c.base.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let data = FwdData::generate(&c.base);
    let out = run_fp8(k, c, &data).map_err(ctx)?;
    check_fp8_values(c, &data, &out).map_err(ctx)?;
    Ok(Ran::Passed)
}

/// The same FP8 case on two backends (two planner choices of one device: a kernel and its
/// twin): both pass [`check_fp8`]'s checks, and `y_q`, `residual_out`, `amax`, `scale_inv` and
/// `yT` are bitwise equal (the twin's claim: the same arithmetic, the same bits).
pub fn check_fp8_bitwise<A: NormKernel, B: NormKernel>(a: &A, b: &B, c: &Fp8Case) -> Result<(), String> {
    let ctx = |e: String| format!("{c}\n    {e}");
    let data = FwdData::generate(&c.base);
    let oa = run_fp8(a, c, &data).map_err(ctx)?;
    check_fp8_values(c, &data, &oa).map_err(ctx)?;
    let ob = run_fp8(b, c, &data).map_err(ctx)?;
    check_fp8_values(c, &data, &ob).map_err(ctx)?;
    let same = |what: &str, x: Option<&HostBuf>, y: Option<&HostBuf>| match (x, y) {
        (Some(x), Some(y)) if x.bits_eq(y) => Ok(()),
        (None, None) => Ok(()),
        _ => Err(ctx(format!("{what} differs between the two backends"))),
    };
    same("y_q", Some(&oa.fwd.y), Some(&ob.fwd.y))?;
    same("residual_out", oa.fwd.residual_out.as_ref().map(|r| &r.0), ob.fwd.residual_out.as_ref().map(|r| &r.0))?;
    same("amax", oa.amax.as_ref(), ob.amax.as_ref())?;
    same("scale_inv", Some(&oa.scale_inv), Some(&ob.scale_inv))?;
    same("yT", oa.y_t.as_ref().map(|t| &t.0), ob.y_t.as_ref().map(|t| &t.0))
}

/// Batch invariance of an FP8 forward: each of `targets` (row identities) computed alone (M = 1,
/// checked against the oracle), then inside contiguous batches of each size in `batch_ms` at the
/// first, middle and last positions among other rows: the row's `y_q` and `residual_out` and,
/// scaled per row, its `scale_inv` must be bitwise identical to the row's alone (a planner that
/// picks kernels by M must pick ones with the same arithmetic). Per tensor, `amax` is the
/// batch's, so it is not compared; `yT` is the transpose of `y_q` (checked by [`check_fp8`]).
pub fn check_fp8_batch_invariance<K: NormKernel>(k: &K, base: &Fp8Case, targets: &[u64], batch_ms: &[usize]) -> Check {
    let ctx = |e: String| format!("FP8 batch invariance, {base}\n    {e}");
    if let Some(reason) = supported(k, Direction::Forward, &base.base.desc, &base.base.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let per_row = base.scale == Fp8Scale::PerRow;
    let row_of = |out: &Fp8Out, i: usize| {
        let mut v = super::invariants::fwd_row_bits(&out.fwd, i);
        if per_row {
            v.push(bits_at(&out.scale_inv, 1 + i));
        }
        v
    };
    let single = Fp8Case { base: FwdCase { m: 1, views: Views::Contiguous, ..base.base.clone() }, ..base.clone() };
    let mut alone = Vec::new();
    for &t in targets {
        let data = FwdData::with_rows(&single.base, &[t]);
        let out = run_fp8(k, &single, &data).map_err(ctx)?;
        check_fp8_values(&single, &data, &out).map_err(|e| ctx(format!("row {t} alone: {e}")))?;
        alone.push(row_of(&out, 0));
    }
    for (bi, &bm) in batch_ms.iter().enumerate() {
        let case = Fp8Case { base: FwdCase { m: bm, views: Views::Contiguous, ..base.base.clone() }, ..base.clone() };
        let (ids, stayed) = super::invariants::place_targets(bm, 2_000_000 + 10_000 * bi as u64, targets);
        let data = FwdData::with_rows(&case.base, &ids);
        let out = run_fp8(k, &case, &data).map_err(ctx)?;
        for (p, ti) in stayed {
            let t = targets[ti];
            let got = row_of(&out, p);
            if got != alone[ti] {
                let j = got.iter().zip(&alone[ti]).position(|(a, b)| a != b).unwrap_or(0);
                return Err(ctx(format!(
                    "row {t} at position {p} of a batch of M={bm} differs from the same row computed alone: element {j} of (y_q, residual_out{}) has bits {:#x} vs {:#x}",
                    if per_row { ", scale_inv" } else { "" },
                    got[j],
                    alone[ti][j]
                )));
            }
        }
    }
    Ok(Ran::Passed)
}
