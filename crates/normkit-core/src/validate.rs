//! Validation, done once here for every backend, before anything is launched or written.
//!
//! A backend calls [`validate_forward_for`] / [`validate_backward_for`] (or, when its buffers
//! all belong to every instance, [`validate_forward`] / [`validate_backward`]) first and works
//! from the returned plan. Every rule of the contract lives in this file, buffer ownership
//! included.

use crate::args::{Backward, Forward, Fp8Scaling, Scale};
use crate::desc::{DTypes, Direction, NormDesc, NormKind};
use crate::dtype::DType;
use crate::error::{Dim, NormError, Operand, Result};
use crate::kernel::NormKernel;
use crate::tensor::{check_mat, check_span, Buffer, InOut, Layout, Span};

/// A validated forward call: shapes, layouts and dtypes, nothing that borrows the buffers.
/// Every layout and span lies inside its buffer; an operand is `Some` exactly when the
/// descriptor uses it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardPlan {
    /// Rows, `M`.
    pub m: usize,
    /// Hidden size, `N` (at least 1).
    pub n: usize,
    /// The dtypes of the call (checked against the contract's rules).
    pub dtypes: DTypes,
    /// Where `x` lies in its buffer.
    pub x: Layout,
    /// Where `y` lies in its buffer (`x`'s layout in place).
    pub y: Layout,
    /// Whether `y` overwrites `x`.
    pub x_in_place: bool,
    /// `(residual, residual_out, in_place)`.
    pub residual: Option<(Layout, Layout, bool)>,
    /// The weight's elements (N).
    pub weight: Option<Span>,
    /// The bias's elements (N).
    pub bias: Option<Span>,
    /// The saved mean's elements (M).
    pub mean: Option<Span>,
    /// The saved rstd's elements (M).
    pub rstd: Option<Span>,
    /// The FP8 quantisation of `y`: `Some` exactly when `y`'s dtype is FP8.
    pub fp8: Option<Fp8Plan>,
}

/// Where a validated FP8 scale comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fp8ScalePlan {
    /// A host value, finite and > 0.
    Host(f32),
    /// One f32 element of the scale buffer.
    Device(Span),
    /// Per row, from each row's amax.
    PerRow,
}

/// A validated FP8 quantisation ([`crate::Fp8`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8Plan {
    /// `y`'s FP8 dtype (also `transposed`'s).
    pub format: DType,
    /// The scale.
    pub scale: Fp8ScalePlan,
    /// The `amax` element (one f32).
    pub amax: Option<Span>,
    /// The `scale_inv` elements: 1 per tensor, M per row (always present per row).
    pub scale_inv: Option<Span>,
    /// Where `yT` (N × M) lies in its buffer.
    pub transposed: Option<Layout>,
}

/// A validated backward call: shapes, layouts and dtypes, nothing that borrows the buffers.
/// Every layout and span lies inside its buffer; an operand is `Some` exactly when it was given
/// (and the descriptor allows it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackwardPlan {
    /// Rows, `M`.
    pub m: usize,
    /// Hidden size, `N` (at least 1).
    pub n: usize,
    /// The dtypes of the call (checked against the contract's rules).
    pub dtypes: DTypes,
    /// Where `x` (the tensor that was normalised) lies in its buffer.
    pub x: Layout,
    /// Where `dy` lies in its buffer.
    pub dy: Layout,
    /// Where `dx` lies in its buffer (`dy`'s layout in place).
    pub dx: Layout,
    /// Whether `dx` overwrites `dy`.
    pub dx_in_place: bool,
    /// Where `d_residual_out` lies in its buffer, if given.
    pub d_residual_out: Option<Layout>,
    /// The weight's elements (N).
    pub weight: Option<Span>,
    /// The saved mean's elements (M; LayerNorm).
    pub mean: Option<Span>,
    /// The saved rstd's elements (M).
    pub rstd: Span,
    /// The elements `dw` is written to (N).
    pub dw: Option<Span>,
    /// The elements `db` is written to (N).
    pub db: Option<Span>,
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16)
}

/// The rule every f32 side output of an FP8 call follows.
const FP8_F32_RULE: &str = "`scale`, `amax` and `scale_inv` are always f32";

/// Checks the scalar parameters of a descriptor (eps, weight offset).
pub fn check_desc(desc: &NormDesc) -> Result<()> {
    if !(desc.eps.is_finite() && desc.eps > 0.0) {
        return Err(NormError::InvalidEps { eps: desc.eps });
    }
    if let Some(w) = desc.weight {
        if !w.offset.is_finite() {
            return Err(NormError::InvalidOffset { offset: w.offset });
        }
    }
    Ok(())
}

