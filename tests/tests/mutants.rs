//! The suite must be able to fail: deliberately broken "mutant" backends, each wrapping a correct
//! backend and breaking one thing, must be caught by the category that owns that property.
//!
//! The correct core is [`OracleBackend`] (always available); the six headline mutants also wrap the
//! real CPU backend.

use normkit_conformance::data::{gather_mat, set_f32};
use normkit_conformance::{oracle, run_category, Category, Grid, OracleBackend};
use normkit_core::{
    round_to, validate_backward, validate_forward, Backward, Buffer, CastingMode, DType, DTypes, Direction, Forward, Fp8, Fp8Scaling,
    HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel, NormKind, Operand, Scale, VecMut, FP8_ROW_AMAX_FLOOR,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// One injected bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// No fault: the wrapper alone (must pass everything).
    Clean,
    /// Ignores the weight offset (Gemma's zero-centred weight), forward and backward.
    ForgetsWeightOffset,
    /// Never writes the last element of each row of y.
    SkipsLastElement,
    /// LayerNorm variance as `E[x²] − μ²` in one fp32 pass.
    OnePassVariance,
    /// llama mode computed as gemma (x̂ never rounded to the input dtype).
    LlamaRoundsLate,
    /// Backward ignores `d_residual_out`.
    DropsDResidualOut,
    /// dW summed over rows 1..M instead of 0..M.
    DwOffByOneRow,
    /// Writes y with stride N whatever the output view says.
    IgnoresOutputStride,
    /// Reads x with y's stride and offset.
    ReadsXWithOutputLayout,
    /// Never writes rstd.
    ForgetsRstd,
    /// y differs in the last bit when M > 1 (a batch-size-dependent path).
    BatchDependent,
    /// dW differs in the last bit on every other call (atomics).
    NondeterministicDw,
    /// Touches y before validating.
    WritesBeforeValidating,
    /// Reports every error as Unsupported.
    WrongErrorVariant,
    /// Rejects M = 0.
    RejectsEmptyBatch,
    /// A non-finite row also poisons the next row's first element.
    NanLeaksToNextRow,
    /// Backward never writes the last element of each row of dx.
    BackwardSkipsLastElement,
    /// dB computed as Σ dy·x̂ (dW's formula).
    DbUsesDwFormula,
    /// Every y one unit in the last place off (how tight the tolerance is).
    OneUlpOff,
    /// eps ten times too large.
    TenTimesEps,
    /// Fused add: stores x, not x + residual, into residual_out.
    ResidualOutIsX,
    /// LayerNorm backward without the `− mean(g)` term.
    LnBackwardDropsMeanTerm,
    /// Fused add: normalises `x + residual` before it is rounded to the residual's dtype (instead of
    /// the value as stored in residual_out).
    NormalizesUnroundedSum,
    /// FP8: `y·scale` truncated toward zero instead of rounded to nearest even (still saturating).
    Fp8Truncates,
    /// FP8: no saturation: `|y·scale|` beyond the largest finite value becomes ±Inf (e5m2) or NaN
    /// (e4m3, the fnuz formats) instead of ±max finite.
    Fp8NoSaturation,
    /// FP8: an off-by-one at the edge of the 64-wide tiles of the transpose: the last row of each
    /// tile of yT (rows 63, 127, … and N − 1) is copied from the previous column of y_q.
    Fp8TransposeTileEdge,
    /// FP8: `amax` taken after scaling (`max |y·scale|`) instead of `max |y|`.
    Fp8AmaxAfterScaling,
    /// FP8: `amax` over the first M − 1 rows only (0 when M = 1).
    Fp8AmaxSkipsLastRow,
}

#[derive(Debug)]
struct Mutant<K> {
    inner: K,
    fault: Fault,
    calls: AtomicU64,
}

