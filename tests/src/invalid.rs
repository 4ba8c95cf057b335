//! The bad-input matrix and the empty batch.
//!
//! Each bad case starts from a valid call and breaks one thing; the backend must return the
//! specific typed [`NormError`] the contract names (variant and operand) and leave **every** output
//! buffer bitwise untouched (downloaded and compared bit for bit). `M = 0` must succeed and write
//! nothing.
//!
//! Illegal aliasing cannot be expressed with safe references to host buffers; device backends whose
//! buffers expose [`normkit_core::Buffer::base_addr`] can test it with [`snapshot`] and
//! [`expect_untouched`] around their own raw-pointer views.

use crate::data::{act_row, bits_at, buf_of_bits, place_mat, place_vec, poison_bits, tag};
use normkit_core::{
    Backward, Buffer, DType, Dim, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand, Span, VecMut,
    VecRef,
};

/// Downloads `bufs` (for [`expect_untouched`]).
pub fn snapshot<K: NormKernel>(k: &K, bufs: &[&K::Buffer]) -> Result<Vec<HostBuf>, String> {
    bufs.iter().map(|b| k.download(b).map_err(|e| format!("download failed: {e}"))).collect()
}

/// Checks that `bufs` still hold the bits of `before` (from [`snapshot`]).
pub fn expect_untouched<K: NormKernel>(k: &K, names: &[&str], before: &[HostBuf], bufs: &[&K::Buffer]) -> Result<(), String> {
    for ((name, b), h) in names.iter().zip(bufs).zip(before) {
        let after = k.download(b).map_err(|e| format!("download of {name} failed: {e}"))?;
        if !after.bits_eq(h) {
            let i = (0..h.len().min(after.len())).find(|&i| bits_at(h, i) != bits_at(&after, i)).unwrap_or(0);
            return Err(format!("output `{name}` was modified (first at buffer index {i})"));
        }
    }
    Ok(())
}

/// A 2-D operand of a spec: dtype, view, buffer length.
#[derive(Debug, Clone, Copy)]
struct MatSpec {
    dtype: DType,
    layout: Layout,
    len: usize,
}

/// A vector operand of a spec.
#[derive(Debug, Clone, Copy)]
struct VecSpec {
    dtype: DType,
    span: Span,
    len: usize,
}

const M: usize = 5;
const N: usize = 33;
/// Spare elements after each view, so a view can be moved or lengthened without a new buffer.
const SPARE: usize = 2;

fn mat(dtype: DType, rows: usize, cols: usize) -> MatSpec {
    let layout = Layout::contiguous(rows, cols);
    MatSpec { dtype, layout, len: layout.span().unwrap_or(0) + SPARE }
}

fn vector(dtype: DType, len: usize) -> VecSpec {
    VecSpec { dtype, span: Span { offset: 0, len }, len: len + SPARE }
}

/// A forward call described by its operands; `y: None` means y over x, `residual_out: None` with a
/// residual means in place.
#[derive(Debug, Clone)]
struct FwdSpec {
    desc: NormDesc,
    x: MatSpec,
    y: Option<MatSpec>,
    residual: Option<MatSpec>,
    residual_out: Option<MatSpec>,
    weight: Option<VecSpec>,
    bias: Option<VecSpec>,
    mean: Option<VecSpec>,
    rstd: Option<VecSpec>,
}

impl FwdSpec {
    /// A valid fused-add LayerNorm with weight, bias and saved statistics: f16 activations and
    /// residual, f32 weight, `m × n`.
    fn valid(desc: NormDesc, m: usize, n: usize) -> Self {
        let h = DType::F16;
        FwdSpec {
            desc,
            x: mat(h, m, n),
            y: Some(mat(h, m, n)),
            residual: desc.residual.then(|| mat(h, m, n)),
            residual_out: desc.residual.then(|| mat(h, m, n)),
            weight: desc.weight.map(|_| vector(DType::F32, n)),
            bias: desc.bias.then(|| vector(DType::F32, n)),
            mean: (desc.save_stats && desc.has_mean()).then(|| vector(DType::F32, m)),
            rstd: desc.save_stats.then(|| vector(DType::F32, m)),
        }
    }
}

fn base_fwd_desc() -> NormDesc {
    NormDesc::layer(1e-5).with_residual(true).with_save_stats(true)
}

/// An input buffer: valid values everywhere (the view might have been moved by the bad case).
fn input_buf(s: &MatSpec) -> HostBuf {
    let vals = act_row(7, tag::X, 0, s.len, s.dtype);
    place_mat(s.dtype, &vals, &Layout::contiguous(1, s.len), s.len, 0)
}

