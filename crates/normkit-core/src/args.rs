//! The operands of a forward and a backward call.

use crate::tensor::{InOut, MatMut, MatRef, VecMut, VecRef};

/// Operands of a forward call. Which optional operands must be present is set by the
/// [`crate::NormDesc`]: `weight` iff `desc.weight`, `bias` iff `desc.bias`, `residual` iff
/// `desc.residual`, `rstd` iff `desc.save_stats`, `mean` iff `desc.save_stats` and LayerNorm.
/// A missing one is [`NormError::Missing`](crate::NormError::Missing), an extra one
/// [`NormError::Unexpected`](crate::NormError::Unexpected).
///
/// Build it with [`Forward::new`] and the builder methods:
///
/// ```
/// use normkit_core::cpu::CpuBackend;
/// use normkit_core::{DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, VecMut, VecRef};
///
/// let (m, n) = (2, 4);
/// let x = HostBuf::from_f32(DType::BF16, &[1.0, 2.0, 3.0, 4.0, 0.5, 0.5, -0.5, -0.5]);
/// let mut residual = HostBuf::filled(DType::F32, m * n, 0.25);
/// let (w, b) = (HostBuf::filled(DType::F32, n, 1.0), HostBuf::zeros(DType::F32, n));
/// let mut y = HostBuf::zeros(DType::BF16, m * n);
/// let (mut mean, mut rstd) = (HostBuf::zeros(DType::F32, m), HostBuf::zeros(DType::F32, m));
///
/// // LayerNorm of h = x + residual, written over the residual (residual_out), saving the statistics.
/// let desc = NormDesc::layer(1e-5).with_residual(true).with_save_stats(true);
/// let args = Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n)))
///     .residual(InOut::in_place(MatMut::new(&mut residual, m, n)))
///     .weight(VecRef::new(&w))
///     .bias(VecRef::new(&b))
///     .mean(VecMut::new(&mut mean))
///     .rstd(VecMut::new(&mut rstd));
/// CpuBackend::new().forward(&desc, args)?;
/// assert_eq!(residual.get_f32(0), 1.25);
/// assert_eq!(mean.get_f32(0), 2.75);
/// # Ok::<(), normkit_core::NormError>(())
/// ```
#[derive(Debug)]
pub struct Forward<'a, B: ?Sized> {
    /// `x` (M × N) in, `y` (M × N) out — or `y` written over `x`.
    pub x: InOut<'a, B>,
    /// `residual` in, `residual_out = x + residual` out — or written over `residual`.
    pub residual: Option<InOut<'a, B>>,
    /// The weight `w`, length N; see [`Forward::weight`].
    pub weight: Option<VecRef<'a, B>>,
    /// The bias `b`, length N; see [`Forward::bias`].
    pub bias: Option<VecRef<'a, B>>,
    /// LayerNorm mean per row, f32, length M.
    pub mean: Option<VecMut<'a, B>>,
    /// `1/sqrt(var + eps)` per row, f32, length M.
    pub rstd: Option<VecMut<'a, B>>,
    /// How `y` is quantised when its dtype is FP8; see [`Forward::fp8`].
    pub fp8: Option<Fp8<'a, B>>,
}

impl<'a, B: ?Sized> Forward<'a, B> {
    /// A plain norm of `x` into `y`, with no optional operand yet.
    ///
    /// `x` is `M × N` (the shape of its input view sets `M` and `N` for every other operand), in
    /// f32, f16 or bf16; `y` is `M × N` in `x`'s dtype or f32. [`InOut::in_place`] writes `y`
    /// over `x` (then `y` has `x`'s dtype).
    pub fn new(x: InOut<'a, B>) -> Self {
        Forward { x, residual: None, weight: None, bias: None, mean: None, rstd: None, fp8: None }
    }

    /// The affine weight `w`: N elements, in `x`'s dtype or f32, and the same dtype as the bias.
    /// The norm multiplies by `w + offset` (the offset of [`crate::WeightSpec`], 1.0 for Gemma).
    /// Required iff the descriptor has a weight ([`crate::NormDesc::weight`] is `Some`, as with
    /// [`crate::NormDesc::rms`] and [`crate::NormDesc::layer`]).
    pub fn weight(mut self, w: VecRef<'a, B>) -> Self {
        self.weight = Some(w);
        self
    }

