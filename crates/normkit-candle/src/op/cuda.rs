//! The CUDA side of the ops: normkit's CUDA backend queued on candle's own stream
//! (`CudaDevice::cuda_stream`), reading and writing candle's `CudaSlice`s in place through
//! borrowed views — no copy, no synchronisation (issue 17, part 1 underneath).
//!
//! The layouts, shapes and packing are the CPU path's (see the parent module); only the storage
//! differs. Outputs are allocated uninitialised: normkit writes every element of `y`, `h`,
//! `rstd`, `mean`, `dx`, `dw`, `db` (the conformance suite poisons outputs to check exactly that).

use std::sync::{Arc, Mutex, OnceLock};

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, DeviceRepr};
use candle_core::cuda_backend::CudaDType;
use candle_core::{CudaDevice, CudaStorage, Layout, Shape, WithDType};
use normkit::cuda::{CudaBackend, CudaElem};
use normkit::{Backward, Forward, InOut, MatMut, MatRef, NormKernel, VecMut, VecRef};

use super::{bwd_rows, rows, vec_span, Saved, Spec};

/// An element type of both worlds: f32, f16, bf16.
pub(crate) trait Elem: WithDType + CudaDType + CudaElem + DeviceRepr {}
impl<T: WithDType + CudaDType + CudaElem + DeviceRepr> Elem for T {}

/// The normkit backend of `dev`'s stream: made on the first call on that stream (loading
/// normkit's kernels into the context takes milliseconds) and kept for the life of the process,
/// with the stream it holds (so a stream handle is never reused under a cached backend).
fn backend(dev: &CudaDevice) -> candle_core::Result<Arc<CudaBackend>> {
    /// (stream handle, its backend).
    type Cache = Mutex<Vec<(usize, Arc<CudaBackend>)>>;
    static BACKENDS: OnceLock<Cache> = OnceLock::new();
    let stream = dev.cuda_stream();
    let key = stream.cu_stream() as usize;
    let mut all = BACKENDS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, b)) = all.iter().find(|(k, _)| *k == key) {
        return Ok(b.clone());
    }
    let b = Arc::new(CudaBackend::from_stream(stream).map_err(candle_core::Error::wrap)?);
    all.push((key, b.clone()));
    Ok(b)
}

/// `len` uninitialised elements on `dev` (every one is written by the call that follows).
fn alloc<T: DeviceRepr>(dev: &CudaDevice, len: usize) -> candle_core::Result<CudaSlice<T>> {
    // SAFETY: the memory is uninitialised; each caller hands it to a normkit call that writes
    // every element before candle can read it (stream order), and a failed call drops it.
    unsafe { dev.alloc::<T>(len) }
}

