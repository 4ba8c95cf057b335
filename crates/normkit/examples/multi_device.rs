//! One normkit backend per CUDA device, each driven by its own thread: the pattern for an engine
//! that shards a model over several GPUs. Every device present runs the same fused add + RMSNorm
//! on its own stream and memory, and the results are checked against the CPU backend.
//!
//! ```text
//! cargo run --release -p normkit --features cuda --example multi_device
//! ```
//!
//! One GPU is enough to run it; without a CUDA driver or device it says so and exits cleanly.

use half::bf16;
use normkit::cuda::cudarc::driver::CudaContext;
use normkit::cuda::CudaBackend;
use normkit::{cpu::CpuBackend, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, VecRef};

const M: usize = 64;
const N: usize = 4096;

fn inputs(seed: u32) -> (Vec<bf16>, Vec<bf16>, Vec<bf16>) {
    let v = |k: u32, len: usize| {
        (0..len).map(|i| bf16::from_f32((((i as u32) ^ seed ^ k).wrapping_mul(2654435761) >> 16) as f32 / 65536.0 - 0.5)).collect()
    };
    (v(1, M * N), v(2, M * N), v(3, N))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count = match normkit::cuda::device_count() {
        Ok(0) => {
            println!("no CUDA device: nothing to run");
            return Ok(());
        }
        Ok(n) => n,
        Err(e) => {
            println!("{e}");
            return Ok(());
        }
    };
    let desc = NormDesc::rms(1e-6).with_residual(true);
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count)
            .map(|device| {
                let desc = &desc;
                scope.spawn(move || -> Result<(usize, String, f32), Box<dyn std::error::Error + Send + Sync>> {
                    // The engine's context and stream for this device; normkit queues on it.
                    let stream = CudaContext::new(device)?.new_stream()?;
                    let nk = CudaBackend::from_stream(stream.clone())?;
                    nk.reserve_workspace(M, N)?;
                    let (x, r, w) = inputs(device as u32);
                    let (dx, dr, dw) = (stream.clone_htod(&x)?, stream.clone_htod(&r)?, stream.clone_htod(&w)?);
                    let (mut y, mut h) = (stream.alloc_zeros::<bf16>(M * N)?, stream.alloc_zeros::<bf16>(M * N)?);
                    {
                        let (xv, rv, wv) = (nk.view(&dx), nk.view(&dr), nk.view(&dw));
                        let (mut yv, mut hv) = (nk.view_mut(&mut y), nk.view_mut(&mut h));
                        let args = Forward::new(InOut::separate(MatRef::new(&*xv, M, N), MatMut::new(&mut *yv, M, N)))
                            .residual(InOut::separate(MatRef::new(&*rv, M, N), MatMut::new(&mut *hv, M, N)))
                            .weight(VecRef::new(&*wv));
                        nk.forward(desc, args)?;
                    }
                    let got = stream.clone_dtoh(&y)?;

                    // The same call on the CPU backend.
                    let cpu = CpuBackend::new();
                    let (hx, hr, hw) = (HostBuf::from(x), HostBuf::from(r), HostBuf::from(w));
                    let (mut hy, mut hh) = (HostBuf::zeros(DType::BF16, M * N), HostBuf::zeros(DType::BF16, M * N));
                    let args = Forward::new(InOut::separate(MatRef::new(&hx, M, N), MatMut::new(&mut hy, M, N)))
                        .residual(InOut::separate(MatRef::new(&hr, M, N), MatMut::new(&mut hh, M, N)))
                        .weight(VecRef::new(&hw));
                    cpu.forward(desc, args)?;
                    let worst = got.iter().enumerate().map(|(i, g)| (g.to_f32() - hy.get_f32(i)).abs()).fold(0.0f32, f32::max);
                    Ok((device, nk.device_name(), worst))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a device thread panicked")).collect::<Vec<_>>()
    });
    let mut ok = true;
    for o in outcomes {
        match o {
            Ok((device, name, worst)) => {
                // bf16 outputs: a difference of one bf16 ulp at |y| < 4 is 2^-6.
                let pass = worst <= 1.0 / 64.0;
                ok &= pass;
                println!(
                    "device {device} ({name}): {M}x{N} add + RMSNorm, max |GPU - CPU| = {worst:.2e} {}",
                    if pass { "ok" } else { "FAIL" }
                );
            }
            Err(e) => {
                ok = false;
                println!("a device failed: {e}");
            }
        }
    }
    if !ok {
        return Err("some device disagreed with the CPU backend".into());
    }
    Ok(())
}