/// Checks a dtype combination against the contract's rules (see [`DTypes`]).
pub fn check_dtypes(desc: &NormDesc, dir: Direction, d: &DTypes) -> Result<()> {
    let dt_err = |operand, dtype, rule| Err(NormError::DType { operand, dtype, rule });
    if !is_float(d.x) {
        return dt_err(Operand::X, d.x, "`x` must be f32, f16 or bf16 (the FP8 dtypes are for the forward's `y` only)");
    }
    let same_or_f32 = |t: DType| t == d.x || t == DType::F32;
    let (y_ok, y_op, y_rule) = match dir {
        Direction::Forward => (same_or_f32(d.y) || d.y.is_fp8(), Operand::Y, "`y` must have `x`'s dtype, be f32, or be an FP8 dtype"),
        Direction::Backward => {
            (same_or_f32(d.y), Operand::Dy, "`dy` must have `x`'s dtype or be f32 (the FP8 dtypes are for the forward's `y` only)")
        }
    };
    if !y_ok {
        return dt_err(y_op, d.y, y_rule);
    }
    if desc.weight.is_some() || desc.bias {
        let op = if desc.weight.is_some() { Operand::Weight } else { Operand::Bias };
        if !same_or_f32(d.weight) {
            return dt_err(op, d.weight, "the weight and bias must have `x`'s dtype or be f32");
        }
    }
    if desc.residual && dir == Direction::Forward && !same_or_f32(d.residual) {
        return dt_err(Operand::Residual, d.residual, "`residual` must have `x`'s dtype or be f32");
    }
    Ok(())
}

fn shape(operand: Operand, dim: Dim, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(NormError::Shape { operand, dim, expected, got })
    }
}

fn check_rows_cols(operand: Operand, l: &Layout, m: usize, n: usize) -> Result<()> {
    shape(operand, Dim::Rows, m, l.rows)?;
    shape(operand, Dim::Cols, n, l.cols)
}

fn presence<T>(operand: Operand, required: bool, v: &Option<T>) -> Result<()> {
    match (required, v.is_some()) {
        (true, false) => Err(NormError::Missing { operand }),
        (false, true) => Err(NormError::Unexpected { operand }),
        _ => Ok(()),
    }
}

fn want_dtype(operand: Operand, got: DType, want: DType, rule: &'static str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(NormError::DType { operand, dtype: got, rule })
    }
}

/// Checks a vector operand (weight, bias, statistics, dW, dB): its length, dtype and extent.
fn check_vec<B: Buffer + ?Sized>(op: Operand, buf: &B, span: Span, len: usize, dtype: DType, rule: &'static str) -> Result<Span> {
    shape(op, Dim::Len, len, span.len)?;
    want_dtype(op, buf.dtype(), dtype, rule)?;
    check_span(op, &span, buf.len())?;
    Ok(span)
}

/// The bytes an operand covers, for the overlap check of buffers that expose an address.
struct Region {
    operand: Operand,
    start: u64,
    end: u64,
    output: bool,
}

fn region<B: Buffer + ?Sized>(operand: Operand, buf: &B, first: usize, span_end: usize, output: bool) -> Option<Region> {
    let base = buf.base_addr()?;
    let es = buf.dtype().size_bytes() as u64;
    if span_end <= first {
        return None;
    }
    Some(Region { operand, start: base + first as u64 * es, end: base + span_end as u64 * es, output })
}

fn mat_region<B: Buffer + ?Sized>(operand: Operand, buf: &B, l: &Layout, output: bool) -> Option<Region> {
    if l.rows == 0 || l.cols == 0 {
        return None;
    }
    region(operand, buf, l.offset, l.span()?, output)
}

fn vec_region<B: Buffer + ?Sized>(operand: Operand, buf: &B, s: &Span, output: bool) -> Option<Region> {
    region(operand, buf, s.offset, s.offset + s.len, output)
}

/// Rejects an output whose bytes overlap any other operand. Only buffers that expose an address
/// ([`Buffer::base_addr`], device buffers built from raw pointers) can overlap at all; safe Rust
/// references cannot. The check is on byte ranges, so two strided views that interleave without
/// touching the same element are rejected too (conservatively).
fn check_overlaps(regions: &[Region]) -> Result<()> {
    for (i, a) in regions.iter().enumerate() {
        for b in &regions[i + 1..] {
            if (a.output || b.output) && a.start < b.end && b.start < a.end {
                let operand = if a.output { a.operand } else { b.operand };
                return Err(NormError::Aliasing { operand, rule: crate::error::AliasRule::Overlap });
            }
        }
    }
    Ok(())
}

fn io_regions<B: Buffer + ?Sized>(io: &InOut<'_, B>, in_op: Operand, out_op: Operand, out: &mut Vec<Region>) {
    match io {
        InOut::Separate { input, output } => {
            out.extend(mat_region(in_op, input.buf, &input.layout, false));
            out.extend(mat_region(out_op, &*output.buf, &output.layout, true));
        }
        InOut::InPlace(m) => out.extend(mat_region(out_op, &*m.buf, &m.layout, true)),
    }
}

/// [`NormError::ReadOnly`] when an output's buffer may not be written.
fn writable<B: Buffer + ?Sized>(operand: Operand, buf: &B) -> Result<()> {
    if buf.is_writable() {
        Ok(())
    } else {
        Err(NormError::ReadOnly { operand })
    }
}

