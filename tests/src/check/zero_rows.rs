//! Rows of zeros (padding) with a tiny eps.

use super::*;

/// The eps of the zero-row cases: a common setting, and 0 when rounded to f16 or bf16's 1e-12 is
/// fine but its `rstd = 1e6` is `+inf` in f16.
pub const ZERO_ROW_EPS: f32 = 1e-12;

/// The descriptors and dtypes of the zero-row check: RMSNorm and LayerNorm, with and without the
/// fused add, every casting mode, with and without bias, weight absent / offset 0 / offset 1
/// (rotating), `x` in f16, bf16 and f32 with uniform dtypes, an f32 weight, and f32 outputs, and
/// `N` rotating through 1, 64 and 1000. Every descriptor saves its statistics (the backward reads
/// them) and has `eps =` [`ZERO_ROW_EPS`].
pub fn zero_row_cases() -> Vec<(NormDesc, DTypes, usize)> {
    let mut v = Vec::new();
    for layer in [false, true] {
        for residual in [false, true] {
            for casting in CastingMode::ALL {
                for x in [DType::F16, DType::BF16, DType::F32] {
                    for dtypes in [DTypes::uniform(x), DTypes::f32_weight(x), DTypes { x, y: DType::F32, weight: DType::F32, residual: x }]
                    {
                        for bias in [false, true] {
                            let i = v.len();
                            let base = if layer { NormDesc::layer(ZERO_ROW_EPS) } else { NormDesc::rms(ZERO_ROW_EPS) };
                            let d = base.with_bias(bias).with_residual(residual).with_casting(casting).with_save_stats(true);
                            let d = match i % 3 {
                                0 => d.without_weight(),
                                1 => d.with_weight_offset(0.0),
                                _ => d.with_weight_offset(1.0),
                            };
                            v.push((d, dtypes, [1, 64, 1000][i % 3 / 2 + (i / 3) % 2]));
                        }
                    }
                }
            }
        }
    }
    v
}

