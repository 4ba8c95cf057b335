//! Gradients through normkit-candle against the same computations built from candle's unfused
//! ops (`candle_nn::ops::rms_norm_slow` / `layer_norm_slow`, which carry gradients).
//!
//! # Tolerance model
//! Errors are normwise: `max |fused − unfused| / max |unfused|` per tensor (see
//! `common::rel_err`). Both sides compute the same function; they differ only in rounding:
//! - **f32**: normkit computes in fp32 with one rounding per output; candle's unfused chain rounds
//!   every intermediate to fp32 too, in other orders (its sums are sequential, normkit's use 8–16
//!   lanes). Each path is within about `u·K` of exact (`u = 2⁻²⁴`, `K` the longest sum: here the
//!   64-wide hidden size or the 48 rows of a batch), so the difference stays below a few hundred
//!   `u` through the model's matmuls: **2e-5**.
//! - **bf16**: candle's unfused chain rounds `x̂` to bf16 before the weight multiply and
//!   accumulates the weight gradient (a sum over rows) in bf16, so its gradients are off by a few
//!   bf16 units of the largest element (`u = 2⁻⁸`), growing with the rows summed; normkit's are
//!   within one rounding. The difference is dominated by candle's error: **6e-2** (about 16 `u`)
//!   for 48 rows. (`accuracy.rs` shows which side is right.) **f16** (`u = 2⁻¹¹`, LayerNorm test
//!   only) shares this bound; it measures about 2e-3.
//!
//! Losses after optimiser steps compare within the same bounds (the loss is a mean, so its
//! relative error is below the gradients').

mod common;

use candle_core::{DType, Device, Module, Result, Tensor, Var, D};
use candle_nn::ops::{layer_norm_slow, rms_norm_slow};
use candle_nn::{Optimizer, VarBuilder, VarMap, SGD};
use common::{batch, rel_err, tensor, Model, EPS};

fn tol(dt: DType) -> f64 {
    match dt {
        DType::F32 => 2e-5,
        _ => 6e-2,
    }
}

#[test]
fn model_gradients_match_candles_unfused_ops() -> Result<()> {
    for dt in [DType::F32, DType::BF16] {
        let model = Model::new(50, 12, 64, dt, &Device::Cpu)?;
        let (tokens, targets) = batch(50, 4, 12, 7, &Device::Cpu)?;
        let (lf, lu) = (model.loss(&tokens, &targets, true)?, model.loss(&tokens, &targets, false)?);
        let (gf, gu) = (lf.backward()?, lu.backward()?);
        let loss_err = rel_err(&lf, &lu)?;
        assert!(loss_err < tol(dt), "{dt:?} loss {lf} vs {lu}");
        for (i, v) in model.vars().iter().enumerate() {
            let (a, b) = (gf.get(v).expect("fused gradient"), gu.get(v).expect("unfused gradient"));
            let e = rel_err(a, b)?;
            eprintln!("{dt:?} var {i} {:?}: normwise gradient difference {e:.2e}", v.dims());
            assert!(e < tol(dt), "{dt:?} var {i} {:?}: {e:.3e} ≥ {:.0e}", v.dims(), tol(dt));
        }
    }
    Ok(())
}

#[test]
fn sgd_steps_give_the_same_losses() -> Result<()> {
    let (tokens, targets) = batch(50, 4, 12, 9, &Device::Cpu)?;
    let losses = |fused: bool| -> Result<Vec<f32>> {
        let model = Model::new(50, 12, 64, DType::F32, &Device::Cpu)?;
        let mut opt = SGD::new(model.vars(), 0.5)?;
        (0..5)
            .map(|_| {
                let loss = model.loss(&tokens, &targets, fused)?;
                opt.backward_step(&loss)?;
                loss.to_scalar::<f32>()
            })
            .collect()
    };
    let (f, u) = (losses(true)?, losses(false)?);
    eprintln!("losses fused {f:?}\nlosses unfused {u:?}");
    assert!(f.last() < f.first(), "training lowers the loss: {f:?}");
    for (a, b) in f.iter().zip(&u) {
        assert!(((a - b) / b).abs() < 2e-5, "{f:?} vs {u:?}");
    }
    Ok(())
}

/// `sum(y · g)` for a fixed `g`, so that `dy = g`.
fn probe(y: &Tensor, seed: u64) -> Result<Tensor> {
    let g = tensor(y.dims(), seed, 1.0, 0.0, y.dtype())?;
    (y.to_dtype(DType::F32)? * g.to_dtype(DType::F32)?)?.sum_all()
}

