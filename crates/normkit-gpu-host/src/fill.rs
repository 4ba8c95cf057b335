//! Filling the kernel parameters from a validated call: the operands' device addresses
//! (advanced to element 0 of each view), row strides in elements, dtype and casting codes, the
//! `F_*` flags, `eps` and the weight offset; and what a planner needs to know of the call
//! ([`FwdInfo`], [`BwdInfo`]). The path-dependent fields (`group`, `rpc`, `slot`, `nsplit`,
//! `nparts`, the workspace addresses `ws*`) stay 0: the launch step writes them from its plan.
//!
//! Absent operands are encoded as address 0 and stride 0, and leave their flag unset.

use normkit_core::{
    Backward, BackwardPlan, Buffer, CastingMode, DType, DTypes, Forward, ForwardPlan, Fp8ScalePlan, Fp8Scaling, InOut, Layout, NormDesc,
    NormKind, Scale, Span,
};

use crate::params::{
    BwdParams, FwdParams, CAST_GEMMA, CAST_LLAMA, CAST_NONE, DT_BF16, DT_E4M3, DT_E4M3FNUZ, DT_E5M2, DT_E5M2FNUZ, DT_F16, DT_F32, F_BIAS,
    F_LN, F_RESIDUAL, F_STATS, F_WEIGHT, Q_AMAX, Q_DEVSCALE, Q_INV, Q_ROW,
};

/// A buffer in device memory, as the parameter filling sees it: its dtype (from [`Buffer`]) and
/// the device address of its element 0. Implemented by each GPU backend's buffer type.
pub trait DeviceBuffer: Buffer {
    /// The device address of element 0.
    fn device_addr(&self) -> u64;

    /// The device address of element `offset` (counted in elements of [`Buffer::dtype`]).
    fn addr(&self, offset: usize) -> u64 {
        self.device_addr() + offset as u64 * self.dtype().size_bytes() as u64
    }
}

/// The `dt_*` code of a dtype (`DT_F32`, `DT_F16`, `DT_BF16`, and the FP8 codes of a quantised `y`).
pub fn dt_code(d: DType) -> i32 {
    match d {
        DType::F32 => DT_F32,
        DType::F16 => DT_F16,
        DType::BF16 => DT_BF16,
        DType::F8E4M3 => DT_E4M3,
        DType::F8E5M2 => DT_E5M2,
        DType::F8E4M3Fnuz => DT_E4M3FNUZ,
        DType::F8E5M2Fnuz => DT_E5M2FNUZ,
        // DType is non-exhaustive; validation admits no other dtype.
        _ => DT_F32,
    }
}

/// The `casting` code of a casting mode (`CAST_GEMMA`, `CAST_LLAMA`, `CAST_NONE`).
pub fn casting_code(c: CastingMode) -> i32 {
    match c {
        CastingMode::Gemma => CAST_GEMMA,
        CastingMode::Llama => CAST_LLAMA,
        _ => CAST_NONE,
    }
}

/// Whether a 2-D view allows the 16-byte path: its start 16-byte aligned, its stride a multiple
/// of 8 elements. Checked whatever M is (also for one row), so the path never depends on M.
pub fn mat_vec_ok<B: DeviceBuffer + ?Sized>(b: &B, l: &Layout) -> bool {
    b.addr(l.offset).is_multiple_of(16) && l.stride.is_multiple_of(8)
}

/// Whether a vector view allows the 16-byte path: its start 16-byte aligned.
pub fn span_vec_ok<B: DeviceBuffer + ?Sized>(b: &B, s: &Span) -> bool {
    b.addr(s.offset).is_multiple_of(16)
}

/// The input's and the output's buffers (the same one, in place).
fn in_out<'a, B: ?Sized>(io: &'a InOut<'_, B>) -> (&'a B, &'a B) {
    match io {
        InOut::Separate { input, output } => (input.buf, &*output.buf),
        InOut::InPlace(m) => (&*m.buf, &*m.buf),
    }
}

