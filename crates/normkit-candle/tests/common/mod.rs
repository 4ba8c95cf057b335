//! Helpers shared by the integration tests: deterministic data and error measures.

#![allow(dead_code)]

use candle_core::{DType, Device, Module, Result, Tensor, Var};
use candle_nn::ops::rms_norm_slow;

/// The norms' epsilon in every test.
pub const EPS: f32 = 1e-5;

/// Deterministic pseudo-random values in [-1, 1) (xorshift), so runs and both models of a
/// comparison see the same numbers.
pub fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A tensor of `shape` filled with `scale · data + shift`, in `dt`.
pub fn tensor(shape: &[usize], seed: u64, scale: f32, shift: f32, dt: DType) -> Result<Tensor> {
    let len = shape.iter().product();
    let v: Vec<f32> = data(len, seed).iter().map(|x| x * scale + shift).collect();
    Tensor::from_vec(v, shape, &Device::Cpu)?.to_dtype(dt)
}

/// `max |a − b| / max |b|`, in f64: the error of `a` relative to the size of the reference `b`.
/// Gradients of a model have elements near zero next to large ones, so an elementwise relative
/// error would be dominated by cancellation; this is the normwise (∞-norm) error.
pub fn rel_err(a: &Tensor, b: &Tensor) -> Result<f64> {
    let (a, b) = (a.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?, b.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?);
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-30);
    Ok(a.iter().zip(&b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale)
}

/// The parameters of the small model: an embedding, a position table, three norm weights, two
/// linear layers and an output projection.
pub struct Model {
    vocab: usize,
    hidden: usize,
    emb: Var,
    pos: Var,
    norms: Vec<Var>,
    lins: Vec<(Var, Var)>,
    out: Var,
}

impl Model {
    pub fn new(vocab: usize, seq: usize, hidden: usize, dt: DType, dev: &Device) -> Result<Model> {
        let var =
            |shape: &[usize], seed: u64, scale: f32, shift: f32| Var::from_tensor(&tensor(shape, seed, scale, shift, dt)?.to_device(dev)?);
        let lin_scale = 1.0 / (hidden as f32).sqrt();
        Ok(Model {
            vocab,
            hidden,
            emb: var(&[vocab, hidden], 1, 1.0, 0.0)?,
            pos: var(&[seq, hidden], 2, 0.5, 0.0)?,
            norms: (0..3).map(|i| var(&[hidden], 10 + i, 0.2, 1.0)).collect::<Result<_>>()?,
            lins: (0..2)
                .map(|i| Ok((var(&[hidden, hidden], 20 + i, lin_scale, 0.0)?, var(&[hidden], 30 + i, 0.1, 0.0)?)))
                .collect::<Result<_>>()?,
            out: var(&[vocab, hidden], 40, lin_scale, 0.0)?,
        })
    }

    pub fn vars(&self) -> Vec<Var> {
        let mut v = vec![self.emb.clone(), self.pos.clone(), self.out.clone()];
        v.extend(self.norms.iter().cloned());
        v.extend(self.lins.iter().flat_map(|(w, b)| [w.clone(), b.clone()]));
        v
    }

    /// Embedding → 2 × (add + RMSNorm → linear) → add + RMSNorm → logits → cross-entropy (f32).
    /// `fused` picks normkit-candle or candle's unfused ops for every norm.
    pub fn loss(&self, tokens: &Tensor, targets: &Tensor, fused: bool) -> Result<Tensor> {
        let (b, t) = tokens.dims2()?;
        let emb = candle_nn::Embedding::new(self.emb.as_tensor().clone(), self.hidden);
        let mut x = emb.forward(tokens)?;
        // A broadcast (stride 0 along the batch): normkit-candle makes it contiguous first.
        let mut r = self.pos.as_tensor().unsqueeze(0)?.broadcast_as((b, t, self.hidden))?;
        let add_norm = |x: &Tensor, r: &Tensor, w: &Var| -> Result<(Tensor, Tensor)> {
            if fused {
                normkit_candle::add_rms_norm(x, r, w.as_tensor(), EPS)
            } else {
                let h = (x + r)?;
                Ok((rms_norm_slow(&h, w.as_tensor(), EPS)?, h))
            }
        };
        for (l, (w, bias)) in self.lins.iter().enumerate() {
            let (y, h) = add_norm(&x, &r, &self.norms[l])?;
            x = candle_nn::Linear::new(w.as_tensor().clone(), Some(bias.as_tensor().clone())).forward(&y)?;
            r = h;
        }
        let (y, _) = add_norm(&x, &r, &self.norms[2])?;
        let logits = y.broadcast_matmul(&self.out.as_tensor().t()?)?.reshape((b * t, self.vocab))?.to_dtype(DType::F32)?;
        candle_nn::loss::cross_entropy(&logits, targets)
    }
}

/// A batch of `b` sequences of `t` token ids and the `b·t` targets, on `dev`.
pub fn batch(vocab: usize, b: usize, t: usize, seed: u64, dev: &Device) -> Result<(Tensor, Tensor)> {
    let ids = |s| -> Vec<u32> { data(b * t, s).iter().map(|v| ((v + 1.0) * 0.5 * vocab as f32) as u32 % vocab as u32).collect() };
    Ok((Tensor::from_vec(ids(seed), (b, t), dev)?, Tensor::from_vec(ids(seed + 1), b * t, dev)?))
}