#[test]
fn layer_norm_gradients_match_for_each_dtype() -> Result<()> {
    for dt in [DType::F32, DType::F16, DType::BF16] {
        let x = Var::from_tensor(&tensor(&[3, 16, 40], 1, 2.0, 0.5, dt)?)?;
        let w = Var::from_tensor(&tensor(&[40], 2, 0.5, 1.0, dt)?)?;
        let b = Var::from_tensor(&tensor(&[40], 3, 0.5, 0.0, dt)?)?;
        let yf = normkit_candle::layer_norm(&x, &w, &b, EPS)?;
        let yu = layer_norm_slow(&x, &w, &b, EPS)?;
        assert!(rel_err(&yf, &yu)? < tol(dt));
        let (gf, gu) = (probe(&yf, 4)?.backward()?, probe(&yu, 4)?.backward()?);
        for (name, v) in [("x", &x), ("w", &w), ("b", &b)] {
            let e = rel_err(gf.get(v).unwrap(), gu.get(v).unwrap())?;
            eprintln!("layer_norm {dt:?} d{name}: {e:.2e}");
            assert!(e < tol(dt), "layer_norm {dt:?} d{name}: {e:.3e}");
        }
    }
    Ok(())
}

#[test]
fn strided_rank3_input_and_the_gemma_offset() -> Result<()> {
    // x is a narrow of the last dimension of a wider tensor: rows 50 apart, 40 used, offset 5.
    let wide = Var::from_tensor(&tensor(&[2, 3, 50], 1, 1.5, 0.2, DType::F32)?)?;
    let x = wide.narrow(2, 5, 40)?;
    assert!(!x.is_contiguous());
    let w = Var::from_tensor(&tensor(&[40], 2, 0.3, 0.0, DType::F32)?)?;
    let yf = normkit_candle::rms_norm_offset(&x, &w, 1.0, EPS)?;
    let yu = rms_norm_slow(&x, &(w.as_tensor() + 1.0)?, EPS)?;
    assert!(rel_err(&yf, &yu)? < 2e-6);
    let (gf, gu) = (probe(&yf, 3)?.backward()?, probe(&yu, 3)?.backward()?);
    let (dwide_f, dwide_u) = (gf.get(&wide).unwrap(), gu.get(&wide).unwrap());
    assert!(rel_err(dwide_f, dwide_u)? < tol(DType::F32));
    // The columns outside the narrow get no gradient.
    assert_eq!(dwide_f.narrow(2, 0, 5)?.abs()?.sum_all()?.to_scalar::<f32>()?, 0.0);
    assert!(rel_err(gf.get(&w).unwrap(), gu.get(&w).unwrap())? < tol(DType::F32));
    Ok(())
}

#[test]
fn add_rms_norm_returns_the_residual_stream_and_both_gradients() -> Result<()> {
    let dt = DType::BF16;
    let x = Var::from_tensor(&tensor(&[5, 7, 24], 1, 1.0, 0.0, dt)?)?;
    let r = Var::from_tensor(&tensor(&[5, 7, 24], 2, 1.0, 0.3, dt)?)?;
    let w = Var::from_tensor(&tensor(&[24], 3, 0.2, 1.0, dt)?)?;
    let (y, h) = normkit_candle::add_rms_norm(&x, &r, &w, EPS)?;
    // h is x + residual rounded once to bf16, as candle's own add rounds it.
    let h_ref = (x.as_tensor() + r.as_tensor())?;
    assert_eq!(h.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?, h_ref.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?);
    // Use both outputs, so that dh (the gradient arriving at the residual stream) is non-zero.
    let loss = (probe(&y, 4)? + probe(&h, 5)?)?;
    let g = loss.backward()?;
    let loss_u = (probe(&rms_norm_slow(&h_ref, &w, EPS)?, 4)? + probe(&h_ref, 5)?)?;
    let gu = loss_u.backward()?;
    let (dx, dr) = (g.get(&x).unwrap(), g.get(&r).unwrap());
    assert_eq!(dx.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?, dr.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?);
    assert!(rel_err(dx, gu.get(&x).unwrap())? < tol(dt));
    assert!(rel_err(g.get(&w).unwrap(), gu.get(&w).unwrap())? < tol(dt));
    Ok(())
}

#[test]
fn modules_are_drop_ins_built_from_a_var_builder() -> Result<()> {
    let map = VarMap::new();
    let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
    let rms = normkit_candle::RmsNorm::new(32, 1e-6, vb.pp("rms"))?;
    let gemma = normkit_candle::RmsNorm::new_with_offset(32, 1e-6, 1.0, vb.pp("gemma"))?;
    let ln = normkit_candle::LayerNorm::new(32, 1e-5, vb.pp("ln"))?;
    let x = tensor(&[4, 32], 1, 1.0, 0.0, DType::F32)?;
    // The same outputs as candle's modules with the same (freshly initialised) parameters.
    let cvb = VarBuilder::from_varmap(&VarMap::new(), DType::F32, &Device::Cpu);
    let (crms, cln) = (candle_nn::rms_norm(32, 1e-6, cvb.pp("rms"))?, candle_nn::layer_norm(32, 1e-5, cvb.pp("ln"))?);
    assert!(rel_err(&rms.forward(&x)?, &crms.forward(&x)?)? < 2e-6);
    assert!(rel_err(&gemma.forward(&x)?, &crms.forward(&x)?)? < 2e-6);
    assert!(rel_err(&ln.forward(&x)?, &cln.forward(&x)?)? < 2e-6);
    // Every parameter is a Var of the map and gets a gradient.
    let loss = (probe(&rms.forward(&x)?, 2)? + probe(&ln.forward(&x)?, 3)? + probe(&gemma.forward(&x)?, 4)?)?;
    let grads = loss.backward()?;
    let names: Vec<String> = map.data().lock().unwrap().keys().cloned().collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for v in map.all_vars() {
        assert!(grads.get(&v).is_some());
    }
    Ok(())
}

