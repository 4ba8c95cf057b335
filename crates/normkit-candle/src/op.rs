//! The candle custom ops: one forward op per norm (its `bwd` builds the backward op), one
//! backward op that returns every gradient packed into one tensor.
//!
//! # Saved statistics
//! The forward op saves each row's `rstd` (and LayerNorm's mean) in the op itself, which
//! candle's graph keeps alive until the backward pass; the backward op reads them. That costs
//! `M` floats (`2M` for LayerNorm) per call; recomputing them would cost another read of the whole
//! `M × N` input in the backward (about a third more memory traffic on an op that is bound by
//! it), and saving them makes `dx` use exactly the statistics the forward used.
//!
//! # Packing
//! A candle custom op has one output. The fused add returns `y` and `h = x + residual` stacked
//! along a new leading dimension of 2 (the public function splits it, as views); the backward
//! returns `dx`, `dw` (and `db`) one after the other in a flat tensor, split by views too.

use std::sync::{Arc, Mutex};

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor, WithDType};
use normkit::cpu::CpuBackend;
use normkit::{Backward, Forward, HostElem, HostView, InOut, MatMut, MatRef, NormDesc, VecMut, VecRef};

use crate::rows::{rowable, rows_of};

#[cfg(feature = "cuda")]
mod cuda;

/// What a forward op computes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// LayerNorm (with weight and bias) rather than RMSNorm (weight only).
    pub layer: bool,
    /// The fused residual add (RMSNorm only here): inputs `x, residual, w`.
    pub residual: bool,
    /// The weight is used as `w + offset` (1.0 for Gemma).
    pub offset: f32,
    pub eps: f32,
    /// Whether the forward saves `rstd` (and the mean) for a backward: only when an input is
    /// tracked by candle's autograd. Inference calls skip the statistics (on CUDA one
    /// allocation and one operand fewer, which shows at decode sizes).
    pub save: bool,
}

impl Spec {
    /// normkit's descriptor: statistics saved, fp32 arithmetic rounded once to the output dtype
    /// (normkit's default `Gemma` casting, as candle's own fused kernels do).
    fn desc(&self) -> NormDesc {
        let d = if self.layer { NormDesc::layer(self.eps) } else { NormDesc::rms(self.eps) };
        d.with_weight_offset(self.offset).with_residual(self.residual).with_save_stats(self.save)
    }

    fn name(&self) -> &'static str {
        match (self.layer, self.residual) {
            (true, _) => "normkit-layer-norm",
            (false, true) => "normkit-add-rms-norm",
            (false, false) => "normkit-rms-norm",
        }
    }
}

/// The statistics a forward saved for its backward.
#[derive(Debug)]
pub(crate) enum Saved {
    /// Host vectors of `M` floats (`mean` is empty for RMSNorm).
    Cpu { mean: Vec<f32>, rstd: Vec<f32> },
    /// Device vectors of `M` floats on the forward's device (`mean` only for LayerNorm).
    #[cfg(feature = "cuda")]
    Cuda {
        mean: Option<candle_core::cuda_backend::cudarc::driver::CudaSlice<f32>>,
        rstd: candle_core::cuda_backend::cudarc::driver::CudaSlice<f32>,
    },
}

/// The forward op: RMSNorm (`CustomOp2` over `x, w`), LayerNorm (`CustomOp3` over `x, w, b`) or
/// add + RMSNorm (`CustomOp3` over `x, residual, w`, output `[2, …]`: `y` then `h`).
#[derive(Debug)]
pub(crate) struct NormOp {
    pub spec: Spec,
    pub saved: Mutex<Option<Arc<Saved>>>,
}

impl NormOp {
    pub fn new(spec: Spec) -> Self {
        NormOp { spec, saved: Mutex::new(None) }
    }

