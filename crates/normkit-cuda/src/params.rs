//! The kernel parameter structs, mirrored field for field from kernels-common/nk_params.h, and
//! how a validated call fills them from its operands (addresses, strides, dtypes, flags; every
//! buffer's ownership checked) together with what the planner needs to know of the call.
//! The path-dependent fields (group, rows per CTA, slot, parts, splits, workspace addresses)
//! come from the plan, in launch.rs.

use cudarc::driver::DeviceRepr;
use normkit_core::{
    Backward, BackwardPlan, CastingMode, DType, Forward, ForwardPlan, InOut, Layout, NormDesc, NormKind, Operand, Result, Span,
};

use crate::buffers::{check_own, CudaBuffer};
use crate::plan::{BwdCall, FwdCall};
use crate::startup::Device;

pub(crate) const DT_F32: i32 = 0;
pub(crate) const DT_F16: i32 = 1;
pub(crate) const DT_BF16: i32 = 2;

pub(crate) const F_LN: i32 = 1;
pub(crate) const F_WEIGHT: i32 = 2;
pub(crate) const F_BIAS: i32 = 4;
pub(crate) const F_RESIDUAL: i32 = 8;
pub(crate) const F_STATS: i32 = 16;
pub(crate) const F_NOFULL: i32 = 32;
pub(crate) const F_WGLOBAL: i32 = 64;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FwdParams {
    pub x: u64,
    pub y: u64,
    pub r: u64,
    pub r_out: u64,
    pub w: u64,
    pub b: u64,
    pub mean: u64,
    pub rstd: u64,
    pub ws: u64,
    pub m: i64,
    pub n: i64,
    pub sx: i64,
    pub sy: i64,
    pub sr: i64,
    pub sro: i64,
    pub nsplit: i64,
    pub eps: f32,
    pub offset: f32,
    pub dt_x: i32,
    pub dt_y: i32,
    pub dt_r: i32,
    pub dt_w: i32,
    pub flags: i32,
    pub casting: i32,
    pub group: i32,
    pub rpc: i32,
    pub slot: i32,
    pub pad_: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BwdParams {
    pub x: u64,
    pub dy: u64,
    pub dx: u64,
    pub dres: u64,
    pub w: u64,
    pub mean: u64,
    pub rstd: u64,
    pub ws_stats: u64,
    pub ws_dw: u64,
    pub ws_db: u64,
    pub dw: u64,
    pub db: u64,
    pub m: i64,
    pub n: i64,
    pub sx: i64,
    pub sdy: i64,
    pub sdx: i64,
    pub sdres: i64,
    pub nsplit: i64,
    pub nparts: i64,
    pub offset: f32,
    pub dt_x: i32,
    pub dt_y: i32,
    pub dt_w: i32,
    pub flags: i32,
    pub group: i32,
    pub rpc: i32,
    pub slot: i32,
}

// The C++ side static_asserts the same sizes.
const _: () = assert!(std::mem::size_of::<FwdParams>() == 176);
const _: () = assert!(std::mem::size_of::<BwdParams>() == 192);

// SAFETY: both structs are #[repr(C)] plain old data (integers and floats only, no padding
// beyond what the identical C++ layout has), passed by value as the kernel's single argument.
unsafe impl DeviceRepr for FwdParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for BwdParams {}

fn dt_code(d: DType) -> i32 {
    match d {
        DType::F32 => DT_F32,
        DType::F16 => DT_F16,
        _ => DT_BF16,
    }
}

fn casting_code(c: CastingMode) -> i32 {
    match c {
        CastingMode::Gemma => 0,
        CastingMode::Llama => 1,
        _ => 2,
    }
}

/// Address of element `offset` of a buffer.
fn addr(b: &CudaBuffer, offset: usize) -> u64 {
    b.ptr + (offset * b.dtype.size_bytes()) as u64
}

/// Whether a 2-D view allows the 16-byte path: start 16-byte aligned, stride a multiple of 8.
fn mat_vec_ok(b: &CudaBuffer, l: &Layout) -> bool {
    addr(b, l.offset).is_multiple_of(16) && l.stride.is_multiple_of(8)
}
fn span_vec_ok(b: &CudaBuffer, s: &Span) -> bool {
    addr(b, s.offset).is_multiple_of(16)
}

fn in_out<'a>(io: &'a InOut<'_, CudaBuffer>) -> (&'a CudaBuffer, &'a CudaBuffer) {
    match io {
        InOut::Separate { input, output } => (input.buf, &*output.buf),
        InOut::InPlace(m) => (&*m.buf, &*m.buf),
    }
}