fn reborrow_fwd<'s>(a: &'s mut Forward<'_, HostBuf>) -> Forward<'s, HostBuf> {
    Forward {
        x: a.x.reborrow(),
        residual: a.residual.as_mut().map(|r| r.reborrow()),
        weight: a.weight,
        bias: a.bias,
        mean: a.mean.as_mut().map(|m| m.reborrow()),
        rstd: a.rstd.as_mut().map(|m| m.reborrow()),
        fp8: a.fp8.as_mut().map(|q| Fp8 {
            scaling: match &q.scaling {
                Fp8Scaling::PerTensor(s) => Fp8Scaling::PerTensor(*s),
                Fp8Scaling::PerRow => Fp8Scaling::PerRow,
            },
            amax: q.amax.as_mut().map(|v| v.reborrow()),
            scale_inv: q.scale_inv.as_mut().map(|v| v.reborrow()),
            transposed: q.transposed.as_mut().map(|t| t.reborrow()),
        }),
    }
}

fn reborrow_bwd<'s>(a: &'s mut Backward<'_, HostBuf>) -> Backward<'s, HostBuf> {
    Backward {
        x: a.x,
        dy: a.dy.reborrow(),
        d_residual_out: a.d_residual_out,
        weight: a.weight,
        mean: a.mean,
        rstd: a.rstd,
        dw: a.dw.as_mut().map(|v| v.reborrow()),
        db: a.db.as_mut().map(|v| v.reborrow()),
    }
}

fn output<'s>(io: &'s mut InOut<'_, HostBuf>) -> (&'s mut HostBuf, Layout) {
    match io {
        InOut::Separate { output, .. } => (&mut *output.buf, output.layout),
        InOut::InPlace(m) => (&mut *m.buf, m.layout),
    }
}

fn input_vals(io: &InOut<'_, HostBuf>) -> Vec<f32> {
    match io {
        InOut::Separate { input, .. } => gather_mat(&input.buf.to_f32_vec(), &input.layout),
        InOut::InPlace(m) => gather_mat(&m.buf.to_f32_vec(), &m.layout),
    }
}

/// Restores the last element of every row of `l` in `buf` from `before` (bit for bit).
fn restore_last(buf: &mut HostBuf, before: &HostBuf, l: &Layout) {
    for i in 0..l.rows {
        copy_elem(buf, before, l.offset + i * l.stride + l.cols - 1);
    }
}

/// The input side of `io` (the buffer before the call writes it, when in place).
fn input_view<'s>(io: &'s InOut<'_, HostBuf>) -> (&'s HostBuf, Layout) {
    match io {
        InOut::Separate { input, .. } => (input.buf, input.layout),
        InOut::InPlace(m) => (&*m.buf, m.layout),
    }
}

/// The backend's own fp32 `y` of an FP8 call (M × N, contiguous) and each row's scale, from a
/// second call of `inner` with an f32 `y` (and a scratch `residual_out`); made before the real
/// call, which may write over its inputs. `None` when `y` is not FP8.
fn fp8_fp32_y<K: NormKernel<Buffer = HostBuf>>(
    inner: &K,
    desc: &NormDesc,
    args: &Forward<'_, HostBuf>,
    m: usize,
    n: usize,
) -> normkit_core::Result<Option<(Vec<f32>, Vec<f32>)>> {
    let Some(q) = args.fp8.as_ref() else { return Ok(None) };
    let (xb, xl) = input_view(&args.x);
    let mut y32 = HostBuf::zeros(DType::F32, m * n);
    let mut ro = args.residual.as_ref().map(|r| HostBuf::zeros(r.output_dtype(), m * n));
    let mut a = Forward::new(InOut::separate(MatRef::with_layout(xb, xl), MatMut::new(&mut y32, m, n)));
    if let (Some(r), Some(ro)) = (args.residual.as_ref(), ro.as_mut()) {
        let (rb, rl) = input_view(r);
        a = a.residual(InOut::separate(MatRef::with_layout(rb, rl), MatMut::new(ro, m, n)));
    }
    a.weight = args.weight;
    a.bias = args.bias;
    inner.forward(desc, a)?;
    let y = y32.to_f32_vec();
    let max = args.x.output_dtype().max_finite() as f32;
    let scales = (0..m)
        .map(|i| match &q.scaling {
            Fp8Scaling::PerTensor(Scale::Host(s)) => *s,
            Fp8Scaling::PerTensor(Scale::Device(v)) => v.buf.get_f32(v.span.offset),
            // As the CPU backend computes it: max finite / the row's amax (floored).
            Fp8Scaling::PerRow => max / y[i * n..(i + 1) * n].iter().fold(0f32, |a, &v| a.max(v.abs())).max(FP8_ROW_AMAX_FLOOR),
        })
        .collect();
    Ok(Some((y, scales)))
}

