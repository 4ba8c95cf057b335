//! Forward.

use super::*;

/// The dense inputs of a forward case.
#[derive(Debug, Clone)]
pub struct FwdData {
    pub x: Vec<f32>,
    pub residual: Option<Vec<f32>>,
    pub weight: Option<Vec<f32>>,
    pub bias: Option<Vec<f32>>,
}

impl FwdData {
    /// The rows of a case: row `i` is identified by `i + seed % 5` (so a case of any `M` starts on
    /// a different row kind), plus its injected non-finite values.
    pub fn generate(case: &FwdCase) -> Self {
        let ids: Vec<u64> = (0..case.m as u64).map(|i| i + case.seed % 5).collect();
        let mut d = Self::with_rows(case, &ids);
        for inj in &case.inject {
            d.x[inj.row * case.n + inj.col] = inj.value;
        }
        d
    }

    /// Rows with the given identities (the batch-invariance check reuses identities across batches).
    pub fn with_rows(case: &FwdCase, ids: &[u64]) -> Self {
        let (n, dt, seed) = (case.n, case.dtypes, case.seed);
        FwdData {
            x: gen_mat(ids, n, |id| act_row(seed, tag::X, id, n, dt.x)),
            residual: case.desc.residual.then(|| gen_mat(ids, n, |id| act_row(seed, tag::RESIDUAL, id, n, dt.residual))),
            weight: case.desc.weight.map(|w| data::weight_vec(seed, n, dt.weight, w.offset)),
            bias: case.desc.bias.then(|| data::bias_vec(seed, n, dt.weight)),
        }
    }
}

/// The downloaded outputs of a forward call (whole buffers) and where the views lie in them.
#[derive(Debug, Clone)]
pub struct FwdOut {
    pub y: HostBuf,
    pub y_layout: Layout,
    pub residual_out: Option<(HostBuf, Layout)>,
    pub mean: Option<(HostBuf, Span)>,
    pub rstd: Option<(HostBuf, Span)>,
}