/// [`writable`] for the output of an [`InOut`] (the same buffer when in place).
fn writable_io<B: Buffer + ?Sized>(io: &InOut<'_, B>, out_op: Operand) -> Result<()> {
    match io {
        InOut::Separate { output, .. } => writable(out_op, &*output.buf),
        InOut::InPlace(m) => writable(out_op, &*m.buf),
    }
}

/// Validates a forward call. Returns the plan a backend launches from.
pub fn validate_forward<B: Buffer + ?Sized>(desc: &NormDesc, a: &Forward<'_, B>) -> Result<ForwardPlan> {
    check_desc(desc)?;
    presence(Operand::Weight, desc.weight.is_some(), &a.weight)?;
    presence(Operand::Bias, desc.bias, &a.bias)?;
    presence(Operand::Residual, desc.residual, &a.residual)?;
    presence(Operand::Rstd, desc.save_stats, &a.rstd)?;
    presence(Operand::Mean, desc.save_stats && desc.kind == NormKind::Layer, &a.mean)?;

    let xl = a.x.input_layout();
    let (m, n) = (xl.rows, xl.cols);
    if n == 0 {
        return Err(NormError::EmptyRows);
    }
    let dtypes = DTypes {
        x: a.x.input_dtype(),
        y: a.x.output_dtype(),
        weight: a.weight.as_ref().map(|w| w.buf.dtype()).or(a.bias.as_ref().map(|b| b.buf.dtype())).unwrap_or(DType::F32),
        residual: a.residual.as_ref().map(|r| r.input_dtype()).unwrap_or(a.x.input_dtype()),
    };
    check_dtypes(desc, Direction::Forward, &dtypes)?;

    // x / y
    match &a.x {
        InOut::Separate { input, output } => {
            check_mat(Operand::X, &input.layout, input.buf.len())?;
            check_rows_cols(Operand::Y, &output.layout, m, n)?;
            check_mat(Operand::Y, &output.layout, output.buf.len())?;
        }
        InOut::InPlace(io) => check_mat(Operand::X, &io.layout, io.buf.len())?,
    }
    let y = a.x.output_layout();

    let mut residual = None;
    if let Some(r) = &a.residual {
        let rl = r.input_layout();
        check_rows_cols(Operand::Residual, &rl, m, n)?;
        match r {
            InOut::Separate { input, output } => {
                check_mat(Operand::Residual, &input.layout, input.buf.len())?;
                check_rows_cols(Operand::ResidualOut, &output.layout, m, n)?;
                want_dtype(Operand::ResidualOut, output.buf.dtype(), input.buf.dtype(), "`residual_out` must have `residual`'s dtype")?;
                check_mat(Operand::ResidualOut, &output.layout, output.buf.len())?;
            }
            InOut::InPlace(io) => check_mat(Operand::Residual, &io.layout, io.buf.len())?,
        }
        residual = Some((rl, r.output_layout(), r.is_in_place()));
    }

    let weight = a
        .weight
        .as_ref()
        .map(|w| check_vec(Operand::Weight, w.buf, w.span, n, dtypes.weight, "the weight and the bias must have one dtype"))
        .transpose()?;
    let bias = a
        .bias
        .as_ref()
        .map(|b| check_vec(Operand::Bias, b.buf, b.span, n, dtypes.weight, "the weight and the bias must have one dtype"))
        .transpose()?;
    let mean = a
        .mean
        .as_ref()
        .map(|v| check_vec(Operand::Mean, &*v.buf, v.span, m, DType::F32, "`mean` and `rstd` are always f32"))
        .transpose()?;
    let rstd = a
        .rstd
        .as_ref()
        .map(|v| check_vec(Operand::Rstd, &*v.buf, v.span, m, DType::F32, "`mean` and `rstd` are always f32"))
        .transpose()?;

    let fp8 = check_fp8(a, &dtypes, m, n)?;

    writable_io(&a.x, Operand::Y)?;
    if let Some(r) = &a.residual {
        writable_io(r, Operand::ResidualOut)?;
    }
    if let Some(v) = &a.mean {
        writable(Operand::Mean, &*v.buf)?;
    }
    if let Some(v) = &a.rstd {
        writable(Operand::Rstd, &*v.buf)?;
    }

    let mut regions = Vec::new();
    io_regions(&a.x, Operand::X, Operand::Y, &mut regions);
    if let Some(r) = &a.residual {
        io_regions(r, Operand::Residual, Operand::ResidualOut, &mut regions);
    }
    if let (Some(w), Some(s)) = (&a.weight, weight) {
        regions.extend(vec_region(Operand::Weight, w.buf, &s, false));
    }
    if let (Some(b), Some(s)) = (&a.bias, bias) {
        regions.extend(vec_region(Operand::Bias, b.buf, &s, false));
    }
    if let (Some(v), Some(s)) = (&a.mean, mean) {
        regions.extend(vec_region(Operand::Mean, &*v.buf, &s, true));
    }
    if let (Some(v), Some(s)) = (&a.rstd, rstd) {
        regions.extend(vec_region(Operand::Rstd, &*v.buf, &s, true));
    }
    if let (Some(q), Some(p)) = (&a.fp8, &fp8) {
        if let (Fp8Scaling::PerTensor(Scale::Device(v)), Fp8ScalePlan::Device(s)) = (&q.scaling, p.scale) {
            regions.extend(vec_region(Operand::Scale, v.buf, &s, false));
        }
        if let (Some(v), Some(s)) = (&q.amax, p.amax) {
            regions.extend(vec_region(Operand::Amax, &*v.buf, &s, true));
        }
        if let (Some(v), Some(s)) = (&q.scale_inv, p.scale_inv) {
            regions.extend(vec_region(Operand::ScaleInv, &*v.buf, &s, true));
        }
        if let (Some(t), Some(l)) = (&q.transposed, p.transposed) {
            regions.extend(mat_region(Operand::Transposed, &*t.buf, &l, true));
        }
    }
    check_overlaps(&regions)?;

    Ok(ForwardPlan { m, n, dtypes, x: xl, y, x_in_place: a.x.is_in_place(), residual, weight, bias, mean, rstd, fp8 })
}

