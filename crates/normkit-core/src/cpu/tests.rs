//! Quick checks of the CPU backend. The backend-agnostic conformance suite lives in `tests/`.

use super::convert::{bf16_bits_to_f32, f32_to_bf16_bits};
use super::CpuBackend;
use crate::{Backward, CastingMode, DType, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormKernel, Span, VecMut, VecRef};
use half::bf16;

/// Deterministic pseudo-random values in about [-2, 2] (xorshift).
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

fn vref(b: &HostBuf) -> VecRef<'_, HostBuf> {
    VecRef { buf: b, span: Span { offset: 0, len: crate::Buffer::len(b) } }
}
fn vmut(b: &mut HostBuf) -> VecMut<'_, HostBuf> {
    let len = crate::Buffer::len(b);
    VecMut { buf: b, span: Span { offset: 0, len } }
}

#[test]
fn bf16_to_f32_matches_half_for_every_pattern() {
    for b in 0..=u16::MAX {
        let (ours, theirs) = (bf16_bits_to_f32(b), bf16::from_bits(b).to_f32());
        if theirs.is_nan() {
            // `half` quiets signalling NaNs; the shift keeps the payload as is (as GPUs do).
            // Both are NaN with the same sign.
            assert!(ours.is_nan() && ours.is_sign_negative() == theirs.is_sign_negative(), "{b:#06x}");
        } else {
            assert_eq!(ours.to_bits(), theirs.to_bits(), "{b:#06x}");
        }
    }
}

#[test]
fn f32_to_bf16_matches_half() {
    let check = |x: u32| {
        let v = f32::from_bits(x);
        assert_eq!(f32_to_bf16_bits(v), bf16::from_f32(v).to_bits(), "{x:#010x}");
    };
    // Every exponent/sign/high-mantissa combination, with the low half at the rounding edges:
    // exact, just below/at/above the tie, and the extremes. Covers ±0, subnormals, the carry into
    // the exponent, overflow to Inf, ±Inf and quiet and signalling NaNs.
    for hi in 0..=u16::MAX as u32 {
        for lo in [0u32, 1, 0x3fff, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff] {
            check((hi << 16) | lo);
        }
    }
    // And a walk over the rest with a stride coprime to 2^32.
    let mut x = 0u32;
    for _ in 0..2_000_000 {
        check(x);
        x = x.wrapping_add(2_147_483_647 / 1000 * 2 + 1);
    }
}

/// Runs a forward call with contiguous operands; returns (y, mean, rstd).
fn fwd(desc: &NormDesc, dt: DType, m: usize, n: usize, x: &[f32], w: &[f32], b: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let xb = HostBuf::from_f32(dt, x);
    let mut yb = HostBuf::filled(dt, m * n, f32::NAN);
    let wb = HostBuf::from_f32(dt, w);
    let bb = HostBuf::from_f32(dt, b);
    let mut mean = HostBuf::filled(DType::F32, m, f32::NAN);
    let mut rstd = HostBuf::filled(DType::F32, m, f32::NAN);
    let mut a = Forward::new(InOut::separate(MatRef::new(&xb, m, n), MatMut::new(&mut yb, m, n)));
    if desc.weight.is_some() {
        a = a.weight(vref(&wb));
    }
    if desc.bias {
        a = a.bias(vref(&bb));
    }
    if desc.save_stats {
        a = a.rstd(vmut(&mut rstd));
        if desc.has_mean() {
            a = a.mean(vmut(&mut mean));
        }
    }
    CpuBackend::new().forward(desc, a).unwrap();
    (yb.to_f32_vec(), mean.to_f32_vec(), rstd.to_f32_vec())
}

/// f64 reference of one row: (y, mean, rstd).
fn reference_row(layer: bool, eps: f64, x: &[f32], w: &[f32], offset: f64, b: Option<&[f32]>) -> (Vec<f64>, f64, f64) {
    let n = x.len() as f64;
    let mu = if layer { x.iter().map(|&v| v as f64).sum::<f64>() / n } else { 0.0 };
    let var = x.iter().map(|&v| (v as f64 - mu).powi(2)).sum::<f64>() / n;
    let rstd = 1.0 / (var + eps).sqrt();
    let y = (0..x.len()).map(|i| (x[i] as f64 - mu) * rstd * (w[i] as f64 + offset) + b.map_or(0.0, |b| b[i] as f64)).collect();
    (y, mu, rstd)
}

