//! Backward.

use super::*;

/// The dense inputs of a backward case.
#[derive(Debug, Clone)]
pub struct BwdData {
    pub x: Vec<f32>,
    pub dy: Vec<f32>,
    pub d_residual_out: Option<Vec<f32>>,
    pub weight: Option<Vec<f32>>,
    /// Saved statistics, as an exact forward pass would have stored them.
    pub mean: Vec<f32>,
    pub rstd: Vec<f32>,
}

impl BwdData {
    pub fn generate(case: &BwdCase) -> Self {
        let (m, n, dt, seed) = (case.m, case.n, case.dtypes, case.seed);
        let ids: Vec<u64> = (0..m as u64).map(|i| i + seed % 5).collect();
        let x = gen_mat(&ids, n, |id| act_row(seed, tag::X, id, n, dt.x));
        let mut dy = gen_mat(&ids, n, |id| grad_row(seed, tag::DY, id, n, dt.y));
        for inj in &case.inject {
            dy[inj.row * n + inj.col] = inj.value;
        }
        let (mut mean, mut rstd) = (Vec::with_capacity(m), Vec::with_capacity(m));
        for i in 0..m {
            let (mu, r) = oracle::exact_stats(&case.desc, &x[i * n..(i + 1) * n]);
            mean.push(mu);
            rstd.push(r);
        }
        BwdData {
            x,
            dy,
            d_residual_out: case.d_residual_out.then(|| gen_mat(&ids, n, |id| grad_row(seed, tag::DRES, id, n, dt.y))),
            weight: case.desc.weight.map(|w| data::weight_vec(seed, n, dt.weight, w.offset)),
            mean,
            rstd,
        }
    }
}

/// The downloaded outputs of a backward call.
#[derive(Debug, Clone)]
pub struct BwdOut {
    pub dx: HostBuf,
    pub dx_layout: Layout,
    pub dw: Option<(HostBuf, Span)>,
    pub db: Option<(HostBuf, Span)>,
}

/// Runs a backward case (as [`run_forward`] does a forward one).
pub fn run_backward<K: NormKernel>(k: &K, case: &BwdCase, data: &BwdData) -> Result<BwdOut, String> {
    let (m, n, v, dt) = (case.m, case.n, case.views, case.dtypes);
    let lx = v.layout(Mat::X, m, n);
    let ldy = v.layout(Mat::Dy, m, n);
    let ldx = if case.in_place { ldy } else { v.layout(Mat::Dx, m, n) };
    let ldr = v.layout(Mat::DResidualOut, m, n);
    let sw = v.span(Vector::Weight, n);
    let smean = v.span(Vector::Mean, m);
    let srstd = v.span(Vector::Rstd, m);
    let sdw = v.span(Vector::Dw, n);
    let sdb = v.span(Vector::Db, n);

    let h_x = place_mat(dt.x, &data.x, &lx, v.mat_len(&lx), gap_bits(dt.x));
    let h_dy = place_mat(dt.y, &data.dy, &ldy, v.mat_len(&ldy), gap_bits(dt.y));
    let h_dx = (!case.in_place).then(|| data::buf_of_bits(dt.y, v.mat_len(&ldx), poison_bits(dt.y)));
    let h_dr = data.d_residual_out.as_ref().map(|d| place_mat(dt.y, d, &ldr, v.mat_len(&ldr), gap_bits(dt.y)));
    let h_w = data.weight.as_ref().map(|w| place_vec(dt.weight, w, &sw, v.vec_len(&sw), gap_bits(dt.weight)));
    let has_mean = case.desc.kind == NormKind::Layer;
    let h_mean = has_mean.then(|| place_vec(DType::F32, &data.mean, &smean, v.vec_len(&smean), gap_bits(DType::F32)));
    let h_rstd = place_vec(DType::F32, &data.rstd, &srstd, v.vec_len(&srstd), gap_bits(DType::F32));
    let h_dw = case.desc.weight.is_some().then(|| data::buf_of_bits(dt.weight, v.vec_len(&sdw), poison_bits(dt.weight)));
    let h_db = case.desc.bias.then(|| data::buf_of_bits(dt.weight, v.vec_len(&sdb), poison_bits(dt.weight)));

    let b_x = up(k, &h_x, "x")?;
    let mut b_dy = up(k, &h_dy, "dy")?;
    let mut b_dx = h_dx.as_ref().map(|h| up(k, h, "dx")).transpose()?;
    let b_dr = h_dr.as_ref().map(|h| up(k, h, "d_residual_out")).transpose()?;
    let b_w = h_w.as_ref().map(|h| up(k, h, "weight")).transpose()?;
    let b_mean = h_mean.as_ref().map(|h| up(k, h, "mean")).transpose()?;
    let b_rstd = up(k, &h_rstd, "rstd")?;
    let mut b_dw = h_dw.as_ref().map(|h| up(k, h, "dw")).transpose()?;
    let mut b_db = h_db.as_ref().map(|h| up(k, h, "db")).transpose()?;

    let result = {
        let dy = match b_dx.as_mut() {
            Some(dx) => InOut::separate(MatRef::with_layout(&b_dy, ldy), MatMut::with_layout(dx, ldx)),
            None => InOut::in_place(MatMut::with_layout(&mut b_dy, ldy)),
        };
        let mut args = Backward::new(MatRef::with_layout(&b_x, lx), dy, VecRef::with_span(&b_rstd, srstd.offset, srstd.len));
        args.d_residual_out = b_dr.as_ref().map(|b| MatRef::with_layout(b, ldr));
        args.weight = b_w.as_ref().map(|b| VecRef::with_span(b, sw.offset, sw.len));
        args.mean = b_mean.as_ref().map(|b| VecRef::with_span(b, smean.offset, smean.len));
        args.dw = b_dw.as_mut().map(|b| VecMut::with_span(b, sdw.offset, sdw.len));
        args.db = b_db.as_mut().map(|b| VecMut::with_span(b, sdb.offset, sdb.len));
        k.backward(&case.desc, args)
    };
    result.map_err(|e| format!("backward returned an error: {e} ({e:?})"))?;
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;

    let (dx, dx_before) = match &b_dx {
        Some(b) => (dl(k, b, "dx")?, h_dx.as_ref().expect("dx host")),
        None => (dl(k, &b_dy, "dy (holding dx)")?, &h_dy),
    };
    check_mat_gaps("dx", dx_before, &dx, &ldx)?;
    let dw = match &b_dw {
        Some(b) => {
            let got = dl(k, b, "dw")?;
            check_vec_gaps("dw", h_dw.as_ref().expect("dw host"), &got, &sdw)?;
            Some((got, sdw))
        }
        None => None,
    };
    let db = match &b_db {
        Some(b) => {
            let got = dl(k, b, "db")?;
            check_vec_gaps("db", h_db.as_ref().expect("db host"), &got, &sdb)?;
            Some((got, sdb))
        }
        None => None,
    };
    check_unchanged("x", &h_x, &dl(k, &b_x, "x")?)?;
    if b_dx.is_some() {
        check_unchanged("dy", &h_dy, &dl(k, &b_dy, "dy")?)?;
    }
    if let (Some(b), Some(h)) = (&b_dr, &h_dr) {
        check_unchanged("d_residual_out", h, &dl(k, b, "d_residual_out")?)?;
    }
    if let (Some(b), Some(h)) = (&b_w, &h_w) {
        check_unchanged("weight", h, &dl(k, b, "weight")?)?;
    }
    check_unchanged("rstd", &h_rstd, &dl(k, &b_rstd, "rstd")?)?;
    Ok(BwdOut { dx, dx_layout: ldx, dw, db })
}