    fn save(&self, s: Saved) {
        // A poisoned lock only means another thread panicked while holding it; the value is
        // replaced whole, so it cannot be seen half written.
        *self.saved.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(s));
    }

    fn saved(&self) -> candle_core::Result<Arc<Saved>> {
        self.saved.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(|| {
            candle_core::Error::msg(format!("{}: the backward ran before the forward saved its statistics", self.spec.name()))
        })
    }

    /// The CPU forward over `x` and, in the op's order, the other inputs.
    fn cpu(&self, x: (&CpuStorage, &Layout), rest: &[(&CpuStorage, &Layout)]) -> candle_core::Result<(CpuStorage, Shape)> {
        match x.0.dtype() {
            DType::F32 => self.cpu_typed::<f32>(x, rest),
            DType::F16 => self.cpu_typed::<half::f16>(x, rest),
            DType::BF16 => self.cpu_typed::<half::bf16>(x, rest),
            dt => Err(candle_core::Error::UnsupportedDTypeForOp(dt, self.spec.name()).bt()),
        }
    }

    fn cpu_typed<T: WithDType + HostElem>(
        &self,
        (xs, xl): (&CpuStorage, &Layout),
        rest: &[(&CpuStorage, &Layout)],
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let spec = self.spec;
        let name = spec.name();
        let xr = rows(xl, name, "x")?;
        let (m, n) = (xr.rows, xr.cols);
        let x = view::<T>(xs)?;
        let (residual, weight, bias) = match (spec.residual, spec.layer, rest) {
            (true, _, [r, w]) => (Some((view::<T>(r.0)?, rows(r.1, name, "residual")?)), *w, None),
            (false, true, [w, b]) => (None, *w, Some(*b)),
            (false, false, [w]) => (None, *w, None),
            _ => return Err(candle_core::Error::msg(format!("{name}: wrong number of inputs"))),
        };
        let w = view::<T>(weight.0)?;
        let ws = vec_span(weight.1, name, "weight")?;
        let b = bias.map(|b| Ok::<_, candle_core::Error>((view::<T>(b.0)?, vec_span(b.1, name, "bias")?))).transpose()?;

        let mn = m.checked_mul(n).ok_or_else(|| candle_core::Error::msg(format!("{name}: M × N overflows")))?;
        let mut out = output::<T>(if spec.residual { 2 * mn } else { mn })?;
        let mut rstd = vec![0.0f32; if spec.save { m } else { 0 }];
        let mut mean = vec![0.0f32; if spec.layer && spec.save { m } else { 0 }];
        {
            let (y_part, h_part) = out.split_at_mut(mn);
            let mut yv = HostView::new_mut(y_part);
            let mut hv = HostView::new_mut(h_part);
            let mut rv = HostView::new_mut(&mut rstd[..]);
            let mut mv = HostView::new_mut(&mut mean[..]);
            let mut args = Forward::new(InOut::separate(MatRef::with_layout(&x, xr), MatMut::new(&mut yv, m, n)))
                .weight(VecRef::with_span(&w, ws.0, ws.1));
            if spec.save {
                args = args.rstd(VecMut::new(&mut rv));
            }
            if let Some((r, rl)) = &residual {
                args = args.residual(InOut::separate(MatRef::with_layout(r, *rl), MatMut::new(&mut hv, m, n)));
            }
            if let Some((b, bs)) = &b {
                args = args.bias(VecRef::with_span(b, bs.0, bs.1));
                if spec.save {
                    args = args.mean(VecMut::new(&mut mv));
                }
            }
            CpuBackend::new().forward_view(&spec.desc(), args).map_err(candle_core::Error::wrap)?;
        }
        if spec.save {
            self.save(Saved::Cpu { mean, rstd });
        }
        let mut shape = xl.dims().to_vec();
        if spec.residual {
            shape.insert(0, 2);
        }
        Ok((T::to_cpu_storage_owned(out), Shape::from(shape)))
    }

    /// The CUDA forward over `x` and the other inputs (see `cuda.rs`).
    #[cfg(feature = "cuda")]
    fn cuda(
        &self,
        x: (&candle_core::CudaStorage, &Layout),
        rest: &[(&candle_core::CudaStorage, &Layout)],
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        let (out, shape, saved) = match x.0.dtype() {
            DType::F32 => cuda::forward::<f32>(self.spec, x, rest)?,
            DType::F16 => cuda::forward::<half::f16>(self.spec, x, rest)?,
            DType::BF16 => cuda::forward::<half::bf16>(self.spec, x, rest)?,
            dt => return Err(candle_core::Error::UnsupportedDTypeForOp(dt, self.spec.name()).bt()),
        };
        if let Some(saved) = saved {
            self.save(saved);
        }
        Ok((out, shape))
    }

    /// The gradients `(dx, dw, db)` from `dy` (for the fused add: the stacked gradient of `y`
    /// and `h`), the normalised input `x` (for the fused add: the stacked output, whose second
    /// half is `h`) and the weight.
    fn grads(&self, dy: &Tensor, x: &Tensor, w: &Tensor) -> candle_core::Result<(Tensor, Tensor, Option<Tensor>)> {
        let op = BwdOp { spec: self.spec, saved: self.saved()? };
        let dy = rowable(dy)?;
        let packed = dy.apply_op3_no_bwd(&rowable(x)?, &rowable(w)?, &op)?;
        let n = w.elem_count();
        let x_shape = if self.spec.residual { x.dims()[1..].to_vec() } else { x.dims().to_vec() };
        let mn: usize = x_shape.iter().product();
        let dx = packed.narrow(0, 0, mn)?.reshape(x_shape)?;
        let dw = packed.narrow(0, mn, n)?;
        let db = if self.spec.layer { Some(packed.narrow(0, mn + n, n)?) } else { None };
        Ok((dx, dw, db))
    }
}