#[test]
fn rms_and_layer_norm_match_hand_computation() {
    // By hand: x = [1, 2, 3, 4]; mean(x²) = 7.5; rstd = 1/sqrt(7.5 + 0.5) = 1/sqrt(8).
    let desc = NormDesc::rms(0.5).with_weight_offset(1.0).with_save_stats(true);
    let (y, _, r) = fwd(&desc, DType::F32, 1, 4, &[1.0, 2.0, 3.0, 4.0], &[0.0, 1.0, -1.0, 0.5], &[]);
    let s = 1.0 / 8f32.sqrt();
    assert!((r[0] - s).abs() < 1e-7);
    for (got, want) in y.iter().zip([s, 2.0 * 2.0 * s, 0.0, 1.5 * 4.0 * s]) {
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
    // LayerNorm: x = [1, 2, 3, 4]; μ = 2.5; var = 1.25; eps = 0.75 → rstd = 1/sqrt(2).
    let desc = NormDesc::layer(0.75).with_save_stats(true);
    let (y, mu, r) = fwd(&desc, DType::F32, 1, 4, &[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 1.0, 1.0], &[0.0, 0.0, 1.0, -1.0]);
    let s = 1.0 / 2f32.sqrt();
    assert_eq!(mu[0], 2.5);
    assert!((r[0] - s).abs() < 1e-7);
    for (got, want) in y.iter().zip([-1.5 * s, -0.5 * 2.0 * s, 0.5 * s + 1.0, 1.5 * s - 1.0]) {
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
}

#[test]
fn forward_matches_f64_reference_for_every_dtype_and_casting() {
    let (m, n) = (5, 777);
    let x: Vec<f32> = data(m * n, 1).iter().map(|v| v * 3.0 + 0.5).collect();
    let w = data(n, 2);
    let b = data(n, 3);
    for dt in DType::ALL {
        let xr: Vec<f32> = x.iter().map(|&v| crate::round_to(dt, v)).collect();
        let wr: Vec<f32> = w.iter().map(|&v| crate::round_to(dt, v)).collect();
        let br: Vec<f32> = b.iter().map(|&v| crate::round_to(dt, v)).collect();
        for casting in CastingMode::ALL {
            for layer in [false, true] {
                let base = if layer { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-5).with_bias(true) };
                let desc = base.with_casting(casting).with_weight_offset(0.25).with_save_stats(true);
                let (y, _, _) = fwd(&desc, dt, m, n, &x, &w, &b);
                // A few roundings of the input dtype at most (None mode rounds every step).
                let tol = 8.0 * dt.unit_roundoff() + 1e-6;
                for r in 0..m {
                    let (want, _, _) = reference_row(layer, 1e-5, &xr[r * n..][..n], &wr, 0.25, Some(&br));
                    for (i, (&g, &e)) in y[r * n..][..n].iter().zip(&want).enumerate() {
                        let scale = e.abs().max(1.0);
                        assert!(((g as f64 - e) / scale).abs() < tol, "{dt} {casting:?} layer={layer} row {r} col {i}: {g} vs {e}");
                    }
                }
            }
        }
    }
}

/// Backward on contiguous f32 operands: (dx, dw, db).
#[allow(clippy::too_many_arguments)]
fn bwd(
    desc: &NormDesc,
    dt: DType,
    m: usize,
    n: usize,
    x: &HostBuf,
    dy: &[f32],
    w: &[f32],
    stats: (&HostBuf, &HostBuf),
) -> (HostBuf, HostBuf, HostBuf) {
    let dyb = HostBuf::from_f32(dt, dy);
    let mut dx = HostBuf::filled(dt, m * n, f32::NAN);
    let wb = HostBuf::from_f32(dt, w);
    let mut dw = HostBuf::filled(dt, n, f32::NAN);
    let mut db = HostBuf::filled(dt, n, f32::NAN);
    let mut a = Backward::new(MatRef::new(x, m, n), InOut::separate(MatRef::new(&dyb, m, n), MatMut::new(&mut dx, m, n)), vref(stats.1))
        .weight(vref(&wb))
        .dw(vmut(&mut dw));
    if desc.has_mean() {
        a = a.mean(vref(stats.0));
    }
    if desc.bias {
        a = a.db(vmut(&mut db));
    }
    CpuBackend::new().backward(desc, a).unwrap();
    (dx, dw, db)
}

fn stats_of(desc: &NormDesc, m: usize, n: usize, x: &HostBuf, w: &[f32]) -> (HostBuf, HostBuf) {
    let dt = crate::Buffer::dtype(x);
    let mut y = HostBuf::zeros(dt, m * n);
    let wb = HostBuf::from_f32(dt, w);
    let bb = HostBuf::zeros(dt, n);
    let mut mean = HostBuf::zeros(DType::F32, m);
    let mut rstd = HostBuf::zeros(DType::F32, m);
    let mut a = Forward::new(InOut::separate(MatRef::new(x, m, n), MatMut::new(&mut y, m, n))).weight(vref(&wb)).rstd(vmut(&mut rstd));
    if desc.bias {
        a = a.bias(vref(&bb));
    }
    if desc.has_mean() {
        a = a.mean(vmut(&mut mean));
    }
    CpuBackend::new().forward(&desc.with_save_stats(true), a).unwrap();
    (mean, rstd)
}

#[test]
fn backward_matches_f64_reference() {
    let (m, n) = (70, 129);
    let x = HostBuf::from_f32(DType::F32, &data(m * n, 4));
    let dy = data(m * n, 5);
    let w = data(n, 6);
    for layer in [false, true] {
        let desc = if layer { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-5) }.with_weight_offset(1.0);
        let stats = stats_of(&desc, m, n, &x, &w);
        let (dx, dw, db) = bwd(&desc, DType::F32, m, n, &x, &dy, &w, (&stats.0, &stats.1));
        let (dx, dw, db) = (dx.to_f32_vec(), dw.to_f32_vec(), db.to_f32_vec());
        let xs = x.to_f32_vec();
        let mut dw_ref = vec![0.0f64; n];
        let mut db_ref = vec![0.0f64; n];
        for r in 0..m {
            let row = &xs[r * n..][..n];
            let nf = n as f64;
            let mu = if layer { row.iter().map(|&v| v as f64).sum::<f64>() / nf } else { 0.0 };
            let rstd = 1.0 / (row.iter().map(|&v| (v as f64 - mu).powi(2)).sum::<f64>() / nf + 1e-5).sqrt();
            let xh: Vec<f64> = row.iter().map(|&v| (v as f64 - mu) * rstd).collect();
            let g: Vec<f64> = (0..n).map(|i| dy[r * n + i] as f64 * (w[i] as f64 + 1.0)).collect();
            let mg = if layer { g.iter().sum::<f64>() / nf } else { 0.0 };
            let mgx = g.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>() / nf;
            for i in 0..n {
                let want = rstd * (g[i] - mg - xh[i] * mgx);
                assert!((dx[r * n + i] as f64 - want).abs() < 1e-4 * want.abs().max(1.0), "dx {r},{i}");
                dw_ref[i] += dy[r * n + i] as f64 * xh[i];
                db_ref[i] += dy[r * n + i] as f64;
            }
        }
        for i in 0..n {
            assert!((dw[i] as f64 - dw_ref[i]).abs() < 1e-4 * dw_ref[i].abs().max(1.0), "dw {i}");
            if layer {
                assert!((db[i] as f64 - db_ref[i]).abs() < 1e-4 * db_ref[i].abs().max(1.0), "db {i}");
            }
        }
    }
}