/// The FP8 part of a forward call: `y` FP8 ⇔ `.fp8(…)`, the scale, `amax`, `scale_inv`,
/// `transposed` (shapes, dtypes, extents, writability). `dtypes` has passed [`check_dtypes`].
fn check_fp8<B: Buffer + ?Sized>(a: &Forward<'_, B>, dtypes: &DTypes, m: usize, n: usize) -> Result<Option<Fp8Plan>> {
    let q = match (&a.fp8, dtypes.y.is_fp8()) {
        (None, false) => return Ok(None),
        (None, true) => return Err(NormError::Missing { operand: Operand::Scale }),
        (Some(_), false) => {
            return Err(NormError::DType {
                operand: Operand::Y,
                dtype: dtypes.y,
                rule: "`.fp8(…)` quantises `y`, which must then have an FP8 dtype (e4m3, e5m2, e4m3fnuz or e5m2fnuz) \
                       in its own buffer: an FP8 `y` cannot be written over `x`",
            })
        }
        (Some(q), true) => q,
    };
    let scale = match &q.scaling {
        Fp8Scaling::PerTensor(Scale::Host(s)) => {
            if !(s.is_finite() && *s > 0.0) {
                return Err(NormError::InvalidScale { scale: *s });
            }
            Fp8ScalePlan::Host(*s)
        }
        Fp8Scaling::PerTensor(Scale::Device(v)) => {
            Fp8ScalePlan::Device(check_vec(Operand::Scale, v.buf, v.span, 1, DType::F32, FP8_F32_RULE)?)
        }
        Fp8Scaling::PerRow => Fp8ScalePlan::PerRow,
    };
    let amax = q.amax.as_ref().map(|v| check_vec(Operand::Amax, &*v.buf, v.span, 1, DType::F32, FP8_F32_RULE)).transpose()?;
    let inv_len = if scale == Fp8ScalePlan::PerRow { m } else { 1 };
    if scale == Fp8ScalePlan::PerRow && q.scale_inv.is_none() {
        return Err(NormError::Missing { operand: Operand::ScaleInv });
    }
    let scale_inv =
        q.scale_inv.as_ref().map(|v| check_vec(Operand::ScaleInv, &*v.buf, v.span, inv_len, DType::F32, FP8_F32_RULE)).transpose()?;
    let transposed = match &q.transposed {
        Some(t) => {
            want_dtype(Operand::Transposed, t.buf.dtype(), dtypes.y, "`transposed` must have `y`'s FP8 dtype")?;
            check_rows_cols(Operand::Transposed, &t.layout, n, m)?;
            check_mat(Operand::Transposed, &t.layout, t.buf.len())?;
            Some(t.layout)
        }
        None => None,
    };
    if let Some(v) = &q.amax {
        writable(Operand::Amax, &*v.buf)?;
    }
    if let Some(v) = &q.scale_inv {
        writable(Operand::ScaleInv, &*v.buf)?;
    }
    if let Some(t) = &q.transposed {
        writable(Operand::Transposed, &*t.buf)?;
    }
    Ok(Some(Fp8Plan { format: dtypes.y, scale, amax, scale_inv, transposed }))
}

