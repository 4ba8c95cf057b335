//! Validation, done once here for every backend, before anything is launched or written.
//!
//! A backend calls [`validate_forward`] / [`validate_backward`] first and works from the returned
//! plan. Every rule of the contract lives in this file.

use crate::args::{Backward, Forward};
use crate::desc::{DTypes, Direction, NormDesc, NormKind};
use crate::dtype::DType;
use crate::error::{Dim, NormError, Operand, Result};
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
        return dt_err(Operand::X, d.x, "`x` must be f32, f16 or bf16");
    }
    let same_or_f32 = |t: DType| t == d.x || t == DType::F32;
    let (y_op, y_rule) = match dir {
        Direction::Forward => (Operand::Y, "`y` must have `x`'s dtype or be f32"),
        Direction::Backward => (Operand::Dy, "`dy` must have `x`'s dtype or be f32"),
    };
    if !same_or_f32(d.y) {
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
    check_overlaps(&regions)?;

    Ok(ForwardPlan { m, n, dtypes, x: xl, y, x_in_place: a.x.is_in_place(), residual, weight, bias, mean, rstd })
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