impl CustomOp2 for NormOp {
    fn name(&self) -> &'static str {
        self.spec.name()
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        self.cpu((s1, l1), &[(s2, l2)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        self.cuda((s1, l1), &[(s2, l2)])
    }

    fn bwd(&self, x: &Tensor, w: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (dx, dw, _) = self.grads(grad, x, w)?;
        Ok((Some(dx), Some(dw)))
    }
}

impl CustomOp3 for NormOp {
    fn name(&self) -> &'static str {
        self.spec.name()
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        self.cpu((s1, l1), &[(s2, l2), (s3, l3)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        self.cuda((s1, l1), &[(s2, l2), (s3, l3)])
    }

    fn bwd(
        &self,
        a1: &Tensor,
        a2: &Tensor,
        a3: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        if self.spec.residual {
            // Inputs x, residual, w; the norm read h = the second half of the output. dx is the
            // gradient of both x and the residual (h = x + residual).
            let (dx, dw, _) = self.grads(grad, res, a3)?;
            Ok((Some(dx.clone()), Some(dx), Some(dw)))
        } else {
            // Inputs x, w, b.
            let (dx, dw, db) = self.grads(grad, a1, a2)?;
            Ok((Some(dx), Some(dw), db))
        }
    }
}

/// The backward op over `dy, x, w`: `[dx (M·N), dw (N), db (N, LayerNorm)]` in one flat tensor.
/// It has no backward of its own (second derivatives are not supported).
#[derive(Debug)]
struct BwdOp {
    spec: Spec,
    saved: Arc<Saved>,
}

impl BwdOp {
    fn cpu_typed<T: WithDType + HostElem>(
        &self,
        (dys, dyl): (&CpuStorage, &Layout),
        (xs, xl): (&CpuStorage, &Layout),
        (ws, wl): (&CpuStorage, &Layout),
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let spec = self.spec;
        let name = "normkit-norm-backward";
        #[allow(irrefutable_let_patterns)] // refutable with the `cuda` feature
        let Saved::Cpu { mean, rstd } = &*self.saved
        else {
            return Err(candle_core::Error::msg(format!("{name}: the forward ran on another device than the backward")));
        };
        let (xr, dyr, dhr) = bwd_rows(spec, xl, dyl)?;
        let (m, n) = (xr.rows, xr.cols);
        let (x, dy, w) = (view::<T>(xs)?, view::<T>(dys)?, view::<T>(ws)?);
        let wspan = vec_span(wl, name, "weight")?;
        let mn = m * n;
        let mut out = output::<T>(mn + if spec.layer { 2 * n } else { n })?;
        {
            let (dx_part, rest) = out.split_at_mut(mn);
            let (dw_part, db_part) = rest.split_at_mut(n);
            let (mut dxv, mut dwv, mut dbv) = (HostView::new_mut(dx_part), HostView::new_mut(dw_part), HostView::new_mut(db_part));
            let (rv, mv) = (HostView::new(&rstd[..]), HostView::new(&mean[..]));
            let mut args = Backward::new(
                MatRef::with_layout(&x, xr),
                InOut::separate(MatRef::with_layout(&dy, dyr), MatMut::new(&mut dxv, m, n)),
                VecRef::new(&rv),
            )
            .weight(VecRef::with_span(&w, wspan.0, wspan.1))
            .dw(VecMut::new(&mut dwv));
            if let Some(l) = dhr {
                args = args.d_residual_out(MatRef::with_layout(&dy, l));
            }
            if spec.layer {
                args = args.mean(VecRef::new(&mv)).db(VecMut::new(&mut dbv));
            }
            CpuBackend::new().backward_view(&spec.desc(), args).map_err(candle_core::Error::wrap)?;
        }
        let len = out.len();
        Ok((T::to_cpu_storage_owned(out), Shape::from(len)))
    }
}

impl CustomOp3 for BwdOp {
    fn name(&self) -> &'static str {
        "normkit-norm-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        match s1.dtype() {
            DType::F32 => self.cpu_typed::<f32>((s1, l1), (s2, l2), (s3, l3)),
            DType::F16 => self.cpu_typed::<half::f16>((s1, l1), (s2, l2), (s3, l3)),
            DType::BF16 => self.cpu_typed::<half::bf16>((s1, l1), (s2, l2), (s3, l3)),
            dt => Err(candle_core::Error::UnsupportedDTypeForOp(dt, self.name()).bt()),
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        let (dy, x, w) = ((s1, l1), (s2, l2), (s3, l3));
        match s1.dtype() {
            DType::F32 => cuda::backward::<f32>(self.spec, &self.saved, dy, x, w),
            DType::F16 => cuda::backward::<half::f16>(self.spec, &self.saved, dy, x, w),
            DType::BF16 => cuda::backward::<half::bf16>(self.spec, &self.saved, dy, x, w),
            dt => Err(candle_core::Error::UnsupportedDTypeForOp(dt, self.name()).bt()),
        }
    }
}

/// The backward's row views `(x, dy, dh)` of its inputs' layouts. With the fused add, `x` and
/// `dy` are `[2, …]` stacks (the forward's output `y` then `h`; the gradients `dy` then `dh`):
/// the norm read `h`, the second half of `x`, and `dh` is the second half of `dy`.
fn bwd_rows(spec: Spec, xl: &Layout, dyl: &Layout) -> candle_core::Result<(normkit::Layout, normkit::Layout, Option<normkit::Layout>)> {
    let name = "normkit-norm-backward";
    let (xr, dyr) = (rows(xl, name, "x")?, rows(dyl, name, "dy")?);
    if !spec.residual {
        return Ok((xr, dyr, None));
    }
    let m = xr.rows / 2;
    let h = normkit::Layout { rows: m, offset: xr.offset + m * xr.stride, ..xr };
    let dy = normkit::Layout { rows: m, ..dyr };
    let dh = normkit::Layout { offset: dyr.offset + m * dyr.stride, ..dy };
    Ok((h, dy, Some(dh)))
}

/// A read-only normkit view of candle's storage, without a copy: an error when the storage is
/// not of `T` (every input of an op must have `x`'s dtype).
fn view<T: WithDType + HostElem>(s: &CpuStorage) -> candle_core::Result<HostView<'_>> {
    Ok(HostView::new(T::cpu_storage_as_slice(s)?))
}

