//! normkit-candle against candle 0.11 on the CPU: RMSNorm and LayerNorm, forward alone (against
//! candle's fused `candle_nn::ops::rms_norm` / `layer_norm`, which have no backward, and its
//! unfused `rms_norm_slow` / `layer_norm_slow`) and forward + backward (against the unfused ops,
//! the only candle path with gradients).
//!
//! `cargo bench -p normkit-candle --bench candle` (add `-- rms_fwd/` etc. to filter; set
//! `NORMKIT_CANDLE_BENCH_LARGE=0` to skip the 8192×4096 shape). On a GPU (`--features cuda`,
//! `NORMKIT_CANDLE_BENCH_DEVICE=cuda`; the GPU bundle's `run.sh candle`) the same groups run on
//! GPU 0, plus an 8×4096 decode shape.
//!
//! Throughput counts the bytes a fused implementation must move, the same for every contender:
//! forward `x` read + `y` written (`2·M·N` elements); forward + backward adds `x` and `dy` read
//! and `dx` written (`5·M·N`). Weight, bias and statistics are `O(N + M)` and left out. The
//! forward + backward runs `sum(y · g).backward()` for a fixed `g`, so both sides also pay one
//! candle multiply, one sum and their backward; the `loss_only` group times that part alone
//! (on the input itself), to be subtracted for the cost of the norm's forward + backward.

use candle_core::{DType, Device, Result, Tensor, Var};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

fn shapes(dev: &Device) -> Vec<(usize, usize)> {
    // On the GPU also a decode shape, where launch and dispatch overhead dominate.
    let mut s = if dev.is_cuda() { vec![(8, 4096), (1024, 4096)] } else { vec![(1024, 4096)] };
    if std::env::var("NORMKIT_CANDLE_BENCH_LARGE").as_deref() != Ok("0") {
        s.push((8192, 4096));
    }
    s
}

/// The device: the CPU, or GPU 0 with `NORMKIT_CANDLE_BENCH_DEVICE=cuda` (a `--features cuda`
/// build; the GPU bundle's `run.sh candle`). On the GPU every timed iteration ends with a
/// synchronisation, so each contender's time includes its launches and the wait for its kernels.
fn device() -> Device {
    match std::env::var("NORMKIT_CANDLE_BENCH_DEVICE").as_deref() {
        Ok("cuda") => Device::new_cuda(0).expect("NORMKIT_CANDLE_BENCH_DEVICE=cuda needs a --features cuda build and a GPU"),
        _ => Device::Cpu,
    }
}

fn rand(shape: (usize, usize), dt: DType, dev: &Device) -> Result<Tensor> {
    Tensor::randn(0f32, 1.0, shape, &Device::Cpu)?.to_dtype(dt)?.to_device(dev)
}

type Fwd = fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>;

fn rms_normkit(x: &Tensor, w: &Tensor, _: &Tensor) -> Result<Tensor> {
    normkit_candle::rms_norm(x, w, 1e-6)
}
fn rms_candle_fused(x: &Tensor, w: &Tensor, _: &Tensor) -> Result<Tensor> {
    candle_nn::ops::rms_norm(x, w, 1e-6)
}
fn rms_candle_unfused(x: &Tensor, w: &Tensor, _: &Tensor) -> Result<Tensor> {
    candle_nn::ops::rms_norm_slow(x, w, 1e-6)
}
fn ln_normkit(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    normkit_candle::layer_norm(x, w, b, 1e-5)
}
fn ln_candle_fused(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    candle_nn::ops::layer_norm(x, w, b, 1e-5)
}
fn ln_candle_unfused(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    candle_nn::ops::layer_norm_slow(x, w, b, 1e-5)
}

/// The loss machinery alone: `y` is the input itself, so this times `sum(x · g).backward()`, which
/// the forward + backward figures include; the report subtracts it.
fn loss_only(x: &Tensor, _: &Tensor, _: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn bench(c: &mut Criterion) {
    let ops: [(&str, [(&str, Fwd); 3]); 2] = [
        ("rms", [("normkit", rms_normkit), ("candle_fused", rms_candle_fused), ("candle_unfused", rms_candle_unfused)]),
        ("ln", [("normkit", ln_normkit), ("candle_fused", ln_candle_fused), ("candle_unfused", ln_candle_unfused)]),
    ];
    let dev = device();
    let sync = |d: &Device| d.synchronize().unwrap();
    for (m, n) in shapes(&dev) {
        for dt in [DType::F32, DType::BF16] {
            let es = dt.size_in_bytes() as u64;
            let x = Var::from_tensor(&rand((m, n), dt, &dev).unwrap()).unwrap();
            let w = Var::from_tensor(&rand((1, n), dt, &dev).unwrap().squeeze(0).unwrap().affine(0.1, 1.0).unwrap()).unwrap();
            let b = Var::from_tensor(&rand((1, n), dt, &dev).unwrap().squeeze(0).unwrap()).unwrap();
            let g = rand((m, n), dt, &dev).unwrap();
            let case = format!("{}/{dt:?}/{m}x{n}", if dev.is_cuda() { "cuda" } else { "cpu" }).to_lowercase();
            for (op, impls) in &ops {
                // The forward alone is inference: untracked inputs (no autograd graph, so
                // normkit-candle saves no statistics), as candle's fused ops are used.
                let (xd, wd, bd) = (x.as_tensor().detach(), w.as_tensor().detach(), b.as_tensor().detach());
                let mut group = c.benchmark_group(format!("{op}_fwd"));
                group.throughput(Throughput::Bytes(2 * (m * n) as u64 * es));
                for (name, f) in impls {
                    group.bench_with_input(BenchmarkId::new(*name, &case), &(), |bch, _| {
                        bch.iter(|| {
                            let y = f(&xd, &wd, &bd).unwrap();
                            sync(&dev);
                            y
                        })
                    });
                }
                group.finish();

                let mut group = c.benchmark_group(format!("{op}_fwd_bwd"));
                group.throughput(Throughput::Bytes(5 * (m * n) as u64 * es));
                // candle's fused ops have no backward: only normkit and the unfused chain.
                for (name, f) in impls.iter().filter(|(name, _)| *name != "candle_fused") {
                    group.bench_with_input(BenchmarkId::new(*name, &case), &(), |bch, _| {
                        bch.iter(|| {
                            let y = f(&x, &w, &b).unwrap();
                            let grads = (y * &g).unwrap().sum_all().unwrap().backward().unwrap();
                            sync(&dev);
                            grads
                        })
                    });
                }
                group.finish();
            }
            let mut group = c.benchmark_group("loss_only");
            group.throughput(Throughput::Bytes(5 * (m * n) as u64 * es));
            group.bench_with_input(BenchmarkId::new("candle", &case), &(), |bch, _| {
                bch.iter(|| {
                    let grads = (loss_only(&x, &w, &b).unwrap() * &g).unwrap().sum_all().unwrap().backward().unwrap();
                    sync(&dev);
                    grads
                })
            });
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
