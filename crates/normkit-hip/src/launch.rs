//! Executing a call: the kernel arguments of a validated call (device addresses, strides, dtype
//! codes, flags) and the planner's view of it ([`FwdShape`], [`BwdShape`]), then the kernels of
//! a [`FwdLaunch`] / [`BwdLaunch`] queued in order on the backend's stream.

use crate::buffers::{addr, HipBuffer};
use crate::ffi::Function;
use crate::kernels::{self, Kernel};
use crate::params::{self, BwdParams, FwdParams};
use crate::plan::{self, align256, BwdLaunch, BwdPath, BwdShape, FwdLaunch, FwdShape};
use crate::result::{self, device_error, lookup_error};
use crate::HipBackend;
use normkit_core::{
    Backward, BackwardPlan, CastingMode, DType, Forward, ForwardPlan, InOut, Layout, NormDesc, NormError, NormKind, Operand, Result, Span,
};
use std::ffi::{c_void, CString};

fn dt_code(d: DType) -> i32 {
    match d {
        DType::F32 => params::DT_F32,
        DType::F16 => params::DT_F16,
        _ => params::DT_BF16,
    }
}

fn casting_code(c: CastingMode) -> i32 {
    match c {
        CastingMode::Gemma => params::CAST_GEMMA,
        CastingMode::Llama => params::CAST_LLAMA,
        _ => params::CAST_NONE,
    }
}

fn in_out<'a>(io: &'a InOut<'_, HipBuffer>) -> (&'a HipBuffer, &'a HipBuffer) {
    match io {
        InOut::Separate { input, output } => (input.buf, &*output.buf),
        InOut::InPlace(m) => (&*m.buf, &*m.buf),
    }
}

/// Whether a 2-D view allows the 16-byte path: start 16-byte aligned, stride a multiple of 8
/// elements. Checked whatever M is (also for one row), so the path never depends on M.
fn mat_vec_ok(b: &HipBuffer, l: &Layout) -> bool {
    addr(b, l.offset).is_multiple_of(16) && l.stride.is_multiple_of(8)
}
fn span_vec_ok(b: &HipBuffer, s: &Span) -> bool {
    addr(b, s.offset).is_multiple_of(16)
}

impl HipBackend {
    /// The kernel arguments and the planner's shape of a validated forward call; every operand
    /// is checked to belong to this backend first (in the order x, y, residual, residual_out,
    /// weight, bias, rstd, mean).
    pub(crate) fn forward_args(&self, desc: &NormDesc, a: &Forward<'_, HipBuffer>, plan: &ForwardPlan) -> Result<(FwdParams, FwdShape)> {
        let (xb, yb) = in_out(&a.x);
        self.check_owner(Operand::X, xb)?;
        self.check_owner(Operand::Y, yb)?;
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
        let mut flags = if desc.kind == NormKind::Layer { params::F_LN } else { 0 };
        if let (Some(r), Some((rl, rol, _))) = (&a.residual, plan.residual) {
            let (rb, rob) = in_out(r);
            self.check_owner(Operand::Residual, rb)?;
            self.check_owner(Operand::ResidualOut, rob)?;
            p.r = addr(rb, rl.offset);
            p.r_out = addr(rob, rol.offset);
            p.sr = rl.stride as i64;
            p.sro = rol.stride as i64;
            vec_ok &= mat_vec_ok(rb, &rl) && mat_vec_ok(rob, &rol);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_owner(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
            flags |= params::F_WEIGHT;
        }
        if let (Some(b), Some(s)) = (&a.bias, plan.bias) {
            self.check_owner(Operand::Bias, b.buf)?;
            p.b = addr(b.buf, s.offset);
            vec_ok &= span_vec_ok(b.buf, &s);
            flags |= params::F_BIAS;
        }
        if let (Some(r), Some(s)) = (&a.rstd, plan.rstd) {
            self.check_owner(Operand::Rstd, r.buf)?;
            p.rstd = addr(r.buf, s.offset);
            flags |= params::F_STATS;
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_owner(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        p.flags = flags;
        // Every tensor 16-bit: 16-byte staging slots and, when aligned, the narrow kernel. A dtype
        // property: strided and contiguous views of the same dtypes take the same path.
        let d = plan.dtypes;
        let all16 = d.x != DType::F32
            && d.y != DType::F32
            && (!desc.residual || d.residual != DType::F32)
            && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || d.weight != DType::F32);
        let nvec = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
        // The register-resident kernels: every tensor in x's dtype and Gemma casting.
        let uniform =
            d.y == d.x && (!desc.residual || d.residual == d.x) && ((flags & (params::F_WEIGHT | params::F_BIAS)) == 0 || d.weight == d.x);
        let reg = (uniform && desc.casting == CastingMode::Gemma).then(|| (d.x.name(), desc.kind == NormKind::Layer));
        let shape = FwdShape { m: plan.m, n: plan.n, aligned: vec_ok, all16, nvec, residual: desc.residual, reg };
        Ok((p, shape))
    }

    /// Queues the kernels of a planned forward call.
    pub(crate) fn run_forward(&self, launch: FwdLaunch, p: &mut FwdParams) -> Result<()> {
        match launch {
            FwdLaunch::Row { kernel, group, rows_per_cta, slot, lds, blocks } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (blocks, 1), group * rows_per_cta, lds, p)
            }
            FwdLaunch::Split { stats, reduce, apply, nsplit, blocks, reduce_blocks, threads, ws_bytes } => {
                let lease = self.workspace(ws_bytes)?;
                p.ws = lease.ptr;
                p.nsplit = nsplit as i64;
                self.launch(stats, (blocks, 1), threads, 0, p)?;
                self.launch(reduce, (reduce_blocks, 1), threads, 0, p)?;
                self.launch(apply, (blocks, 1), threads, 0, p)
            }
        }
    }