/// Rows of zeros (what padding tokens look like) and constant rows, with `eps = 1e-12`, forward
/// then backward from the forward's saved statistics. `M = 4`: rows 0 and 2 are zeros (with the
/// fused add, `x` and `residual` both), row 1 ordinary data, row 3 the constant 0.5 (LayerNorm's
/// variance is then 0 too). Asserts that every output is finite, that a zero row comes out as
/// exactly the bias (0 without one) and its saved `rstd` is finite, and that the backward gives
/// finite `dx`, `dw`, `db`, with `dx` of a zero row exactly `d_residual_out` (0) where its `dy` is
/// 0. A 16-bit `dy` is 0 on the degenerate rows (their true `dx` is `rstd·(…) ≈ 1e6·dy`, which
/// overflows f16 legitimately); an f32 `dy` is not.
///
/// The casting mode `none` used to round `rstd` to the input dtype: `1e6` became `+inf` in f16 and
/// the zero row `0·inf = NaN`. The statistics are fp32 in every mode now (see
/// `normkit_core::CastingMode::None`).
pub fn check_zero_rows<K: NormKernel>(k: &K, desc: &NormDesc, dtypes: &DTypes, n: usize) -> Check {
    let ctx = |e: String| {
        format!(
            "zero rows: {} {dtypes:?} N={n} casting={} bias={} weight={:?} eps={:e}\n    {e}",
            desc.op_name(false),
            desc.casting.name(),
            desc.bias,
            desc.weight,
            desc.eps
        )
    };
    if let Some(reason) = supported(k, Direction::Forward, desc, dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    zero_rows_inner(k, desc, dtypes, n).map_err(ctx)
}

pub(super) fn zero_rows_inner<K: NormKernel>(k: &K, desc: &NormDesc, dt: &DTypes, n: usize) -> Check {
    let m = 4;
    let zero_row = |i: usize| i == 0 || i == 2;
    let row1 = |j: usize| (j as f32 * 0.7 + 0.3).sin() * 2.0 + 0.1;
    let xs: Vec<f32> = (0..m * n)
        .map(|e| match e / n {
            1 => row1(e % n),
            3 => 0.5,
            _ => 0.0,
        })
        .collect();
    let rs: Vec<f32> = (0..m * n).map(|e| if e / n == 1 { 0.25 * row1(e % n + 3) } else { 0.0 }).collect();
    // Exactly representable in every dtype, so a zero row's y is the bias bitwise.
    let wv: Vec<f32> =
        (0..n).map(|j| 0.5 + (j % 5) as f32 * 0.25 - if desc.weight.is_some_and(|w| w.offset != 0.0) { 1.0 } else { 0.0 }).collect();
    let bv: Vec<f32> = (0..n).map(|j| ((j % 7) as f32 - 3.0) * 0.125).collect();
    let ctx = |e: NormError| format!("forward returned an error: {e} ({e:?})");

    let b_x = up(k, &HostBuf::from_f32(dt.x, &xs), "x")?;
    let mut b_y = up(k, &data::buf_of_bits(dt.y, m * n, poison_bits(dt.y)), "y")?;
    let b_r = desc.residual.then(|| up(k, &HostBuf::from_f32(dt.residual, &rs), "residual")).transpose()?;
    let mut b_ro =
        desc.residual.then(|| up(k, &data::buf_of_bits(dt.residual, m * n, poison_bits(dt.residual)), "residual_out")).transpose()?;
    let b_w = desc.weight.is_some().then(|| up(k, &HostBuf::from_f32(dt.weight, &wv), "weight")).transpose()?;
    let b_b = desc.bias.then(|| up(k, &HostBuf::from_f32(dt.weight, &bv), "bias")).transpose()?;
    let stat = || up(k, &data::buf_of_bits(DType::F32, m, poison_bits(DType::F32)), "stat");
    let mut b_mean = desc.has_mean().then(stat).transpose()?;
    let mut b_rstd = stat()?;
    {
        let mut args = Forward::new(InOut::separate(MatRef::new(&b_x, m, n), MatMut::new(&mut b_y, m, n)));
        if let (Some(r), Some(ro)) = (&b_r, b_ro.as_mut()) {
            args = args.residual(InOut::separate(MatRef::new(r, m, n), MatMut::new(ro, m, n)));
        }
        args.weight = b_w.as_ref().map(VecRef::new);
        args.bias = b_b.as_ref().map(VecRef::new);
        args.mean = b_mean.as_mut().map(VecMut::new);
        args.rstd = Some(VecMut::new(&mut b_rstd));
        k.forward(desc, args).map_err(ctx)?;
    }
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let y = dl(k, &b_y, "y")?.to_f32_vec();
    let rstd = dl(k, &b_rstd, "rstd")?.to_f32_vec();
    for (e, &v) in y.iter().enumerate() {
        let (i, j) = (e / n, e % n);
        if !v.is_finite() {
            return Err(format!("forward: y[{i},{j}] = {v} is not finite (row {i} is {})", if zero_row(i) { "zeros" } else { "finite" }));
        }
        let want = if desc.bias { round_to(dt.y, round_to(dt.weight, bv[j])) } else { 0.0 };
        if zero_row(i) && v != want {
            return Err(format!("forward: y[{i},{j}] of a zero row = {v:e}, expected exactly {want:e} (the bias, or 0)"));
        }
    }
    for (i, &r) in rstd.iter().enumerate() {
        if !r.is_finite() || r <= 0.0 {
            return Err(format!("forward: saved rstd[{i}] = {r:e}, expected finite and > 0"));
        }
    }
    if let Some(ro) = &b_ro {
        if let Some(e) = dl(k, ro, "residual_out")?.to_f32_vec().iter().position(|v| !v.is_finite()) {
            return Err(format!("forward: residual_out element {e} is not finite"));
        }
    }

    // Backward from the saved statistics, of the tensor that was normalised.
    let gdt = dt.y;
    let wdt = dt.weight;
    let bdesc = *desc;
    if supported(k, Direction::Backward, &bdesc, &DTypes { x: dt.x, y: gdt, weight: wdt, residual: dt.x })?.is_some() {
        return Ok(Ran::Passed);
    }
    let degenerate = |i: usize| i != 1;
    let dys: Vec<f32> = (0..m * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            if degenerate(i) && gdt != DType::F32 {
                0.0
            } else {
                (j as f32 * 1.3 + i as f32).cos()
            }
        })
        .collect();
    let drs = vec![0.0f32; m * n];
    let xb = match &b_ro {
        Some(ro) => ro,
        None => &b_x,
    };
    let b_dy = up(k, &HostBuf::from_f32(gdt, &dys), "dy")?;
    let mut b_dx = up(k, &data::buf_of_bits(gdt, m * n, poison_bits(gdt)), "dx")?;
    let b_dr = desc.residual.then(|| up(k, &HostBuf::from_f32(gdt, &drs), "d_residual_out")).transpose()?;
    let mut b_dw = desc.weight.is_some().then(|| up(k, &data::buf_of_bits(wdt, n, poison_bits(wdt)), "dw")).transpose()?;
    let mut b_db = desc.bias.then(|| up(k, &data::buf_of_bits(wdt, n, poison_bits(wdt)), "db")).transpose()?;
    {
        let mut args = Backward::new(
            MatRef::new(xb, m, n),
            InOut::separate(MatRef::new(&b_dy, m, n), MatMut::new(&mut b_dx, m, n)),
            VecRef::new(&b_rstd),
        );
        args.d_residual_out = b_dr.as_ref().map(|b| MatRef::new(b, m, n));
        args.weight = b_w.as_ref().map(VecRef::new);
        args.mean = b_mean.as_ref().map(VecRef::new);
        args.dw = b_dw.as_mut().map(VecMut::new);
        args.db = b_db.as_mut().map(VecMut::new);
        k.backward(&bdesc, args).map_err(|e| format!("backward returned an error: {e} ({e:?})"))?;
    }
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let dx = dl(k, &b_dx, "dx")?.to_f32_vec();
    for (e, &v) in dx.iter().enumerate() {
        let (i, j) = (e / n, e % n);
        if !v.is_finite() {
            return Err(format!("backward: dx[{i},{j}] = {v} is not finite (row {i} is {})", if zero_row(i) { "zeros" } else { "finite" }));
        }
        if zero_row(i) && dys[e] == 0.0 && v != 0.0 {
            return Err(format!("backward: dx[{i},{j}] of a zero row with dy = 0 is {v:e}, expected 0"));
        }
    }
    for (what, b) in [("dw", &b_dw), ("db", &b_db)] {
        if let Some(b) = b {
            if let Some(j) = dl(k, b, what)?.to_f32_vec().iter().position(|v| !v.is_finite()) {
                return Err(format!("backward: {what}[{j}] is not finite"));
            }
        }
    }
    Ok(Ran::Passed)
}