/// A forward call as far as planning goes: what each backend's planner input is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwdInfo {
    /// Rows, M.
    pub m: usize,
    /// Hidden size, N.
    pub n: usize,
    /// The operands' dtypes.
    pub dtypes: DTypes,
    /// LayerNorm (else RMSNorm).
    pub ln: bool,
    /// Gemma casting.
    pub gemma: bool,
    /// The fused residual add.
    pub residual: bool,
    /// A weight is given (`F_WEIGHT`).
    pub weight: bool,
    /// A bias is given (`F_BIAS`).
    pub bias: bool,
    /// Every operand allows 16-byte accesses: N a multiple of 8, every 2-D view 16-byte aligned
    /// with a stride that is a multiple of 8, the weight and bias 16-byte aligned ([`mat_vec_ok`],
    /// [`span_vec_ok`]; the saved statistics do not count).
    pub aligned: bool,
    /// The FP8 quantisation of `y`, if any.
    pub fp8: Option<Fp8Info>,
}

/// A quantised forward, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8Info {
    /// Per-row dynamic scaling (else one scale for the tensor).
    pub per_row: bool,
    /// `yT` is written.
    pub transposed: bool,
}

/// A backward call as far as planning goes: what each backend's planner input is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdInfo {
    /// Rows, M.
    pub m: usize,
    /// Hidden size, N.
    pub n: usize,
    /// The operands' dtypes.
    pub dtypes: DTypes,
    /// LayerNorm (else RMSNorm).
    pub ln: bool,
    /// `d_residual_out` is given (added to dx; `F_RESIDUAL`).
    pub d_residual: bool,
    /// A weight is given.
    pub weight: bool,
    /// dW is wanted (`F_WEIGHT`).
    pub dw: bool,
    /// dB is wanted (`F_BIAS`).
    pub db: bool,
    /// Every operand allows 16-byte accesses: N a multiple of 8, `x`, `dy`, `dx` and
    /// `d_residual_out` 16-byte aligned with strides that are multiples of 8, the weight 16-byte
    /// aligned (the statistics, `dw` and `db` do not count).
    pub aligned: bool,
    /// dx is written over dy (`InOut::InPlace`): no kernel may read a row's dy once another CTA
    /// may have written that row's dx.
    pub in_place: bool,
}

impl BwdInfo {
    /// dW/dB outputs wanted (0 to 2).
    pub fn nacc(&self) -> usize {
        usize::from(self.dw) + usize::from(self.db)
    }
}