#[test]
fn backward_is_bitwise_deterministic_across_thread_counts() {
    // 1000 rows: 16 blocks of 64, so the tree has real structure.
    let (m, n) = (1000, 300);
    for dt in [DType::F32, DType::BF16] {
        let x = HostBuf::from_f32(dt, &data(m * n, 7));
        let dy = data(m * n, 8);
        let w = data(n, 9);
        let desc = NormDesc::layer(1e-5);
        let stats = stats_of(&desc, m, n, &x, &w);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| bwd(&desc, dt, m, n, &x, &dy, &w, (&stats.0, &stats.1)))
        };
        let (a, b) = (run(1), run(3));
        assert!(a.0.bits_eq(&b.0), "dx differs");
        assert!(a.1.bits_eq(&b.1), "dw differs");
        assert!(a.2.bits_eq(&b.2), "db differs");
    }
}

#[test]
fn forward_is_batch_invariant() {
    let n = 1000;
    let big = data(300 * n, 10);
    let w = data(n, 11);
    for dt in [DType::F32, DType::BF16] {
        let desc = NormDesc::layer(1e-6).with_save_stats(true);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (y_all, _, r_all) = pool.install(|| fwd(&desc, dt, 300, n, &big, &w, &w));
        for r in [0, 17, 299] {
            let (y1, _, r1) = fwd(&desc, dt, 1, n, &big[r * n..][..n], &w, &w);
            let same = y1.iter().zip(&y_all[r * n..][..n]).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same && r1[0].to_bits() == r_all[r].to_bits(), "{dt} row {r}");
        }
    }
}

#[test]
fn strided_in_place_and_residual() {
    // Rows of 3 in a stride of 5 from offset 2; residual add in place; y in place over x.
    let (m, n, stride, off) = (2, 3, 5, 2);
    let lay = Layout::strided(m, n, stride).with_offset(off);
    let xv = [9.0, 9.0, 1.0, 2.0, 3.0, 9.0, 9.0, 4.0, 5.0, 6.0, 9.0, 9.0];
    let rv = [9.0, 9.0, 0.5, 0.25, -1.0, 9.0, 9.0, 1.0, 1.0, 1.0, 9.0, 9.0];
    for dt in [DType::F32, DType::F16, DType::BF16] {
        let mut x = HostBuf::from_f32(dt, &xv);
        let mut res = HostBuf::from_f32(DType::F32, &rv);
        let w = HostBuf::from_f32(DType::F32, &[1.0, 2.0, 3.0]);
        let desc = NormDesc::rms(1e-6).with_residual(true);
        let a = Forward::new(InOut::in_place(MatMut::with_layout(&mut x, lay)))
            .residual(InOut::in_place(MatMut::with_layout(&mut res, lay)))
            .weight(vref(&w));
        CpuBackend::new().forward(&desc, a).unwrap();
        let (x, res) = (x.to_f32_vec(), res.to_f32_vec());
        for r in 0..m {
            let at = off + r * stride;
            let h: Vec<f32> = (0..n).map(|i| xv[at + i] + rv[at + i]).collect();
            assert_eq!(&res[at..at + n], &h[..]);
            let (want, _, _) = reference_row(false, 1e-6, &h, &[1.0, 2.0, 3.0], 0.0, None);
            for i in 0..n {
                assert!((x[at + i] as f64 - want[i]).abs() < 2.0 * dt.unit_roundoff() * want[i].abs() + 1e-6);
            }
        }
        // Padding untouched.
        for i in [0, 1, 5, 6, 10, 11] {
            assert_eq!(x[i], 9.0);
            assert_eq!(res[i], 9.0);
        }
    }
}

