use half::bf16;
use normkit::cuda::cudarc::driver::CudaContext;
use normkit::cuda::CudaBackend;
use normkit::{Forward, InOut, MatMut, MatRef, NormDesc, NormKernel, VecRef};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = CudaContext::new(0)?.new_stream()?; // the engine's stream
    let nk = CudaBackend::from_stream(stream.clone())?; // once per stream: loads the kernels
    let (m, n) = (16, 4096);
    nk.reserve_workspace(m, n)?; // no allocation or sync in later calls up to this size

    let x = stream.clone_htod(&vec![bf16::from_f32(0.5); m * n])?;
    let w = stream.clone_htod(&vec![bf16::from_f32(2.0); n])?;
    let mut y = stream.alloc_zeros::<bf16>(m * n)?;
    {
        // Views borrow the engine's slices (no copy); the call is queued on the engine's stream.
        let (xv, wv, mut yv) = (nk.view(&x), nk.view(&w), nk.view_mut(&mut y));
        let io = InOut::separate(MatRef::new(&*xv, m, n), MatMut::new(&mut *yv, m, n));
        nk.forward(&NormDesc::rms(1e-6), Forward::new(io).weight(VecRef::new(&*wv)))?;
    }
    let host = stream.clone_dtoh(&y)?; // stream order: after the norm
    assert!((host[0].to_f32() - 2.0).abs() < 1e-2); // x̂ = 1, times w = 2
    println!("y[0] = {}", host[0]);
    Ok(())
}
