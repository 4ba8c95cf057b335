//! normkit-candle on CUDA (`--features cuda`; runs in the GPU bundle: `cargo xtask gpu-bundle
//! --candle`, `run.sh candle`). The ops run normkit's CUDA backend on candle's own stream, on
//! candle's storage. Checked here:
//! - every op, forward and backward, in f32 / f16 / bf16, contiguous and strided, against the
//!   same op on the CPU (normkit's rayon backend, which the CPU tests check against candle's
//!   unfused ops and against f64): both compute in fp32 with one rounding per output, in
//!   different orders, so they agree within one rounding of the output dtype (normwise, relative
//!   to the largest element: f32 2e-6, f16 2e-3, bf16 1.6e-2 — 2u of each format, u the unit
//!   roundoff, since either side may round the other way);
//! - the small model's gradients against candle's unfused ops on the GPU, with the CPU test's
//!   tolerance model (`grads.rs`), and its training losses against the CPU run;
//! - bad input is a candle error.

#![cfg(feature = "cuda")]

mod common;

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::ops::rms_norm_slow;
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use common::{batch, rel_err, tensor, Model, EPS};

fn cuda() -> Result<Device> {
    Device::new_cuda(0)
}

/// Two roundings of the output dtype (see the file's docs).
fn tol(dt: DType) -> f64 {
    match dt {
        DType::F32 => 2e-6,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

/// `sum(y · g)` for a fixed `g`, so that `dy = g`.
fn probe(y: &Tensor, seed: u64) -> Result<Tensor> {
    let g = tensor(y.dims(), seed, 1.0, 0.0, y.dtype())?.to_device(y.device())?;
    (y.to_dtype(DType::F32)? * g.to_dtype(DType::F32)?)?.sum_all()
}

/// One op of normkit-candle and the gradients of every input, on `dev`.
fn run(op: &str, inputs: &[Tensor], dev: &Device) -> Result<Vec<Tensor>> {
    let vars: Vec<Var> = inputs.iter().map(|t| Var::from_tensor(&t.to_device(dev)?)).collect::<Result<_>>()?;
    // A strided x: the first input is a narrow of the last dimension of a wider tensor.
    let n = inputs[1].dims().last().copied().unwrap_or(0);
    let x = vars[0].narrow(vars[0].rank() - 1, 3, n)?;
    let (outs, loss) = match op {
        "rms" => {
            let y = normkit_candle::rms_norm(&x, &vars[1], EPS)?;
            (vec![y.clone()], probe(&y, 11)?)
        }
        "gemma" => {
            let y = normkit_candle::rms_norm_offset(&x, &vars[1], 1.0, EPS)?;
            (vec![y.clone()], probe(&y, 11)?)
        }
        "layer" => {
            let y = normkit_candle::layer_norm(&x, &vars[1], &vars[2], EPS)?;
            (vec![y.clone()], probe(&y, 11)?)
        }
        "add" => {
            let (y, h) = normkit_candle::add_rms_norm(&x, &vars[2], &vars[1], EPS)?;
            let loss = (probe(&y, 11)? + probe(&h, 12)?)?;
            (vec![y, h], loss)
        }
        _ => unreachable!(),
    };
    let grads = loss.backward()?;
    let mut v = outs;
    for var in &vars {
        v.push(grads.get(var).expect("every input gets a gradient").clone());
    }
    Ok(v)
}

#[test]
fn every_op_matches_the_cpu_path() -> Result<()> {
    let gpu = cuda()?;
    let mut checked = 0;
    for dt in [DType::F32, DType::F16, DType::BF16] {
        for shape in [vec![1usize, 4096], vec![7, 1000], vec![2, 3, 517], vec![128, 4096], vec![3, 20001]] {
            let n = *shape.last().unwrap();
            let mut wide = shape.clone();
            *wide.last_mut().unwrap() = n + 8;
            let x = tensor(&wide, 1, 2.0, 0.3, dt)?;
            let w = tensor(&[n], 2, 0.5, 1.0, dt)?;
            let b = tensor(&[n], 3, 0.5, 0.0, dt)?;
            let r = tensor(&shape, 4, 1.0, -0.2, dt)?;
            for (op, inputs) in [
                ("rms", vec![x.clone(), w.clone()]),
                ("gemma", vec![x.clone(), w.clone()]),
                ("layer", vec![x.clone(), w.clone(), b.clone()]),
                ("add", vec![x.clone(), w.clone(), r.clone()]),
            ] {
                let (g, c) = (run(op, &inputs, &gpu)?, run(op, &inputs, &Device::Cpu)?);
                for (i, (a, e)) in g.iter().zip(&c).enumerate() {
                    assert!(a.device().is_cuda(), "{op}: output {i} stays on the GPU");
                    let err = rel_err(&a.to_device(&Device::Cpu)?, e)?;
                    assert!(
                        err <= tol(dt),
                        "{op} {dt:?} {shape:?}: output/gradient {i} differs from the CPU by {err:.3e} > {:.1e}",
                        tol(dt)
                    );
                    checked += 1;
                }
            }
        }
    }
    println!("normkit-candle on CUDA: {checked} outputs and gradients within two roundings of the CPU path");
    Ok(())
}

#[test]
fn model_gradients_match_candles_unfused_ops_on_the_gpu() -> Result<()> {
    let gpu = cuda()?;
    for dt in [DType::F32, DType::BF16] {
        let model = Model::new(50, 12, 64, dt, &gpu)?;
        let (tokens, targets) = batch(50, 4, 12, 7, &gpu)?;
        let (lf, lu) = (model.loss(&tokens, &targets, true)?, model.loss(&tokens, &targets, false)?);
        let (gf, gu) = (lf.backward()?, lu.backward()?);
        // The CPU test's tolerance model (grads.rs): f32 2e-5, bf16 6e-2.
        let t = if dt == DType::F32 { 2e-5 } else { 6e-2 };
        assert!(rel_err(&lf, &lu)? < t, "{dt:?} loss {lf} vs {lu}");
        for (i, v) in model.vars().iter().enumerate() {
            let e = rel_err(gf.get(v).unwrap(), gu.get(v).unwrap())?;
            println!("cuda {dt:?} var {i} {:?}: normwise gradient difference {e:.2e}", v.dims());
            assert!(e < t, "{dt:?} var {i}: {e:.3e}");
        }
    }
    Ok(())
}

#[test]
fn training_on_the_gpu_follows_the_cpu() -> Result<()> {
    let gpu = cuda()?;
    let losses = |dev: &Device| -> Result<Vec<f32>> {
        let model = Model::new(50, 12, 64, DType::F32, dev)?;
        let (tokens, targets) = batch(50, 4, 12, 9, dev)?;
        let mut opt = AdamW::new(model.vars(), ParamsAdamW { lr: 1e-2, ..Default::default() })?;
        (0..20)
            .map(|_| {
                let loss = model.loss(&tokens, &targets, true)?;
                opt.backward_step(&loss)?;
                loss.to_scalar::<f32>()
            })
            .collect()
    };
    let (g, c) = (losses(&gpu)?, losses(&Device::Cpu)?);
    println!("losses cuda {g:?}\nlosses cpu  {c:?}");
    assert!(g.last() < g.first(), "training lowers the loss");
    for (a, b) in g.iter().zip(&c) {
        // 20 AdamW steps amplify fp32 rounding differences (cuBLAS vs the CPU gemm too): 1e-3.
        assert!(((a - b) / b).abs() < 1e-3, "{g:?} vs {c:?}");
    }
    Ok(())
}

#[test]
fn rms_norm_on_the_gpu_is_candles_fused_op_within_rounding() -> Result<()> {
    let gpu = cuda()?;
    for dt in [DType::F32, DType::BF16] {
        let x = tensor(&[64, 4096], 1, 2.0, 0.0, dt)?.to_device(&gpu)?;
        let w = tensor(&[4096], 2, 0.5, 1.0, dt)?.to_device(&gpu)?;
        let ours = normkit_candle::rms_norm(&x, &w, EPS)?;
        let fused = candle_nn::ops::rms_norm(&x, &w, EPS)?;
        let slow = rms_norm_slow(&x, &w, EPS)?;
        assert!(rel_err(&ours, &fused)? <= tol(dt), "{dt:?} vs candle's fused");
        assert!(rel_err(&ours, &slow)? <= 2.0 * tol(dt), "{dt:?} vs candle's unfused");
    }
    Ok(())
}

#[test]
fn bad_input_on_the_gpu_is_an_error() -> Result<()> {
    let gpu = cuda()?;
    let x = tensor(&[4, 8], 1, 1.0, 0.0, DType::F32)?.to_device(&gpu)?;
    let w = Tensor::ones(8, DType::F32, &gpu)?;
    let cases: Vec<(&str, Result<Tensor>)> = vec![
        ("weight length", normkit_candle::rms_norm(&x, &Tensor::ones(7, DType::F32, &gpu)?, EPS)),
        ("integer dtype", normkit_candle::rms_norm(&x.to_dtype(DType::U32)?, &w.to_dtype(DType::U32)?, EPS)),
        ("weight on the CPU", normkit_candle::rms_norm(&x, &Tensor::ones(8, DType::F32, &Device::Cpu)?, EPS)),
        ("empty last dim", normkit_candle::rms_norm(&Tensor::zeros((4, 0), DType::F32, &gpu)?, &Tensor::zeros(0, DType::F32, &gpu)?, EPS)),
    ];
    for (what, r) in cases {
        let e = r.expect_err(what);
        println!("{what}: {e}");
    }
    Ok(())
}