#[test]
fn nan_poisons_only_its_row_and_empty_batch_is_a_no_op() {
    let n = 64;
    let mut x = data(3 * n, 12);
    x[n + 5] = f32::NAN;
    let (y, _, _) = fwd(&NormDesc::rms(1e-6), DType::BF16, 3, n, &x, &data(n, 13), &[]);
    assert!(y[..n].iter().chain(&y[2 * n..]).all(|v| v.is_finite()));
    assert!(y[n..2 * n].iter().all(|v| v.is_nan()));
    // M = 0: forward writes nothing, backward writes zero gradients.
    let (y, _, _) = fwd(&NormDesc::layer(1e-6), DType::F32, 0, n, &[], &data(n, 13), &data(n, 14));
    assert!(y.is_empty());
    let empty = HostBuf::zeros(DType::F32, 0);
    let (_, dw, db) = bwd(&NormDesc::layer(1e-6), DType::F32, 0, n, &empty, &[], &data(n, 13), (&empty, &empty));
    assert!(dw.to_f32_vec().iter().chain(&db.to_f32_vec()).all(|&v| v == 0.0));
}

#[test]
fn invalid_call_writes_nothing() {
    let x = HostBuf::from_f32(DType::F32, &data(8, 15));
    let mut y = HostBuf::filled(DType::F32, 8, 7.0);
    let w = HostBuf::zeros(DType::F32, 3); // wrong length
    let a = Forward::new(InOut::separate(MatRef::new(&x, 2, 4), MatMut::new(&mut y, 2, 4))).weight(vref(&w));
    assert!(CpuBackend::new().forward(&NormDesc::rms(1e-6), a).is_err());
    assert!(y.to_f32_vec().iter().all(|&v| v == 7.0));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn streaming_store_matches_plain_store() {
    use super::convert::Ptr;
    if !super::has_avx2() {
        return;
    }
    let src = data(300, 16);
    for dt in DType::ALL {
        for at in [0, 1, 3, 7, 8, 15, 16, 17] {
            for len in [0, 1, 5, 8, 15, 16, 17, 31, 64, 100, 283] {
                let mut a = HostBuf::filled(dt, 320, 3.0);
                let mut b = a.clone();
                // SAFETY: `at + len <= 300 < 320` elements, the buffers are exclusively borrowed
                // here, and AVX2 was detected above.
                unsafe {
                    Ptr::of_mut(&mut a).store(at, &src[..len]);
                    Ptr::of_mut(&mut b).store_stream(at, &src[..len]);
                }
                assert!(a.bits_eq(&b), "{dt} at {at} len {len}");
            }
        }
    }
}

#[test]
fn every_instruction_set_and_store_kind_gives_the_same_bits() {
    use super::{Isa, FORCE_STREAM, MAX_ISA};
    let (m, n) = (5, 777);
    let x = data(m * n, 21);
    let r = data(m * n, 22);
    let w = data(n, 23);
    let dy = data(m * n, 24);
    for dt in DType::ALL {
        for casting in CastingMode::ALL {
            for layer in [false, true] {
                let desc = if layer { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-5).with_bias(true) }
                    .with_casting(casting)
                    .with_weight_offset(0.5)
                    .with_residual(true)
                    .with_save_stats(true);
                let run = |isa: Isa, stream: bool| {
                    MAX_ISA.with(|c| c.set(isa));
                    FORCE_STREAM.with(|c| c.set(stream));
                    let xb = HostBuf::from_f32(dt, &x);
                    let rb = HostBuf::from_f32(DType::F32, &r);
                    let wb = HostBuf::from_f32(dt, &w);
                    let mut y = HostBuf::zeros(dt, m * n);
                    let mut ro = HostBuf::zeros(DType::F32, m * n);
                    let mut mean = HostBuf::zeros(DType::F32, m);
                    let mut rstd = HostBuf::zeros(DType::F32, m);
                    let a = Forward::new(InOut::separate(MatRef::new(&xb, m, n), MatMut::new(&mut y, m, n)))
                        .residual(InOut::separate(MatRef::new(&rb, m, n), MatMut::new(&mut ro, m, n)))
                        .weight(vref(&wb))
                        .bias(vref(&wb))
                        .rstd(vmut(&mut rstd));
                    let a = if layer { a.mean(vmut(&mut mean)) } else { a };
                    CpuBackend::new().forward(&desc, a).unwrap();
                    let (dx, dw, db) = bwd(&desc.with_residual(false), DType::F32, m, n, &ro, &dy, &w, (&mean, &rstd));
                    MAX_ISA.with(|c| c.set(Isa::Avx512));
                    FORCE_STREAM.with(|c| c.set(false));
                    [y, ro, mean, rstd, dx, dw, db]
                };
                let base = run(Isa::Portable, false);
                for (isa, stream) in [(Isa::Avx2, false), (Isa::Avx512, false), (Isa::Avx2, true), (Isa::Avx512, true)] {
                    let other = run(isa, stream);
                    for (k, (a, b)) in base.iter().zip(&other).enumerate() {
                        assert!(a.bits_eq(b), "{dt} {casting:?} layer={layer} {isa:?} stream={stream}: output {k} differs");
                    }
                }
            }
        }
    }
}