/// The forward parameters from the operands (every buffer checked to be `dev`'s), and the call
/// as the planner sees it. `extra_flags` are or-ed into the flags (F_NOFULL).
pub(crate) fn forward(
    dev: &Device,
    desc: &NormDesc,
    a: &Forward<'_, CudaBuffer>,
    plan: &ForwardPlan,
    extra_flags: i32,
) -> Result<(FwdParams, FwdCall)> {
    let (xb, yb) = in_out(&a.x);
    check_own(dev, Operand::X, xb)?;
    check_own(dev, Operand::Y, yb)?;
    let mut p = FwdParams {
        x: addr(xb, plan.x.offset),
        y: addr(yb, plan.y.offset),
        m: plan.m as i64,
        n: plan.n as i64,
        sx: plan.x.stride as i64,
        sy: plan.y.stride as i64,
        eps: desc.eps,
        offset: desc.weight.map_or(0.0, |w| w.offset),
        dt_x: dt_code(plan.dtypes.x),
        dt_y: dt_code(plan.dtypes.y),
        dt_r: dt_code(plan.dtypes.residual),
        dt_w: dt_code(plan.dtypes.weight),
        casting: casting_code(desc.casting),
        ..Default::default()
    };
    let mut vec_ok = plan.n.is_multiple_of(8) && mat_vec_ok(xb, &plan.x) && mat_vec_ok(yb, &plan.y);
    let mut flags = if desc.kind == NormKind::Layer { F_LN } else { 0 };
    if let (Some(r), Some((rl, rol, _))) = (&a.residual, plan.residual) {
        let (rb, rob) = in_out(r);
        check_own(dev, Operand::Residual, rb)?;
        check_own(dev, Operand::ResidualOut, rob)?;
        p.r = addr(rb, rl.offset);
        p.r_out = addr(rob, rol.offset);
        p.sr = rl.stride as i64;
        p.sro = rol.stride as i64;
        vec_ok &= mat_vec_ok(rb, &rl) && mat_vec_ok(rob, &rol);
        flags |= F_RESIDUAL;
    }
    if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
        check_own(dev, Operand::Weight, w.buf)?;
        p.w = addr(w.buf, s.offset);
        vec_ok &= span_vec_ok(w.buf, &s);
        flags |= F_WEIGHT;
    }
    if let (Some(b), Some(s)) = (&a.bias, plan.bias) {
        check_own(dev, Operand::Bias, b.buf)?;
        p.b = addr(b.buf, s.offset);
        vec_ok &= span_vec_ok(b.buf, &s);
        flags |= F_BIAS;
    }
    if let (Some(r), Some(s)) = (&a.rstd, plan.rstd) {
        check_own(dev, Operand::Rstd, r.buf)?;
        p.rstd = addr(r.buf, s.offset);
        flags |= F_STATS;
    }
    if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
        check_own(dev, Operand::Mean, mb.buf)?;
        p.mean = addr(mb.buf, s.offset);
    }
    p.flags = flags | extra_flags;
    let call = FwdCall {
        m: plan.m,
        n: plan.n,
        dtypes: plan.dtypes,
        ln: desc.kind == NormKind::Layer,
        gemma: desc.casting == CastingMode::Gemma,
        residual: desc.residual,
        weight: flags & F_WEIGHT != 0,
        bias: flags & F_BIAS != 0,
        aligned: vec_ok,
    };
    Ok((p, call))
}

/// The backward parameters from the operands (every buffer checked to be `dev`'s), and the
/// call as the planner sees it. `extra_flags` are or-ed into the flags (F_NOFULL).
pub(crate) fn backward(
    dev: &Device,
    desc: &NormDesc,
    a: &Backward<'_, CudaBuffer>,
    plan: &BackwardPlan,
    extra_flags: i32,
) -> Result<(BwdParams, BwdCall)> {
    let (dyb, dxb) = in_out(&a.dy);
    check_own(dev, Operand::X, a.x.buf)?;
    check_own(dev, Operand::Dy, dyb)?;
    check_own(dev, Operand::Dx, dxb)?;
    check_own(dev, Operand::Rstd, a.rstd.buf)?;
    let mut p = BwdParams {
        x: addr(a.x.buf, plan.x.offset),
        dy: addr(dyb, plan.dy.offset),
        dx: addr(dxb, plan.dx.offset),
        rstd: addr(a.rstd.buf, plan.rstd.offset),
        m: plan.m as i64,
        n: plan.n as i64,
        sx: plan.x.stride as i64,
        sdy: plan.dy.stride as i64,
        sdx: plan.dx.stride as i64,
        offset: desc.weight.map_or(0.0, |w| w.offset),
        dt_x: dt_code(plan.dtypes.x),
        dt_y: dt_code(plan.dtypes.y),
        dt_w: dt_code(plan.dtypes.weight),
        ..Default::default()
    };
    let mut vec_ok = plan.n.is_multiple_of(8) && mat_vec_ok(a.x.buf, &plan.x) && mat_vec_ok(dyb, &plan.dy) && mat_vec_ok(dxb, &plan.dx);
    let mut flags = if desc.kind == NormKind::Layer { F_LN } else { 0 };
    if let (Some(d), Some(l)) = (&a.d_residual_out, plan.d_residual_out) {
        check_own(dev, Operand::DResidualOut, d.buf)?;
        p.dres = addr(d.buf, l.offset);
        p.sdres = l.stride as i64;
        vec_ok &= mat_vec_ok(d.buf, &l);
        flags |= F_RESIDUAL;
    }
    if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
        check_own(dev, Operand::Weight, w.buf)?;
        p.w = addr(w.buf, s.offset);
        vec_ok &= span_vec_ok(w.buf, &s);
    }
    if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
        check_own(dev, Operand::Mean, mb.buf)?;
        p.mean = addr(mb.buf, s.offset);
    }
    if let (Some(d), Some(s)) = (&a.dw, plan.dw) {
        check_own(dev, Operand::Dw, d.buf)?;
        p.dw = addr(d.buf, s.offset);
        flags |= F_WEIGHT;
    }
    if let (Some(d), Some(s)) = (&a.db, plan.db) {
        check_own(dev, Operand::Db, d.buf)?;
        p.db = addr(d.buf, s.offset);
        flags |= F_BIAS;
    }
    p.flags = flags | extra_flags;
    let call = BwdCall {
        m: plan.m,
        n: plan.n,
        dtypes: plan.dtypes,
        ln: flags & F_LN != 0,
        d_residual: a.d_residual_out.is_some(),
        weight: a.weight.is_some(),
        dw: flags & F_WEIGHT != 0,
        db: flags & F_BIAS != 0,
        aligned: vec_ok,
    };
    Ok((p, call))
}