fn input_vec(s: &VecSpec) -> HostBuf {
    let vals = act_row(7, tag::WEIGHT, 0, s.len, s.dtype);
    place_vec(s.dtype, &vals, &Span { offset: 0, len: s.len }, s.len, 0)
}

fn output_buf(dtype: DType, len: usize) -> HostBuf {
    buf_of_bits(dtype, len, poison_bits(dtype))
}

/// What running a spec gives: the call's result, every output buffer before and after, their names.
type SpecRun = (normkit_core::Result<()>, Vec<HostBuf>, Vec<HostBuf>, Vec<&'static str>);

/// Runs a forward spec: `(result, outputs before, outputs after, output names)`.
fn run_fwd_spec<K: NormKernel>(k: &K, s: &FwdSpec) -> Result<SpecRun, String> {
    let upl = |h: &HostBuf| k.upload(h).map_err(|e| format!("upload failed: {e}"));
    let h_x = input_buf(&s.x);
    let h_y = s.y.map(|y| output_buf(y.dtype, y.len));
    let h_r = s.residual.map(|r| input_buf(&r));
    let h_ro = s.residual_out.map(|r| output_buf(r.dtype, r.len));
    let h_w = s.weight.map(|w| input_vec(&w));
    let h_b = s.bias.map(|b| input_vec(&b));
    let h_mean = s.mean.map(|v| output_buf(v.dtype, v.len));
    let h_rstd = s.rstd.map(|v| output_buf(v.dtype, v.len));
    let mut b_x = upl(&h_x)?;
    let mut b_y = h_y.as_ref().map(upl).transpose()?;
    let mut b_r = h_r.as_ref().map(upl).transpose()?;
    let mut b_ro = h_ro.as_ref().map(upl).transpose()?;
    let b_w = h_w.as_ref().map(upl).transpose()?;
    let b_b = h_b.as_ref().map(upl).transpose()?;
    let mut b_mean = h_mean.as_ref().map(upl).transpose()?;
    let mut b_rstd = h_rstd.as_ref().map(upl).transpose()?;
    let res = {
        let x = match b_y.as_mut() {
            Some(y) => InOut::separate(MatRef::with_layout(&b_x, s.x.layout), MatMut::with_layout(y, s.y.expect("y").layout)),
            None => InOut::in_place(MatMut::with_layout(&mut b_x, s.x.layout)),
        };
        let mut a = Forward::new(x);
        if let Some(r) = b_r.as_mut() {
            let rl = s.residual.expect("residual").layout;
            a.residual = Some(match b_ro.as_mut() {
                Some(ro) => InOut::separate(MatRef::with_layout(&*r, rl), MatMut::with_layout(ro, s.residual_out.expect("ro").layout)),
                None => InOut::in_place(MatMut::with_layout(r, rl)),
            });
        }
        a.weight = b_w.as_ref().map(|b| VecRef::with_span(b, s.weight.expect("w").span.offset, s.weight.expect("w").span.len));
        a.bias = b_b.as_ref().map(|b| VecRef::with_span(b, s.bias.expect("b").span.offset, s.bias.expect("b").span.len));
        a.mean = b_mean.as_mut().map(|b| VecMut::with_span(b, s.mean.expect("m").span.offset, s.mean.expect("m").span.len));
        a.rstd = b_rstd.as_mut().map(|b| VecMut::with_span(b, s.rstd.expect("r").span.offset, s.rstd.expect("r").span.len));
        k.forward(&s.desc, a)
    };
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let dl = |b: &K::Buffer| k.download(b).map_err(|e| format!("download failed: {e}"));
    let mut names = Vec::new();
    let mut before = Vec::new();
    let mut after = Vec::new();
    match (&b_y, &h_y) {
        (Some(b), Some(h)) => {
            names.push("y");
            before.push(h.clone());
            after.push(dl(b)?);
        }
        _ => {
            names.push("x (in place)");
            before.push(h_x.clone());
            after.push(dl(&b_x)?);
        }
    }
    match (&b_ro, &h_ro, &b_r, &h_r) {
        (Some(b), Some(h), _, _) => {
            names.push("residual_out");
            before.push(h.clone());
            after.push(dl(b)?);
        }
        (None, None, Some(b), Some(h)) => {
            names.push("residual (in place)");
            before.push(h.clone());
            after.push(dl(b)?);
        }
        _ => {}
    }
    for (name, b, h) in [("mean", &b_mean, &h_mean), ("rstd", &b_rstd, &h_rstd)] {
        if let (Some(b), Some(h)) = (b, h) {
            names.push(name);
            before.push(h.clone());
            after.push(dl(b)?);
        }
    }
    Ok((res, before, after, names))
}

/// A backward call described by its operands (`dx: None` means dx over dy).
#[derive(Debug, Clone)]
struct BwdSpec {
    desc: NormDesc,
    x: MatSpec,
    dy: MatSpec,
    dx: Option<MatSpec>,
    d_residual_out: Option<MatSpec>,
    weight: Option<VecSpec>,
    mean: Option<VecSpec>,
    rstd: VecSpec,
    dw: Option<VecSpec>,
    db: Option<VecSpec>,
}

impl BwdSpec {
    fn valid(desc: NormDesc, m: usize, n: usize) -> Self {
        let h = DType::F16;
        BwdSpec {
            desc,
            x: mat(h, m, n),
            dy: mat(h, m, n),
            dx: Some(mat(h, m, n)),
            d_residual_out: desc.residual.then(|| mat(h, m, n)),
            weight: desc.weight.map(|_| vector(DType::F32, n)),
            mean: desc.has_mean().then(|| vector(DType::F32, m)),
            rstd: vector(DType::F32, m),
            dw: desc.weight.map(|_| vector(DType::F32, n)),
            db: desc.bias.then(|| vector(DType::F32, n)),
        }
    }
}

fn base_bwd_desc() -> NormDesc {
    NormDesc::layer(1e-5).with_residual(true)
}

fn run_bwd_spec<K: NormKernel>(k: &K, s: &BwdSpec) -> Result<SpecRun, String> {
    let upl = |h: &HostBuf| k.upload(h).map_err(|e| format!("upload failed: {e}"));
    let h_x = input_buf(&s.x);
    let h_dy = input_buf(&s.dy);
    let h_dx = s.dx.map(|d| output_buf(d.dtype, d.len));
    let h_dr = s.d_residual_out.map(|d| input_buf(&d));
    let h_w = s.weight.map(|w| input_vec(&w));
    let h_mean = s.mean.map(|v| input_vec(&v));
    // rstd > 0 like a real saved statistic.
    let h_rstd = {
        let mut v = input_vec(&s.rstd);
        let vals: Vec<f32> = v.to_f32_vec().iter().map(|x| x.abs() + 0.5).collect();
        v = HostBuf::from_f32(s.rstd.dtype, &vals);
        v
    };
    let h_dw = s.dw.map(|v| output_buf(v.dtype, v.len));
    let h_db = s.db.map(|v| output_buf(v.dtype, v.len));
    let b_x = upl(&h_x)?;
    let mut b_dy = upl(&h_dy)?;
    let mut b_dx = h_dx.as_ref().map(upl).transpose()?;
    let b_dr = h_dr.as_ref().map(upl).transpose()?;
    let b_w = h_w.as_ref().map(upl).transpose()?;
    let b_mean = h_mean.as_ref().map(upl).transpose()?;
    let b_rstd = upl(&h_rstd)?;
    let mut b_dw = h_dw.as_ref().map(upl).transpose()?;
    let mut b_db = h_db.as_ref().map(upl).transpose()?;
    let res = {
        let dy = match b_dx.as_mut() {
            Some(dx) => InOut::separate(MatRef::with_layout(&b_dy, s.dy.layout), MatMut::with_layout(dx, s.dx.expect("dx").layout)),
            None => InOut::in_place(MatMut::with_layout(&mut b_dy, s.dy.layout)),
        };
        let mut a =
            Backward::new(MatRef::with_layout(&b_x, s.x.layout), dy, VecRef::with_span(&b_rstd, s.rstd.span.offset, s.rstd.span.len));
        a.d_residual_out = b_dr.as_ref().map(|b| MatRef::with_layout(b, s.d_residual_out.expect("dr").layout));
        a.weight = b_w.as_ref().map(|b| VecRef::with_span(b, s.weight.expect("w").span.offset, s.weight.expect("w").span.len));
        a.mean = b_mean.as_ref().map(|b| VecRef::with_span(b, s.mean.expect("m").span.offset, s.mean.expect("m").span.len));
        a.dw = b_dw.as_mut().map(|b| VecMut::with_span(b, s.dw.expect("dw").span.offset, s.dw.expect("dw").span.len));
        a.db = b_db.as_mut().map(|b| VecMut::with_span(b, s.db.expect("db").span.offset, s.db.expect("db").span.len));
        k.backward(&s.desc, a)
    };
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let dl = |b: &K::Buffer| k.download(b).map_err(|e| format!("download failed: {e}"));
    let mut names = Vec::new();
    let mut before = Vec::new();
    let mut after = Vec::new();
    match (&b_dx, &h_dx) {
        (Some(b), Some(h)) => {
            names.push("dx");
            before.push(h.clone());
            after.push(dl(b)?);
        }
        _ => {
            names.push("dy (in place)");
            before.push(h_dy.clone());
            after.push(dl(&b_dy)?);
        }
    }
    for (name, b, h) in [("dw", &b_dw, &h_dw), ("db", &b_db, &h_db)] {
        if let (Some(b), Some(h)) = (b, h) {
            names.push(name);
            before.push(h.clone());
            after.push(dl(b)?);
        }
    }
    Ok((res, before, after, names))
}

type Expect = fn(&NormError) -> bool;

macro_rules! expect {
    ($pat:pat) => {
        (stringify!($pat), (|e: &NormError| matches!(e, $pat)) as Expect)
    };
}

/// One bad forward case: a name, how it breaks the valid spec, and the error it must produce.
type FwdBad = (&'static str, fn(&mut FwdSpec), (&'static str, Expect));
type BwdBad = (&'static str, fn(&mut BwdSpec), (&'static str, Expect));