#[test]
fn bad_input_is_an_error_not_a_panic() -> Result<()> {
    let dev = Device::Cpu;
    let x = tensor(&[4, 8], 1, 1.0, 0.0, DType::F32)?;
    let w = Tensor::ones(8, DType::F32, &dev)?;
    let cases: Vec<(&str, Result<Tensor>)> = vec![
        ("weight length", normkit_candle::rms_norm(&x, &Tensor::ones(7, DType::F32, &dev)?, EPS)),
        ("weight rank", normkit_candle::rms_norm(&x, &Tensor::ones((1, 8), DType::F32, &dev)?, EPS)),
        ("integer dtype", normkit_candle::rms_norm(&x.to_dtype(DType::U32)?, &w.to_dtype(DType::U32)?, EPS)),
        ("f64", normkit_candle::rms_norm(&x.to_dtype(DType::F64)?, &w.to_dtype(DType::F64)?, EPS)),
        ("mixed dtypes", normkit_candle::rms_norm(&x, &w.to_dtype(DType::BF16)?, EPS)),
        ("empty last dim", normkit_candle::rms_norm(&Tensor::zeros((4, 0), DType::F32, &dev)?, &Tensor::zeros(0, DType::F32, &dev)?, EPS)),
        ("scalar", normkit_candle::rms_norm(&Tensor::new(1f32, &dev)?, &w, EPS)),
        ("eps", normkit_candle::rms_norm(&x, &w, -1.0)),
        ("bias length", normkit_candle::layer_norm(&x, &w, &Tensor::zeros(9, DType::F32, &dev)?, EPS)),
        ("residual shape", normkit_candle::add_rms_norm(&x, &x.narrow(0, 0, 3)?, &w, EPS).map(|(y, _)| y)),
    ];
    for (what, r) in cases {
        let e = r.expect_err(what);
        eprintln!("{what}: {e}");
    }
    Ok(())
}

#[test]
fn empty_batch_gives_empty_outputs_and_zero_weight_gradients() -> Result<()> {
    let x = Var::from_tensor(&Tensor::zeros((0, 3, 16), DType::F32, &Device::Cpu)?)?;
    let w = Var::from_tensor(&Tensor::ones(16, DType::F32, &Device::Cpu)?)?;
    let y = normkit_candle::rms_norm(&x, &w, EPS)?;
    assert_eq!(y.dims(), &[0, 3, 16]);
    let g = probe(&y, 1)?.backward()?;
    assert_eq!(g.get(&w).unwrap().abs()?.max(D::Minus1)?.to_scalar::<f32>()?, 0.0);
    Ok(())
}

#[test]
fn inference_calls_skip_the_statistics_and_give_the_same_bits() -> Result<()> {
    // Plain tensors (nothing tracked): the forward saves no statistics; the outputs are those of
    // the tracked call bit for bit, for every op.
    for dt in [DType::F32, DType::BF16] {
        let (x, w, b) = (tensor(&[6, 40], 1, 2.0, 0.1, dt)?, tensor(&[40], 2, 0.5, 1.0, dt)?, tensor(&[40], 3, 0.5, 0.0, dt)?);
        let r = tensor(&[6, 40], 4, 1.0, 0.0, dt)?;
        let (xv, wv, bv, rv) = (Var::from_tensor(&x)?, Var::from_tensor(&w)?, Var::from_tensor(&b)?, Var::from_tensor(&r)?);
        let bits = |t: &Tensor| -> Result<Vec<f32>> { t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>() };
        assert_eq!(bits(&normkit_candle::rms_norm(&x, &w, EPS)?)?, bits(&normkit_candle::rms_norm(&xv, &wv, EPS)?)?);
        assert_eq!(bits(&normkit_candle::layer_norm(&x, &w, &b, EPS)?)?, bits(&normkit_candle::layer_norm(&xv, &wv, &bv, EPS)?)?);
        let (y0, h0) = normkit_candle::add_rms_norm(&x, &r, &w, EPS)?;
        let (y1, h1) = normkit_candle::add_rms_norm(&xv, &rv, &wv, EPS)?;
        assert_eq!((bits(&y0)?, bits(&h0)?), (bits(&y1)?, bits(&h1)?));
        // Tracked calls still have their backward.
        assert!(probe(&normkit_candle::rms_norm(&xv, &w, EPS)?, 5)?.backward()?.get(&xv).is_some());
    }
    Ok(())
}
