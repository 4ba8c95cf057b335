//! The buffers of one benchmarked call: random, non-zero inputs generated once per case on the
//! host and uploaded into every rotated set; outputs allocated on the backend.
//!
//! An FP8 op's `y` (and `yT`) is allocated in the case's FP8 format; its per-tensor scale is a
//! one-element f32 device buffer (what a training loop with delayed scaling keeps), set to a
//! quarter of the format's largest value: the inputs' `|y|` stays under about 3, so the values
//! use the format's range without saturating.

use crate::grid::Case;
use crate::ops::Op;
use normkit_core::{
    Backward, Buffer, DType, Direction, Forward, Fp8, HostBuf, InOut, MatMut, MatRef, NormDesc, NormError, NormKernel, Result, Scale,
    VecMut, VecRef,
};

/// Host copies of a case's inputs, generated once and uploaded into every set.
pub(crate) struct HostInputs {
    x: HostBuf,
    dy: HostBuf,
    res: HostBuf,
    w: HostBuf,
    b: HostBuf,
    mean: HostBuf,
    rstd: HostBuf,
    /// The per-tensor FP8 scale (one f32).
    scale: HostBuf,
}

impl HostInputs {
    pub(crate) fn new(case: &Case) -> Self {
        let (m, n, dt) = (case.m, case.n, case.dtype);
        let bwd = case.op.direction() == Direction::Backward;
        let mat = |seed, used: bool| if used { random(dt, m * n, seed, -2.0, 2.0) } else { HostBuf::zeros(dt, 0) };
        HostInputs {
            x: mat(1, true),
            dy: mat(2, bwd),
            res: mat(3, case.op.has_residual()),
            w: random(dt, n, 4, 0.5, 1.5),
            b: random(dt, n, 5, -0.5, 0.5),
            mean: random(DType::F32, m, 6, -0.1, 0.1),
            rstd: random(DType::F32, m, 7, 0.5, 2.0),
            scale: HostBuf::from_f32(DType::F32, &[(case.fp8.max_finite() / 4.0) as f32]),
        }
    }
}

/// The buffers of one call. Inputs are random and non-zero; outputs are uninitialised.
pub(crate) struct InputSet<Buf> {
    /// `x` (forward), the normalised input (backward).
    x: Buf,
    /// `y` (forward) or `dx` (backward).
    out: Buf,
    /// `dy` (backward).
    dy: Option<Buf>,
    /// `residual` (forward) or `d_residual_out` (backward) of the fused add.
    res: Option<Buf>,
    /// `residual_out` (forward, fused add).
    res_out: Option<Buf>,
    w: Buf,
    /// The bias (LayerNorm forward).
    b: Option<Buf>,
    /// LayerNorm mean: written by the forward, read by the backward.
    mean: Option<Buf>,
    rstd: Buf,
    dw: Option<Buf>,
    db: Option<Buf>,
    /// The FP8 operands (FP8 ops).
    fp8: Option<Fp8Set<Buf>>,
}

/// The FP8 operands of one call: what [`Op::fp8`] asks for.
struct Fp8Set<Buf> {
    /// The per-tensor scale (one f32, read); `None` per row.
    scale: Option<Buf>,
    amax: Option<Buf>,
    /// One f32 per tensor, M per row.
    scale_inv: Option<Buf>,
    /// `yT`, N×M in the FP8 format.
    y_t: Option<Buf>,
}

impl<Buf: Buffer> InputSet<Buf> {
    pub(crate) fn new<B: NormKernel<Buffer = Buf>>(backend: &B, case: &Case, host: &HostInputs) -> Result<Self> {
        let (m, n, dt) = (case.m, case.n, case.dtype);
        let (op, bwd) = (case.op, case.op.direction() == Direction::Backward);
        let up = |h: &HostBuf| backend.upload(h);
        let out = |dtype, len| backend.alloc(dtype, len);
        let opt = |cond: bool, f: &dyn Fn() -> Result<Buf>| if cond { f().map(Some) } else { Ok(None) };
        let fp8 = match op.fp8() {
            None => None,
            Some(f) => Some(Fp8Set {
                scale: opt(!f.per_row, &|| up(&host.scale))?,
                amax: opt(f.amax, &|| out(DType::F32, 1))?,
                scale_inv: opt(f.scale_inv, &|| out(DType::F32, if f.per_row { m } else { 1 }))?,
                y_t: opt(f.transposed, &|| out(case.fp8, n * m))?,
            }),
        };
        Ok(InputSet {
            x: up(&host.x)?,
            out: out(case.y_dtype(), m * n)?,
            dy: opt(bwd, &|| up(&host.dy))?,
            res: opt(op.has_residual(), &|| up(&host.res))?,
            res_out: opt(op.has_residual() && !bwd, &|| out(dt, m * n))?,
            w: up(&host.w)?,
            b: opt(op.is_layer() && !bwd, &|| up(&host.b))?,
            mean: opt(op.is_layer(), &|| if bwd { up(&host.mean) } else { out(DType::F32, m) })?,
            rstd: if bwd { up(&host.rstd)? } else { out(DType::F32, m)? },
            dw: opt(bwd, &|| out(dt, n))?,
            db: opt(bwd && op.is_layer(), &|| out(dt, n))?,
            fp8,
        })
    }