#[test]
fn device_info_and_copy_ceiling() {
    use crate::BenchBackend;
    let be = CpuBackend::new();
    let info = be.device_info();
    assert_eq!(info.backend, "cpu");
    assert!(info.compute_units >= 1);
    assert!(be.copy_gbps(1 << 20).unwrap() > 0.0);
    let mut calls = 0;
    let t = be.time_calls(3, 2, &mut |_| {
        calls += 1;
        Ok(())
    });
    assert_eq!(t.unwrap().len(), 2);
    assert_eq!(calls, 6);
}

/// The fused AVX-512 bf16 row (`fused.rs`: bf16 x and y, no residual, Gemma/Llama) against the
/// portable and AVX2 builds: row lengths around the lane and block widths (odd ones put the
/// output lines at every offset), with and without weight and bias, streaming and plain stores,
/// and inputs with NaN, ±Inf, huge and tiny values.
#[test]
fn fused_bf16_row_gives_the_same_bits() {
    use super::{Isa, FORCE_STREAM, MAX_ISA};
    for n in [1, 15, 31, 32, 33, 63, 100, 777, 1023, 1024, 1025, 2100, 4096, 4127, 9000] {
        let m = 4;
        let mut x = data(m * n, 31 + n as u64);
        let w = data(n, 32);
        let b = data(n, 33);
        if n > 40 {
            // Row 1 poisoned; rows 2, 3 with extremes that overflow or underflow on the way.
            x[n + 3] = f32::NAN;
            x[2 * n + 5] = 3.0e38;
            x[2 * n + 6] = -3.0e38;
            x[3 * n + 7] = 1.0e-30;
            x[3 * n + 8] = f32::INFINITY;
        }
        for casting in [CastingMode::Gemma, CastingMode::Llama] {
            for layer in [false, true] {
                for (wt, bias) in [(true, true), (true, false), (false, true), (false, false)] {
                    let mut desc =
                        if layer { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-5) }.with_casting(casting).with_save_stats(true);
                    desc.weight = if wt { desc.with_weight_offset(0.5).weight } else { None };
                    desc.bias = bias;
                    let run = |isa: Isa, stream: bool| {
                        MAX_ISA.with(|c| c.set(isa));
                        FORCE_STREAM.with(|c| c.set(stream));
                        let out = fwd(&desc, DType::BF16, m, n, &x, &w, &b);
                        MAX_ISA.with(|c| c.set(Isa::Avx512));
                        FORCE_STREAM.with(|c| c.set(false));
                        out
                    };
                    let base = run(Isa::Portable, false);
                    for (isa, stream) in [(Isa::Avx2, false), (Isa::Avx512, false), (Isa::Avx512, true)] {
                        let o = run(isa, stream);
                        let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits());
                        assert!(same(&base.0, &o.0), "y: n={n} {casting:?} layer={layer} w={wt} b={bias} {isa:?} stream={stream}");
                        assert!(same(&base.1, &o.1) && same(&base.2, &o.2), "stats: n={n} {casting:?} layer={layer} {isa:?}");
                    }
                }
            }
        }
    }
}

/// Issue 18: `alloc` of absurd sizes used to panic (`capacity overflow`) or abort the process
/// (`memory allocation of 17592186044416 bytes failed`). It must return `ResourceLimit`.
#[test]
fn alloc_of_absurd_sizes_is_a_resource_limit() {
    let cpu = CpuBackend::new();
    for dt in DType::ALL {
        for len in [usize::MAX, usize::MAX / 2, usize::MAX / dt.size_bytes() + 1, 1 << 42, 1 << 60] {
            match cpu.alloc(dt, len) {
                Err(crate::NormError::ResourceLimit { requested, available, .. }) => {
                    assert!(requested > available, "{dt} × {len}: requested {requested} ≤ available {available}")
                }
                other => panic!("alloc({dt}, {len}) gave {:?}", other.map(|b| crate::Buffer::len(&b))),
            }
        }
        // The boundary: one element past the byte limit is refused, the limit itself is checked.
        let limit = HostBuf::alloc_limit();
        let over = usize::try_from(limit / dt.size_bytes() as u64 + 1).unwrap_or(usize::MAX);
        assert!(matches!(cpu.alloc(dt, over), Err(crate::NormError::ResourceLimit { .. })), "{dt} × {over}");
        // Ordinary sizes still work and are zeros.
        let b = cpu.alloc(dt, 1000).expect("small alloc");
        assert_eq!(crate::Buffer::len(&b), 1000);
        assert!(b.to_f32_vec().iter().all(|&v| v == 0.0));
        assert_eq!(crate::Buffer::len(&cpu.alloc(dt, 0).expect("empty alloc")), 0);
    }
}