    /// The bias `b`, added after the weight: N elements, in the weight's dtype (without a
    /// weight: `x`'s dtype or f32). Required iff [`crate::NormDesc::bias`] (set by
    /// [`crate::NormDesc::layer`] and [`crate::NormDesc::with_bias`]).
    pub fn bias(mut self, b: VecRef<'a, B>) -> Self {
        self.bias = Some(b);
        self
    }

    /// The fused residual add. `r`'s input is `residual` (M × N, in `x`'s dtype or f32), its
    /// output `residual_out = x + residual` (M × N, in the residual's dtype), which may overwrite
    /// the residual ([`InOut::in_place`]). The norm is computed from `residual_out` as stored, so
    /// the backward can read it as its `x`. Required iff [`crate::NormDesc::residual`]
    /// ([`crate::NormDesc::with_residual`]).
    pub fn residual(mut self, r: InOut<'a, B>) -> Self {
        self.residual = Some(r);
        self
    }

    /// Where to save each row's mean `μ` for the backward: M elements, f32. Required iff the
    /// descriptor is LayerNorm and saves statistics ([`crate::NormDesc::save_stats`]); RMSNorm
    /// has no mean.
    pub fn mean(mut self, m: VecMut<'a, B>) -> Self {
        self.mean = Some(m);
        self
    }

    /// Where to save each row's `rstd = 1/sqrt(var + eps)` (RMSNorm: `1/sqrt(mean(x²) + eps)`)
    /// for the backward: M elements, f32. Required iff [`crate::NormDesc::save_stats`]
    /// ([`crate::NormDesc::with_save_stats`]).
    pub fn rstd(mut self, r: VecMut<'a, B>) -> Self {
        self.rstd = Some(r);
        self
    }

    /// Quantise `y` to FP8: required iff `y`'s buffer has an FP8 dtype ([`crate::DType::FP8`]),
    /// which must then be a separate output (never written over `x`). See [`Fp8`] for the
    /// scaling recipes and the optional `amax`, `scale_inv` and transposed outputs.
    pub fn fp8(mut self, q: Fp8<'a, B>) -> Self {
        self.fp8 = Some(q);
        self
    }
}

/// Where a per-tensor FP8 scale comes from.
#[derive(Debug)]
pub enum Scale<'a, B: ?Sized> {
    /// A value known on the host: must be finite and greater than 0
    /// ([`NormError::InvalidScale`](crate::NormError::InvalidScale) otherwise).
    Host(f32),
    /// One f32 element of a buffer of the backend (what a training loop with delayed scaling keeps
    /// on the device and updates from the previous `amax`s), read when the call runs. Its length
    /// (1) and dtype (f32) are validated; its value cannot be, without a device round trip: a
    /// scale that is 0, negative, infinite or NaN gives whatever `saturate_rne(y · scale)` gives
    /// (zeros, negated values, ±max finite, NaN), never an error and never undefined behaviour.
    Device(VecRef<'a, B>),
}

impl<B: ?Sized> Clone for Scale<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: ?Sized> Copy for Scale<'_, B> {}

/// How FP8 values are scaled.
#[derive(Debug)]
pub enum Fp8Scaling<'a, B: ?Sized> {
    /// One scale for the whole tensor (TransformerEngine's delayed and current scaling):
    /// `y_q = saturate_rne(y · scale)`.
    PerTensor(Scale<'a, B>),
    /// One scale per row (per token), computed by the kernel from the row itself:
    /// `scale_r = max_finite / max(amax_r, FP8_ROW_AMAX_FLOOR)` in f32, where `amax_r` is the largest
    /// `|y|` of row `r` before scaling and `max_finite` the format's largest value
    /// ([`crate::DType::max_finite`]); `y_q = saturate_rne(y · scale_r)`, and `1/scale_r` (f32) is
    /// written to `scale_inv[r]`. A row depends on nothing but itself, so batch invariance holds.
    PerRow,
}

