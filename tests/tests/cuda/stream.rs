//! The caller's stream and memory (issue 17, part 1): a backend made from a cudarc stream
//! (`CudaBackend::from_stream`), buffers that borrow cudarc slices (`view`, `view_mut`), the
//! workspace sized up front (`reserve_workspace`) and a CUDA graph captured by the caller.
//!
//! Every result is compared bitwise with the same call made on a backend with its own stream and
//! owned buffers (`CudaBackend::new`, which the conformance suite checks against the oracle), and
//! every output is poisoned (NaN) first, so an element left unwritten fails.

use std::sync::Arc;

use half::bf16;
use normkit::cuda::cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use normkit::cuda::CudaBackend;
use normkit_core::{Backward, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand, VecMut, VecRef};

/// Deterministic values in [-2, 2), not all of one sign or size.
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

fn bf(v: &[f32]) -> Vec<bf16> {
    v.iter().map(|&x| bf16::from_f32(x)).collect()
}

/// One fused add + RMSNorm forward (saving rstd) and its backward with dW and d_residual_out,
/// as host data: inputs, and the outputs a run produced.
struct Case {
    m: usize,
    n: usize,
    x: Vec<bf16>,
    r: Vec<bf16>,
    w: Vec<bf16>,
    dy: Vec<bf16>,
    dh: Vec<bf16>,
}

#[derive(Debug, PartialEq)]
struct Outs {
    y: Vec<u16>,
    h: Vec<u16>,
    rstd: Vec<u32>,
    dx: Vec<u16>,
    dw: Vec<u16>,
}

fn case(m: usize, n: usize, seed: u64) -> Case {
    Case {
        m,
        n,
        x: bf(&values(m * n, seed)),
        r: bf(&values(m * n, seed + 1)),
        w: bf(&values(n, seed + 2)),
        dy: bf(&values(m * n, seed + 3)),
        dh: bf(&values(m * n, seed + 4)),
    }
}

fn fwd_desc() -> NormDesc {
    NormDesc::rms(1e-6).with_residual(true).with_save_stats(true)
}

/// The reference: the same calls on a backend with its own stream and owned buffers.
fn reference(k: &CudaBackend, c: &Case) -> Outs {
    let (m, n) = (c.m, c.n);
    let up = |v: &Vec<bf16>| k.upload(&HostBuf::from(v.clone())).unwrap();
    let (x, r, w, dy0, dh) = (up(&c.x), up(&c.r), up(&c.w), up(&c.dy), up(&c.dh));
    let mut y = k.alloc(DType::BF16, m * n).unwrap();
    let mut h = k.alloc(DType::BF16, m * n).unwrap();
    let mut rstd = k.alloc(DType::F32, m).unwrap();
    let args = Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n)))
        .residual(InOut::separate(MatRef::new(&r, m, n), MatMut::new(&mut h, m, n)))
        .weight(VecRef::new(&w))
        .rstd(VecMut::new(&mut rstd));
    k.forward(&fwd_desc(), args).unwrap();
    let mut dx = k.alloc(DType::BF16, m * n).unwrap();
    let mut dw = k.alloc(DType::BF16, n).unwrap();
    let args =
        Backward::new(MatRef::new(&h, m, n), InOut::separate(MatRef::new(&dy0, m, n), MatMut::new(&mut dx, m, n)), VecRef::new(&rstd))
            .d_residual_out(MatRef::new(&dh, m, n))
            .weight(VecRef::new(&w))
            .dw(VecMut::new(&mut dw));
    k.backward(&NormDesc::rms(1e-6).with_residual(true), args).unwrap();
    let bits16 = |b: &normkit::cuda::CudaBuffer| k.download(b).unwrap().to_bits_vec().iter().map(|&v| v as u16).collect::<Vec<_>>();
    Outs { y: bits16(&y), h: bits16(&h), rstd: k.download(&rstd).unwrap().to_bits_vec(), dx: bits16(&dx), dw: bits16(&dw) }
}