/// The limit is physical memory + swap on Linux, so a 16 TiB request is refused before the
/// allocator is asked (an overcommitting kernel could otherwise hand it out lazily).
#[test]
fn alloc_limit_is_the_machine_memory() {
    let limit = HostBuf::alloc_limit();
    assert!(limit <= isize::MAX as u64);
    #[cfg(target_os = "linux")]
    {
        assert!(limit < 1 << 44, "limit {limit} should be physical memory + swap");
        assert!(limit >= 1 << 20, "limit {limit}");
    }
}

/// Past the limit check, the allocation itself is fallible (`alloc_zeroed` + a null check, never
/// the infallible `vec!`): asked with no limit, a request the allocator cannot serve is an error,
/// and one it can serve lazily (an overcommitting kernel) comes back and is freed untouched.
/// Either way no panic and no abort.
#[test]
fn the_allocation_itself_is_fallible() {
    // Larger than the address space: the layout or the allocator refuses.
    assert!(matches!(HostBuf::try_zeros_within(DType::F32, usize::MAX / 4, u64::MAX), Err(crate::NormError::ResourceLimit { .. })));
    assert!(matches!(HostBuf::try_zeros_within(DType::F32, 1usize << 61, u64::MAX), Err(crate::NormError::ResourceLimit { .. })));
    // 16 TiB: refused by a heuristic-overcommit kernel; if granted lazily it is dropped untouched.
    let r = HostBuf::try_zeros_within(DType::F32, 1 << 42, u64::MAX);
    assert!(matches!(r, Ok(_) | Err(crate::NormError::ResourceLimit { .. })));
    drop(r);
    // upload / download of ordinary buffers are copies.
    let cpu = CpuBackend::new();
    let h = HostBuf::from_f32(DType::BF16, &[1.0, -2.0, 3.5]);
    assert!(cpu.upload(&h).expect("upload").bits_eq(&h));
    assert!(cpu.download(&h).expect("download").bits_eq(&h));
}

/// `CpuBackend` can be shared between threads (see its docs).
#[test]
fn cpu_backend_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<CpuBackend>();
    assert_send_sync::<HostBuf>();
}

/// Issue 18: a row of zeros in f16 with `casting = none` and eps = 1e-12 came out NaN (rstd was
/// rounded to f16: 1e6 → +inf, 0·inf = NaN). The statistics stay fp32 in every mode now.
#[test]
fn zero_row_with_tiny_eps_is_finite_in_every_casting_mode() {
    let cpu = CpuBackend::new();
    let (m, n) = (2, 16);
    for dt in DType::ALL {
        for casting in CastingMode::ALL {
            for layer in [false, true] {
                let desc = if layer { NormDesc::layer(1e-12) } else { NormDesc::rms(1e-12).with_bias(true) }
                    .with_casting(casting)
                    .with_save_stats(true);
                let mut xs = vec![0.0f32; m * n];
                xs[n..].iter_mut().enumerate().for_each(|(j, v)| *v = j as f32 - 7.5);
                let x = HostBuf::from_f32(dt, &xs);
                let w = HostBuf::from_f32(dt, &[1.5; 16]);
                let b = HostBuf::from_f32(dt, &[0.25; 16]);
                let mut y = HostBuf::filled(dt, m * n, f32::NAN);
                let mut mean = HostBuf::filled(DType::F32, m, f32::NAN);
                let mut rstd = HostBuf::filled(DType::F32, m, f32::NAN);
                let mut args =
                    Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n))).weight(vref(&w)).bias(vref(&b));
                if layer {
                    args = args.mean(vmut(&mut mean));
                }
                cpu.forward(&desc, args.rstd(vmut(&mut rstd))).expect("forward");
                let yv = y.to_f32_vec();
                assert!(yv[..n].iter().all(|&v| v == 0.25), "{dt} {casting:?} layer={layer}: zero row gave {:?}", &yv[..n]);
                assert!(yv.iter().all(|v| v.is_finite()), "{dt} {casting:?} layer={layer}");
                assert_eq!(rstd.get_f32(0), 1.0 / 1e-12f32.sqrt(), "{dt} {casting:?}: the saved rstd is the fp32 value");
            }
        }
    }
}

/// Borrowed views ([`crate::HostView`]) against owned buffers: the same kernels through the same
/// typed pointer, so the results must be bitwise equal.
mod views {
    use super::data;
    use crate::cpu::CpuBackend;
    use crate::{
        Backward, Buffer, DType, Forward, HostBuf, HostView, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand,
        Result, VecMut, VecRef,
    };