/// The floor of a row's `amax` in per-row scaling (`2⁻⁴⁰ ≈ 9.1e-13`): a row of zeros gets a large
/// finite scale instead of an infinite one (`max_finite / 2⁻⁴⁰` is exact and finite in f32 for every
/// format), and its `scale_inv` stays a normal f32.
pub const FP8_ROW_AMAX_FLOOR: f32 = f32::from_bits(0x2B80_0000); // 2^-40: biased exponent 87

/// The FP8 quantisation of `y` ([`Forward::fp8`]): a scaling recipe and its outputs.
///
/// - `y_q = saturate_rne(y · scale)`: `y` as the descriptor computes it in fp32 (every casting mode
///   applies before the scale; in `None` mode `y` is already rounded to `x`'s dtype), multiplied by
///   the scale in f32 (one rounding), then rounded to nearest even into the FP8 format of `y`'s
///   buffer, saturating: a value beyond the largest finite magnitude (an infinity too) becomes
///   ±max finite; NaN stays NaN. The fnuz formats have no negative zero: a negative value that
///   rounds to zero is written `+0`.
/// - `amax` (optional, one f32): `max |y|` over the whole tensor, before scaling — the value a
///   delayed-scaling recipe feeds back into its next scale. NaN elements are ignored (as the GPU's
///   `max` instruction ignores them; a tensor of NaNs has `amax = 0`); infinities count. Computed per
///   row and reduced with `max`, which is exact in any order: deterministic. `M = 0` writes 0.
/// - `scale_inv`: per tensor, optional, one f32 `= 1/scale` (rounded once; written for `M = 0`
///   too); per row, required, M f32 values `1/scale_r` — what a GEMM multiplies its FP8 operand by
///   to dequantise.
/// - `transposed` (optional): `yT`, N × M with its own row stride (its rows are the columns of
///   `y`), in `y`'s FP8 dtype, bitwise the transpose of `y_q` — the layout a GEMM that consumes `y`
///   as its second operand wants. `y_q` itself is always written too.
///
/// `residual_out`, `mean` and `rstd` are unchanged by the quantisation. Every rule is validated
/// before anything is written: FP8 is a dtype of `y` (and `transposed`) only; `y` FP8 ⇔ `.fp8(…)`
/// given; a host scale finite and > 0; `scale`, `amax` one f32; `scale_inv` one f32 (per tensor) or
/// M f32 (per row); `transposed` N × M inside its buffer, in `y`'s dtype.
///
/// ```
/// use normkit_core::cpu::CpuBackend;
/// use normkit_core::{DType, Forward, Fp8, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, Scale, VecMut, VecRef};
///
/// let (m, n) = (2, 4);
/// let x = HostBuf::from_f32(DType::BF16, &[1.0, 2.0, 3.0, 4.0, -1.0, 1.0, -1.0, 1.0]);
/// let w = HostBuf::filled(DType::BF16, n, 1.0);
/// let mut y = HostBuf::zeros(DType::F8E4M3, m * n);
/// let mut y_t = HostBuf::zeros(DType::F8E4M3, n * m);
/// let (mut amax, mut scale_inv) = (HostBuf::zeros(DType::F32, 1), HostBuf::zeros(DType::F32, 1));
///
/// let q = Fp8::per_tensor(Scale::Host(64.0))
///     .amax(VecMut::new(&mut amax))
///     .scale_inv(VecMut::new(&mut scale_inv))
///     .transposed(MatMut::new(&mut y_t, n, m));
/// let io = InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n));
/// CpuBackend::new().forward(&NormDesc::rms(1e-6), Forward::new(io).weight(VecRef::new(&w)).fp8(q))?;
/// assert_eq!(y.get_f32(4), -64.0); // RMSNorm of ±1 is ±1, times the scale
/// assert_eq!(y.get_f32(3), 96.0); // 4/√7.5 · 64 ≈ 93.5, whose e4m3 neighbours are 88 and 96
/// assert_eq!(y_t.get_f32(1), y.get_f32(4)); // yT[0][1] = y[1][0]
/// assert_eq!(scale_inv.get_f32(0), 1.0 / 64.0);
/// assert!((amax.get_f32(0) - 4.0 / 7.5f32.sqrt()).abs() < 1e-6);
/// # Ok::<(), normkit_core::NormError>(())
/// ```
#[derive(Debug)]
pub struct Fp8<'a, B: ?Sized> {
    /// Per tensor (with its scale) or per row.
    pub scaling: Fp8Scaling<'a, B>,
    /// Where to write `amax = max |y|` over the tensor, before scaling: one f32.
    pub amax: Option<VecMut<'a, B>>,
    /// Where to write `1/scale`: one f32 per tensor (optional), M f32 per row (required).
    pub scale_inv: Option<VecMut<'a, B>>,
    /// Where to write `yT`, N × M, in `y`'s FP8 dtype.
    pub transposed: Option<crate::tensor::MatMut<'a, B>>,
}