pub(super) fn check_backward_values(case: &BwdCase, data: &BwdData, out: &BwdOut) -> Result<(), String> {
    let (m, n, dt) = (case.m, case.n, case.dtypes);
    let consts = BwdConsts { desc: &case.desc, weight: data.weight.as_deref() };
    let dx_vals = out.dx.to_f32_vec();
    let want_dw = out.dw.is_some() && case.inject.is_empty();
    let want_db = out.db.is_some() && case.inject.is_empty();
    let parts = map_chunks(m, n, |rows| {
        let mut t = Tally::default();
        let mut dw = want_dw.then(|| ColSums::new(n));
        let mut db = want_db.then(|| ColSums::new(n));
        for i in rows {
            let l = out.dx_layout;
            let row = &dx_vals[l.offset + i * l.stride..l.offset + i * l.stride + n];
            if case.inject.iter().any(|inj| inj.row == i) {
                if row.iter().all(|v| v.is_finite()) {
                    t.fail(format!("row {i} has a non-finite dy but every dx of the row is finite"));
                }
                continue;
            }
            let r = i * n..(i + 1) * n;
            let dx = oracle::backward_row(
                &consts,
                &data.x[r.clone()],
                &data.dy[r.clone()],
                data.d_residual_out.as_ref().map(|d| &d[r.clone()]),
                (case.desc.kind == NormKind::Layer).then(|| data.mean[i]),
                data.rstd[i],
                dw.as_mut(),
                db.as_mut(),
            );
            for (j, iv) in dx.iter().enumerate() {
                t.iv("dx", i, j, iv, dt.y, row[j]);
            }
        }
        (t, dw, db)
    });
    let mut total = Tally::default();
    let mut dw_sum = want_dw.then(|| ColSums::new(n));
    let mut db_sum = want_db.then(|| ColSums::new(n));
    for (t, dw, db) in parts {
        total.merge(t);
        if let (Some(s), Some(p)) = (dw_sum.as_mut(), dw.as_ref()) {
            s.merge(p);
        }
        if let (Some(s), Some(p)) = (db_sum.as_mut(), db.as_ref()) {
            s.merge(p);
        }
    }
    for (what, sums, got) in [("dw", dw_sum, &out.dw), ("db", db_sum, &out.db)] {
        if let (Some(sums), Some((buf, span))) = (sums, got) {
            for (j, iv) in sums.finish().iter().enumerate() {
                total.iv(what, 0, j, iv, dt.weight, buf.get_f32(span.offset + j));
            }
        }
    }
    total.into_result()
}

/// The full backward check of one case.
pub fn check_backward<K: NormKernel>(k: &K, case: &BwdCase) -> Check {
    let ctx = |e: String| format!("{case}\n    {e}");
    if let Some(reason) = supported(k, Direction::Backward, &case.desc, &case.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let data = BwdData::generate(case);
    let out = run_backward(k, case, &data).map_err(ctx)?;
    check_backward_values(case, &data, &out).map_err(ctx)?;
    Ok(Ran::Passed)
}
