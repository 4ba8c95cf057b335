//! The weight gradient of a bf16 RMSNorm at a training-sized shape, against an f64 reference
//! computed from the same bf16 inputs.
//!
//! `dw[j] = Σ_rows dy[i, j] · x̂[i, j]` sums `M` terms. normkit sums them in fp32 and rounds once
//! to bf16, so `dw` is within one bf16 ulp of the exact value (half an ulp from the rounding, the
//! fp32 sum adding far less). candle's unfused bf16 ops compute `dy · x̂` in bf16 and reduce over
//! the rows with a bf16 sum, so every partial sum is rounded to 8 bits of mantissa: once the
//! running sum is large, small terms are lost, and the error grows with `M`.

mod common;

use candle_core::{DType, Result, Var};
use common::tensor;

#[test]
fn bf16_weight_gradient_is_within_an_ulp_where_candles_unfused_is_not() -> Result<()> {
    // 2048 × 1024 keeps the test at a second or two in a debug build; the effect only grows
    // with M (2048 × 4096 in the benchmark report).
    let (m, n) = (2048, 1024);
    let eps = 1e-6f32;
    // Positive means (x ~ 1 ± 0.5, dy ~ 0.5 ± 0.5) so that dw[j] ≈ M/2 has no cancellation and
    // a relative error is meaningful.
    let x = Var::from_tensor(&tensor(&[m, n], 1, 0.5, 1.0, DType::BF16)?)?;
    let w = Var::from_tensor(&tensor(&[n], 2, 0.1, 1.0, DType::BF16)?)?;
    let dy = tensor(&[m, n], 3, 0.5, 0.5, DType::BF16)?;

    // f64 reference from the bf16 values.
    let xs = x.as_tensor().to_dtype(DType::F64)?.to_vec2::<f64>()?;
    let gs = dy.to_dtype(DType::F64)?.to_vec2::<f64>()?;
    let mut exact = vec![0.0f64; n];
    for (row, g) in xs.iter().zip(&gs) {
        let rstd = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / n as f64 + eps as f64).sqrt();
        for j in 0..n {
            exact[j] += g[j] * row[j] * rstd;
        }
    }

    let dw_of = |y: candle_core::Tensor| -> Result<Vec<f64>> {
        // d(sum(y · dy))/dy = dy, computed in bf16 (the product is exact in f32 and rounded once).
        let grads = (y * &dy)?.sum_all()?.backward()?;
        grads.get(&w).expect("dw").to_dtype(DType::F64)?.to_vec1::<f64>()
    };
    let ours = dw_of(normkit_candle::rms_norm(&x, &w, eps)?)?;
    let theirs = dw_of(candle_nn::ops::rms_norm_slow(&x, &w, eps)?)?;

    // Error in units of the bf16 ulp of the exact value (2^(exponent − 7)).
    let ulps = |got: &[f64]| -> f64 {
        got.iter().zip(&exact).map(|(g, e)| (g - e).abs() / 2f64.powi(e.abs().log2().floor() as i32 - 7)).fold(0.0, f64::max)
    };
    let rel = |got: &[f64]| -> f64 { got.iter().zip(&exact).map(|(g, e)| ((g - e) / e).abs()).fold(0.0, f64::max) };
    let (ours_ulps, theirs_ulps) = (ulps(&ours), ulps(&theirs));
    eprintln!(
        "bf16 RMSNorm dw at {m}x{n}: normkit-candle max error {ours_ulps:.2} ulp ({:.2e} relative); candle unfused {theirs_ulps:.1} ulp ({:.2e} relative)",
        rel(&ours),
        rel(&theirs)
    );
    assert!(ours_ulps <= 1.0, "normkit-candle's dw is {ours_ulps} bf16 ulps from the f64 reference");
    assert!(theirs_ulps > 4.0 * ours_ulps.max(0.5), "candle's unfused dw ({theirs_ulps} ulps) was expected to be far less accurate");
    Ok(())
}
