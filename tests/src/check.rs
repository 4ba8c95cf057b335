//! The checks: run one case on a backend, compare with the oracle, report the worst element.
//!
//! Every check returns `Result<Ran, String>`: the `Err` string is a readable failure report naming
//! the case (op, dtypes, M, N, strides, options, seed), the worst element, what it got, what the
//! oracle expected and the allowed range. The mutation tests call these functions directly.

use crate::case::{BwdCase, FwdCase, Mat, Vector, Views};
use crate::data::{self, act_row, bits_at, gap_bits, gen_mat, grad_row, place_mat, place_vec, poison_bits, tag};
use crate::iv::Iv;
use crate::oracle::{self, BwdConsts, ColSums, FwdConsts};
use crate::par::map_chunks;
use normkit_core::{
    round_to, Backward, Buffer, CastingMode, DType, DTypes, Direction, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc,
    NormError, NormKernel, NormKind, Span, VecMut, VecRef,
};
use std::fmt::Write as _;

/// How a case ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Passed,
    /// The backend's `supports` declined the case (the reason is the backend's error).
    Skipped(String),
}

/// Result of one check.
pub type Check = Result<Ran, String>;

/// Asks `supports`; `Ok(None)` to go on, `Ok(Some(reason))` to skip, `Err` on an unexpected error.
fn supported<K: NormKernel>(
    k: &K,
    dir: Direction,
    case_desc: &normkit_core::NormDesc,
    dtypes: &normkit_core::DTypes,
) -> Result<Option<String>, String> {
    match k.supports(dir, case_desc, dtypes) {
        Ok(()) => Ok(None),
        Err(e @ NormError::Unsupported { .. }) => Ok(Some(e.to_string())),
        Err(e) => Err(format!("supports() returned an error other than Unsupported: {e:?}")),
    }
}

fn dl<K: NormKernel>(k: &K, b: &K::Buffer, what: &str) -> Result<HostBuf, String> {
    k.download(b).map_err(|e| format!("download of {what} failed: {e}"))
}

fn up<K: NormKernel>(k: &K, h: &HostBuf, what: &str) -> Result<K::Buffer, String> {
    k.upload(h).map_err(|e| format!("upload of {what} failed: {e}"))
}

/// The index ranges of a buffer of `len` elements that lie outside the 2-D view `l`: before the
/// offset, between rows, after the last row.
#[allow(clippy::single_range_in_vec_init)] // a list of ranges, which may have one element
fn mat_gaps(l: &Layout, len: usize) -> Vec<std::ops::Range<usize>> {
    if l.rows == 0 || l.cols == 0 {
        return vec![0..len];
    }
    let mut v = vec![0..l.offset.min(len)];
    for i in 0..l.rows {
        let end = (l.offset + i * l.stride + l.cols).min(len);
        let next = if i + 1 == l.rows { len } else { (l.offset + (i + 1) * l.stride).min(len) };
        v.push(end..next);
    }
    v
}

/// Checks that every element of `after` in `gaps` still holds the bits of `before`.
fn check_gaps(what: &str, before: &HostBuf, after: &HostBuf, gaps: &[std::ops::Range<usize>]) -> Result<(), String> {
    if after.len() != before.len() || after.dtype() != before.dtype() {
        return Err(format!("{what}: buffer changed from {} × {} to {} × {}", before.len(), before.dtype(), after.len(), after.dtype()));
    }
    let es = before.dtype().size_bytes();
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let mut bad = 0usize;
    let mut first = None;
    for r in gaps {
        if b[r.start * es..r.end * es] == a[r.start * es..r.end * es] {
            continue;
        }
        for i in r.clone() {
            if bits_at(before, i) != bits_at(after, i) {
                bad += 1;
                first.get_or_insert(i);
            }
        }
    }
    match first {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: {bad} element(s) outside the view were written (first at buffer index {i}: bits {:#x} became {:#x})",
            bits_at(before, i),
            bits_at(after, i)
        )),
    }
}

fn check_mat_gaps(what: &str, before: &HostBuf, after: &HostBuf, l: &Layout) -> Result<(), String> {
    check_gaps(what, before, after, &mat_gaps(l, before.len()))
}

fn check_vec_gaps(what: &str, before: &HostBuf, after: &HostBuf, s: &Span) -> Result<(), String> {
    let len = before.len();
    check_gaps(what, before, after, &[0..s.offset.min(len), (s.offset + s.len).min(len)..len])
}

#[allow(clippy::single_range_in_vec_init)] // one range: the whole buffer
fn check_unchanged(what: &str, before: &HostBuf, after: &HostBuf) -> Result<(), String> {
    if before.dtype() == after.dtype() && before.as_bytes() == after.as_bytes() {
        Ok(())
    } else {
        check_gaps(&format!("input `{what}` was modified"), before, after, &[0..before.len()])
    }
}

