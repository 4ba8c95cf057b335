use candle_core::{DType, Device, Module, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu; // or Device::new_cuda(0)? with the `cuda` feature
    let map = VarMap::new();
    let vb = VarBuilder::from_varmap(&map, DType::F32, &dev);
    // The one line a model changes: candle_nn::rms_norm(1024, 1e-6, vb.pp("norm")).
    let norm = normkit_candle::RmsNorm::new(1024, 1e-6, vb.pp("norm"))?;

    let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (8, 16, 1024), &dev)?)?;
    let residual = Tensor::randn(0f32, 1.0, (8, 16, 1024), &dev)?;
    let y = norm.forward(&x)?; // fused RMSNorm
    let (y2, h) = norm.forward_add(&y, &residual)?; // fused h = y + residual, RMSNorm(h)
    let loss = (y2.sqr()?.mean_all()? + h.mean_all()?)?;
    let grads = loss.backward()?; // dx, dw (and dresidual) through normkit's fused backward
    println!("dx {:?}, dw {:?}", grads.get(&x).unwrap().dims(), grads.get(&map.all_vars()[0]).unwrap().dims());
    Ok(())
}