impl<'a, B: ?Sized> Fp8<'a, B> {
    /// One scale for the whole tensor, from the host or from a one-element f32 buffer.
    pub fn per_tensor(scale: Scale<'a, B>) -> Self {
        Fp8 { scaling: Fp8Scaling::PerTensor(scale), amax: None, scale_inv: None, transposed: None }
    }

    /// One scale per row, computed from the row's own `amax`; each row's `1/scale_r` is written to
    /// `scale_inv` (M f32).
    pub fn per_row(scale_inv: VecMut<'a, B>) -> Self {
        Fp8 { scaling: Fp8Scaling::PerRow, amax: None, scale_inv: Some(scale_inv), transposed: None }
    }

    /// Also write `amax = max |y|` over the tensor (before scaling) to this one-element f32 view.
    pub fn amax(mut self, amax: VecMut<'a, B>) -> Self {
        self.amax = Some(amax);
        self
    }

    /// Also write `1/scale` (per tensor: one f32; per row this is set by [`Fp8::per_row`]).
    pub fn scale_inv(mut self, scale_inv: VecMut<'a, B>) -> Self {
        self.scale_inv = Some(scale_inv);
        self
    }

    /// Also write `yT` (N × M, its own row stride, `y`'s FP8 dtype), bitwise the transpose of `y_q`.
    ///
    /// Any row stride ≥ M is correct. For speed on CUDA, give `yT` a row stride (and a start)
    /// that is a multiple of 32 bytes: each CTA writes 32-byte runs of yT's rows, and runs that
    /// straddle 32-byte sectors share them with other CTAs' (H200, 4096 columns: 40960 rows 214
    /// µs, 40976 rows 387, 40961 rows 713; kernels-cuda/NOTES.md v30).
    pub fn transposed(mut self, y_t: MatMut<'a, B>) -> Self {
        self.transposed = Some(y_t);
        self
    }
}

/// Operands of a backward call, from the statistics the forward saved.
///
/// `dx = rstd·(w·dy − x̂·mean(x̂·w·dy))` for RMSNorm; LayerNorm subtracts `mean(w·dy)` too.
/// With the fused residual add, `x` is the tensor that was normalised (`residual_out`), and
/// `d_residual_out`, if given, is added to `dx`, which is then the gradient of both `x` and
/// `residual` of the forward call.
#[derive(Debug)]
pub struct Backward<'a, B: ?Sized> {
    /// The normalised input as stored (`residual_out` with the fused add).
    pub x: MatRef<'a, B>,
    /// `dy` in, `dx` out — or `dx` written over `dy`.
    pub dy: InOut<'a, B>,
    /// Incoming gradient of `residual_out` (fused add only; optional).
    pub d_residual_out: Option<MatRef<'a, B>>,
    /// The weight the forward used, length N; see [`Backward::weight`].
    pub weight: Option<VecRef<'a, B>>,
    /// LayerNorm mean (required for LayerNorm), f32, length M.
    pub mean: Option<VecRef<'a, B>>,
    /// Saved rstd, f32, length M (required).
    pub rstd: VecRef<'a, B>,
    /// `Σ_rows dy·x̂` (required iff the descriptor has a weight), weight's dtype, length N.
    pub dw: Option<VecMut<'a, B>>,
    /// `Σ_rows dy` (required iff the descriptor has a bias), weight's dtype, length N.
    pub db: Option<VecMut<'a, B>>,
}