/// Device copies of a case's inputs and NaN-poisoned outputs, as cudarc slices on `stream`.
struct Slices {
    x: CudaSlice<bf16>,
    r: CudaSlice<bf16>,
    w: CudaSlice<bf16>,
    dy: CudaSlice<bf16>,
    dh: CudaSlice<bf16>,
    y: CudaSlice<bf16>,
    h: CudaSlice<bf16>,
    rstd: CudaSlice<f32>,
    dx: CudaSlice<bf16>,
    dw: CudaSlice<bf16>,
}

fn slices(stream: &Arc<CudaStream>, c: &Case) -> Slices {
    let (m, n) = (c.m, c.n);
    let up = |v: &Vec<bf16>| stream.clone_htod(v).unwrap();
    let nan = |len: usize| stream.clone_htod(&vec![bf16::NAN; len]).unwrap();
    Slices {
        x: up(&c.x),
        r: up(&c.r),
        w: up(&c.w),
        dy: up(&c.dy),
        dh: up(&c.dh),
        y: nan(m * n),
        h: nan(m * n),
        rstd: stream.clone_htod(&vec![f32::NAN; m]).unwrap(),
        dx: nan(m * n),
        dw: nan(n),
    }
}

/// Queues the forward then the backward of `c` on `k`, reading and writing `s` through views.
fn run_views(k: &CudaBackend, c: &Case, s: &mut Slices) -> Result<(), NormError> {
    let (m, n) = (c.m, c.n);
    {
        let (x, r, w) = (k.view(&s.x), k.view(&s.r), k.view(&s.w));
        let (mut y, mut h, mut rstd) = (k.view_mut(&mut s.y), k.view_mut(&mut s.h), k.view_mut(&mut s.rstd));
        let args = Forward::new(InOut::separate(MatRef::new(&*x, m, n), MatMut::new(&mut *y, m, n)))
            .residual(InOut::separate(MatRef::new(&*r, m, n), MatMut::new(&mut *h, m, n)))
            .weight(VecRef::new(&*w))
            .rstd(VecMut::new(&mut *rstd));
        k.forward(&fwd_desc(), args)?;
    }
    let (h, w, rstd, dy, dh) = (k.view(&s.h), k.view(&s.w), k.view(&s.rstd), k.view(&s.dy), k.view(&s.dh));
    let (mut dx, mut dw) = (k.view_mut(&mut s.dx), k.view_mut(&mut s.dw));
    let args =
        Backward::new(MatRef::new(&*h, m, n), InOut::separate(MatRef::new(&*dy, m, n), MatMut::new(&mut *dx, m, n)), VecRef::new(&*rstd))
            .d_residual_out(MatRef::new(&*dh, m, n))
            .weight(VecRef::new(&*w))
            .dw(VecMut::new(&mut *dw));
    k.backward(&NormDesc::rms(1e-6).with_residual(true), args)
}

/// Reads the outputs back on `stream` (cudarc's copies: ordered after the norm's kernels).
fn read(stream: &Arc<CudaStream>, s: &Slices) -> Outs {
    let b16 = |v: &CudaSlice<bf16>| stream.clone_dtoh(v).unwrap().iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    Outs {
        y: b16(&s.y),
        h: b16(&s.h),
        rstd: stream.clone_dtoh(&s.rstd).unwrap().iter().map(|x| x.to_bits()).collect(),
        dx: b16(&s.dx),
        dw: b16(&s.dw),
    }
}

const SHAPES: &[(usize, usize)] = &[(1, 4096), (8, 4096), (7, 1000), (128, 4096), (33, 20001), (3, 300000)];

/// A backend made from the caller's stream, over views of cudarc slices, gives bitwise the
/// results of a backend with its own stream and owned buffers, with every output written.
pub fn caller_stream_matches_own_stream() {
    let own = CudaBackend::new().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let k = CudaBackend::from_stream(stream.clone()).unwrap();
    assert_eq!(k.stream().cu_stream(), stream.cu_stream(), "the backend queues on the caller's stream");
    for (i, &(m, n)) in SHAPES.iter().enumerate() {
        let c = case(m, n, 100 + i as u64);
        let want = reference(&own, &c);
        let mut s = slices(&stream, &c);
        run_views(&k, &c, &mut s).unwrap();
        let got = read(&stream, &s);
        assert!(got == want, "{m}x{n}: the caller-stream run differs from the own-stream run");
    }
    println!("cuda: from_stream + views bitwise equal to own-stream runs on {} shapes", SHAPES.len());
}