/// The worst out-of-tolerance element seen so far, and counts.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub checked: usize,
    pub bad: usize,
    worst: Option<(f64, String)>,
}

impl Tally {
    fn record(&mut self, score: f64, describe: impl FnOnce() -> String) {
        self.checked += 1;
        if score > 0.0 {
            self.bad += 1;
            if self.worst.as_ref().is_none_or(|(s, _)| score > *s) {
                self.worst = Some((score, describe()));
            }
        }
    }

    /// `got` (stored in `dtype`) against an interval.
    fn iv(&mut self, what: &str, row: usize, col: usize, iv: &Iv, dtype: DType, got: f32) {
        let score = iv.violation(dtype, got as f64);
        self.record(score, || {
            let (lo, hi) = iv.stored(dtype);
            format!("{what}[{row},{col}] ({dtype}): got {got:e}, expected {:e}, allowed [{lo:e}, {hi:e}]", iv.mid)
        });
    }

    /// `got` against an exactly known value (bitwise on the value; NaN never matches).
    fn exact(&mut self, what: &str, row: usize, col: usize, want: f32, got: f32) {
        let score = if got == want { 0.0 } else { f64::INFINITY };
        self.record(score, || format!("{what}[{row},{col}]: got {got:e}, expected exactly {want:e}"));
    }

    fn fail(&mut self, msg: String) {
        self.checked += 1;
        self.bad += 1;
        if self.worst.as_ref().is_none_or(|(s, _)| *s < f64::MAX) {
            self.worst = Some((f64::MAX, msg));
        }
    }

    fn merge(&mut self, o: Tally) {
        self.checked += o.checked;
        self.bad += o.bad;
        if let Some((s, d)) = o.worst {
            if self.worst.as_ref().is_none_or(|(ws, _)| s > *ws) {
                self.worst = Some((s, d));
            }
        }
    }

