//! Helpers shared by the integration tests: deterministic data and error measures.

#![allow(dead_code)]

use candle_core::{DType, Device, Result, Tensor};

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
