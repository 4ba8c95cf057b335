//! The buffers of one benchmarked call: random, non-zero inputs generated once per case on the
//! host and uploaded into every rotated set; outputs allocated on the backend.
//!
//! An FP8 op's `y` (and `yT`) is allocated in the case's FP8 format; its per-tensor scale is a
//! one-element f32 device buffer (what a training loop with delayed scaling keeps), set to a
//! quarter of the format's largest value: the inputs' `|y|` stays under about 3, so the values
//! use the format's range without saturating.

use crate::grid::Case;
use crate::ops::Fp8Outputs;
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

/// The operands one call reads: random and non-zero, uploaded from [`HostInputs`].
struct Inputs<Buf> {
    x: Buf,
    /// `dy` (backward).
    dy: Option<Buf>,
    /// `residual` (forward) or `d_residual_out` (backward) of the fused add.
    res: Option<Buf>,
    w: Buf,
    /// The bias (LayerNorm forward).
    b: Option<Buf>,
    /// The saved statistics (backward): LayerNorm's mean, and rstd.
    mean: Option<Buf>,
    rstd: Option<Buf>,
    /// The per-tensor FP8 scale (one f32; FP8 ops without per-row scaling).
    scale: Option<Buf>,
}

/// What one call writes; uninitialised.
struct Outputs<Buf> {
    /// `y` (forward) or `dx` (backward).
    out: Buf,
    /// `residual_out` (forward, fused add).
    res_out: Option<Buf>,
    /// The statistics (forward): LayerNorm's mean, and rstd.
    mean: Option<Buf>,
    rstd: Option<Buf>,
    dw: Option<Buf>,
    db: Option<Buf>,
    /// The FP8 outputs: amax, the scale's inverse (one f32 per tensor, M per row), `yT` (N×M).
    amax: Option<Buf>,
    scale_inv: Option<Buf>,
    y_t: Option<Buf>,
}

/// The buffers of a timed case: `inputs` rotated call by call, and `outputs` — as many sets
/// (each call writes the set of its inputs' index) or one set that every call writes (the
/// peer script's situation: PyTorch's caching allocator hands each call the block its
/// predecessor's output just freed, so the outputs stay at one address).
pub(crate) struct Sets<Buf> {
    inputs: Vec<Inputs<Buf>>,
    outputs: Vec<Outputs<Buf>>,
}

impl<Buf: Buffer> Sets<Buf> {
    /// `n_inputs` input sets (at least one) and `n_outputs` output sets (at least one, at most
    /// `n_inputs`).
    pub(crate) fn new<B: NormKernel<Buffer = Buf>>(
        backend: &B,
        case: &Case,
        host: &HostInputs,
        n_inputs: usize,
        n_outputs: usize,
    ) -> Result<Self> {
        let inputs = (0..n_inputs.max(1)).map(|_| Inputs::new(backend, case, host)).collect::<Result<Vec<_>>>()?;
        let outputs = (0..n_outputs.clamp(1, n_inputs.max(1))).map(|_| Outputs::new(backend, case)).collect::<Result<Vec<_>>>()?;
        Ok(Sets { inputs, outputs })
    }