/// Slices written on one stream and normalised on another: cudarc's events order them (the view
/// waits for the slice's last write; dropping it records normkit's use), with no
/// synchronisation by the caller. 64 MiB uploads make a missing wait visible as stale inputs.
pub fn views_order_across_streams() {
    let own = CudaBackend::new().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    let upload_stream = ctx.new_stream().unwrap();
    let norm_stream = ctx.new_stream().unwrap();
    let k = CudaBackend::from_stream(norm_stream).unwrap();
    for seed in 0..3u64 {
        let c = case(8192, 4096, 500 + seed);
        let want = reference(&own, &c);
        let mut s = slices(&upload_stream, &c);
        run_views(&k, &c, &mut s).unwrap();
        let got = read(&upload_stream, &s);
        assert!(got == want, "seed {seed}: results read on the upload stream differ from the reference");
    }
    println!("cuda: views ordered across two streams by cudarc's events (3 × 8192x4096)");
}

/// With the workspace reserved for the largest shape, the caller captures normkit's calls on its
/// own stream into a CUDA graph; replaying it gives bitwise the direct results. Without the
/// reservation, a call that would grow the workspace during the capture is refused with
/// `ResourceLimit`, and the capture itself stays valid.
pub fn caller_graph_capture() {
    use normkit::cuda::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    let own = CudaBackend::new().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    // cudarc's event tracking makes every use of a slice wait for its last write — an event
    // recorded outside the capture, which a capture may not wait on (the capture is invalidated:
    // true of cudarc's own launches too). A caller that captures turns it off for the slices it
    // captures (cudarc: for slices made afterwards; candle: `CudaDevice::disable_event_tracking`).
    // SAFETY: every slice of this context is used on this one stream, in stream order.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let k = CudaBackend::from_stream(stream.clone()).unwrap();

    // Refused growth: a fresh backend has no workspace; the backward needs one (2048 rows: the
    // register kernel's partial rows; up to 1024 rows of 4096 the twin's column CTAs need none).
    let c = case(2048, 4096, 900);
    let mut s = slices(&stream, &c);
    stream.synchronize().unwrap();
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
    let e = run_views(&k, &c, &mut s).unwrap_err();
    let graph = stream.end_capture(CUgraphInstantiate_flags(0)).expect("the capture survives a refused growth");
    assert!(matches!(e, NormError::ResourceLimit { .. }), "growth during capture: {e}");
    assert_eq!(k.workspace_bytes(), 0, "nothing was allocated during the capture");
    drop(graph);

    // Reserved: every shape up to 128 × 20001 captures and replays.
    let held = k.reserve_workspace(128, 20001).unwrap();
    assert!(held >= k.workspace_bound(128, 20001));
    for (i, &(m, n)) in [(1usize, 4096usize), (128, 4096), (33, 20001), (128, 20001)].iter().enumerate() {
        let c = case(m, n, 950 + i as u64);
        let want = reference(&own, &c);
        let mut s = slices(&stream, &c);
        stream.synchronize().unwrap();
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
        let r = run_views(&k, &c, &mut s);
        let graph = stream.end_capture(CUgraphInstantiate_flags(0)).unwrap();
        r.unwrap();
        let graph = graph.expect("the captured graph has the norm's kernels");
        graph.launch().unwrap();
        let got = read(&stream, &s);
        assert!(got == want, "{m}x{n}: graph replay differs from the direct call");
        assert_eq!(k.workspace_bytes(), held, "{m}x{n}: the reserved workspace did not grow");
    }
    println!("cuda: caller's graph capture with a reserved workspace ({} MiB) replays bitwise", held >> 20);
}

