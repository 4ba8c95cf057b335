//! The CPU backend's FP8 outputs against the same call with an f32 `y`: with an f32 output the
//! backend stores exactly the fp32 value an FP8 `y` is scaled from (every casting mode rounds
//! before that point), so `y_q` must be bitwise `round_to(fp8, y_f32 · scale)` — and `amax`,
//! `scale_inv`, `yT` follow from the same values. Plus every validation error, with nothing written.

use super::CpuBackend;
use crate::{
    round_to, Buffer, CastingMode, DType, Dim, Forward, Fp8, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel,
    Operand, Scale, VecMut, VecRef, FP8_ROW_AMAX_FLOOR,
};

fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Host(f32),
    Device(f32),
    PerRow,
}

struct Out {
    y: HostBuf,
    y_t: HostBuf,
    amax: HostBuf,
    scale_inv: HostBuf,
}

/// Runs `desc` on `m × n` bf16 inputs (residual bf16 with the fused add) with `y` in `ydt`, and,
/// for an FP8 `ydt`, all the FP8 outputs (`yT` with stride `m + 3`).
fn run(desc: &NormDesc, ydt: DType, mode: Mode, m: usize, n: usize, seed: u64) -> Out {
    let x = HostBuf::from_f32(DType::BF16, &data(m * n, seed));
    let w = HostBuf::from_f32(DType::BF16, &data(n, seed + 1));
    let b = HostBuf::from_f32(DType::BF16, &data(n, seed + 2));
    let r = HostBuf::from_f32(DType::BF16, &data(m * n, seed + 3));
    let mut ro = HostBuf::zeros(DType::BF16, m * n);
    let mut y = HostBuf::filled(ydt, m * n, f32::NAN);
    let fp8 = ydt.is_fp8();
    let tl = Layout::strided(n, m, m + 3);
    let mut y_t = HostBuf::filled(if fp8 { ydt } else { DType::F32 }, tl.span().unwrap_or(0), f32::NAN);
    let mut amax = HostBuf::filled(DType::F32, 1, f32::NAN);
    let mut scale_inv = HostBuf::filled(DType::F32, if mode == Mode::PerRow { m } else { 1 }, f32::NAN);
    let scale_buf = HostBuf::from_f32(DType::F32, &[0.0, if let Mode::Device(s) = mode { s } else { 0.0 }]);
    let mut a = Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n)));
    if desc.weight.is_some() {
        a = a.weight(VecRef::new(&w));
    }
    if desc.bias {
        a = a.bias(VecRef::new(&b));
    }
    if desc.residual {
        a = a.residual(InOut::separate(MatRef::new(&r, m, n), MatMut::new(&mut ro, m, n)));
    }
    if fp8 {
        let q = match mode {
            Mode::Host(s) => Fp8::per_tensor(Scale::Host(s)).scale_inv(VecMut::new(&mut scale_inv)),
            Mode::Device(_) => Fp8::per_tensor(Scale::Device(VecRef::with_span(&scale_buf, 1, 1))).scale_inv(VecMut::new(&mut scale_inv)),
            Mode::PerRow => Fp8::per_row(VecMut::new(&mut scale_inv)),
        };
        a = a.fp8(q.amax(VecMut::new(&mut amax)).transposed(MatMut::with_layout(&mut y_t, tl)));
    }
    CpuBackend::new().forward(desc, a).unwrap_or_else(|e| panic!("{desc:?} {ydt}: {e}"));
    Out { y, y_t, amax, scale_inv }
}

fn descs() -> Vec<NormDesc> {
    let mut v = Vec::new();
    for casting in CastingMode::ALL {
        v.push(NormDesc::rms(1e-6).with_casting(casting));
        v.push(NormDesc::layer(1e-5).with_casting(casting));
        v.push(NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0).with_casting(casting));
    }
    v
}