    /// The kernel arguments and the planner's shape of a validated backward call; every operand
    /// is checked to belong to this backend first (in the order x, dy, dx, rstd, d_residual_out,
    /// weight, mean, dw, db).
    pub(crate) fn backward_args(&self, desc: &NormDesc, a: &Backward<'_, HipBuffer>, plan: &BackwardPlan) -> Result<(BwdParams, BwdShape)> {
        let (dyb, dxb) = in_out(&a.dy);
        self.check_owner(Operand::X, a.x.buf)?;
        self.check_owner(Operand::Dy, dyb)?;
        self.check_owner(Operand::Dx, dxb)?;
        self.check_owner(Operand::Rstd, a.rstd.buf)?;
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
        let mut flags = if desc.kind == NormKind::Layer { params::F_LN } else { 0 };
        if let (Some(d), Some(l)) = (&a.d_residual_out, plan.d_residual_out) {
            self.check_owner(Operand::DResidualOut, d.buf)?;
            p.dres = addr(d.buf, l.offset);
            p.sdres = l.stride as i64;
            vec_ok &= mat_vec_ok(d.buf, &l);
            flags |= params::F_RESIDUAL;
        }
        if let (Some(w), Some(s)) = (&a.weight, plan.weight) {
            self.check_owner(Operand::Weight, w.buf)?;
            p.w = addr(w.buf, s.offset);
            vec_ok &= span_vec_ok(w.buf, &s);
        }
        if let (Some(mb), Some(s)) = (&a.mean, plan.mean) {
            self.check_owner(Operand::Mean, mb.buf)?;
            p.mean = addr(mb.buf, s.offset);
        }
        if let (Some(d), Some(s)) = (&a.dw, plan.dw) {
            self.check_owner(Operand::Dw, d.buf)?;
            p.dw = addr(d.buf, s.offset);
            flags |= params::F_WEIGHT;
        }
        if let (Some(d), Some(s)) = (&a.db, plan.db) {
            self.check_owner(Operand::Db, d.buf)?;
            p.db = addr(d.buf, s.offset);
            flags |= params::F_BIAS;
        }
        p.flags = flags;
        let nacc = usize::from(flags & params::F_WEIGHT != 0) + usize::from(flags & params::F_BIAS != 0);
        let d = plan.dtypes;
        let all16 = d.x != DType::F32 && d.y != DType::F32 && (a.weight.is_none() || d.weight != DType::F32);
        let shape = BwdShape {
            m: plan.m,
            n: plan.n,
            aligned: vec_ok,
            all16,
            weight: a.weight.is_some(),
            d_residual: a.d_residual_out.is_some(),
            nacc,
            reg: (vec_ok
                && d.y == d.x
                && (a.weight.is_none() || d.weight == d.x)
                && (desc.kind == NormKind::Layer || flags & params::F_BIAS == 0))
                .then(|| (d.x.name(), desc.kind == NormKind::Layer)),
        };
        Ok((p, shape))
    }