/// Views carry the slice's dtype and length into the shared validation: a wrong dtype or a slice
/// too short is a typed error and the outputs stay as they were.
pub fn views_are_validated() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let k = CudaBackend::from_stream(stream.clone()).unwrap();
    let (m, n) = (4, 256);
    let x = stream.clone_htod(&bf(&values(m * n, 7))).unwrap();
    let w32 = stream.clone_htod(&values(n, 8)).unwrap();
    let w_short = stream.clone_htod(&bf(&values(n - 1, 9))).unwrap();
    let mut y = stream.clone_htod(&vec![bf16::NAN; m * n]).unwrap();
    let before = stream.clone_dtoh(&y).unwrap();
    let run = |w: &normkit::cuda::CudaBuffer, y: &mut CudaSlice<bf16>| {
        let xv = k.view(&x);
        let mut yv = k.view_mut(y);
        let args = Forward::new(InOut::separate(MatRef::new(&*xv, m, n), MatMut::new(&mut *yv, m, n))).weight(VecRef::new(w));
        k.forward(&NormDesc::rms(1e-6).with_bias(true), args)
    };
    // A bias the descriptor asks for is missing; a weight one element short; x viewed as f32
    // with a bf16 output (y must have x's dtype or f32): each a typed error.
    let e = run(&k.view(&w_short), &mut y).unwrap_err();
    assert!(matches!(e, NormError::Missing { .. } | NormError::Shape { .. }), "{e}");
    let plain = |w: &normkit::cuda::CudaBuffer, y: &mut CudaSlice<bf16>| {
        let xv = k.view(&x);
        let mut yv = k.view_mut(y);
        let args = Forward::new(InOut::separate(MatRef::new(&*xv, m, n), MatMut::new(&mut *yv, m, n))).weight(VecRef::new(w));
        k.forward(&NormDesc::rms(1e-6), args)
    };
    let e = plain(&k.view(&w_short), &mut y).unwrap_err();
    assert!(matches!(e, NormError::Shape { operand: Operand::Weight, .. }), "{e}");
    let x32 = stream.clone_htod(&values(m * n, 10)).unwrap();
    let e = {
        let xv = k.view(&x32);
        let mut yv = k.view_mut(&mut y);
        let wv = k.view(&w32);
        let args = Forward::new(InOut::separate(MatRef::new(&*xv, m, n), MatMut::new(&mut *yv, m, n))).weight(VecRef::new(&*wv));
        k.forward(&NormDesc::rms(1e-6), args).unwrap_err()
    };
    assert!(matches!(e, NormError::DType { .. }), "{e}");
    let after = stream.clone_dtoh(&y).unwrap();
    assert!(before.iter().zip(&after).all(|(a, b)| a.to_bits() == b.to_bits()), "an error wrote the output");
    println!("cuda: views of the wrong length or dtype are typed errors; nothing written");
}

/// One backend per device, each on its own thread: the multi-device pattern of the `normkit`
/// crate's `multi_device` example, on every device present (one is enough), plus a slice of
/// another device given to a backend, which is `ForeignBuffer` (only with two devices or more).
pub fn one_backend_per_device() {
    let count = normkit::cuda::device_count().unwrap();
    assert!(count >= 1);
    let results: Vec<Outs> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..count)
            .map(|d| {
                sc.spawn(move || {
                    let ctx = CudaContext::new(d).unwrap();
                    let stream = ctx.new_stream().unwrap();
                    let k = CudaBackend::from_stream(stream.clone()).unwrap();
                    assert_eq!(k.ordinal(), d);
                    let c = case(16, 4096, 77);
                    let mut s = slices(&stream, &c);
                    run_views(&k, &c, &mut s).unwrap();
                    read(&stream, &s)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.windows(2).all(|p| p[0] == p[1]), "devices disagree");
    if count >= 2 {
        let k0 = CudaBackend::with_device(0).unwrap();
        let s1 = CudaContext::new(1).unwrap().new_stream().unwrap();
        let x1 = s1.clone_htod(&bf(&values(256, 1))).unwrap();
        let mut y0 = k0.stream().clone_htod(&vec![bf16::NAN; 256]).unwrap();
        let xv = k0.view(&x1);
        let mut yv = k0.view_mut(&mut y0);
        let e = k0.forward(
            &NormDesc::rms(1e-6).without_weight(),
            Forward::new(InOut::separate(MatRef::new(&*xv, 1, 256), MatMut::new(&mut *yv, 1, 256))),
        );
        assert!(matches!(e, Err(NormError::ForeignBuffer { operand: Operand::X, .. })), "{e:?}");
    }
    println!("cuda: one backend per device on {count} device(s), results identical");
}