    /// Rows, columns, row stride, element offset.
    const SHAPES: [(usize, usize, usize, usize); 5] =
        [(3, 1, 1, 0), (7, 333, 333, 0), (5, 129, 160, 3), (69, 1000, 1024, 16), (9, 4096, 4096, 0)];

    /// The operands of one case, in one order: x, residual, weight, bias, y, mean, rstd, and for the
    /// backward dy, dx, d_residual_out, dw, db.
    fn operands(dt: DType, l: Layout, seed: u64) -> Vec<HostBuf> {
        let (span, n, m) = (l.span().unwrap(), l.cols, l.rows);
        let nan = |len| HostBuf::filled(dt, len, f32::NAN);
        vec![
            HostBuf::from_f32(dt, &data(span, seed)),
            HostBuf::from_f32(dt, &data(span, seed + 1)),
            HostBuf::from_f32(dt, &data(n, seed + 2)),
            HostBuf::from_f32(dt, &data(n, seed + 3)),
            nan(span),
            HostBuf::filled(DType::F32, m, f32::NAN),
            HostBuf::filled(DType::F32, m, f32::NAN),
            HostBuf::from_f32(dt, &data(span, seed + 4)),
            nan(span),
            HostBuf::from_f32(dt, &data(span, seed + 5)),
            nan(n),
            nan(n),
        ]
    }