/// The forward on CUDA: `x` and, in the op's order, the other inputs. Returns the output (`y`,
/// or `y` and `h` stacked), its shape and the statistics for the backward.
pub(crate) fn forward<T: Elem>(
    spec: Spec,
    (xs, xl): (&CudaStorage, &Layout),
    rest: &[(&CudaStorage, &Layout)],
) -> candle_core::Result<(CudaStorage, Shape, Option<Saved>)> {
    let name = spec.name();
    let dev = xs.device.clone();
    let nk = backend(&dev)?;
    let xr = rows(xl, name, "x")?;
    let (m, n) = (xr.rows, xr.cols);
    let (residual, weight, bias) = match (spec.residual, spec.layer, rest) {
        (true, _, [r, w]) => (Some((r.0.as_cuda_slice::<T>()?, rows(r.1, name, "residual")?)), *w, None),
        (false, true, [w, b]) => (None, *w, Some(*b)),
        (false, false, [w]) => (None, *w, None),
        _ => return Err(candle_core::Error::msg(format!("{name}: wrong number of inputs"))),
    };
    let x = xs.as_cuda_slice::<T>()?;
    let w = weight.0.as_cuda_slice::<T>()?;
    let wspan = vec_span(weight.1, name, "weight")?;
    let b = bias.map(|b| Ok::<_, candle_core::Error>((b.0.as_cuda_slice::<T>()?, vec_span(b.1, name, "bias")?))).transpose()?;

    let mn = m.checked_mul(n).ok_or_else(|| candle_core::Error::msg(format!("{name}: M × N overflows")))?;
    let mut out = alloc::<T>(&dev, if spec.residual { 2 * mn } else { mn })?;
    // Statistics only for a backward (see `Spec::save`): each operand is a view, and each view
    // costs cudarc an event wait and an event record.
    let mut rstd = if spec.save { Some(alloc::<f32>(&dev, m)?) } else { None };
    let mut mean = if spec.layer && spec.save { Some(alloc::<f32>(&dev, m)?) } else { None };
    {
        let (mut y_part, mut h_part) = out.split_at_mut(mn);
        let (xv, wv) = (nk.view(x), nk.view(w));
        let mut yv = nk.view_mut(&mut y_part);
        let mut hv = if spec.residual { Some(nk.view_mut(&mut h_part)) } else { None };
        let mut rv = rstd.as_mut().map(|s| nk.view_mut(s));
        let mut mv = mean.as_mut().map(|s| nk.view_mut(s));
        let rviews = residual.map(|(r, rl)| (nk.view(r), rl));
        let bviews = b.map(|(b, bs)| (nk.view(b), bs));
        let mut args = Forward::new(InOut::separate(MatRef::with_layout(&*xv, xr), MatMut::new(&mut *yv, m, n)))
            .weight(VecRef::with_span(&*wv, wspan.0, wspan.1));
        if let Some(rv) = rv.as_mut() {
            args = args.rstd(VecMut::new(&mut **rv));
        }
        if let (Some((r, rl)), Some(hv)) = (&rviews, hv.as_mut()) {
            args = args.residual(InOut::separate(MatRef::with_layout(&**r, *rl), MatMut::new(&mut **hv, m, n)));
        }
        if let Some((b, bs)) = &bviews {
            args = args.bias(VecRef::with_span(&**b, bs.0, bs.1));
        }
        if let Some(mv) = mv.as_mut() {
            args = args.mean(VecMut::new(&mut **mv));
        }
        nk.forward(&spec.desc(), args).map_err(candle_core::Error::wrap)?;
    }
    let mut shape = xl.dims().to_vec();
    if spec.residual {
        shape.insert(0, 2);
    }
    let saved = rstd.map(|rstd| Saved::Cuda { mean, rstd });
    Ok((CudaStorage::wrap_cuda_slice(out, dev), Shape::from(shape), saved))
}

/// The backward on CUDA over `dy, x, w` (layouts as on the CPU): `[dx | dw | db]` in one flat
/// buffer of `x`'s dtype.
pub(crate) fn backward<T: Elem>(
    spec: Spec,
    saved: &Saved,
    (dys, dyl): (&CudaStorage, &Layout),
    (xs, xl): (&CudaStorage, &Layout),
    (ws, wl): (&CudaStorage, &Layout),
) -> candle_core::Result<(CudaStorage, Shape)> {
    let name = "normkit-norm-backward";
    let Saved::Cuda { mean, rstd } = saved else {
        return Err(candle_core::Error::msg(format!("{name}: the forward ran on another device than the backward")));
    };
    let (xr, dyr, dhr) = bwd_rows(spec, xl, dyl)?;
    let (m, n) = (xr.rows, xr.cols);
    let dev = xs.device.clone();
    let nk = backend(&dev)?;
    let (x, dy, w) = (xs.as_cuda_slice::<T>()?, dys.as_cuda_slice::<T>()?, ws.as_cuda_slice::<T>()?);
    let wspan = vec_span(wl, name, "weight")?;
    let mn = m * n;
    let len = mn + if spec.layer { 2 * n } else { n };
    let mut out = alloc::<T>(&dev, len)?;
    {
        let (mut dx_part, mut rest) = out.split_at_mut(mn);
        let (mut dw_part, mut db_part) = rest.split_at_mut(n);
        let (xv, dyv, wv, rv) = (nk.view(x), nk.view(dy), nk.view(w), nk.view(rstd));
        let (mut dxv, mut dwv, mut dbv) = (nk.view_mut(&mut dx_part), nk.view_mut(&mut dw_part), nk.view_mut(&mut db_part));
        let mv = mean.as_ref().map(|s| nk.view(s));
        let mut args = Backward::new(
            MatRef::with_layout(&*xv, xr),
            InOut::separate(MatRef::with_layout(&*dyv, dyr), MatMut::new(&mut *dxv, m, n)),
            VecRef::new(&*rv),
        )
        .weight(VecRef::with_span(&*wv, wspan.0, wspan.1))
        .dw(VecMut::new(&mut *dwv));
        if let Some(l) = dhr {
            args = args.d_residual_out(MatRef::with_layout(&*dyv, l));
        }
        if let Some(mv) = &mv {
            args = args.mean(VecRef::new(&**mv)).db(VecMut::new(&mut *dbv));
        }
        nk.backward(&spec.desc(), args).map_err(candle_core::Error::wrap)?;
    }
    Ok((CudaStorage::wrap_cuda_slice(out, dev), Shape::from(len)))
}