#[test]
fn fp8_outputs_are_the_f32_outputs_scaled_and_rounded() {
    for (di, desc) in descs().iter().enumerate() {
        for (fi, &fmt) in DType::FP8.iter().enumerate() {
            for mode in [Mode::Host(37.5), Mode::Device(300.0), Mode::PerRow] {
                for (m, n) in [(1, 1), (3, 7), (5, 130), (2, 1000)] {
                    let seed = (di * 16 + fi) as u64;
                    let reference = run(desc, DType::F32, mode, m, n, seed).y.to_f32_vec();
                    let got = run(desc, fmt, mode, m, n, seed);
                    let what = format!("{desc:?} {fmt} {mode:?} {m}x{n}");
                    let mut amax = 0.0f32;
                    for i in 0..m {
                        let row = &reference[i * n..(i + 1) * n];
                        let row_amax = row.iter().fold(0.0f32, |a, &v| a.max(v.abs()));
                        amax = amax.max(row_amax);
                        let scale = match mode {
                            Mode::Host(s) | Mode::Device(s) => s,
                            Mode::PerRow => fmt.max_finite() as f32 / row_amax.max(FP8_ROW_AMAX_FLOOR),
                        };
                        if mode == Mode::PerRow {
                            assert_eq!(got.scale_inv.get_f32(i), 1.0 / scale, "{what}: scale_inv[{i}]");
                        }
                        for (j, &v) in row.iter().enumerate() {
                            let want = HostBuf::from_f32(fmt, &[v * scale]).as_bytes()[0];
                            assert_eq!(got.y.as_bytes()[i * n + j], want, "{what}: y[{i},{j}] from {v} · {scale}");
                            assert_eq!(got.y_t.as_bytes()[j * (m + 3) + i], want, "{what}: yT[{j},{i}]");
                        }
                    }
                    assert_eq!(got.amax.get_f32(0), amax, "{what}: amax");
                    if let Mode::Host(s) | Mode::Device(s) = mode {
                        assert_eq!(got.scale_inv.get_f32(0), 1.0 / s, "{what}: scale_inv");
                    }
                    // The gaps of yT (stride m + 3) are untouched.
                    for j in 0..n {
                        for k in m..(m + 3).min(got.y_t.len() - j * (m + 3)) {
                            assert!(got.y_t.get_f32(j * (m + 3) + k).is_nan(), "{what}: yT gap");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn saturation_nan_and_the_empty_batch() {
    let desc = NormDesc::rms(1e-6).without_weight();
    for fmt in DType::FP8 {
        let max = fmt.max_finite() as f32;
        // ±1-ish values times a scale far beyond max: every element saturates to ±max.
        let got = run(&desc, fmt, Mode::Host(1e15), 3, 9, 7);
        for v in got.y.to_f32_vec() {
            assert_eq!(v.abs(), max, "{fmt}: saturated");
        }
        // A NaN in x: its row is NaN in y_q, the other rows are finite, amax ignores the NaN.
        let (m, n) = (3, 5);
        let mut xs = data(m * n, 3);
        xs[n + 2] = f32::NAN;
        let x = HostBuf::from_f32(DType::F32, &xs);
        let mut y = HostBuf::zeros(fmt, m * n);
        let mut amax = HostBuf::filled(DType::F32, 1, f32::NAN);
        let a = Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n)))
            .fp8(Fp8::per_tensor(Scale::Host(1.0)).amax(VecMut::new(&mut amax)));
        CpuBackend::new().forward(&desc, a).expect("forward");
        let y = y.to_f32_vec();
        assert!(y[n..2 * n].iter().all(|v| v.is_nan()), "{fmt}: NaN stays NaN");
        assert!(y[..n].iter().chain(&y[2 * n..]).all(|v| v.is_finite()), "{fmt}: other rows finite");
        assert!(amax.get_f32(0).is_finite() && amax.get_f32(0) > 0.0, "{fmt}: amax ignores NaN");
        // M = 0: amax = 0 and scale_inv written, nothing else.
        let x = HostBuf::zeros(DType::F32, 0);
        let mut y = HostBuf::zeros(fmt, 0);
        let mut y_t = HostBuf::zeros(fmt, 0);
        let (mut amax, mut inv) = (HostBuf::filled(DType::F32, 1, f32::NAN), HostBuf::filled(DType::F32, 1, f32::NAN));
        let a = Forward::new(InOut::separate(MatRef::new(&x, 0, 4), MatMut::new(&mut y, 0, 4))).fp8(
            Fp8::per_tensor(Scale::Host(4.0))
                .amax(VecMut::new(&mut amax))
                .scale_inv(VecMut::new(&mut inv))
                .transposed(MatMut::new(&mut y_t, 4, 0)),
        );
        CpuBackend::new().forward(&desc, a).expect("empty batch");
        assert_eq!((amax.get_f32(0), inv.get_f32(0)), (0.0, 0.25));
    }
    // fnuz: a negative value that rounds to zero is +0, never the NaN 0x80.
    assert_eq!(round_to(DType::F8E4M3Fnuz, -1e-9), 0.0);
    assert_eq!(HostBuf::from_f32(DType::F8E5M2Fnuz, &[-1e-9]).as_bytes(), &[0]);
}

/// Every bad FP8 combination is its typed error, and no output (y, amax, scale_inv, yT) is touched.
#[test]
fn every_bad_fp8_call_is_a_typed_error_and_writes_nothing() {
    let (m, n) = (3, 8);
    let desc = NormDesc::rms(1e-6).without_weight();
    let x = HostBuf::from_f32(DType::BF16, &data(m * n, 1));
    #[derive(Clone, Copy)]
    enum Bad {
        NoFp8Args,
        Fp8ArgsWithBf16Y,
        InPlace,
        ScaleZero,
        ScaleNan,
        ScaleInf,
        ScaleNegative,
        DeviceScaleLen2,
        DeviceScaleF16,
        AmaxLen2,
        AmaxBf16,
        PerRowScaleInvLen1,
        PerRowWithoutScaleInv,
        PerTensorScaleInvLenM,
        TransposedOtherFormat,
        TransposedNotTransposed,
        TransposedTooSmall,
        TransposedStrideTooSmall,
    }
    type Expect = fn(&NormError) -> bool;
    let cases: &[(Bad, Expect)] = &[
        (Bad::NoFp8Args, |e| matches!(e, NormError::Missing { operand: Operand::Scale })),
        (Bad::Fp8ArgsWithBf16Y, |e| matches!(e, NormError::DType { operand: Operand::Y, dtype: DType::BF16, .. })),
        (Bad::InPlace, |e| matches!(e, NormError::DType { operand: Operand::Y, dtype: DType::BF16, .. })),
        (Bad::ScaleZero, |e| matches!(e, NormError::InvalidScale { scale } if *scale == 0.0)),
        (Bad::ScaleNan, |e| matches!(e, NormError::InvalidScale { scale } if scale.is_nan())),
        (Bad::ScaleInf, |e| matches!(e, NormError::InvalidScale { .. })),
        (Bad::ScaleNegative, |e| matches!(e, NormError::InvalidScale { .. })),
        (Bad::DeviceScaleLen2, |e| matches!(e, NormError::Shape { operand: Operand::Scale, dim: Dim::Len, expected: 1, got: 2 })),
        (Bad::DeviceScaleF16, |e| matches!(e, NormError::DType { operand: Operand::Scale, dtype: DType::F16, .. })),
        (Bad::AmaxLen2, |e| matches!(e, NormError::Shape { operand: Operand::Amax, expected: 1, got: 2, .. })),
        (Bad::AmaxBf16, |e| matches!(e, NormError::DType { operand: Operand::Amax, .. })),
        (Bad::PerRowScaleInvLen1, |e| matches!(e, NormError::Shape { operand: Operand::ScaleInv, expected: 3, got: 1, .. })),
        (Bad::PerRowWithoutScaleInv, |e| matches!(e, NormError::Missing { operand: Operand::ScaleInv })),
        (Bad::PerTensorScaleInvLenM, |e| matches!(e, NormError::Shape { operand: Operand::ScaleInv, expected: 1, got: 3, .. })),
        (Bad::TransposedOtherFormat, |e| matches!(e, NormError::DType { operand: Operand::Transposed, dtype: DType::F8E5M2, .. })),
        (Bad::TransposedNotTransposed, |e| {
            matches!(e, NormError::Shape { operand: Operand::Transposed, dim: Dim::Rows, expected: 8, got: 3 })
        }),
        (Bad::TransposedTooSmall, |e| matches!(e, NormError::OutOfBounds { operand: Operand::Transposed, .. })),
        (Bad::TransposedStrideTooSmall, |e| matches!(e, NormError::Stride { operand: Operand::Transposed, .. })),
    ];
    for &(bad, ok) in cases {
        let ydt = if matches!(bad, Bad::Fp8ArgsWithBf16Y) { DType::BF16 } else { DType::F8E4M3 };
        let mut y = HostBuf::filled(ydt, m * n, f32::NAN);
        let mut xi = x.clone();
        let scale_len = if matches!(bad, Bad::DeviceScaleLen2) { 2 } else { 1 };
        let scale = HostBuf::filled(if matches!(bad, Bad::DeviceScaleF16) { DType::F16 } else { DType::F32 }, scale_len, 2.0);
        let mut amax = HostBuf::filled(
            if matches!(bad, Bad::AmaxBf16) { DType::BF16 } else { DType::F32 },
            if matches!(bad, Bad::AmaxLen2) { 2 } else { 1 },
            f32::NAN,
        );
        let inv_len = match bad {
            Bad::PerRowScaleInvLen1 => 1,
            Bad::PerTensorScaleInvLenM => m,
            _ => m,
        };
        let mut inv = HostBuf::filled(DType::F32, inv_len, f32::NAN);
        let tdt = if matches!(bad, Bad::TransposedOtherFormat) { DType::F8E5M2 } else { DType::F8E4M3 };
        let mut y_t = HostBuf::filled(tdt, if matches!(bad, Bad::TransposedTooSmall) { n * m - 1 } else { n * m }, f32::NAN);
        let tl = match bad {
            Bad::TransposedNotTransposed => Layout::contiguous(m, n),
            Bad::TransposedStrideTooSmall => Layout::strided(n, m, m - 1),
            _ => Layout::contiguous(n, m),
        };
        let before: Vec<HostBuf> = vec![y.clone(), amax.clone(), inv.clone(), y_t.clone(), xi.clone()];
        let host = |s: f32| Scale::Host(s);
        let q = match bad {
            Bad::ScaleZero => Some(Fp8::per_tensor(host(0.0))),
            Bad::ScaleNan => Some(Fp8::per_tensor(host(f32::NAN))),
            Bad::ScaleInf => Some(Fp8::per_tensor(host(f32::INFINITY))),
            Bad::ScaleNegative => Some(Fp8::per_tensor(host(-1.0))),
            Bad::DeviceScaleLen2 | Bad::DeviceScaleF16 => Some(Fp8::per_tensor(Scale::Device(VecRef::new(&scale)))),
            Bad::PerRowScaleInvLen1 => Some(Fp8::per_row(VecMut::new(&mut inv))),
            Bad::PerRowWithoutScaleInv => {
                let mut q = Fp8::per_row(VecMut::new(&mut inv));
                q.scale_inv = None;
                Some(q)
            }
            Bad::PerTensorScaleInvLenM => Some(Fp8::per_tensor(host(1.0)).scale_inv(VecMut::new(&mut inv))),
            Bad::NoFp8Args => None,
            _ => Some(Fp8::per_tensor(host(1.0))),
        }
        .map(|q| q.amax(VecMut::new(&mut amax)).transposed(MatMut::with_layout(&mut y_t, tl)));
        let io = if matches!(bad, Bad::InPlace) {
            InOut::in_place(MatMut::new(&mut xi, m, n))
        } else {
            InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n))
        };
        let mut a = Forward::new(io);
        a.fp8 = q;
        let err = CpuBackend::new().forward(&desc, a).expect_err("a bad FP8 call must fail");
        assert!(ok(&err), "unexpected error {err:?}");
        assert!(!err.to_string().is_empty());
        for (b, a) in before.iter().zip([&y, &amax, &inv, &y_t, &xi]) {
            assert!(b.bits_eq(a), "an output was written before the error {err:?}");
        }
    }
}

/// FP8 is an output of the forward only: as `x`, a weight, a residual or a gradient it is refused.
#[test]
fn fp8_is_not_an_input_dtype() {
    use crate::{check_dtypes, DTypes, Direction};
    let desc = NormDesc::rms(1e-6).with_residual(true);
    for f in DType::FP8 {
        let base = DTypes::uniform(DType::BF16);
        for (d, op) in [
            (DTypes { x: f, ..base }, Operand::X),
            (DTypes { weight: f, ..base }, Operand::Weight),
            (DTypes { residual: f, ..base }, Operand::Residual),
        ] {
            let e = check_dtypes(&desc, Direction::Forward, &d).expect_err("refused");
            assert!(matches!(e, NormError::DType { operand, .. } if operand == op), "{e:?}");
        }
        assert!(check_dtypes(&desc, Direction::Forward, &DTypes { y: f, ..base }).is_ok());
        let e = check_dtypes(&desc, Direction::Backward, &DTypes { y: f, ..base }).expect_err("no FP8 gradients");
        assert!(matches!(e, NormError::DType { operand: Operand::Dy, .. }), "{e:?}");
        assert!(CpuBackend::new().supports(Direction::Forward, &desc, &DTypes { y: f, ..base }).is_ok());
    }
}