impl<'a, B: ?Sized> Backward<'a, B> {
    /// The operands every backward needs.
    ///
    /// - `x`: the tensor the forward normalised, M × N (with the fused add, the forward's
    ///   `residual_out`); its shape sets `M` and `N` for every other operand.
    /// - `dy`: the gradient of `y` in, `dx` out, both M × N; `dy` in `x`'s dtype or f32, `dx` in
    ///   `dy`'s dtype. [`InOut::in_place`] writes `dx` over `dy`.
    /// - `rstd`: the `rstd` the forward saved ([`Forward::rstd`]), M elements, f32.
    pub fn new(x: MatRef<'a, B>, dy: InOut<'a, B>, rstd: VecRef<'a, B>) -> Self {
        Backward { x, dy, d_residual_out: None, weight: None, mean: None, rstd, dw: None, db: None }
    }

    /// The weight the forward used (N elements; the backward uses `w + offset`). Required iff
    /// the descriptor has a weight, and then [`Backward::dw`] is required too, in the same dtype.
    pub fn weight(mut self, w: VecRef<'a, B>) -> Self {
        self.weight = Some(w);
        self
    }

    /// The per-row mean the LayerNorm forward saved ([`Forward::mean`]): M elements, f32.
    /// Required for LayerNorm, not allowed for RMSNorm.
    pub fn mean(mut self, m: VecRef<'a, B>) -> Self {
        self.mean = Some(m);
        self
    }

    /// With the fused residual add: the gradient arriving at the forward's `residual_out` from
    /// later layers (M × N, in `dy`'s dtype). It is added to `dx`, which is then the gradient of
    /// both the forward's `x` and its `residual`. Optional; only allowed when
    /// [`crate::NormDesc::residual`] is set.
    pub fn d_residual_out(mut self, d: MatRef<'a, B>) -> Self {
        self.d_residual_out = Some(d);
        self
    }

    /// Where to write `dw = Σ_rows dy·x̂` (the weight's gradient): N elements, in the weight's
    /// dtype. Overwritten, not accumulated. Required iff the descriptor has a weight.
    pub fn dw(mut self, dw: VecMut<'a, B>) -> Self {
        self.dw = Some(dw);
        self
    }

    /// Where to write `db = Σ_rows dy` (the bias's gradient): N elements, in the weight's dtype
    /// (without a weight: `x`'s dtype or f32). Overwritten, not accumulated. Required iff
    /// [`crate::NormDesc::bias`].
    pub fn db(mut self, db: VecMut<'a, B>) -> Self {
        self.db = Some(db);
        self
    }
}

/// Converts the buffer references of a view from one buffer type to another (used by the
/// facade's type-erased backend). `None` from a converter means the buffer belongs to another
/// backend; the operand is reported back.
pub(crate) mod map {
    use crate::error::Operand;
    use crate::tensor::{InOut, MatMut, MatRef, VecMut, VecRef};

    pub type R<'a, C> = Result<C, Operand>;