fn fwd_bad_cases() -> Vec<FwdBad> {
    use Operand as O;
    vec![
        ("eps = 0", |s| s.desc.eps = 0.0, expect!(NormError::InvalidEps { .. })),
        ("eps < 0", |s| s.desc.eps = -1e-5, expect!(NormError::InvalidEps { .. })),
        ("eps = NaN", |s| s.desc.eps = f32::NAN, expect!(NormError::InvalidEps { .. })),
        ("eps = +Inf", |s| s.desc.eps = f32::INFINITY, expect!(NormError::InvalidEps { .. })),
        ("weight offset NaN", |s| s.desc = s.desc.with_weight_offset(f32::NAN), expect!(NormError::InvalidOffset { .. })),
        ("weight missing", |s| s.weight = None, expect!(NormError::Missing { operand: O::Weight })),
        (
            "weight given, descriptor without weight",
            |s| s.desc = s.desc.without_weight(),
            expect!(NormError::Unexpected { operand: O::Weight }),
        ),
        ("bias missing", |s| s.bias = None, expect!(NormError::Missing { operand: O::Bias })),
        ("bias given, descriptor without bias", |s| s.desc.bias = false, expect!(NormError::Unexpected { operand: O::Bias })),
        (
            "residual missing",
            |s| {
                s.residual = None;
                s.residual_out = None;
            },
            expect!(NormError::Missing { operand: O::Residual }),
        ),
        (
            "residual given, descriptor without residual",
            |s| s.desc.residual = false,
            expect!(NormError::Unexpected { operand: O::Residual }),
        ),
        ("rstd missing with save_stats", |s| s.rstd = None, expect!(NormError::Missing { operand: O::Rstd })),
        ("mean missing with save_stats (LayerNorm)", |s| s.mean = None, expect!(NormError::Missing { operand: O::Mean })),
        ("stats given without save_stats", |s| s.desc.save_stats = false, expect!(NormError::Unexpected { operand: O::Rstd })),
        ("mean given to RMSNorm", |s| s.desc.kind = normkit_core::NormKind::Rms, expect!(NormError::Unexpected { operand: O::Mean })),
        (
            "N = 0",
            |s| {
                for l in [&mut s.x.layout].into_iter().chain(s.y.as_mut().map(|y| &mut y.layout)) {
                    *l = Layout::contiguous(M, 0);
                }
                for l in [s.residual.as_mut(), s.residual_out.as_mut()].into_iter().flatten() {
                    l.layout = Layout::contiguous(M, 0);
                }
                for v in [s.weight.as_mut(), s.bias.as_mut()].into_iter().flatten() {
                    v.span.len = 0;
                }
            },
            expect!(NormError::EmptyRows),
        ),
        ("bf16 y with f16 x", |s| s.y.as_mut().expect("y").dtype = DType::BF16, expect!(NormError::DType { operand: O::Y, .. })),
        (
            "bf16 weight with f16 x",
            |s| s.weight.as_mut().expect("w").dtype = DType::BF16,
            expect!(NormError::DType { operand: O::Weight, .. }),
        ),
        (
            "bias dtype differs from the weight's",
            |s| s.bias.as_mut().expect("b").dtype = DType::F16,
            expect!(NormError::DType { operand: O::Bias, .. }),
        ),
        (
            "bf16 residual with f16 x",
            |s| s.residual.as_mut().expect("r").dtype = DType::BF16,
            expect!(NormError::DType { operand: O::Residual, .. }),
        ),
        (
            "residual_out dtype differs from the residual's",
            |s| s.residual_out.as_mut().expect("ro").dtype = DType::F32,
            expect!(NormError::DType { operand: O::ResidualOut, .. }),
        ),
        ("f16 mean", |s| s.mean.as_mut().expect("mean").dtype = DType::F16, expect!(NormError::DType { operand: O::Mean, .. })),
        ("f16 rstd", |s| s.rstd.as_mut().expect("rstd").dtype = DType::F16, expect!(NormError::DType { operand: O::Rstd, .. })),
        ("x stride < N", |s| s.x.layout.stride = N - 1, expect!(NormError::Stride { operand: O::X, .. })),
        ("y stride < N", |s| s.y.as_mut().expect("y").layout.stride = N - 1, expect!(NormError::Stride { operand: O::Y, .. })),
        (
            "residual stride < N",
            |s| s.residual.as_mut().expect("r").layout.stride = 1,
            expect!(NormError::Stride { operand: O::Residual, .. }),
        ),
        (
            "residual_out stride < N",
            |s| s.residual_out.as_mut().expect("ro").layout.stride = N - 1,
            expect!(NormError::Stride { operand: O::ResidualOut, .. }),
        ),
        (
            "y has M-1 rows",
            |s| s.y.as_mut().expect("y").layout.rows = M - 1,
            expect!(NormError::Shape { operand: O::Y, dim: Dim::Rows, .. }),
        ),
        (
            "y has N+1 columns",
            |s| {
                let y = s.y.as_mut().expect("y");
                y.layout = Layout::contiguous(M, N + 1);
                y.len = M * (N + 1);
            },
            expect!(NormError::Shape { operand: O::Y, dim: Dim::Cols, .. }),
        ),
        (
            "residual has M+1 rows",
            |s| {
                let r = s.residual.as_mut().expect("r");
                r.layout.rows = M + 1;
                r.len = (M + 1) * N;
            },
            expect!(NormError::Shape { operand: O::Residual, dim: Dim::Rows, .. }),
        ),
        (
            "residual_out has N-1 columns",
            |s| s.residual_out.as_mut().expect("ro").layout.cols = N - 1,
            expect!(NormError::Shape { operand: O::ResidualOut, dim: Dim::Cols, .. }),
        ),
        (
            "weight of length N-1",
            |s| s.weight.as_mut().expect("w").span.len = N - 1,
            expect!(NormError::Shape { operand: O::Weight, dim: Dim::Len, .. }),
        ),
        (
            "bias of length N+1",
            |s| s.bias.as_mut().expect("b").span.len = N + 1,
            expect!(NormError::Shape { operand: O::Bias, dim: Dim::Len, .. }),
        ),
        (
            "mean of length M+1",
            |s| s.mean.as_mut().expect("m").span.len = M + 1,
            expect!(NormError::Shape { operand: O::Mean, dim: Dim::Len, .. }),
        ),
        (
            "rstd of length M-1",
            |s| s.rstd.as_mut().expect("r").span.len = M - 1,
            expect!(NormError::Shape { operand: O::Rstd, dim: Dim::Len, .. }),
        ),
        ("x buffer one element short", |s| s.x.len = M * N - 1, expect!(NormError::OutOfBounds { operand: O::X, .. })),
        ("y buffer one element short", |s| s.y.as_mut().expect("y").len = M * N - 1, expect!(NormError::OutOfBounds { operand: O::Y, .. })),
        (
            "y view offset past the buffer",
            |s| s.y.as_mut().expect("y").layout.offset = SPARE + 1,
            expect!(NormError::OutOfBounds { operand: O::Y, .. }),
        ),
        (
            "residual buffer short",
            |s| s.residual.as_mut().expect("r").len = M * N - 1,
            expect!(NormError::OutOfBounds { operand: O::Residual, .. }),
        ),
        (
            "residual_out buffer short",
            |s| s.residual_out.as_mut().expect("ro").len = N,
            expect!(NormError::OutOfBounds { operand: O::ResidualOut, .. }),
        ),
        (
            "weight span past the buffer",
            |s| s.weight.as_mut().expect("w").span.offset = SPARE + 1,
            expect!(NormError::OutOfBounds { operand: O::Weight, .. }),
        ),
        ("rstd buffer short", |s| s.rstd.as_mut().expect("r").len = M - 1, expect!(NormError::OutOfBounds { operand: O::Rstd, .. })),
        ("x view overflows usize", |s| s.x.layout.offset = usize::MAX - 3, expect!(NormError::Overflow { operand: O::X })),
        (
            "in place: x buffer short",
            |s| {
                s.y = None;
                s.x.len = M * N - 1;
            },
            expect!(NormError::OutOfBounds { operand: O::X, .. }),
        ),
    ]
}