    /// Runs the forward then the backward of `desc` over `bufs` through `fwd` / `bwd`.
    fn run_case<B: Buffer>(
        desc: &NormDesc,
        l: Layout,
        in_place: bool,
        bufs: &mut [B],
        fwd: impl FnOnce(&NormDesc, Forward<'_, B>) -> Result<()>,
        bwd: impl FnOnce(&NormDesc, Backward<'_, B>) -> Result<()>,
    ) -> Result<()> {
        let [x, res, w, b, y, mean, rstd, dy, dx, dres, dw, db] = bufs else { unreachable!("12 operands") };
        let (m, n) = (l.rows, l.cols);
        let io = if in_place {
            InOut::in_place(MatMut::with_layout(x, l))
        } else {
            InOut::separate(MatRef::with_layout(x, l), MatMut::with_layout(y, l))
        };
        let mut f = Forward::new(io).weight(VecRef::new(w)).rstd(VecMut::with_span(rstd, 0, m));
        if desc.residual {
            f = f.residual(InOut::in_place(MatMut::with_layout(res, l)));
        }
        if desc.bias {
            f = f.bias(VecRef::new(b));
        }
        if desc.has_mean() {
            f = f.mean(VecMut::new(mean));
        }
        fwd(desc, f)?;
        // The backward reads what the forward normalised: residual_out with the fused add, else x
        // (or y over x in place: any M × N values do for a bitwise comparison).
        let xin: &B = if desc.residual { res } else { x };
        let io = if in_place {
            InOut::in_place(MatMut::with_layout(dy, l))
        } else {
            InOut::separate(MatRef::with_layout(dy, l), MatMut::with_layout(dx, l))
        };
        let mut g =
            Backward::new(MatRef::with_layout(xin, l), io, VecRef::new(rstd)).weight(VecRef::new(w)).dw(VecMut::with_span(dw, 0, n));
        if desc.residual {
            g = g.d_residual_out(MatRef::with_layout(dres, l));
        }
        if desc.bias {
            g = g.db(VecMut::new(db));
        }
        if desc.has_mean() {
            g = g.mean(VecRef::new(mean));
        }
        bwd(desc, g)
    }

    #[test]
    fn views_give_the_bits_of_owned_buffers() {
        let cpu = CpuBackend::new();
        let mut cases = 0;
        for (m, n, stride, offset) in SHAPES {
            let l = Layout::strided(m, n, stride).with_offset(offset);
            for dt in DType::ALL {
                for (desc, in_place) in [
                    (NormDesc::rms(1e-6), false),
                    (NormDesc::rms(1e-6).with_weight_offset(1.0), true),
                    (NormDesc::rms(1e-5).with_residual(true), false),
                    (NormDesc::layer(1e-5), false),
                    (NormDesc::layer(1e-5).with_residual(true), true),
                ] {
                    let desc = desc.with_save_stats(true);
                    let mut owned = operands(dt, l, (m * n + cases) as u64);
                    let mut borrowed = owned.clone();
                    run_case(&desc, l, in_place, &mut owned, |d, a| cpu.forward(d, a), |d, a| cpu.backward(d, a)).unwrap();
                    let mut views: Vec<HostView<'_>> = borrowed.iter_mut().map(HostView::of_mut).collect();
                    run_case(&desc, l, in_place, &mut views, |d, a| cpu.forward_view(d, a), |d, a| cpu.backward_view(d, a)).unwrap();
                    drop(views);
                    for (i, (a, b)) in owned.iter().zip(&borrowed).enumerate() {
                        assert!(a.bits_eq(b), "{dt} {m}x{n} stride {stride} {desc:?} in_place={in_place}: operand {i} differs");
                    }
                    // The outputs were written (not left at their NaN poison).
                    assert!(!borrowed[6].get_f32(0).is_nan() && !borrowed[10].get_f32(0).is_nan());
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 75);
    }

    #[test]
    fn a_read_only_output_is_an_error_and_nothing_is_written() {
        let cpu = CpuBackend::new();
        let (m, n) = (4, 8);
        let x = HostBuf::from_f32(DType::BF16, &data(m * n, 7));
        let w = HostBuf::filled(DType::BF16, n, 1.0);
        let (xv, wv) = (HostView::of(&x), HostView::of(&w));
        let desc = NormDesc::rms(1e-6).with_save_stats(true);

        // y read-only.
        let y = HostBuf::filled(DType::BF16, m * n, f32::NAN);
        let mut rstd = HostBuf::filled(DType::F32, m, f32::NAN);
        let mut yv = HostView::of(&y);
        let mut rv = HostView::of_mut(&mut rstd);
        let a = Forward::new(InOut::separate(MatRef::new(&xv, m, n), MatMut::new(&mut yv, m, n)))
            .weight(VecRef::new(&wv))
            .rstd(VecMut::new(&mut rv));
        assert!(matches!(cpu.forward_view(&desc, a), Err(NormError::ReadOnly { operand: Operand::Y })));
        assert!(rstd.to_f32_vec().iter().all(|v| v.is_nan()), "rstd written despite the error");

        // x overwritten in place, read-only.
        let mut xro = HostView::of(&x);
        let mut rv = HostView::of_mut(&mut rstd);
        let a = Forward::new(InOut::in_place(MatMut::new(&mut xro, m, n))).weight(VecRef::new(&wv)).rstd(VecMut::new(&mut rv));
        assert!(matches!(cpu.forward_view(&desc, a), Err(NormError::ReadOnly { operand: Operand::Y })));

        // rstd read-only, y writable: y stays untouched.
        let mut y2 = HostBuf::filled(DType::BF16, m * n, f32::NAN);
        let mut yv = HostView::of_mut(&mut y2);
        let r_ro = HostBuf::filled(DType::F32, m, f32::NAN);
        let mut rv = HostView::of(&r_ro);
        let a = Forward::new(InOut::separate(MatRef::new(&xv, m, n), MatMut::new(&mut yv, m, n)))
            .weight(VecRef::new(&wv))
            .rstd(VecMut::new(&mut rv));
        assert!(matches!(cpu.forward_view(&desc, a), Err(NormError::ReadOnly { operand: Operand::Rstd })));
        assert!(y2.to_f32_vec().iter().all(|v| v.is_nan()), "y written despite the error");

        // Backward: dx read-only, then dw read-only.
        let rstd = HostBuf::filled(DType::F32, m, 1.0);
        let rsv = HostView::of(&rstd);
        let dy = HostBuf::from_f32(DType::BF16, &data(m * n, 8));
        let dyv = HostView::of(&dy);
        let mut dx_ro = HostView::of(&dy);
        let mut dw = HostBuf::filled(DType::BF16, n, f32::NAN);
        let mut dwv = HostView::of_mut(&mut dw);
        let a = Backward::new(MatRef::new(&xv, m, n), InOut::in_place(MatMut::new(&mut dx_ro, m, n)), VecRef::new(&rsv))
            .weight(VecRef::new(&wv))
            .dw(VecMut::new(&mut dwv));
        assert!(matches!(cpu.backward_view(&desc, a), Err(NormError::ReadOnly { operand: Operand::Dx })));
        assert!(dw.to_f32_vec().iter().all(|v| v.is_nan()), "dw written despite the error");
        let mut dx = HostBuf::filled(DType::BF16, m * n, f32::NAN);
        let mut dxv = HostView::of_mut(&mut dx);
        let mut dw_ro = HostView::of(&w);
        let a =
            Backward::new(MatRef::new(&xv, m, n), InOut::separate(MatRef::new(&dyv, m, n), MatMut::new(&mut dxv, m, n)), VecRef::new(&rsv))
                .weight(VecRef::new(&wv))
                .dw(VecMut::new(&mut dw_ro));
        assert!(matches!(cpu.backward_view(&desc, a), Err(NormError::ReadOnly { operand: Operand::Dw })));
        assert!(dx.to_f32_vec().iter().all(|v| v.is_nan()), "dx written despite the error");
    }

    #[test]
    fn views_of_slices_know_their_dtype_and_length() {
        let (a, b, c) = ([1.0f32; 3], [half::f16::ONE; 5], [half::bf16::ONE; 7]);
        for (v, dt, len) in
            [(HostView::new(&a[..]), DType::F32, 3), (HostView::from(&b[..]), DType::F16, 5), (HostView::new(&c[..]), DType::BF16, 7)]
        {
            assert_eq!((v.dtype(), v.len(), v.is_writable()), (dt, len, false));
        }
        let mut d = [half::bf16::ZERO; 2];
        let v = HostView::from(&mut d[..]);
        assert_eq!((v.dtype(), v.len(), v.is_writable()), (DType::BF16, 2, true));
        fn send_sync<T: Send + Sync>() {}
        send_sync::<HostView<'static>>();
    }
}
