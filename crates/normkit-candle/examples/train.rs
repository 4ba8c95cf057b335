//! Trains a tiny pre-norm model with normkit-candle's fused norms on synthetic data:
//! embedding → 2 × (add + RMSNorm → linear → GELU) → add + RMSNorm → logits, AdamW.
//!
//! `cargo run --release -p normkit-candle --example train [-- STEPS]` (300 steps by default; CPU;
//! `--features cuda` trains on GPU 0).
//!
//! The task: each sequence follows `t[k+1] = (5·t[k] + 3) mod V` from a random start, so the
//! next token is a function of the current one and the loss falls towards 0.

use std::io::Write;
use std::time::Instant;

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use normkit_candle::RmsNorm;

const VOCAB: usize = 64;
const SEQ: usize = 32;
const BATCH: usize = 16;
const HIDDEN: usize = 128;

/// The device the example trains on: GPU 0 when built with `--features cuda` (normkit's CUDA
/// kernels then run on candle's own stream), the CPU otherwise.
fn device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    return Device::new_cuda(0);
    #[cfg(not(feature = "cuda"))]
    Ok(Device::Cpu)
}

struct Block {
    norm: RmsNorm,
    lin: candle_nn::Linear,
}

struct Model {
    emb: candle_nn::Embedding,
    blocks: Vec<Block>,
    final_norm: RmsNorm,
    head: candle_nn::Linear,
}

impl Model {
    fn new(vb: VarBuilder) -> Result<Model> {
        let blocks = (0..2)
            .map(|i| {
                let vb = vb.pp(format!("block{i}"));
                // The one line a candle model changes: `candle_nn::rms_norm(HIDDEN, 1e-6, vb)`.
                Ok(Block { norm: RmsNorm::new(HIDDEN, 1e-6, vb.pp("norm"))?, lin: candle_nn::linear(HIDDEN, HIDDEN, vb.pp("lin"))? })
            })
            .collect::<Result<_>>()?;
        Ok(Model {
            emb: candle_nn::embedding(VOCAB, HIDDEN, vb.pp("emb"))?,
            blocks,
            final_norm: RmsNorm::new(HIDDEN, 1e-6, vb.pp("final_norm"))?,
            head: candle_nn::linear(HIDDEN, VOCAB, vb.pp("head"))?,
        })
    }

    /// Logits `[B, T, V]` for tokens `[B, T]`.
    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let mut residual = self.emb.forward(tokens)?;
        let mut x = residual.zeros_like()?;
        for b in &self.blocks {
            // h = x + residual (the residual stream), y = RMSNorm(h): one fused op, with gradients.
            let (y, h) = b.norm.forward_add(&x, &residual)?;
            x = b.lin.forward(&y)?.gelu()?;
            residual = h;
        }
        let (y, _) = self.final_norm.forward_add(&x, &residual)?;
        self.head.forward(&y)
    }
}

/// A batch of sequences `t[k+1] = (5·t[k] + 3) mod V`: inputs `[B, T]` and next tokens `[B·T]`.
fn batch(step: usize, dev: &Device) -> Result<(Tensor, Tensor)> {
    let mut s = (step as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let (mut inputs, mut targets) = (Vec::with_capacity(BATCH * SEQ), Vec::with_capacity(BATCH * SEQ));
    for _ in 0..BATCH {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let mut t = (s % VOCAB as u64) as u32;
        for _ in 0..SEQ {
            inputs.push(t);
            t = (5 * t + 3) % VOCAB as u32;
            targets.push(t);
        }
    }
    Ok((Tensor::from_vec(inputs, (BATCH, SEQ), dev)?, Tensor::from_vec(targets, BATCH * SEQ, dev)?))
}

/// `[#####.....] 120/300 loss 1.234` on one line of stderr.
fn progress(step: usize, steps: usize, loss: f32) {
    const WIDTH: usize = 40;
    let done = WIDTH * step / steps;
    eprint!("\r[{}{}] {step:>4}/{steps} loss {loss:.4}", "#".repeat(done), ".".repeat(WIDTH - done));
    let _ = std::io::stderr().flush();
}

fn main() -> Result<()> {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    let dev = device()?;
    let map = VarMap::new();
    let model = Model::new(VarBuilder::from_varmap(&map, DType::F32, &dev))?;
    let mut opt = AdamW::new(map.all_vars(), ParamsAdamW { lr: 3e-3, ..Default::default() })?;

    println!("training on {dev:?}: {BATCH}×{SEQ} tokens per step, hidden {HIDDEN}, {steps} steps");
    let start = Instant::now();
    let mut first = None;
    let mut last = f32::NAN;
    for step in 0..steps {
        let (inputs, targets) = batch(step, &dev)?;
        let logits = model.forward(&inputs)?.reshape((BATCH * SEQ, VOCAB))?;
        let loss = candle_nn::loss::cross_entropy(&logits, &targets)?;
        opt.backward_step(&loss)?;
        last = loss.to_scalar::<f32>()?;
        first.get_or_insert(last);
        progress(step + 1, steps, last);
        if (step + 1) % 50 == 0 || step + 1 == steps {
            eprintln!();
            println!("step {:>4}: loss {last:.4}", step + 1);
        }
    }
    // Accuracy on a fresh batch.
    let (inputs, targets) = batch(steps + 1, &dev)?;
    let predicted = model.forward(&inputs)?.reshape((BATCH * SEQ, VOCAB))?.argmax(D::Minus1)?;
    let correct = predicted.eq(&targets)?.to_dtype(DType::F32)?.mean_all()?.to_scalar::<f32>()?;
    println!(
        "loss {:.4} → {last:.4} in {:.1} s; next-token accuracy on a fresh batch {:.1}%",
        first.unwrap_or(f32::NAN),
        start.elapsed().as_secs_f64(),
        100.0 * correct
    );
    Ok(())
}