fn bwd_bad_cases() -> Vec<BwdBad> {
    use Operand as O;
    vec![
        ("eps = 0", |s| s.desc.eps = 0.0, expect!(NormError::InvalidEps { .. })),
        ("eps = NaN", |s| s.desc.eps = f32::NAN, expect!(NormError::InvalidEps { .. })),
        ("eps = -Inf", |s| s.desc.eps = f32::NEG_INFINITY, expect!(NormError::InvalidEps { .. })),
        ("weight offset +Inf", |s| s.desc = s.desc.with_weight_offset(f32::INFINITY), expect!(NormError::InvalidOffset { .. })),
        ("weight missing", |s| s.weight = None, expect!(NormError::Missing { operand: O::Weight })),
        ("dw missing", |s| s.dw = None, expect!(NormError::Missing { operand: O::Dw })),
        ("db missing", |s| s.db = None, expect!(NormError::Missing { operand: O::Db })),
        ("db given, descriptor without bias", |s| s.desc.bias = false, expect!(NormError::Unexpected { operand: O::Db })),
        ("mean missing (LayerNorm)", |s| s.mean = None, expect!(NormError::Missing { operand: O::Mean })),
        ("mean given to RMSNorm", |s| s.desc.kind = normkit_core::NormKind::Rms, expect!(NormError::Unexpected { operand: O::Mean })),
        (
            "d_residual_out given, descriptor without residual",
            |s| s.desc.residual = false,
            expect!(NormError::Unexpected { operand: O::DResidualOut }),
        ),
        (
            "N = 0",
            |s| {
                for l in [Some(&mut s.x), Some(&mut s.dy), s.dx.as_mut(), s.d_residual_out.as_mut()].into_iter().flatten() {
                    l.layout = Layout::contiguous(M, 0);
                }
                for v in [s.weight.as_mut(), s.dw.as_mut(), s.db.as_mut()].into_iter().flatten() {
                    v.span.len = 0;
                }
            },
            expect!(NormError::EmptyRows),
        ),
        (
            "bf16 dy with f16 x",
            |s| {
                s.dy.dtype = DType::BF16;
                s.dx.as_mut().expect("dx").dtype = DType::BF16;
                s.d_residual_out.as_mut().expect("dr").dtype = DType::BF16;
            },
            expect!(NormError::DType { operand: O::Dy, .. }),
        ),
        ("dx dtype differs from dy's", |s| s.dx.as_mut().expect("dx").dtype = DType::F32, expect!(NormError::DType { operand: O::Dx, .. })),
        (
            "bf16 weight with f16 x",
            |s| s.weight.as_mut().expect("w").dtype = DType::BF16,
            expect!(NormError::DType { operand: O::Weight, .. }),
        ),
        (
            "dw dtype differs from the weight's",
            |s| s.dw.as_mut().expect("dw").dtype = DType::F16,
            expect!(NormError::DType { operand: O::Dw, .. }),
        ),
        (
            "d_residual_out dtype differs from dy's",
            |s| s.d_residual_out.as_mut().expect("dr").dtype = DType::F32,
            expect!(NormError::DType { operand: O::DResidualOut, .. }),
        ),
        ("f16 rstd", |s| s.rstd.dtype = DType::F16, expect!(NormError::DType { operand: O::Rstd, .. })),
        ("x stride < N", |s| s.x.layout.stride = N - 1, expect!(NormError::Stride { operand: O::X, .. })),
        ("dy stride < N", |s| s.dy.layout.stride = N - 1, expect!(NormError::Stride { operand: O::Dy, .. })),
        ("dx stride < N", |s| s.dx.as_mut().expect("dx").layout.stride = 0, expect!(NormError::Stride { operand: O::Dx, .. })),
        (
            "d_residual_out stride < N",
            |s| s.d_residual_out.as_mut().expect("dr").layout.stride = N - 1,
            expect!(NormError::Stride { operand: O::DResidualOut, .. }),
        ),
        (
            "dy has M+1 rows",
            |s| {
                s.dy.layout.rows = M + 1;
                s.dy.len = (M + 1) * N;
            },
            expect!(NormError::Shape { operand: O::Dy, dim: Dim::Rows, .. }),
        ),
        (
            "dx has N-1 columns",
            |s| s.dx.as_mut().expect("dx").layout.cols = N - 1,
            expect!(NormError::Shape { operand: O::Dx, dim: Dim::Cols, .. }),
        ),
        (
            "d_residual_out has M-1 rows",
            |s| s.d_residual_out.as_mut().expect("dr").layout.rows = M - 1,
            expect!(NormError::Shape { operand: O::DResidualOut, dim: Dim::Rows, .. }),
        ),
        (
            "weight of length N+1",
            |s| s.weight.as_mut().expect("w").span.len = N + 1,
            expect!(NormError::Shape { operand: O::Weight, dim: Dim::Len, .. }),
        ),
        (
            "mean of length M-1",
            |s| s.mean.as_mut().expect("m").span.len = M - 1,
            expect!(NormError::Shape { operand: O::Mean, dim: Dim::Len, .. }),
        ),
        ("rstd of length M+1", |s| s.rstd.span.len = M + 1, expect!(NormError::Shape { operand: O::Rstd, dim: Dim::Len, .. })),
        (
            "dw of length N-1",
            |s| s.dw.as_mut().expect("dw").span.len = N - 1,
            expect!(NormError::Shape { operand: O::Dw, dim: Dim::Len, .. }),
        ),
        (
            "db of length N+2",
            |s| s.db.as_mut().expect("db").span.len = N + 2,
            expect!(NormError::Shape { operand: O::Db, dim: Dim::Len, .. }),
        ),
        ("x buffer one element short", |s| s.x.len = M * N - 1, expect!(NormError::OutOfBounds { operand: O::X, .. })),
        ("dy buffer short", |s| s.dy.len = M * N - 1, expect!(NormError::OutOfBounds { operand: O::Dy, .. })),
        ("dx buffer short", |s| s.dx.as_mut().expect("dx").len = M * N - 1, expect!(NormError::OutOfBounds { operand: O::Dx, .. })),
        (
            "d_residual_out buffer short",
            |s| s.d_residual_out.as_mut().expect("dr").len = 3,
            expect!(NormError::OutOfBounds { operand: O::DResidualOut, .. }),
        ),
        ("rstd span past the buffer", |s| s.rstd.span.offset = SPARE + 1, expect!(NormError::OutOfBounds { operand: O::Rstd, .. })),
        ("dw buffer short", |s| s.dw.as_mut().expect("dw").len = N - 1, expect!(NormError::OutOfBounds { operand: O::Dw, .. })),
        (
            "db span past the buffer",
            |s| s.db.as_mut().expect("db").span.offset = SPARE + 1,
            expect!(NormError::OutOfBounds { operand: O::Db, .. }),
        ),
        (
            "in place: dy buffer short",
            |s| {
                s.dx = None;
                s.dy.len = M * N - 1;
            },
            expect!(NormError::OutOfBounds { operand: O::Dy, .. }),
        ),
    ]
}