/// The forward parameters of a validated call (`plan` is [`normkit_core::validate_forward`]'s
/// answer for `desc` and `a`) and the call as a planner sees it. The ownership of every operand
/// was checked by the validation; the path-dependent fields and `ws` are left 0.
pub fn fwd_params<B: DeviceBuffer + ?Sized>(desc: &NormDesc, a: &Forward<'_, B>, plan: &ForwardPlan) -> (FwdParams, FwdInfo) {
    let (xb, yb) = in_out(&a.x);
    let mut p = FwdParams {
        x: xb.addr(plan.x.offset),
        y: yb.addr(plan.y.offset),
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
        p.r = rb.addr(rl.offset);
        p.r_out = rob.addr(rol.offset);
        p.sr = rl.stride as i64;
        p.sro = rol.stride as i64;
        vec_ok &= mat_vec_ok(rb, &rl) && mat_vec_ok(rob, &rol);
        flags |= F_RESIDUAL;
    }
    if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
        p.w = w.buf.addr(s.offset);
        vec_ok &= span_vec_ok(w.buf, &s);
        flags |= F_WEIGHT;
    }
    if let (Some(b), Some(s)) = (&a.bias, plan.bias) {
        p.b = b.buf.addr(s.offset);
        vec_ok &= span_vec_ok(b.buf, &s);
        flags |= F_BIAS;
    }
    if let (Some(r), Some(s)) = (&a.rstd, plan.rstd) {
        p.rstd = r.buf.addr(s.offset);
        flags |= F_STATS;
    }
    if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
        p.mean = mb.buf.addr(s.offset);
    }
    let mut fp8 = None;
    if let (Some(q), Some(qp)) = (&a.fp8, plan.fp8) {
        match (&q.scaling, qp.scale) {
            (_, Fp8ScalePlan::Host(s)) => p.scale_host = s,
            (Fp8Scaling::PerTensor(Scale::Device(v)), Fp8ScalePlan::Device(s)) => {
                p.scale = v.buf.addr(s.offset);
                p.q |= Q_DEVSCALE;
            }
            _ => p.q |= Q_ROW,
        }
        if let (Some(v), Some(s)) = (&q.amax, qp.amax) {
            p.amax = v.buf.addr(s.offset);
            p.q |= Q_AMAX;
        }
        if let (Some(v), Some(s)) = (&q.scale_inv, qp.scale_inv) {
            p.scale_inv = v.buf.addr(s.offset);
            p.q |= Q_INV;
        }
        if let (Some(t), Some(l)) = (&q.transposed, qp.transposed) {
            p.yt = t.buf.addr(l.offset);
            p.syt = l.stride as i64;
        }
        fp8 = Some(Fp8Info { per_row: p.q & Q_ROW != 0, transposed: qp.transposed.is_some() });
    }
    p.flags = flags;
    let info = FwdInfo {
        m: plan.m,
        n: plan.n,
        dtypes: plan.dtypes,
        ln: desc.kind == NormKind::Layer,
        gemma: desc.casting == CastingMode::Gemma,
        residual: desc.residual,
        weight: flags & F_WEIGHT != 0,
        bias: flags & F_BIAS != 0,
        aligned: vec_ok,
        fp8,
    };
    (p, info)
}

/// The backward parameters of a validated call (`plan` is [`normkit_core::validate_backward`]'s
/// answer for `desc` and `a`) and the call as a planner sees it. The ownership of every operand
/// was checked by the validation; the path-dependent fields and the workspace addresses are
/// left 0.
pub fn bwd_params<B: DeviceBuffer + ?Sized>(desc: &NormDesc, a: &Backward<'_, B>, plan: &BackwardPlan) -> (BwdParams, BwdInfo) {
    let (dyb, dxb) = in_out(&a.dy);
    let mut p = BwdParams {
        x: a.x.buf.addr(plan.x.offset),
        dy: dyb.addr(plan.dy.offset),
        dx: dxb.addr(plan.dx.offset),
        rstd: a.rstd.buf.addr(plan.rstd.offset),
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
        p.dres = d.buf.addr(l.offset);
        p.sdres = l.stride as i64;
        vec_ok &= mat_vec_ok(d.buf, &l);
        flags |= F_RESIDUAL;
    }
    if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
        p.w = w.buf.addr(s.offset);
        vec_ok &= span_vec_ok(w.buf, &s);
    }
    if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
        p.mean = mb.buf.addr(s.offset);
    }
    if let (Some(d), Some(s)) = (&a.dw, plan.dw) {
        p.dw = d.buf.addr(s.offset);
        flags |= F_WEIGHT;
    }
    if let (Some(d), Some(s)) = (&a.db, plan.db) {
        p.db = d.buf.addr(s.offset);
        flags |= F_BIAS;
    }
    p.flags = flags;
    let info = BwdInfo {
        m: plan.m,
        n: plan.n,
        dtypes: plan.dtypes,
        ln: flags & F_LN != 0,
        d_residual: a.d_residual_out.is_some(),
        weight: a.weight.is_some(),
        dw: flags & F_WEIGHT != 0,
        db: flags & F_BIAS != 0,
        aligned: vec_ok,
        in_place: matches!(a.dy, InOut::InPlace(_)),
    };
    (p, info)
}