/// Runs a forward case on `k` with `data`: uploads the inputs (gaps filled with a NaN sentinel),
/// poisons the outputs with NaN, calls `forward`, downloads the outputs, and checks that nothing
/// outside the output views changed and no input was modified. Does not check values.
pub fn run_forward<K: NormKernel>(k: &K, case: &FwdCase, data: &FwdData) -> Result<FwdOut, String> {
    let (m, n, v, dt) = (case.m, case.n, case.views, case.dtypes);
    let lx = v.layout(Mat::X, m, n);
    let ly = if case.in_place { lx } else { v.layout(Mat::Y, m, n) };
    let lr = v.layout(Mat::Residual, m, n);
    let lro = if case.residual_in_place { lr } else { v.layout(Mat::ResidualOut, m, n) };
    let sw = v.span(Vector::Weight, n);
    let sb = v.span(Vector::Bias, n);
    let smean = v.span(Vector::Mean, m);
    let srstd = v.span(Vector::Rstd, m);
    let has_mean = case.desc.save_stats && case.desc.kind == NormKind::Layer;

    let h_x = place_mat(dt.x, &data.x, &lx, v.mat_len(&lx), gap_bits(dt.x));
    let h_y = (!case.in_place).then(|| data::buf_of_bits(dt.y, v.mat_len(&ly), poison_bits(dt.y)));
    let h_r = data.residual.as_ref().map(|r| place_mat(dt.residual, r, &lr, v.mat_len(&lr), gap_bits(dt.residual)));
    let h_ro =
        (case.desc.residual && !case.residual_in_place).then(|| data::buf_of_bits(dt.residual, v.mat_len(&lro), poison_bits(dt.residual)));
    let h_w = data.weight.as_ref().map(|w| place_vec(dt.weight, w, &sw, v.vec_len(&sw), gap_bits(dt.weight)));
    let h_b = data.bias.as_ref().map(|b| place_vec(dt.weight, b, &sb, v.vec_len(&sb), gap_bits(dt.weight)));
    let stat = |s: &Span| data::buf_of_bits(DType::F32, v.vec_len(s), poison_bits(DType::F32));
    let h_mean = has_mean.then(|| stat(&smean));
    let h_rstd = case.desc.save_stats.then(|| stat(&srstd));

    let mut b_x = up(k, &h_x, "x")?;
    let mut b_y = h_y.as_ref().map(|h| up(k, h, "y")).transpose()?;
    let mut b_r = h_r.as_ref().map(|h| up(k, h, "residual")).transpose()?;
    let mut b_ro = h_ro.as_ref().map(|h| up(k, h, "residual_out")).transpose()?;
    let b_w = h_w.as_ref().map(|h| up(k, h, "weight")).transpose()?;
    let b_b = h_b.as_ref().map(|h| up(k, h, "bias")).transpose()?;
    let mut b_mean = h_mean.as_ref().map(|h| up(k, h, "mean")).transpose()?;
    let mut b_rstd = h_rstd.as_ref().map(|h| up(k, h, "rstd")).transpose()?;

    let result = {
        let x = match b_y.as_mut() {
            Some(y) => InOut::separate(MatRef::with_layout(&b_x, lx), MatMut::with_layout(y, ly)),
            None => InOut::in_place(MatMut::with_layout(&mut b_x, lx)),
        };
        let mut args = Forward::new(x);
        if let Some(r) = b_r.as_mut() {
            args.residual = Some(match b_ro.as_mut() {
                Some(ro) => InOut::separate(MatRef::with_layout(&*r, lr), MatMut::with_layout(ro, lro)),
                None => InOut::in_place(MatMut::with_layout(r, lr)),
            });
        }
        args.weight = b_w.as_ref().map(|b| VecRef::with_span(b, sw.offset, sw.len));
        args.bias = b_b.as_ref().map(|b| VecRef::with_span(b, sb.offset, sb.len));
        args.mean = b_mean.as_mut().map(|b| VecMut::with_span(b, smean.offset, smean.len));
        args.rstd = b_rstd.as_mut().map(|b| VecMut::with_span(b, srstd.offset, srstd.len));
        k.forward(&case.desc, args)
    };
    result.map_err(|e| format!("forward returned an error: {e} ({e:?})"))?;
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;

    // Outputs: download, gaps untouched.
    let (y, y_before) = match &b_y {
        Some(b) => (dl(k, b, "y")?, h_y.as_ref().expect("y host buffer")),
        None => (dl(k, &b_x, "x (holding y)")?, &h_x),
    };
    check_mat_gaps("y", y_before, &y, &ly)?;
    let residual_out = match (&b_ro, &b_r) {
        (Some(b), _) => {
            let got = dl(k, b, "residual_out")?;
            check_mat_gaps("residual_out", h_ro.as_ref().expect("residual_out host"), &got, &lro)?;
            Some((got, lro))
        }
        (None, Some(b)) => {
            let got = dl(k, b, "residual (holding residual_out)")?;
            check_mat_gaps("residual_out (in place)", h_r.as_ref().expect("residual host"), &got, &lro)?;
            Some((got, lro))
        }
        (None, None) => None,
    };
    let mean = match &b_mean {
        Some(b) => {
            let got = dl(k, b, "mean")?;
            check_vec_gaps("mean", h_mean.as_ref().expect("mean host"), &got, &smean)?;
            Some((got, smean))
        }
        None => None,
    };
    let rstd = match &b_rstd {
        Some(b) => {
            let got = dl(k, b, "rstd")?;
            check_vec_gaps("rstd", h_rstd.as_ref().expect("rstd host"), &got, &srstd)?;
            Some((got, srstd))
        }
        None => None,
    };
    // Inputs: unchanged.
    if b_y.is_some() {
        check_unchanged("x", &h_x, &dl(k, &b_x, "x")?)?;
    }
    if let (Some(b), Some(h), Some(_)) = (&b_r, &h_r, &b_ro) {
        check_unchanged("residual", h, &dl(k, b, "residual")?)?;
    }
    if let (Some(b), Some(h)) = (&b_w, &h_w) {
        check_unchanged("weight", h, &dl(k, b, "weight")?)?;
    }
    if let (Some(b), Some(h)) = (&b_b, &h_b) {
        check_unchanged("bias", h, &dl(k, b, "bias")?)?;
    }
    Ok(FwdOut { y, y_layout: ly, residual_out, mean, rstd })
}

