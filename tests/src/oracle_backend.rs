//! A backend made from the oracle itself: validates with `normkit_core`, computes each row with
//! [`crate::oracle`] and stores the exact values rounded once. It is correct by construction (up to
//! the oracle), so it lets the suite be exercised — and the mutation tests be built — without any
//! production backend. Slow; host memory only.

use crate::data::{gather_mat, set_f32};
use crate::oracle::{self, BwdConsts, ColSums, FwdConsts};
use normkit_core::{
    check_dtypes, validate_backward, validate_forward, Backward, DType, DTypes, Direction, Forward, HostBuf, InOut, NormDesc, NormKernel,
    NormKind, Result,
};

fn declines_fp8(dtypes: &DTypes) -> Result<()> {
    if dtypes.y.is_fp8() {
        Err(normkit_core::NormError::Unsupported {
            backend: "oracle",
            what: format!("an FP8 `y` ({}): the oracle backend does not quantise", dtypes.y),
        })
    } else {
        Ok(())
    }
}

/// The oracle as a [`NormKernel`] over [`HostBuf`].
#[derive(Debug, Default, Clone, Copy)]
pub struct OracleBackend;

fn read_io(io: &InOut<'_, HostBuf>) -> Vec<f32> {
    match io {
        InOut::Separate { input, .. } => gather_mat(&input.buf.to_f32_vec(), &input.layout),
        InOut::InPlace(m) => gather_mat(&m.buf.to_f32_vec(), &m.layout),
    }
}

fn write_io(io: &mut InOut<'_, HostBuf>, row: usize, vals: impl Iterator<Item = f32>) {
    let out = match io {
        InOut::Separate { output, .. } => output,
        InOut::InPlace(m) => m,
    };
    let base = out.layout.offset + row * out.layout.stride;
    for (j, v) in vals.enumerate() {
        set_f32(out.buf, base + j, v);
    }
}

impl NormKernel for OracleBackend {
    type Buffer = HostBuf;

    fn name(&self) -> &'static str {
        "oracle"
    }

    fn device_name(&self) -> String {
        "f64 oracle on the host".into()
    }

    /// Everything but an FP8 `y`: the oracle backend does not quantise (the FP8 checks compute
    /// their expectations from the oracle directly; the FP8 mutants wrap the CPU backend).
    fn supports(&self, dir: Direction, desc: &NormDesc, dtypes: &DTypes) -> Result<()> {
        check_dtypes(desc, dir, dtypes)?;
        declines_fp8(dtypes)
    }

    fn forward(&self, desc: &NormDesc, mut args: Forward<'_, HostBuf>) -> Result<()> {
        let plan = validate_forward(desc, &args)?;
        declines_fp8(&plan.dtypes)?;
        let (m, n, dt) = (plan.m, plan.n, plan.dtypes);
        let x = read_io(&args.x);
        let residual = args.residual.as_ref().map(read_io);
        let weight = args.weight.map(|w| w.buf.to_f32_vec()[w.span.offset..w.span.offset + n].to_vec());
        let bias = args.bias.map(|b| b.buf.to_f32_vec()[b.span.offset..b.span.offset + n].to_vec());
        let consts = FwdConsts { desc, residual: dt.residual, compute: dt.x, weight: weight.as_deref(), bias: bias.as_deref() };
        for i in 0..m {
            let r = i * n..(i + 1) * n;
            let row = oracle::forward_row(&consts, &x[r.clone()], residual.as_ref().map(|v| &v[r.clone()]));
            write_io(&mut args.x, i, row.y.iter().map(|iv| oracle::store(dt.y, iv)));
            if let Some(io) = args.residual.as_mut() {
                write_io(io, i, row.h.iter().copied());
            }
            if let (Some(v), Some(mu)) = (args.mean.as_mut(), row.mean) {
                set_f32(v.buf, v.span.offset + i, mu.mid as f32);
            }
            if let Some(v) = args.rstd.as_mut() {
                set_f32(v.buf, v.span.offset + i, row.rstd.mid as f32);
            }
        }
        Ok(())
    }

    fn backward(&self, desc: &NormDesc, mut args: Backward<'_, HostBuf>) -> Result<()> {
        let plan = validate_backward(desc, &args)?;
        let (m, n, dt) = (plan.m, plan.n, plan.dtypes);
        if m == 0 {
            return Ok(());
        }
        let x = gather_mat(&args.x.buf.to_f32_vec(), &args.x.layout);
        let dy = read_io(&args.dy);
        let dres = args.d_residual_out.map(|d| gather_mat(&d.buf.to_f32_vec(), &d.layout));
        let weight = args.weight.map(|w| w.buf.to_f32_vec()[w.span.offset..w.span.offset + n].to_vec());
        let rstd = args.rstd.buf.to_f32_vec()[args.rstd.span.offset..args.rstd.span.offset + m].to_vec();
        let mean = args.mean.map(|v| v.buf.to_f32_vec()[v.span.offset..v.span.offset + m].to_vec());
        let consts = BwdConsts { desc, weight: weight.as_deref() };
        let mut dw = args.dw.is_some().then(|| ColSums::new(n));
        let mut db = args.db.is_some().then(|| ColSums::new(n));
        for i in 0..m {
            let r = i * n..(i + 1) * n;
            let dx = oracle::backward_row(
                &consts,
                &x[r.clone()],
                &dy[r.clone()],
                dres.as_ref().map(|d| &d[r.clone()]),
                mean.as_ref().filter(|_| desc.kind == NormKind::Layer).map(|v| v[i]),
                rstd[i],
                dw.as_mut(),
                db.as_mut(),
            );
            write_io(&mut args.dy, i, dx.iter().map(|iv| oracle::store(dt.y, iv)));
        }
        for (sums, out) in [(dw, args.dw.as_mut()), (db, args.db.as_mut())] {
            if let (Some(sums), Some(out)) = (sums, out) {
                for (j, iv) in sums.finish().iter().enumerate() {
                    set_f32(out.buf, out.span.offset + j, oracle::store(dt.weight, iv));
                }
            }
        }
        Ok(())
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<HostBuf> {
        Ok(HostBuf::zeros(dtype, len))
    }

    fn upload(&self, src: &HostBuf) -> Result<HostBuf> {
        Ok(src.clone())
    }

    fn download(&self, buf: &HostBuf) -> Result<HostBuf> {
        Ok(buf.clone())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