    /// Lays out the workspace of a planned backward call (`[split stats | dW parts | dB parts]`)
    /// and queues its kernels: the main pass, then the finalize that sums the dW/dB partials.
    pub(crate) fn run_backward(&self, l: BwdLaunch, p: &mut BwdParams) -> Result<()> {
        let lease = self.workspace(l.ws_bytes)?;
        let ws = lease.ptr;
        p.ws_stats = ws;
        p.ws_dw = ws + align256(l.stats_bytes) as u64;
        p.ws_db = p.ws_dw + if p.flags & params::F_WEIGHT != 0 { align256(l.part_bytes) as u64 } else { 0 };
        p.nparts = l.parts as i64;
        p.nsplit = l.nsplit as i64;
        match l.path {
            BwdPath::Row { kernel, group, rows_per_cta, slot, lds } => {
                p.group = group as i32;
                p.rpc = rows_per_cta as i32;
                p.slot = slot as i32;
                self.launch(kernel, (l.parts, 1), group * rows_per_cta, lds, p)?;
            }
            BwdPath::Split { stats, apply, tiles, reduce_blocks } => {
                let threads = kernels::NK_SPLIT_THREADS as u32;
                self.launch(stats, (tiles.min(plan::MAX_GRID), 1), threads, 0, p)?;
                self.launch(kernels::NK_BWD_SPLIT_REDUCE, (reduce_blocks, 1), threads, 0, p)?;
                self.launch(apply, (l.nsplit as u64, l.parts), threads, 0, p)?;
            }
            BwdPath::Empty => {}
        }
        if l.finalize_blocks > 0 {
            // With M = 0 the finalize sums zero parts: dw and db become zeros (an empty sum).
            // One column per lane of a wavefront (p.group: the finalize's columns per workgroup).
            let k = kernels::NK_BWD_FINALIZE_WIDE;
            p.group = kernels::NK_WARP_WIDTH as i32;
            self.launch(k, (l.finalize_blocks, 1), k.max_threads, 0, p)?;
        }
        Ok(())
    }

    /// The loaded function of `k`, looked up once and cached. A kernel the module lacks is
    /// [`NormError::Internal`] ([`result::lookup_error`]): start-up checked that the code object
    /// exports every kernel of the list, so this is the library's fault.
    fn function(&self, k: Kernel) -> Result<Function> {
        let mut cache = self.ctx.funcs.lock().map_err(|_| crate::poisoned())?;
        if let Some(&f) = cache.get(k.name) {
            return Ok(f as Function);
        }
        let cname = CString::new(k.name)
            .map_err(|_| NormError::Internal { backend: crate::BACKEND, what: format!("kernel name {:?} contains a NUL byte", k.name) })?;
        // SAFETY: the module is loaded for the context's lifetime, which the cached handle does
        // not outlive.
        let f = unsafe { result::module_get_function(&self.ctx.api, self.ctx.module, &cname) }
            .map_err(|e| lookup_error(k.name, self.ctx.arch, e))?;
        cache.insert(k.name, f as usize);
        Ok(f)
    }

    /// Launches `k` with one by-value argument struct and `lds` bytes of dynamic LDS.
    fn launch<P>(&self, k: Kernel, grid: (u64, u64), threads: u32, lds: usize, params: &mut P) -> Result<()> {
        let f = self.function(k)?;
        let too_big = |v: u64| NormError::ResourceLimit { resource: "HIP grid size", requested: v, available: u32::MAX as u64 };
        let gx = u32::try_from(grid.0).map_err(|_| too_big(grid.0))?;
        let gy = u32::try_from(grid.1).map_err(|_| too_big(grid.1))?;
        let lds = u32::try_from(lds).map_err(|_| NormError::ResourceLimit {
            resource: "HIP LDS bytes",
            requested: lds as u64,
            available: self.ctx.config.lds_per_workgroup as u64,
        })?;
        if threads > k.max_threads || threads == 0 {
            return Err(NormError::ResourceLimit {
                resource: "HIP workgroup size",
                requested: threads as u64,
                available: k.max_threads as u64,
            });
        }
        // SAFETY: `f` is a kernel of the loaded module whose single parameter has P's layout
        // (params.rs mirrors nk_params.h; sizes asserted on both sides and against the kernel
        // descriptor at start-up); every address inside `params` was derived from validated views
        // of live device buffers or from the workspace; the runtime copies the argument block
        // before returning.
        unsafe {
            result::module_launch_kernel(
                &self.ctx.api,
                f,
                [gx, gy, 1],
                [threads, 1, 1],
                lds,
                self.ctx.stream,
                params as *mut P as *mut c_void,
            )
        }
        .map_err(device_error("kernel launch"))
    }
}