/// Rewrites yT (when the call has one) as the transpose of y_q, so that a fault in y_q is caught
/// by the y_q check, not by the transpose check.
fn retranspose(args: &mut Forward<'_, HostBuf>, m: usize, n: usize) {
    let (y, ly) = output(&mut args.x);
    if let Some(t) = args.fp8.as_mut().and_then(|q| q.transposed.as_mut()) {
        let lt = t.layout;
        let (yb, tb) = (y.as_bytes(), t.buf.as_bytes_mut());
        for i in 0..m {
            for j in 0..n {
                tb[lt.offset + j * lt.stride + i] = yb[ly.offset + i * ly.stride + j];
            }
        }
    }
}

fn copy_elem(dst: &mut HostBuf, src: &HostBuf, idx: usize) {
    match (dst, src) {
        (HostBuf::F32(d), HostBuf::F32(s)) => d[idx] = s[idx],
        (HostBuf::F16(d), HostBuf::F16(s)) => d[idx] = s[idx],
        (HostBuf::BF16(d), HostBuf::BF16(s)) => d[idx] = s[idx],
        (d, s) if d.dtype() == s.dtype() => d.as_bytes_mut()[idx] = s.as_bytes()[idx],
        _ => unreachable!("same dtype"),
    }
}

fn flip_last_bit(buf: &mut HostBuf, idx: usize) {
    match buf {
        HostBuf::F32(v) => v[idx] = f32::from_bits(v[idx].to_bits() ^ 1),
        HostBuf::F16(v) => v[idx] = normkit_core::f16::from_bits(v[idx].to_bits() ^ 1),
        HostBuf::BF16(v) => v[idx] = normkit_core::bf16::from_bits(v[idx].to_bits() ^ 1),
        other => other.as_bytes_mut()[idx] ^= 1,
    }
}

impl<K: NormKernel<Buffer = HostBuf>> NormKernel for Mutant<K> {
    type Buffer = HostBuf;