    fn into_result(self) -> Result<(), String> {
        match self.worst {
            None => Ok(()),
            Some((_, d)) => Err(format!("{} of {} checked elements out of tolerance; worst: {d}", self.bad, self.checked)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Forward

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
fn check_forward_values(case: &FwdCase, data: &FwdData, out: &FwdOut, compute: DType) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// Backward

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

fn check_backward_values(case: &BwdCase, data: &BwdData, out: &BwdOut) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// Batch invariance and determinism

/// The bits of row `i` of a 2-D view.
fn row_bits(buf: &HostBuf, l: &Layout, i: usize) -> Vec<u32> {
    (0..l.cols).map(|j| bits_at(buf, l.offset + i * l.stride + j)).collect()
}

/// All outputs of row `i` of a forward call, as bits: y, residual_out, mean, rstd.
fn fwd_row_bits(out: &FwdOut, i: usize) -> Vec<u32> {
    let mut v = row_bits(&out.y, &out.y_layout, i);
    if let Some((b, l)) = &out.residual_out {
        v.extend(row_bits(b, l, i));
    }
    for (b, s) in [&out.mean, &out.rstd].into_iter().flatten() {
        v.push(bits_at(b, s.offset + i));
    }
    v
}

/// Names element `j` of [`fwd_row_bits`]'s vector.
fn fwd_output_name(out: &FwdOut, j: usize) -> String {
    let n = out.y_layout.cols;
    let mut names = vec![("y", n)];
    if out.residual_out.is_some() {
        names.push(("residual_out", n));
    }
    if out.mean.is_some() {
        names.push(("mean", 1));
    }
    if out.rstd.is_some() {
        names.push(("rstd", 1));
    }
    let mut k = j;
    for (name, len) in names {
        if k < len {
            return if len == 1 { name.to_string() } else { format!("{name}[{k}]") };
        }
        k -= len;
    }
    format!("output element {j}")
}

/// Batch invariance: each of `targets` (row identities) is computed alone (M = 1), then inside
/// batches of each size in `batch_ms` at the first, middle and last positions surrounded by other
/// rows (and once more in a strided batch); every output of the row must be bitwise identical.
pub fn check_batch_invariance<K: NormKernel>(k: &K, base: &FwdCase, targets: &[u64], batch_ms: &[usize]) -> Check {
    let ctx = |e: String| format!("batch invariance, {base}\n    {e}");
    if let Some(reason) = supported(k, Direction::Forward, &base.desc, &base.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let single = FwdCase { m: 1, ..base.clone() };
    let mut alone = Vec::new();
    for &t in targets {
        let data = FwdData::with_rows(&single, &[t]);
        let out = run_forward(k, &single, &data).map_err(ctx)?;
        check_forward_values(&single, &data, &out, single.dtypes.x).map_err(|e| ctx(format!("row {t} alone: {e}")))?;
        alone.push(fwd_row_bits(&out, 0));
    }
    for (bi, &bm) in batch_ms.iter().enumerate() {
        for (vi, views) in [Views::Contiguous, Views::Strided { odd: true }].into_iter().enumerate() {
            // The strided batch only at the largest size, to keep the cost down.
            if vi == 1 && bi + 1 != batch_ms.len() {
                continue;
            }
            let case = FwdCase { m: bm, views, ..base.clone() };
            // Neighbours: fresh identities per batch (so the surroundings differ every time).
            let mut ids: Vec<u64> = (0..bm as u64).map(|i| 1_000_000 + 10_000 * bi as u64 + 7 * i + vi as u64).collect();
            let positions: Vec<usize> = [0, bm / 2, bm - 1].into_iter().collect();
            for (p, &t) in positions.iter().cycle().zip(targets) {
                ids[*p] = t;
            }
            // With M < 3 some positions coincide; keep the last target placed there.
            let data = FwdData::with_rows(&case, &ids);
            let out = run_forward(k, &case, &data).map_err(ctx)?;
            for (p, &t) in positions.iter().cycle().zip(targets).collect::<Vec<_>>() {
                if ids[*p] != t {
                    continue;
                }
                let ti = targets.iter().position(|&x| x == t).expect("target");
                let got = fwd_row_bits(&out, *p);
                if got != alone[ti] {
                    let j = got.iter().zip(&alone[ti]).position(|(a, b)| a != b).unwrap_or(0);
                    return Err(ctx(format!(
                        "row {t} at position {p} of a batch of M={bm} ({}) differs from the same row computed alone (contiguous, M=1): {} bits {:#x} vs {:#x}",
                        if vi == 0 { "contiguous" } else { "strided, odd offsets" },
                        fwd_output_name(&out, j),
                        got[j],
                        alone[ti][j]
                    )));
                }
            }
        }
    }
    Ok(Ran::Passed)
}

/// Determinism: the same forward and the same backward, twice, give bitwise equal outputs.
pub fn check_determinism<K: NormKernel>(k: &K, fwd: &FwdCase, bwd: &BwdCase) -> Check {
    let mut ran = Ran::Skipped(String::new());
    if supported(k, Direction::Forward, &fwd.desc, &fwd.dtypes).map_err(|e| format!("{fwd}\n    {e}"))?.is_none() {
        let ctx = |e: String| format!("determinism, {fwd}\n    {e}");
        let data = FwdData::generate(fwd);
        let a = run_forward(k, fwd, &data).map_err(ctx)?;
        let b = run_forward(k, fwd, &data).map_err(ctx)?;
        for i in 0..fwd.m {
            if fwd_row_bits(&a, i) != fwd_row_bits(&b, i) {
                return Err(ctx(format!("two identical forward calls differ in row {i}")));
            }
        }
        ran = Ran::Passed;
    }
    if let Some(reason) = supported(k, Direction::Backward, &bwd.desc, &bwd.dtypes).map_err(|e| format!("{bwd}\n    {e}"))? {
        return Ok(if ran == Ran::Passed { ran } else { Ran::Skipped(reason) });
    }
    let ctx = |e: String| format!("determinism, {bwd}\n    {e}");
    let data = BwdData::generate(bwd);
    let a = run_backward(k, bwd, &data).map_err(ctx)?;
    let b = run_backward(k, bwd, &data).map_err(ctx)?;
    let mut msg = String::new();
    if !a.dx.bits_eq(&b.dx) {
        let _ = write!(msg, "dx differs; ");
    }
    for (what, x, y) in [("dw", &a.dw, &b.dw), ("db", &a.db, &b.db)] {
        if let (Some((x, _)), Some((y, _))) = (x, y) {
            if !x.bits_eq(y) {
                let j = (0..x.len()).find(|&j| bits_at(x, j) != bits_at(y, j)).unwrap_or(0);
                let _ = write!(msg, "{what} differs (first at buffer index {j}: {:e} vs {:e}); ", x.get_f32(j), y.get_f32(j));
            }
        }
    }
    if msg.is_empty() {
        Ok(Ran::Passed)
    } else {
        Err(ctx(format!("two identical backward calls are not bitwise equal: {msg}")))
    }
}

// ---------------------------------------------------------------------------------------------
// Rows of zeros (padding) with a tiny eps

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

fn zero_rows_inner<K: NormKernel>(k: &K, desc: &NormDesc, dt: &DTypes, n: usize) -> Check {
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