/// Validates a backward call. Returns the plan a backend launches from.
pub fn validate_backward<B: Buffer + ?Sized>(desc: &NormDesc, a: &Backward<'_, B>) -> Result<BackwardPlan> {
    check_desc(desc)?;
    presence(Operand::Weight, desc.weight.is_some(), &a.weight)?;
    presence(Operand::Dw, desc.weight.is_some(), &a.dw)?;
    presence(Operand::Db, desc.bias, &a.db)?;
    presence(Operand::Mean, desc.kind == NormKind::Layer, &a.mean)?;
    if !desc.residual && a.d_residual_out.is_some() {
        return Err(NormError::Unexpected { operand: Operand::DResidualOut });
    }

    let xl = a.x.layout;
    let (m, n) = (xl.rows, xl.cols);
    if n == 0 {
        return Err(NormError::EmptyRows);
    }
    let wdt = a.weight.as_ref().map(|w| w.buf.dtype()).or(a.db.as_ref().map(|b| b.buf.dtype())).unwrap_or(DType::F32);
    let dtypes = DTypes { x: a.x.buf.dtype(), y: a.dy.input_dtype(), weight: wdt, residual: a.x.buf.dtype() };
    check_dtypes(desc, Direction::Backward, &dtypes)?;
    want_dtype(Operand::Dx, a.dy.output_dtype(), dtypes.y, "`dx` must have `dy`'s dtype")?;

    check_mat(Operand::X, &xl, a.x.buf.len())?;
    match &a.dy {
        InOut::Separate { input, output } => {
            check_rows_cols(Operand::Dy, &input.layout, m, n)?;
            check_mat(Operand::Dy, &input.layout, input.buf.len())?;
            check_rows_cols(Operand::Dx, &output.layout, m, n)?;
            check_mat(Operand::Dx, &output.layout, output.buf.len())?;
        }
        InOut::InPlace(io) => {
            check_rows_cols(Operand::Dy, &io.layout, m, n)?;
            check_mat(Operand::Dy, &io.layout, io.buf.len())?;
        }
    }
    let mut d_residual_out = None;
    if let Some(d) = &a.d_residual_out {
        check_rows_cols(Operand::DResidualOut, &d.layout, m, n)?;
        want_dtype(Operand::DResidualOut, d.buf.dtype(), dtypes.y, "`d_residual_out` must have `dy`'s dtype")?;
        check_mat(Operand::DResidualOut, &d.layout, d.buf.len())?;
        d_residual_out = Some(d.layout);
    }

    let weight = a
        .weight
        .as_ref()
        .map(|w| check_vec(Operand::Weight, w.buf, w.span, n, wdt, "the weight, `dw` and `db` must have one dtype"))
        .transpose()?;
    let mean =
        a.mean.as_ref().map(|v| check_vec(Operand::Mean, v.buf, v.span, m, DType::F32, "`mean` and `rstd` are always f32")).transpose()?;
    let rstd = check_vec(Operand::Rstd, a.rstd.buf, a.rstd.span, m, DType::F32, "`mean` and `rstd` are always f32")?;
    let dw =
        a.dw.as_ref()
            .map(|v| check_vec(Operand::Dw, &*v.buf, v.span, n, wdt, "the weight, `dw` and `db` must have one dtype"))
            .transpose()?;
    let db =
        a.db.as_ref()
            .map(|v| check_vec(Operand::Db, &*v.buf, v.span, n, wdt, "the weight, `dw` and `db` must have one dtype"))
            .transpose()?;

    writable_io(&a.dy, Operand::Dx)?;
    if let Some(v) = &a.dw {
        writable(Operand::Dw, &*v.buf)?;
    }
    if let Some(v) = &a.db {
        writable(Operand::Db, &*v.buf)?;
    }

    let mut regions = Vec::new();
    regions.extend(mat_region(Operand::X, a.x.buf, &xl, false));
    io_regions(&a.dy, Operand::Dy, Operand::Dx, &mut regions);
    if let Some(d) = &a.d_residual_out {
        regions.extend(mat_region(Operand::DResidualOut, d.buf, &d.layout, false));
    }
    if let (Some(w), Some(s)) = (&a.weight, weight) {
        regions.extend(vec_region(Operand::Weight, w.buf, &s, false));
    }
    if let (Some(v), Some(s)) = (&a.mean, mean) {
        regions.extend(vec_region(Operand::Mean, v.buf, &s, false));
    }
    regions.extend(vec_region(Operand::Rstd, a.rstd.buf, &rstd, false));
    if let (Some(v), Some(s)) = (&a.dw, dw) {
        regions.extend(vec_region(Operand::Dw, &*v.buf, &s, true));
    }
    if let (Some(v), Some(s)) = (&a.db, db) {
        regions.extend(vec_region(Operand::Db, &*v.buf, &s, true));
    }
    check_overlaps(&regions)?;

    Ok(BackwardPlan {
        m,
        n,
        dtypes,
        x: xl,
        dy: a.dy.input_layout(),
        dx: a.dy.output_layout(),
        dx_in_place: a.dy.is_in_place(),
        d_residual_out,
        weight,
        mean,
        rstd,
        dw,
        db,
    })
}