/// Compares the outputs of a forward call with the oracle, with `compute` as the dtype the llama
/// and none modes round to.
pub(super) fn check_forward_values(case: &FwdCase, data: &FwdData, out: &FwdOut, compute: DType) -> Result<(), String> {
    let (m, n, dt) = (case.m, case.n, case.dtypes);
    let consts = FwdConsts { desc: &case.desc, residual: dt.residual, compute, weight: data.weight.as_deref(), bias: data.bias.as_deref() };
    let y_vals = out.y.to_f32_vec();
    let ro_vals = out.residual_out.as_ref().map(|(b, l)| (b.to_f32_vec(), *l));
    let mean_vals = out.mean.as_ref().map(|(b, s)| (b.to_f32_vec(), *s));
    let rstd_vals = out.rstd.as_ref().map(|(b, s)| (b.to_f32_vec(), *s));
    let tallies = map_chunks(m, n, |rows| {
        let mut t = Tally::default();
        for i in rows {
            let xr = &data.x[i * n..(i + 1) * n];
            let rr = data.residual.as_ref().map(|r| &r[i * n..(i + 1) * n]);
            let ly = out.y_layout;
            let yrow = &y_vals[ly.offset + i * ly.stride..ly.offset + i * ly.stride + n];
            if case.inject.iter().any(|inj| inj.row == i) {
                // A row with a NaN/Inf input: its outputs must show it; other rows are checked as usual.
                if yrow.iter().all(|v| v.is_finite()) {
                    t.fail(format!("row {i} has a non-finite input but every y of the row is finite"));
                }
                continue;
            }
            let o = oracle::forward_row(&consts, xr, rr);
            for (j, iv) in o.y.iter().enumerate() {
                t.iv("y", i, j, iv, dt.y, yrow[j]);
            }
            if let Some((vals, l)) = &ro_vals {
                let row = &vals[l.offset + i * l.stride..l.offset + i * l.stride + n];
                for (j, (&want, &got)) in o.h.iter().zip(row).enumerate() {
                    t.exact("residual_out", i, j, want, got);
                }
            }
            // Saved statistics are the fp32 values in every casting mode (`none` included: the
            // contract keeps the statistics in fp32 there too).
            let stat = |t: &mut Tally, what: &str, iv: &Iv, got: f32| t.iv(what, i, 0, iv, DType::F32, got);
            if let (Some((vals, s)), Some(iv)) = (&mean_vals, &o.mean) {
                stat(&mut t, "mean", iv, vals[s.offset + i]);
            }
            if let Some((vals, s)) = &rstd_vals {
                stat(&mut t, "rstd", &o.rstd, vals[s.offset + i]);
            }
        }
        t
    });
    let mut total = Tally::default();
    for t in tallies {
        total.merge(t);
    }
    total.into_result()
}

/// The full forward check of one case: supports → run → gaps → values.
pub fn check_forward<K: NormKernel>(k: &K, case: &FwdCase) -> Check {
    let ctx = |e: String| format!("{case}\n    {e}");
    if let Some(reason) = supported(k, Direction::Forward, &case.desc, &case.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let data = FwdData::generate(case);
    let out = run_forward(k, case, &data).map_err(ctx)?;
    let first = check_forward_values(case, &data, &out, case.dtypes.x);
    match first {
        Ok(()) => Ok(Ran::Passed),
        Err(e) => {
            // "The input dtype" of the llama / none modes could mean x's dtype or the dtype of the
            // normalised tensor (the residual's, with the fused add); when they differ either is
            // accepted.
            let dt = case.dtypes;
            if case.desc.residual
                && dt.residual != dt.x
                && case.desc.casting != CastingMode::Gemma
                && check_forward_values(case, &data, &out, dt.residual).is_ok()
            {
                return Ok(Ran::Passed);
            }
            Err(ctx(e))
        }
    }
}