    /// Input sets, output sets.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.inputs.len(), self.outputs.len())
    }

    /// Call number `i` of `case`: input set `i` and output set `i`, both modulo their counts.
    pub(crate) fn call<B: NormKernel<Buffer = Buf>>(&mut self, backend: &B, case: &Case, desc: &NormDesc, i: usize) -> Result<()> {
        let (op, m, n) = (case.op, case.m, case.n);
        let (ni, no) = self.counts();
        let inp = &self.inputs[i % ni];
        let o = &mut self.outputs[i % no];
        if op.direction() == Direction::Forward {
            let Some(rstd) = o.rstd.as_mut() else { return Err(NormError::Missing { operand: normkit_core::Operand::Rstd }) };
            let mut a = Forward::new(InOut::separate(MatRef::new(&inp.x, m, n), MatMut::new(&mut o.out, m, n)))
                .weight(VecRef::new(&inp.w))
                .rstd(VecMut::new(rstd));
            if let Some(b) = &inp.b {
                a = a.bias(VecRef::new(b));
            }
            if let (Some(r), Some(ro)) = (&inp.res, o.res_out.as_mut()) {
                a = a.residual(InOut::separate(MatRef::new(r, m, n), MatMut::new(ro, m, n)));
            }
            if let Some(mean) = o.mean.as_mut() {
                a = a.mean(VecMut::new(mean));
            }
            if let Some(f) = op.fp8() {
                let mut q = match (inp.scale.as_ref(), o.scale_inv.as_mut()) {
                    (Some(s), inv) => {
                        let q = Fp8::per_tensor(Scale::Device(VecRef::new(s)));
                        match inv {
                            Some(inv) => q.scale_inv(VecMut::new(inv)),
                            None => q,
                        }
                    }
                    (None, Some(inv)) if f.per_row => Fp8::per_row(VecMut::new(inv)),
                    _ => return Err(NormError::Missing { operand: normkit_core::Operand::ScaleInv }),
                };
                if let Some(amax) = o.amax.as_mut() {
                    q = q.amax(VecMut::new(amax));
                }
                if let Some(t) = o.y_t.as_mut() {
                    q = q.transposed(MatMut::new(t, n, m));
                }
                a = a.fp8(q);
            }
            backend.forward(desc, a)
        } else {
            let (Some(dy), Some(rstd)) = (inp.dy.as_ref(), inp.rstd.as_ref()) else {
                return Err(NormError::Missing { operand: normkit_core::Operand::Dy });
            };
            let mut a = Backward::new(
                MatRef::new(&inp.x, m, n),
                InOut::separate(MatRef::new(dy, m, n), MatMut::new(&mut o.out, m, n)),
                VecRef::new(rstd),
            )
            .weight(VecRef::new(&inp.w));
            if let Some(dw) = o.dw.as_mut() {
                a = a.dw(VecMut::new(dw));
            }
            if let Some(db) = o.db.as_mut() {
                a = a.db(VecMut::new(db));
            }
            if let Some(mean) = &inp.mean {
                a = a.mean(VecRef::new(mean));
            }
            if let Some(r) = &inp.res {
                a = a.d_residual_out(MatRef::new(r, m, n));
            }
            backend.backward(desc, a)
        }
    }
}

/// `Some(f())` where `cond` holds.
fn opt<Buf>(cond: bool, f: impl FnOnce() -> Result<Buf>) -> Result<Option<Buf>> {
    if cond {
        f().map(Some)
    } else {
        Ok(None)
    }
}

impl<Buf: Buffer> Inputs<Buf> {
    fn new<B: NormKernel<Buffer = Buf>>(backend: &B, case: &Case, host: &HostInputs) -> Result<Self> {
        let (op, bwd) = (case.op, case.op.direction() == Direction::Backward);
        let up = |h: &HostBuf| backend.upload(h);
        Ok(Inputs {
            x: up(&host.x)?,
            dy: opt(bwd, || up(&host.dy))?,
            res: opt(op.has_residual(), || up(&host.res))?,
            w: up(&host.w)?,
            b: opt(op.is_layer() && !bwd, || up(&host.b))?,
            mean: opt(op.is_layer() && bwd, || up(&host.mean))?,
            rstd: opt(bwd, || up(&host.rstd))?,
            scale: opt(op.fp8().is_some_and(|f| !f.per_row), || up(&host.scale))?,
        })
    }
}

impl<Buf: Buffer> Outputs<Buf> {
    fn new<B: NormKernel<Buffer = Buf>>(backend: &B, case: &Case) -> Result<Self> {
        let (m, n, dt) = (case.m, case.n, case.dtype);
        let (op, bwd) = (case.op, case.op.direction() == Direction::Backward);
        let out = |dtype, len| backend.alloc(dtype, len);
        let none = Fp8Outputs { per_row: false, amax: false, scale_inv: false, transposed: false };
        let f = op.fp8().unwrap_or(none);
        Ok(Outputs {
            out: out(case.y_dtype(), m * n)?,
            res_out: opt(op.has_residual() && !bwd, || out(dt, m * n))?,
            mean: opt(op.is_layer() && !bwd, || out(DType::F32, m))?,
            rstd: opt(!bwd, || out(DType::F32, m))?,
            dw: opt(bwd, || out(dt, n))?,
            db: opt(bwd && op.is_layer(), || out(dt, n))?,
            amax: opt(f.amax, || out(DType::F32, 1))?,
            scale_inv: opt(f.scale_inv, || out(DType::F32, if f.per_row { m } else { 1 }))?,
            y_t: opt(f.transposed, || out(case.fp8, n * m))?,
        })
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