/// [`NormError::ForeignBuffer`] for `operand` when `buf` belongs to another instance than
/// `owner` (a backend's [`NormKernel::owner_id`]; see [`Buffer::owner`]). A backend or a buffer
/// without an owner id accepts / is accepted everywhere.
pub fn check_owner<B: Buffer + ?Sized>(backend: &'static str, owner: Option<u64>, operand: Operand, buf: &B) -> Result<()> {
    match (owner, buf.owner()) {
        (Some(mine), Some(theirs)) if mine != theirs => Err(NormError::ForeignBuffer { backend, operand }),
        _ => Ok(()),
    }
}

fn io_owners<B: Buffer + ?Sized>(
    own: &impl Fn(Operand, &B) -> Result<()>,
    io: &InOut<'_, B>,
    in_op: Operand,
    out_op: Operand,
) -> Result<()> {
    match io {
        InOut::Separate { input, output } => {
            own(in_op, input.buf)?;
            own(out_op, &*output.buf)
        }
        // One buffer: reported as the input.
        InOut::InPlace(m) => own(in_op, &*m.buf),
    }
}

/// Checks that every operand of a forward call belongs to the backend `backend` whose owner id
/// is `owner`, in the order x, y, residual, residual_out, weight, bias, rstd, mean, then the FP8
/// scale, amax, scale_inv, transposed; the first foreign one is [`NormError::ForeignBuffer`].
pub fn check_forward_owners<B: Buffer + ?Sized>(backend: &'static str, owner: Option<u64>, a: &Forward<'_, B>) -> Result<()> {
    let own = |operand, buf: &B| check_owner(backend, owner, operand, buf);
    io_owners(&own, &a.x, Operand::X, Operand::Y)?;
    if let Some(r) = &a.residual {
        io_owners(&own, r, Operand::Residual, Operand::ResidualOut)?;
    }
    if let Some(w) = &a.weight {
        own(Operand::Weight, w.buf)?;
    }
    if let Some(b) = &a.bias {
        own(Operand::Bias, b.buf)?;
    }
    if let Some(v) = &a.rstd {
        own(Operand::Rstd, &*v.buf)?;
    }
    if let Some(v) = &a.mean {
        own(Operand::Mean, &*v.buf)?;
    }
    if let Some(q) = &a.fp8 {
        if let Fp8Scaling::PerTensor(Scale::Device(v)) = &q.scaling {
            own(Operand::Scale, v.buf)?;
        }
        if let Some(v) = &q.amax {
            own(Operand::Amax, &*v.buf)?;
        }
        if let Some(v) = &q.scale_inv {
            own(Operand::ScaleInv, &*v.buf)?;
        }
        if let Some(t) = &q.transposed {
            own(Operand::Transposed, &*t.buf)?;
        }
    }
    Ok(())
}

/// Checks that every operand of a backward call belongs to the backend `backend` whose owner id
/// is `owner`, in the order x, dy, dx, rstd, d_residual_out, weight, mean, dw, db; the first
/// foreign one is [`NormError::ForeignBuffer`].
pub fn check_backward_owners<B: Buffer + ?Sized>(backend: &'static str, owner: Option<u64>, a: &Backward<'_, B>) -> Result<()> {
    let own = |operand, buf: &B| check_owner(backend, owner, operand, buf);
    own(Operand::X, a.x.buf)?;
    io_owners(&own, &a.dy, Operand::Dy, Operand::Dx)?;
    own(Operand::Rstd, a.rstd.buf)?;
    if let Some(d) = &a.d_residual_out {
        own(Operand::DResidualOut, d.buf)?;
    }
    if let Some(w) = &a.weight {
        own(Operand::Weight, w.buf)?;
    }
    if let Some(v) = &a.mean {
        own(Operand::Mean, v.buf)?;
    }
    if let Some(v) = &a.dw {
        own(Operand::Dw, &*v.buf)?;
    }
    if let Some(v) = &a.db {
        own(Operand::Db, &*v.buf)?;
    }
    Ok(())
}

/// Validates a forward call made on backend `k`: the ownership of every operand
/// ([`check_forward_owners`] against [`NormKernel::owner_id`]), then every rule of
/// [`validate_forward`].
/// Returns the plan a backend launches from.
pub fn validate_forward_for<K: NormKernel + ?Sized>(k: &K, desc: &NormDesc, a: &Forward<'_, K::Buffer>) -> Result<ForwardPlan> {
    // Ownership first: a foreign buffer's address means nothing here (a view of another
    // context's memory carries none), so no overlap or bounds verdict should be drawn from it.
    check_forward_owners(k.name(), k.owner_id(), a)?;
    validate_forward(desc, a)
}