    pub(crate) fn call<B: NormKernel<Buffer = Buf>>(&mut self, backend: &B, op: Op, desc: &NormDesc, m: usize, n: usize) -> Result<()> {
        let InputSet { x, out, dy, res, res_out, w, b, mean, rstd, dw, db, fp8 } = self;
        if op.direction() == Direction::Forward {
            let mut a = Forward::new(InOut::separate(MatRef::new(&*x, m, n), MatMut::new(out, m, n)))
                .weight(VecRef::new(&*w))
                .rstd(VecMut::new(rstd));
            if let Some(b) = b {
                a = a.bias(VecRef::new(&*b));
            }
            if let (Some(r), Some(ro)) = (res, res_out) {
                a = a.residual(InOut::separate(MatRef::new(&*r, m, n), MatMut::new(ro, m, n)));
            }
            if let Some(mean) = mean {
                a = a.mean(VecMut::new(mean));
            }
            if let Some(Fp8Set { scale, amax, scale_inv, y_t }) = fp8 {
                let mut q = match (scale.as_ref(), scale_inv.as_mut()) {
                    (Some(s), inv) => {
                        let q = Fp8::per_tensor(Scale::Device(VecRef::new(s)));
                        match inv {
                            Some(inv) => q.scale_inv(VecMut::new(inv)),
                            None => q,
                        }
                    }
                    (None, Some(inv)) => Fp8::per_row(VecMut::new(inv)),
                    (None, None) => return Err(NormError::Missing { operand: normkit_core::Operand::ScaleInv }),
                };
                if let Some(amax) = amax {
                    q = q.amax(VecMut::new(amax));
                }
                if let Some(t) = y_t {
                    q = q.transposed(MatMut::new(t, n, m));
                }
                a = a.fp8(q);
            }
            backend.forward(desc, a)
        } else {
            let Some(dy) = dy.as_ref() else { return Err(NormError::Missing { operand: normkit_core::Operand::Dy }) };
            let mut a =
                Backward::new(MatRef::new(&*x, m, n), InOut::separate(MatRef::new(dy, m, n), MatMut::new(out, m, n)), VecRef::new(&*rstd))
                    .weight(VecRef::new(&*w));
            if let Some(dw) = dw {
                a = a.dw(VecMut::new(dw));
            }
            if let Some(db) = db {
                a = a.db(VecMut::new(db));
            }
            if let Some(mean) = mean {
                a = a.mean(VecRef::new(&*mean));
            }
            if let Some(r) = res {
                a = a.d_residual_out(MatRef::new(&*r, m, n));
            }
            backend.backward(desc, a)
        }
    }
}

/// `len` values uniform in `[lo, hi)` with magnitude at least 1/16 of the range (never zero),
/// rounded to `dtype`. A block of 2^20 − 3 random values is tiled: timing does not depend on the
/// values, and generating gigabytes of fresh randomness would dominate the run.
pub fn random(dtype: DType, len: usize, seed: u64, lo: f32, hi: f32) -> HostBuf {
    const BLOCK: usize = (1 << 20) - 3;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let floor = (hi - lo) / 16.0;
    let values: Vec<f32> = (0..BLOCK.min(len))
        .map(|_| {
            let u = (splitmix64(&mut state) >> 40) as f32 / (1u64 << 24) as f32;
            let v = lo + (hi - lo) * u;
            if v.abs() < floor {
                floor.copysign(if v == 0.0 { 1.0 } else { v })
            } else {
                v
            }
        })
        .collect();
    let block = HostBuf::from_f32(dtype, &values);
    if len <= BLOCK {
        return block;
    }
    let mut out = HostBuf::zeros(dtype, len);
    let src = block.as_bytes();
    for chunk in out.as_bytes_mut().chunks_mut(src.len()) {
        chunk.copy_from_slice(&src[..chunk.len()]);
    }
    out
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_inputs_are_non_zero_and_in_range() {
        let v = random(DType::F32, 10_000, 1, -2.0, 2.0).to_f32_vec();
        assert!(v.iter().all(|&x| x != 0.0 && x.abs() >= 0.25 && (-2.0..=2.0).contains(&x)));
        let pos = random(DType::BF16, 1000, 2, 0.5, 1.5).to_f32_vec();
        assert!(pos.iter().all(|&x| (0.5..=1.5).contains(&x)));
        let tiled = random(DType::BF16, (1 << 21) + 5, 3, -1.0, 1.0).to_f32_vec();
        let block = (1 << 20) - 3;
        assert_eq!(tiled[block + 7], tiled[7]);
        assert!(tiled.iter().all(|&x| x != 0.0));
    }
}