    fn name(&self) -> &'static str {
        "mutant"
    }
    fn device_name(&self) -> String {
        format!("{:?} around {}", self.fault, self.inner.name())
    }
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> normkit_core::Result<()> {
        self.inner.supports(dir, desc, dtypes)
    }

    fn forward(&self, desc: &NormDesc, mut args: Forward<'_, HostBuf>) -> normkit_core::Result<()> {
        use Fault::*;
        match self.fault {
            WritesBeforeValidating => {
                let (buf, l) = output(&mut args.x);
                if buf.len() > l.offset {
                    set_f32(buf, l.offset, 0.0);
                }
                return self.inner.forward(desc, args);
            }
            WrongErrorVariant => {
                return self.inner.forward(desc, args).map_err(|_| NormError::Unsupported { backend: "mutant", what: "anything".into() });
            }
            RejectsEmptyBatch => {
                let l = args.x.input_layout();
                if l.rows == 0 {
                    return Err(NormError::Shape { operand: Operand::X, dim: normkit_core::Dim::Rows, expected: 1, got: 0 });
                }
                return self.inner.forward(desc, args);
            }
            ForgetsWeightOffset if desc.weight.is_some() => return self.inner.forward(&desc.with_weight_offset(0.0), args),
            TenTimesEps => return self.inner.forward(&NormDesc { eps: desc.eps * 10.0, ..*desc }, args),
            LlamaRoundsLate if desc.casting == CastingMode::Llama => {
                return self.inner.forward(&desc.with_casting(CastingMode::Gemma), args)
            }
            ReadsXWithOutputLayout => {
                if let InOut::Separate { input, output } = args.x {
                    let l = Layout {
                        rows: input.layout.rows,
                        cols: input.layout.cols,
                        stride: output.layout.stride,
                        offset: output.layout.offset,
                    };
                    args.x = InOut::Separate {
                        input: MatRef::with_layout(input.buf, l),
                        output: MatMut::with_layout(output.buf, output.layout),
                    };
                }
                return self.inner.forward(desc, args);
            }
            _ => {}
        }
        let plan = validate_forward(desc, &args)?;
        let x_before = input_vals(&args.x);
        let r_before = args.residual.as_ref().map(input_vals);
        let (y_before, _) = output(&mut args.x);
        let y_before = y_before.clone();
        let rstd_before = args.rstd.as_ref().map(|r| r.buf.clone());
        let (m, n) = (plan.m, plan.n);
        let fp8_fault = matches!(self.fault, Fp8Truncates | Fp8NoSaturation | Fp8AmaxAfterScaling | Fp8AmaxSkipsLastRow);
        let fp32_y = if fp8_fault { fp8_fp32_y(&self.inner, desc, &args, m, n)? } else { None };
        self.inner.forward(desc, reborrow_fwd(&mut args))?;
        match self.fault {
            SkipsLastElement => {
                let (buf, l) = output(&mut args.x);
                restore_last(buf, &y_before, &l);
            }
            OnePassVariance if desc.kind == NormKind::Layer && !desc.residual => {
                let w = args.weight.map(|w| w.buf.to_f32_vec()[w.span.offset..w.span.offset + n].to_vec());
                let b = args.bias.map(|b| b.buf.to_f32_vec()[b.span.offset..b.span.offset + n].to_vec());
                let (buf, l) = output(&mut args.x);
                let ydt = buf.dtype();
                let off = desc.weight.map_or(0.0, |w| w.offset);
                for i in 0..m {
                    let row = &x_before[i * n..(i + 1) * n];
                    let (mut s, mut s2) = (0f32, 0f32);
                    for &v in row {
                        s += v;
                        s2 += v * v;
                    }
                    let mu = s / n as f32;
                    let var = (s2 / n as f32 - mu * mu).max(0.0);
                    let rstd = 1.0 / (var + desc.eps).sqrt();
                    for j in 0..n {
                        let mut v = (row[j] - mu) * rstd;
                        if let Some(w) = &w {
                            v *= w[j] + off;
                        }
                        if let Some(b) = &b {
                            v += b[j];
                        }
                        set_f32(buf, l.offset + i * l.stride + j, round_to(ydt, v));
                    }
                }
            }
            IgnoresOutputStride => {
                let (buf, l) = output(&mut args.x);
                if !l.is_contiguous() {
                    let vals = gather_mat(&buf.to_f32_vec(), &l);
                    for i in 0..m {
                        for j in 0..n {
                            set_f32(buf, l.offset + i * n + j, vals[i * n + j]);
                        }
                    }
                }
            }
            ForgetsRstd => {
                if let (Some(r), Some(before)) = (args.rstd.as_mut(), rstd_before) {
                    *r.buf = before;
                }
            }
            BatchDependent if m > 1 => {
                let (buf, l) = output(&mut args.x);
                for i in 0..m {
                    flip_last_bit(buf, l.offset + i * l.stride);
                }
            }
            ResidualOutIsX => {
                if let Some(io) = args.residual.as_mut() {
                    let (buf, l) = output(io);
                    for i in 0..m {
                        for j in 0..n {
                            set_f32(buf, l.offset + i * l.stride + j, x_before[i * n + j]);
                        }
                    }
                }
            }
            OneUlpOff => {
                let (buf, l) = output(&mut args.x);
                for i in 0..m {
                    for j in 0..n {
                        flip_last_bit(buf, l.offset + i * l.stride + j);
                    }
                }
            }
            NormalizesUnroundedSum => {
                if let Some(r) = &r_before {
                    let w = args.weight.map(|w| w.buf.to_f32_vec()[w.span.offset..w.span.offset + n].to_vec());
                    let b = args.bias.map(|b| b.buf.to_f32_vec()[b.span.offset..b.span.offset + n].to_vec());
                    // The oracle with an f32 residual stream: h = x + r kept in f32.
                    let consts =
                        oracle::FwdConsts { desc, residual: DType::F32, compute: plan.dtypes.x, weight: w.as_deref(), bias: b.as_deref() };
                    let (buf, l) = output(&mut args.x);
                    let ydt = buf.dtype();
                    for i in 0..m {
                        let row = oracle::forward_row(&consts, &x_before[i * n..(i + 1) * n], Some(&r[i * n..(i + 1) * n]));
                        for (j, iv) in row.y.iter().enumerate() {
                            set_f32(buf, l.offset + i * l.stride + j, oracle::store(ydt, iv));
                        }
                    }
                }
            }
            Fp8Truncates | Fp8NoSaturation => {
                if let Some((y32, scales)) = &fp32_y {
                    let (buf, l) = output(&mut args.x);
                    let dt = buf.dtype();
                    let fnuz = matches!(dt, DType::F8E4M3Fnuz | DType::F8E5M2Fnuz);
                    let max = dt.max_finite() as f32;
                    for i in 0..m {
                        for j in 0..n {
                            let idx = l.offset + i * l.stride + j;
                            let v = y32[i * n + j] * scales[i]; // the backend's own product
                            let got = buf.get_f32(idx); // its round-to-nearest-even value
                            let b = buf.as_bytes()[idx];
                            let sign = if v.is_sign_negative() { 0x80 } else { 0 };
                            let new = match self.fault {
                                // One code toward zero wherever RNE rounded away from zero.
                                Fp8Truncates if got.abs() > v.abs() => match (b & 0x80) | ((b & 0x7F) - 1) {
                                    0x80 if fnuz => 0, // fnuz has no −0 (0x80 is its NaN)
                                    c => c,
                                },
                                Fp8NoSaturation if v.abs() > max => match dt {
                                    DType::F8E5M2 => 0x7C | sign,
                                    DType::F8E4M3 => 0x7F | sign,
                                    _ => 0x80,
                                },
                                _ => b,
                            };
                            buf.as_bytes_mut()[idx] = new;
                        }
                    }
                    retranspose(&mut args, m, n);
                }
            }
            Fp8TransposeTileEdge => {
                let (y, ly) = output(&mut args.x);
                if let Some(t) = args.fp8.as_mut().and_then(|q| q.transposed.as_mut()) {
                    let lt = t.layout;
                    let (yb, tb) = (y.as_bytes(), t.buf.as_bytes_mut());
                    for j in (1..n).filter(|&j| j % 64 == 63 || j == n - 1) {
                        for i in 0..m {
                            tb[lt.offset + j * lt.stride + i] = yb[ly.offset + i * ly.stride + j - 1];
                        }
                    }
                }
            }
            Fp8AmaxAfterScaling | Fp8AmaxSkipsLastRow => {
                if let (Some((y32, scales)), Some(a)) = (&fp32_y, args.fp8.as_mut().and_then(|q| q.amax.as_mut())) {
                    // `f32::max` ignores NaN, as the backend's amax does.
                    let amax = match self.fault {
                        Fp8AmaxAfterScaling => (0..m * n).fold(0f32, |acc, k| acc.max((y32[k] * scales[k / n]).abs())),
                        _ => y32[..m.saturating_sub(1) * n].iter().fold(0f32, |acc, &v| acc.max(v.abs())),
                    };
                    set_f32(a.buf, a.span.offset, amax);
                }
            }
            NanLeaksToNextRow => {
                let (buf, l) = output(&mut args.x);
                for i in 0..m.saturating_sub(1) {
                    if (0..n).any(|j| !buf.get_f32(l.offset + i * l.stride + j).is_finite()) {
                        set_f32(buf, l.offset + (i + 1) * l.stride, f32::NAN);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn backward(&self, desc: &NormDesc, mut args: Backward<'_, HostBuf>) -> normkit_core::Result<()> {
        use Fault::*;
        match self.fault {
            ForgetsWeightOffset if desc.weight.is_some() => return self.inner.backward(&desc.with_weight_offset(0.0), args),
            DropsDResidualOut => {
                args.d_residual_out = None;
                return self.inner.backward(desc, args);
            }
            WrongErrorVariant => {
                return self.inner.backward(desc, args).map_err(|_| NormError::Unsupported { backend: "mutant", what: "anything".into() });
            }
            _ => {}
        }
        let plan = validate_backward(desc, &args)?;
        let (m, n) = (plan.m, plan.n);
        // dW over rows 1..M: a first call on the sub-views, into scratch outputs.
        let mut shifted_dw = None;
        if let (DwOffByOneRow, Some(dw), true) = (self.fault, args.dw.as_ref(), m > 0) {
            let sub = |l: Layout| Layout { rows: l.rows - 1, offset: l.offset + l.stride, ..l };
            let dy_in = match &args.dy {
                InOut::Separate { input, .. } => input.buf.clone(),
                InOut::InPlace(mm) => mm.buf.clone(),
            };
            let dyl = args.dy.input_layout();
            let mut dx_tmp = HostBuf::zeros(dy_in.dtype(), (m - 1) * n);
            let mut dw_tmp = HostBuf::zeros(dw.buf.dtype(), n);
            let mut db_tmp = args.db.as_ref().map(|d| HostBuf::zeros(d.buf.dtype(), n));
            let mut a = Backward::new(
                MatRef::with_layout(args.x.buf, sub(args.x.layout)),
                InOut::separate(MatRef::with_layout(&dy_in, sub(dyl)), MatMut::new(&mut dx_tmp, m - 1, n)),
                normkit_core::VecRef::with_span(args.rstd.buf, args.rstd.span.offset + 1, m - 1),
            );
            a.d_residual_out = args.d_residual_out.map(|d| MatRef::with_layout(d.buf, sub(d.layout)));
            a.weight = args.weight;
            a.mean = args.mean.map(|v| normkit_core::VecRef::with_span(v.buf, v.span.offset + 1, m - 1));
            a.dw = Some(VecMut::new(&mut dw_tmp));
            a.db = db_tmp.as_mut().map(VecMut::new);
            self.inner.backward(desc, a)?;
            shifted_dw = Some(dw_tmp);
        }
        let dx_before = output(&mut args.dy).0.clone();
        let dy_vals = input_vals(&args.dy);
        let n_calls = self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.backward(desc, reborrow_bwd(&mut args))?;
        match self.fault {
            DwOffByOneRow => {
                if let (Some(dw), Some(tmp)) = (args.dw.as_mut(), shifted_dw) {
                    for j in 0..n {
                        set_f32(dw.buf, dw.span.offset + j, tmp.get_f32(j));
                    }
                }
            }
            NondeterministicDw if n_calls % 2 == 1 => {
                if let Some(dw) = args.dw.as_mut() {
                    flip_last_bit(dw.buf, dw.span.offset);
                }
            }
            BackwardSkipsLastElement => {
                let (buf, l) = output(&mut args.dy);
                restore_last(buf, &dx_before, &l);
            }
            LnBackwardDropsMeanTerm if desc.kind == NormKind::Layer => {
                // Adds back rstd·mean(g), g = dy·(w + offset): the term a correct kernel subtracts.
                let w = args.weight.map(|w| w.buf.to_f32_vec()[w.span.offset..w.span.offset + n].to_vec());
                let off = desc.weight.map_or(0.0, |w| w.offset);
                let rstd = args.rstd.buf.to_f32_vec()[args.rstd.span.offset..args.rstd.span.offset + m].to_vec();
                let (buf, l) = output(&mut args.dy);
                for i in 0..m {
                    let g: f32 = (0..n).map(|j| dy_vals[i * n + j] * w.as_ref().map_or(1.0, |w| w[j] + off)).sum::<f32>() / n as f32;
                    for j in 0..n {
                        let idx = l.offset + i * l.stride + j;
                        let v = buf.get_f32(idx) + rstd[i] * g;
                        set_f32(buf, idx, v);
                    }
                }
            }
            DbUsesDwFormula => {
                if let (Some(db), Some(dw)) = (args.db.as_mut(), args.dw.as_ref()) {
                    for j in 0..n {
                        set_f32(db.buf, db.span.offset + j, dw.buf.get_f32(dw.span.offset + j));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn alloc(&self, dtype: DType, len: usize) -> normkit_core::Result<HostBuf> {
        self.inner.alloc(dtype, len)
    }
    fn upload(&self, src: &HostBuf) -> normkit_core::Result<HostBuf> {
        self.inner.upload(src)
    }
    fn download(&self, buf: &HostBuf) -> normkit_core::Result<HostBuf> {
        self.inner.download(buf)
    }
    fn synchronize(&self) -> normkit_core::Result<()> {
        self.inner.synchronize()
    }
}

/// Asserts that at least one of `cats` fails for the mutant, and returns the first report line.
fn caught<K: NormKernel<Buffer = HostBuf>>(inner: K, fault: Fault, cats: &[Category]) -> String {
    let k = Mutant { inner, fault, calls: AtomicU64::new(0) };
    let grid = Grid::smoke();
    for &cat in cats {
        if let Err(report) = run_category(&k, &grid, cat) {
            let first = report.lines().take(3).collect::<Vec<_>>().join(" | ");
            println!("{fault:?} caught by {cat:?}: {}", &first[..first.len().min(400)]);
            return report;
        }
    }
    panic!("mutant {fault:?} was not caught by any of {cats:?}");
}

/// The wrapper without a fault passes every category (so the failures below come from the faults).
#[test]
fn wrapper_without_fault_passes() {
    let k = Mutant { inner: OracleBackend, fault: Fault::Clean, calls: AtomicU64::new(0) };
    for cat in Category::ALL {
        run_category(&k, &Grid::smoke(), cat).unwrap_or_else(|e| panic!("{cat:?}: {e}"));
    }
}

macro_rules! mutant_tests {
    ($($name:ident: $fault:ident => [$($cat:ident),+];)*) => {
        $(
            #[test]
            fn $name() {
                caught(OracleBackend, Fault::$fault, &[$(Category::$cat),+]);
            }
        )*
    };
}

mutant_tests! {
    forgets_weight_offset: ForgetsWeightOffset => [FwdRms];
    forgets_weight_offset_backward: ForgetsWeightOffset => [BwdRms];
    skips_last_element: SkipsLastElement => [FwdShapes];
    one_pass_variance: OnePassVariance => [FwdLayer];
    llama_rounds_late: LlamaRoundsLate => [FwdRms];
    drops_d_residual_out: DropsDResidualOut => [BwdAddRms];
    dw_off_by_one_row: DwOffByOneRow => [BwdShapes];
    ignores_output_stride: IgnoresOutputStride => [Strided];
    reads_x_with_output_layout: ReadsXWithOutputLayout => [Strided];
    forgets_rstd: ForgetsRstd => [FwdRms];
    batch_dependent: BatchDependent => [BatchInvariance];
    nondeterministic_dw: NondeterministicDw => [Determinism];
    writes_before_validating: WritesBeforeValidating => [InvalidForward];
    wrong_error_variant: WrongErrorVariant => [InvalidForward];
    wrong_error_variant_backward: WrongErrorVariant => [InvalidBackward];
    rejects_empty_batch: RejectsEmptyBatch => [EmptyBatch];
    nan_leaks_to_next_row: NanLeaksToNextRow => [NonFiniteRows];
    backward_skips_last_element: BackwardSkipsLastElement => [BwdShapes];
    db_uses_dw_formula: DbUsesDwFormula => [BwdLayer];
    one_ulp_off: OneUlpOff => [FwdShapes];
    residual_out_is_x: ResidualOutIsX => [FwdAddRms];
    ln_backward_drops_mean_term: LnBackwardDropsMeanTerm => [BwdLayer];
    ten_times_eps: TenTimesEps => [FwdShapes];
    normalizes_unrounded_sum: NormalizesUnroundedSum => [FwdAddRms];
}

/// The headline mutants also around the real CPU backend.
#[test]
fn mutants_of_the_cpu_backend_are_caught() {
    use normkit_core::cpu::CpuBackend;
    for (fault, cats) in [
        (Fault::ForgetsWeightOffset, &[Category::FwdRms][..]),
        (Fault::SkipsLastElement, &[Category::FwdShapes]),
        (Fault::OnePassVariance, &[Category::FwdLayer]),
        (Fault::LlamaRoundsLate, &[Category::FwdRms]),
        (Fault::DropsDResidualOut, &[Category::BwdAddRms]),
        (Fault::DwOffByOneRow, &[Category::BwdShapes]),
    ] {
        caught(CpuBackend::new(), fault, cats);
    }
}

/// `E[x²] − μ²` in fp32 is caught where it matters: on the row with a large mean (1e3 + noise) of an
/// f32 LayerNorm, where it cancels catastrophically — the worst element is on that row (row 1 of a
/// case whose seed is a multiple of 5, see `FwdData::generate`).
#[test]
fn one_pass_variance_fails_on_the_large_mean_row() {
    use normkit_conformance::{check_forward, FwdCase};
    let k = Mutant { inner: OracleBackend, fault: Fault::OnePassVariance, calls: AtomicU64::new(0) };
    let case = FwdCase::new(NormDesc::layer(1e-5), DTypes::uniform(DType::F32), 5, 4096, 10);
    let err = check_forward(&k, &case).expect_err("one-pass variance must fail");
    assert!(err.contains("worst: y[1,"), "the worst element should be on the large-mean row 1: {err}");
    // And the same case passes on the correct backend.
    check_forward(&OracleBackend, &case).expect("the oracle passes");
}

/// The FP8 checks can fail. Around the CPU backend (the oracle backend does not quantise): every
/// FP8 value one code off and the last element of each row never written; and the FP8 faults, each
/// caught by the FP8 category with the message of the check that owns the property.
#[test]
fn fp8_mutants_of_the_cpu_backend_are_caught() {
    use normkit_core::cpu::CpuBackend;
    // The wrapper alone around the CPU backend passes (so the failures come from the faults).
    let clean = Mutant { inner: CpuBackend::new(), fault: Fault::Clean, calls: AtomicU64::new(0) };
    run_category(&clean, &Grid::smoke(), Category::Fp8).unwrap_or_else(|e| panic!("the clean CPU backend fails fwd_fp8: {e}"));
    for fault in [Fault::OneUlpOff, Fault::SkipsLastElement] {
        caught(CpuBackend::new(), fault, &[Category::Fp8]);
    }
    let y_q_check = "round-to-nearest-even";
    let transpose_check = "yT must be bitwise the transpose of y_q";
    for (fault, want, also) in [
        (Fault::Fp8Truncates, y_q_check, None),
        (Fault::Fp8NoSaturation, y_q_check, Some(["got inf", "got -inf", "got NaN"])),
        (Fault::Fp8TransposeTileEdge, transpose_check, None),
        (Fault::Fp8AmaxAfterScaling, "amax[0,0]", None),
        (Fault::Fp8AmaxSkipsLastRow, "amax[0,0]", None),
    ] {
        let report = caught(CpuBackend::new(), fault, &[Category::Fp8]);
        assert!(report.contains(want), "{fault:?} should fail the check with {want:?}: {report}");
        if let Some(any) = also {
            assert!(any.iter().any(|s| report.contains(s)), "{fault:?} should write Inf or NaN: {report}");
        }
        if fault != Fault::Fp8TransposeTileEdge {
            assert!(!report.contains(transpose_check), "{fault:?} leaves yT the transpose of y_q: {report}");
        }
    }
}