fn compare_untouched(names: &[&str], before: &[HostBuf], after: &[HostBuf], allow_zero: &[&str]) -> Result<(), String> {
    for ((name, b), a) in names.iter().zip(before).zip(after) {
        if b.bits_eq(a) {
            continue;
        }
        // Where allowed (sums over zero rows), every element that changed must now be zero.
        if allow_zero.contains(name) && b.len() == a.len() && (0..b.len()).all(|i| bits_at(b, i) == bits_at(a, i) || a.get_f32(i) == 0.0) {
            continue;
        }
        let i = (0..b.len().min(a.len())).find(|&i| bits_at(b, i) != bits_at(a, i)).unwrap_or(0);
        return Err(format!("output `{name}` was modified (first at buffer index {i})"));
    }
    Ok(())
}

/// The forward bad-input matrix. Returns every failing entry.
pub fn check_invalid_forward<K: NormKernel>(k: &K) -> Result<usize, String> {
    let mut failures = Vec::new();
    let base = FwdSpec::valid(base_fwd_desc(), M, N);
    match run_fwd_spec(k, &base)? {
        (Err(NormError::Unsupported { .. }), ..) => {}
        (Err(e), ..) => failures.push(format!("the valid baseline call itself failed: {e}")),
        _ => {}
    }
    let cases = fwd_bad_cases();
    for (name, breaks, (want, matches)) in &cases {
        let mut s = base.clone();
        breaks(&mut s);
        let (res, before, after, names) = run_fwd_spec(k, &s).map_err(|e| format!("fwd `{name}`: {e}"))?;
        match res {
            Ok(()) => failures.push(format!("fwd `{name}`: accepted; expected {want}")),
            Err(e) if !matches(&e) => failures.push(format!("fwd `{name}`: got {e:?}; expected {want}")),
            Err(_) => {
                if let Err(e) = compare_untouched(&names, &before, &after, &[]) {
                    failures.push(format!("fwd `{name}`: rejected correctly but {e}"));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(cases.len())
    } else {
        Err(format!("{} of {} bad forward calls misbehaved:\n    {}", failures.len(), cases.len(), failures.join("\n    ")))
    }
}

/// The backward bad-input matrix.
pub fn check_invalid_backward<K: NormKernel>(k: &K) -> Result<usize, String> {
    let mut failures = Vec::new();
    let base = BwdSpec::valid(base_bwd_desc(), M, N);
    match run_bwd_spec(k, &base)? {
        (Err(NormError::Unsupported { .. }), ..) => {}
        (Err(e), ..) => failures.push(format!("the valid baseline call itself failed: {e}")),
        _ => {}
    }
    let cases = bwd_bad_cases();
    for (name, breaks, (want, matches)) in &cases {
        let mut s = base.clone();
        breaks(&mut s);
        let (res, before, after, names) = run_bwd_spec(k, &s).map_err(|e| format!("bwd `{name}`: {e}"))?;
        match res {
            Ok(()) => failures.push(format!("bwd `{name}`: accepted; expected {want}")),
            Err(e) if !matches(&e) => failures.push(format!("bwd `{name}`: got {e:?}; expected {want}")),
            Err(_) => {
                if let Err(e) = compare_untouched(&names, &before, &after, &[]) {
                    failures.push(format!("bwd `{name}`: rejected correctly but {e}"));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(cases.len())
    } else {
        Err(format!("{} of {} bad backward calls misbehaved:\n    {}", failures.len(), cases.len(), failures.join("\n    ")))
    }
}

/// `M = 0` for every op and option that changes which outputs exist: must succeed and write
/// nothing. (Backward `dw`/`db` are sums over zero rows; writing zeros there is accepted too.)
pub fn check_empty_batch<K: NormKernel>(k: &K) -> Result<usize, String> {
    let mut failures = Vec::new();
    let mut count = 0;
    for kind in [NormDesc::rms(1e-6), NormDesc::layer(1e-5)] {
        for residual in [false, true] {
            for save in [false, true] {
                let desc = kind.with_residual(residual).with_save_stats(save);
                for in_place in [false, true] {
                    let mut s = FwdSpec::valid(desc, 0, N);
                    if in_place {
                        s.y = None;
                        s.residual_out = None;
                    }
                    count += 1;
                    let (res, before, after, names) = run_fwd_spec(k, &s)?;
                    let what = format!("{} M=0 save_stats={save} in_place={in_place}", desc.op_name(false));
                    match res {
                        Ok(()) => {
                            if let Err(e) = compare_untouched(&names, &before, &after, &[]) {
                                failures.push(format!("{what}: {e}"));
                            }
                        }
                        Err(NormError::Unsupported { .. }) => {}
                        Err(e) => failures.push(format!("{what}: returned {e:?}")),
                    }
                }
            }
            let desc = kind.with_residual(residual);
            for in_place in [false, true] {
                let mut s = BwdSpec::valid(desc, 0, N);
                if in_place {
                    s.dx = None;
                }
                count += 1;
                let (res, before, after, names) = run_bwd_spec(k, &s)?;
                let what = format!("{} M=0 in_place={in_place}", desc.op_name(true));
                match res {
                    Ok(()) => {
                        if let Err(e) = compare_untouched(&names, &before, &after, &["dw", "db"]) {
                            failures.push(format!("{what}: {e}"));
                        }
                    }
                    Err(NormError::Unsupported { .. }) => {}
                    Err(e) => failures.push(format!("{what}: returned {e:?}")),
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(count)
    } else {
        Err(format!("{} of {count} empty-batch calls misbehaved:\n    {}", failures.len(), failures.join("\n    ")))
    }
}