/// Validates a backward call made on backend `k`: the ownership of every operand
/// ([`check_backward_owners`] against [`NormKernel::owner_id`]), then every rule of
/// [`validate_backward`].
/// Returns the plan a backend launches from.
pub fn validate_backward_for<K: NormKernel + ?Sized>(k: &K, desc: &NormDesc, a: &Backward<'_, K::Buffer>) -> Result<BackwardPlan> {
    check_backward_owners(k.name(), k.owner_id(), a)?;
    validate_backward(desc, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;
    use crate::host::HostBuf;
    use crate::tensor::{MatMut, MatRef, VecMut, VecRef};
    use crate::{DTypes, Direction};

    /// A buffer of the fake backend: host-free, with an owner id.
    #[derive(Debug)]
    struct FakeBuf {
        dtype: DType,
        len: usize,
        owner: Option<u64>,
    }

    impl Buffer for FakeBuf {
        fn dtype(&self) -> DType {
            self.dtype
        }
        fn len(&self) -> usize {
            self.len
        }
        fn owner(&self) -> Option<u64> {
            self.owner
        }
    }

    /// A backend that validates and does nothing else; its instance id is `id`.
    struct Fake {
        id: Option<u64>,
    }

    impl NormKernel for Fake {
        type Buffer = FakeBuf;
        fn name(&self) -> &'static str {
            "fake"
        }
        fn owner_id(&self) -> Option<u64> {
            self.id
        }
        fn device_name(&self) -> String {
            "nothing".into()
        }
        fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
            check_desc(desc)?;
            check_dtypes(desc, dir, dtypes)
        }
        fn forward(&self, desc: &NormDesc, a: Forward<'_, FakeBuf>) -> Result<()> {
            validate_forward_for(self, desc, &a).map(|_| ())
        }
        fn backward(&self, desc: &NormDesc, a: Backward<'_, FakeBuf>) -> Result<()> {
            validate_backward_for(self, desc, &a).map(|_| ())
        }
        fn alloc(&self, dtype: DType, len: usize) -> Result<FakeBuf> {
            Ok(FakeBuf { dtype, len, owner: self.id })
        }
        fn upload(&self, src: &HostBuf) -> Result<FakeBuf> {
            self.alloc(src.dtype(), src.len())
        }
        fn download(&self, buf: &FakeBuf) -> Result<HostBuf> {
            check_owner(self.name(), self.id, Operand::X, buf)?;
            Ok(HostBuf::zeros(buf.dtype, buf.len))
        }
        fn synchronize(&self) -> Result<()> {
            Ok(())
        }
    }

    const MINE: Option<u64> = Some(1);
    const OTHER: Option<u64> = Some(2);
    const M: usize = 2;
    const N: usize = 8;

    /// `None` for `Ok`, the operand of a `ForeignBuffer` error of the fake backend; any other
    /// error fails the test.
    fn foreign(r: Result<()>) -> Option<Operand> {
        match r {
            Ok(()) => None,
            Err(NormError::ForeignBuffer { backend: "fake", operand }) => Some(operand),
            Err(e) => panic!("expected ForeignBuffer, got {e:?}"),
        }
    }

    /// A LayerNorm forward with every operand (residual separate), the owners of x, y, residual,
    /// residual_out, weight, bias, rstd, mean in that order.
    fn forward(k: &Fake, owners: [Option<u64>; 8]) -> Result<()> {
        let b = |i: usize, dtype, len| FakeBuf { dtype, len, owner: owners[i] };
        let (x, mut y, r, mut ro) =
            (b(0, DType::BF16, M * N), b(1, DType::BF16, M * N), b(2, DType::BF16, M * N), b(3, DType::BF16, M * N));
        let (w, bias, mut rstd, mut mean) = (b(4, DType::BF16, N), b(5, DType::BF16, N), b(6, DType::F32, M), b(7, DType::F32, M));
        let desc = NormDesc::layer(1e-5).with_residual(true).with_save_stats(true);
        let a = Forward::new(InOut::separate(MatRef::new(&x, M, N), MatMut::new(&mut y, M, N)))
            .residual(InOut::separate(MatRef::new(&r, M, N), MatMut::new(&mut ro, M, N)))
            .weight(VecRef::new(&w))
            .bias(VecRef::new(&bias))
            .rstd(VecMut::new(&mut rstd))
            .mean(VecMut::new(&mut mean));
        k.forward(&desc, a)
    }

    /// A LayerNorm backward with every operand (dy and dx separate), the owners of x, dy, dx,
    /// rstd, d_residual_out, weight, mean, dw, db in that order.
    fn backward(k: &Fake, owners: [Option<u64>; 9]) -> Result<()> {
        let b = |i: usize, dtype, len| FakeBuf { dtype, len, owner: owners[i] };
        let (x, dy, mut dx, rstd) = (b(0, DType::BF16, M * N), b(1, DType::BF16, M * N), b(2, DType::BF16, M * N), b(3, DType::F32, M));
        let (dres, w, mean, mut dw, mut db) =
            (b(4, DType::BF16, M * N), b(5, DType::BF16, N), b(6, DType::F32, M), b(7, DType::BF16, N), b(8, DType::BF16, N));
        let desc = NormDesc::layer(1e-5).with_residual(true);
        let a =
            Backward::new(MatRef::new(&x, M, N), InOut::separate(MatRef::new(&dy, M, N), MatMut::new(&mut dx, M, N)), VecRef::new(&rstd))
                .d_residual_out(MatRef::new(&dres, M, N))
                .weight(VecRef::new(&w))
                .mean(VecRef::new(&mean))
                .dw(VecMut::new(&mut dw))
                .db(VecMut::new(&mut db));
        k.backward(&desc, a)
    }

    const FWD_ORDER: [Operand; 8] =
        [Operand::X, Operand::Y, Operand::Residual, Operand::ResidualOut, Operand::Weight, Operand::Bias, Operand::Rstd, Operand::Mean];
    const BWD_ORDER: [Operand; 9] = [
        Operand::X,
        Operand::Dy,
        Operand::Dx,
        Operand::Rstd,
        Operand::DResidualOut,
        Operand::Weight,
        Operand::Mean,
        Operand::Dw,
        Operand::Db,
    ];

    #[test]
    fn buffers_of_the_backend_and_buffers_of_no_one_are_accepted() {
        let k = Fake { id: MINE };
        assert_eq!(foreign(forward(&k, [MINE; 8])), None);
        assert_eq!(foreign(forward(&k, [None; 8])), None);
        assert_eq!(foreign(backward(&k, [MINE; 9])), None);
        assert_eq!(foreign(backward(&k, [None, MINE, None, MINE, None, MINE, None, MINE, None])), None);
    }

    #[test]
    fn a_backend_without_an_id_accepts_every_buffer() {
        let k = Fake { id: None };
        assert_eq!(foreign(forward(&k, [OTHER, MINE, OTHER, MINE, OTHER, MINE, OTHER, MINE])), None);
        assert_eq!(foreign(backward(&k, [OTHER; 9])), None);
    }

    #[test]
    fn each_foreign_operand_is_named_and_the_first_in_order_wins() {
        let k = Fake { id: MINE };
        for (i, &op) in FWD_ORDER.iter().enumerate() {
            let mut owners = [MINE; 8];
            owners[i] = OTHER;
            assert_eq!(foreign(forward(&k, owners)), Some(op), "forward, {op:?} foreign");
            // Every later operand foreign too: still this one.
            owners[i..].fill(OTHER);
            assert_eq!(foreign(forward(&k, owners)), Some(op), "forward, {op:?} and later foreign");
        }
        for (i, &op) in BWD_ORDER.iter().enumerate() {
            let mut owners = [MINE; 9];
            owners[i] = OTHER;
            assert_eq!(foreign(backward(&k, owners)), Some(op), "backward, {op:?} foreign");
            owners[i..].fill(OTHER);
            assert_eq!(foreign(backward(&k, owners)), Some(op), "backward, {op:?} and later foreign");
        }
    }

    #[test]
    fn an_in_place_foreign_buffer_is_reported_as_the_input() {
        let k = Fake { id: MINE };
        let mut x = FakeBuf { dtype: DType::F32, len: M * N, owner: OTHER };
        let desc = NormDesc::rms(1e-6).without_weight();
        assert_eq!(foreign(k.forward(&desc, Forward::new(InOut::in_place(MatMut::new(&mut x, M, N))))), Some(Operand::X));
        let xs = FakeBuf { dtype: DType::F32, len: M * N, owner: MINE };
        let rstd = FakeBuf { dtype: DType::F32, len: M, owner: MINE };
        let a = Backward::new(MatRef::new(&xs, M, N), InOut::in_place(MatMut::new(&mut x, M, N)), VecRef::new(&rstd));
        assert_eq!(foreign(k.backward(&desc, a)), Some(Operand::Dy));
    }

    #[test]
    /// Ownership comes first: a foreign buffer's address and length mean nothing to this backend
    /// (a CUDA view of another context's slice carries no address), so no bounds or overlap
    /// verdict is drawn from it.
    fn ownership_is_checked_before_the_contract_rules() {
        let k = Fake { id: MINE };
        let x = FakeBuf { dtype: DType::F32, len: M * N, owner: OTHER };
        let mut y = FakeBuf { dtype: DType::F32, len: M * N - 1, owner: MINE };
        let desc = NormDesc::rms(1e-6).without_weight();
        let r = k.forward(&desc, Forward::new(InOut::separate(MatRef::new(&x, M, N), MatMut::new(&mut y, M, N))));
        assert_eq!(foreign(r), Some(Operand::X));
        // With every buffer its own, the contract's error.
        let x = FakeBuf { dtype: DType::F32, len: M * N, owner: MINE };
        let r = k.forward(&desc, Forward::new(InOut::separate(MatRef::new(&x, M, N), MatMut::new(&mut y, M, N))));
        assert!(matches!(r, Err(NormError::OutOfBounds { operand: Operand::Y, .. })), "{r:?}");
    }

    #[test]
    fn download_checks_the_owner_with_the_same_rule() {
        let k = Fake { id: MINE };
        assert!(k.download(&FakeBuf { dtype: DType::F32, len: 1, owner: None }).is_ok());
        assert_eq!(foreign(k.download(&FakeBuf { dtype: DType::F32, len: 1, owner: OTHER }).map(|_| ())), Some(Operand::X));
    }
}