    pub fn mat_ref<'a, B: ?Sized, C: ?Sized>(m: MatRef<'a, B>, op: Operand, f: &impl Fn(&'a B) -> Option<&'a C>) -> R<'a, MatRef<'a, C>> {
        Ok(MatRef { buf: f(m.buf).ok_or(op)?, layout: m.layout })
    }
    pub fn mat_mut<'a, B: ?Sized, C: ?Sized>(
        m: MatMut<'a, B>,
        op: Operand,
        g: &impl Fn(&'a mut B) -> Option<&'a mut C>,
    ) -> R<'a, MatMut<'a, C>> {
        Ok(MatMut { buf: g(m.buf).ok_or(op)?, layout: m.layout })
    }
    pub fn vec_ref<'a, B: ?Sized, C: ?Sized>(v: VecRef<'a, B>, op: Operand, f: &impl Fn(&'a B) -> Option<&'a C>) -> R<'a, VecRef<'a, C>> {
        Ok(VecRef { buf: f(v.buf).ok_or(op)?, span: v.span })
    }
    pub fn vec_mut<'a, B: ?Sized, C: ?Sized>(
        v: VecMut<'a, B>,
        op: Operand,
        g: &impl Fn(&'a mut B) -> Option<&'a mut C>,
    ) -> R<'a, VecMut<'a, C>> {
        Ok(VecMut { buf: g(v.buf).ok_or(op)?, span: v.span })
    }
    pub fn in_out<'a, B: ?Sized, C: ?Sized>(
        io: InOut<'a, B>,
        in_op: Operand,
        out_op: Operand,
        f: &impl Fn(&'a B) -> Option<&'a C>,
        g: &impl Fn(&'a mut B) -> Option<&'a mut C>,
    ) -> R<'a, InOut<'a, C>> {
        Ok(match io {
            InOut::Separate { input, output } => InOut::Separate { input: mat_ref(input, in_op, f)?, output: mat_mut(output, out_op, g)? },
            InOut::InPlace(m) => InOut::InPlace(mat_mut(m, out_op, g)?),
        })
    }
}

impl<'a, B: ?Sized> Forward<'a, B> {
    /// The same operands with every buffer converted by `f` (inputs) and `g` (outputs).
    /// Returns the first operand whose converter returned `None`.
    pub fn try_map<C: ?Sized>(
        self,
        f: impl Fn(&'a B) -> Option<&'a C>,
        g: impl Fn(&'a mut B) -> Option<&'a mut C>,
    ) -> Result<Forward<'a, C>, crate::Operand> {
        use crate::Operand as O;
        Ok(Forward {
            x: map::in_out(self.x, O::X, O::Y, &f, &g)?,
            residual: self.residual.map(|r| map::in_out(r, O::Residual, O::ResidualOut, &f, &g)).transpose()?,
            weight: self.weight.map(|v| map::vec_ref(v, O::Weight, &f)).transpose()?,
            bias: self.bias.map(|v| map::vec_ref(v, O::Bias, &f)).transpose()?,
            mean: self.mean.map(|v| map::vec_mut(v, O::Mean, &g)).transpose()?,
            rstd: self.rstd.map(|v| map::vec_mut(v, O::Rstd, &g)).transpose()?,
            fp8: self
                .fp8
                .map(|q| -> Result<Fp8<'a, C>, crate::Operand> {
                    Ok(Fp8 {
                        scaling: match q.scaling {
                            Fp8Scaling::PerTensor(Scale::Host(s)) => Fp8Scaling::PerTensor(Scale::Host(s)),
                            Fp8Scaling::PerTensor(Scale::Device(v)) => Fp8Scaling::PerTensor(Scale::Device(map::vec_ref(v, O::Scale, &f)?)),
                            Fp8Scaling::PerRow => Fp8Scaling::PerRow,
                        },
                        amax: q.amax.map(|v| map::vec_mut(v, O::Amax, &g)).transpose()?,
                        scale_inv: q.scale_inv.map(|v| map::vec_mut(v, O::ScaleInv, &g)).transpose()?,
                        transposed: q.transposed.map(|m| map::mat_mut(m, O::Transposed, &g)).transpose()?,
                    })
                })
                .transpose()?,
        })
    }
}

impl<'a, B: ?Sized> Backward<'a, B> {
    /// The same operands with every buffer converted by `f` (inputs) and `g` (outputs).
    pub fn try_map<C: ?Sized>(
        self,
        f: impl Fn(&'a B) -> Option<&'a C>,
        g: impl Fn(&'a mut B) -> Option<&'a mut C>,
    ) -> Result<Backward<'a, C>, crate::Operand> {
        use crate::Operand as O;
        Ok(Backward {
            x: map::mat_ref(self.x, O::X, &f)?,
            dy: map::in_out(self.dy, O::Dy, O::Dx, &f, &g)?,
            d_residual_out: self.d_residual_out.map(|d| map::mat_ref(d, O::DResidualOut, &f)).transpose()?,
            weight: self.weight.map(|v| map::vec_ref(v, O::Weight, &f)).transpose()?,
            mean: self.mean.map(|v| map::vec_ref(v, O::Mean, &f)).transpose()?,
            rstd: map::vec_ref(self.rstd, O::Rstd, &f)?,
            dw: self.dw.map(|v| map::vec_mut(v, O::Dw, &g)).transpose()?,
            db: self.db.map(|v| map::vec_mut(v, O::Db, &g)).transpose()?,
        })
    }
}