/// The rows of an input's layout; the public functions make every input readable as rows first,
/// so an error here is a layout they did not expect.
fn rows(l: &Layout, op: &str, what: &str) -> candle_core::Result<normkit::Layout> {
    rows_of(l).ok_or_else(|| candle_core::Error::msg(format!("{op}: `{what}` is not a view of evenly spaced rows ({l:?})")))
}

/// `(offset, len)` of a vector operand, which must have a unit stride.
fn vec_span(l: &Layout, op: &str, what: &str) -> candle_core::Result<(usize, usize)> {
    let r = rows(l, op, what)?;
    if r.rows > 1 {
        return Err(candle_core::Error::msg(format!("{op}: `{what}` must be a vector, but has shape {:?}", l.dims())));
    }
    Ok((r.offset, r.rows * r.cols))
}

/// A zeroed output of `len` elements for normkit to fill, backed by huge pages where the kernel
/// allows it.
///
/// candle's API makes every op allocate its output. Above glibc's mmap threshold (32 MiB) each
/// such allocation is a fresh mapping, and its first write costs a page fault per 4 KiB page:
/// at 8192×4096 f32 (128 MiB) about 32,000 faults, which made the whole call run at a fifth of
/// normkit's speed on its own buffers. The memory comes from `alloc_zeroed` (calloc: untouched
/// zero pages, valid zeros of every element type) and, for outputs of 16 MiB or more, is advised
/// `MADV_HUGEPAGE` before anything touches it, so the writes fault in 2 MiB pages.
fn output<T: HostElem>(len: usize) -> candle_core::Result<Vec<T>> {
    let layout =
        std::alloc::Layout::array::<T>(len).map_err(|_| candle_core::Error::msg(format!("an output of {len} elements overflows")))?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(candle_core::Error::msg(format!("cannot allocate an output of {} bytes", layout.size())));
    }
    advise_huge_pages(p, layout.size());
    // SAFETY: `p` was allocated by the global allocator with `Layout::array::<T>(len)`, the layout
    // a `Vec<T>` of capacity `len` frees with; all `len` elements are initialised: zero bytes are
    // a valid value of every `HostElem` type (0.0 in f32, f16, bf16 and each FP8 format).
    Ok(unsafe { Vec::from_raw_parts(p.cast::<T>(), len, len) })
}

/// `MADV_HUGEPAGE` on the 2 MiB-aligned interior of `[p, p + bytes)` when it spans 16 MiB or
/// more (Linux; a no-op elsewhere and where transparent huge pages are off). Advisory only.
#[cfg(target_os = "linux")]
fn advise_huge_pages(p: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    const MADV_HUGEPAGE: std::ffi::c_int = 14;
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    if bytes < 8 * HUGE {
        return;
    }
    let start = (p as usize).next_multiple_of(HUGE);
    let end = (p as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside the allocation just made, which is live and not yet
        // shared; MADV_HUGEPAGE changes neither its contents nor the mapping's validity, and a
        // failure (e.g. EINVAL without THP support) is harmless and ignored.
        let _ = unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_p: *mut u8, _bytes: usize) {}
