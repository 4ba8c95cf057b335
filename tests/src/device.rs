//! The device-only tests, written once over [`RawBuffers`] and instantiated per GPU backend
//! with [`device_trials!`](crate::device_trials) (`tests/tests/cuda.rs`, `tests/tests/hip.rs`):
//! raw-pointer views and their checks, the element-wise path against the 16-byte one, and a tour
//! of every kernel family against the CPU backend (small enough for compute-sanitizer).

use normkit_core::cpu::CpuBackend;
use normkit_core::{
    AliasRule, Backward, CastingMode, DType, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand,
    RawBuffers, VecMut, VecRef,
};

pub fn overlapping_raw_views_are_rejected<K: RawBuffers>(k: &K) {
    let (m, n) = (4usize, 64usize);
    let owner = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; 3 * m * n])).unwrap();
    let w = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; n])).unwrap();
    let base = K::buffer_addr(&owner);
    // SAFETY: both views lie inside `owner` (3·m·n f32), which outlives them; they overlap by
    // half a matrix on purpose.
    let x = unsafe { k.buffer_from_raw(base, m * n, DType::F32) }.unwrap();
    // SAFETY: as above.
    let mut y = unsafe { k.buffer_from_raw(base + (m * n / 2 * 4) as u64, m * n, DType::F32) }.unwrap();
    let desc = NormDesc::rms(1e-6);
    let before = k.download(&owner).unwrap();
    let r = k.forward(&desc, Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n))).weight(VecRef::new(&w)));
    assert!(
        matches!(r, Err(NormError::Aliasing { operand: Operand::Y, rule: AliasRule::Overlap })),
        "expected an aliasing error, got {r:?}"
    );
    assert!(k.download(&owner).unwrap().bits_eq(&before), "a rejected call wrote memory");

    // Disjoint raw views of the same allocation are fine.
    // SAFETY: the second third of `owner`, disjoint from `x`.
    let mut y2 = unsafe { k.buffer_from_raw(base + (m * n * 4) as u64, m * n, DType::F32) }.unwrap();
    k.forward(&desc, Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y2, m, n))).weight(VecRef::new(&w))).unwrap();
    let y = k.download(&y2).unwrap().to_f32_vec();
    assert!(y.iter().all(|v| (v - 1.0).abs() < 1e-5), "rms of ones is one");

    // Backward: dw overlapping x is rejected too.
    let rstd = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; m])).unwrap();
    let dy = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; m * n])).unwrap();
    let mut dx = k.alloc(DType::F32, m * n).unwrap();
    // SAFETY: n f32 inside `x`'s range (`owner` outlives it).
    let mut dw = unsafe { k.buffer_from_raw(base, n, DType::F32) }.unwrap();
    let r = k.backward(
        &desc,
        Backward::new(MatRef::new(&x, m, n), InOut::separate(MatRef::new(&dy, m, n), MatMut::new(&mut dx, m, n)), VecRef::new(&rstd))
            .weight(VecRef::new(&w))
            .dw(VecMut::new(&mut dw)),
    );
    assert!(matches!(r, Err(NormError::Aliasing { .. })), "expected an aliasing error, got {r:?}");
}

pub fn misaligned_raw_pointer_is_a_typed_error<K: RawBuffers>(k: &K) {
    let owner = k.alloc(DType::F32, 64).unwrap();
    // SAFETY: never dereferenced: the constructor must refuse the odd address.
    let r = unsafe { k.buffer_from_raw(K::buffer_addr(&owner) + 1, 8, DType::F16) };
    assert!(matches!(r, Err(NormError::Alignment { .. })), "{:?}", r.as_ref().err());
}

pub fn misaligned_views_take_the_scalar_path<K: RawBuffers>(k: &K) {
    // Element offset 1 of a bf16 buffer: not 16-byte aligned, so the element-wise kernels run;
    // the result must equal the aligned (16-byte) run of the same data bit for bit.
    let (m, n) = (5usize, 256usize);
    let vals: Vec<f32> = (0..m * n + 1).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
    let w: Vec<f32> = (0..n).map(|i| 1.0 + (i % 13) as f32 / 16.0).collect();
    let xb = k.upload(&HostBuf::from_f32(DType::BF16, &vals)).unwrap();
    let xa = k.upload(&HostBuf::from_f32(DType::BF16, &vals[1..])).unwrap();
    let wb = k.upload(&HostBuf::from_f32(DType::BF16, &w)).unwrap();
    let desc = NormDesc::rms(1e-6);
    let mut ya = k.alloc(DType::BF16, m * n).unwrap();
    let mut yb = k.alloc(DType::BF16, m * n + 1).unwrap();
    k.forward(&desc, Forward::new(InOut::separate(MatRef::new(&xa, m, n), MatMut::new(&mut ya, m, n))).weight(VecRef::new(&wb))).unwrap();
    let l = normkit_core::Layout::contiguous(m, n).with_offset(1);
    k.forward(&desc, Forward::new(InOut::separate(MatRef::with_layout(&xb, l), MatMut::with_layout(&mut yb, l))).weight(VecRef::new(&wb)))
        .unwrap();
    let a = k.download(&ya).unwrap().to_bits_vec();
    let b = k.download(&yb).unwrap().to_bits_vec();
    // Both paths assign the same chunks to the same threads and reduce in the same order.
    assert_eq!(a, b[1..].to_vec(), "element-wise and 16-byte paths disagree");
}

/// Every kernel family of the backend, through `shapes` (row and split paths, vector and scalar, strided, fused add, LayerNorm with
/// bias and stats, backward with d_residual_out), compared with the CPU backend. Small enough to
/// run under compute-sanitizer (`run.sh sanitize` runs exactly this test).
pub fn kernel_tour<K: NormKernel>(k: &K, shapes: &[(usize, usize, usize, DType)]) {
    let cpu = CpuBackend::new();
    let mut seed = 0x9e37_79b9u64;
    let mut rnd = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    };
    for &(m, n, stride, dt) in shapes {
        // Weights in f32 (the staged kernels) or in x's dtype with Gemma casting (the
        // register-resident kernels, residual included).
        for (ln, res, uniform) in [
            (false, false, false),
            (true, true, false),
            (false, true, false),
            (true, false, false),
            (false, false, true),
            (true, true, true),
            (false, true, true),
            (true, false, true),
        ] {
            let wdt = if uniform { dt } else { DType::F32 };
            let desc = if ln { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-6).with_weight_offset(1.0) }
                .with_residual(res)
                .with_save_stats(true)
                .with_casting(if res && !uniform { CastingMode::Llama } else { CastingMode::Gemma });
            let len = (m - 1) * stride + n;
            let hx = HostBuf::from_f32(dt, &rnd(len));
            let hr = HostBuf::from_f32(dt, &rnd(len));
            let hw = HostBuf::from_f32(wdt, &rnd(n));
            let hb = HostBuf::from_f32(wdt, &rnd(n));
            let hdy = HostBuf::from_f32(dt, &rnd(len));
            let hdr = HostBuf::from_f32(dt, &rnd(len));
            let l = Layout::strided(m, n, stride);
            let ctx = format!("m={m} n={n} stride={stride} {dt} weights {wdt} ln={ln} res={res}");

            // Forward on both backends.
            macro_rules! fwd {
                ($k:expr) => {{
                    let k = &$k;
                    let x = k.upload(&hx).unwrap();
                    let w = k.upload(&hw).unwrap();
                    let b = k.upload(&hb).unwrap();
                    let r = k.upload(&hr).unwrap();
                    let mut y = k.upload(&HostBuf::filled(dt, len, f32::NAN)).unwrap();
                    let mut ro = k.upload(&HostBuf::filled(dt, len, f32::NAN)).unwrap();
                    let mut mean = k.upload(&HostBuf::filled(DType::F32, m, f32::NAN)).unwrap();
                    let mut rstd = k.upload(&HostBuf::filled(DType::F32, m, f32::NAN)).unwrap();
                    let mut a = Forward::new(InOut::separate(MatRef::with_layout(&x, l), MatMut::with_layout(&mut y, l)))
                        .weight(VecRef::new(&w))
                        .rstd(VecMut::new(&mut rstd));
                    if ln {
                        a = a.bias(VecRef::new(&b)).mean(VecMut::new(&mut mean));
                    }
                    if res {
                        a = a.residual(InOut::separate(MatRef::with_layout(&r, l), MatMut::with_layout(&mut ro, l)));
                    }
                    k.forward(&desc, a).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    (k.download(&y).unwrap(), k.download(&ro).unwrap(), k.download(&rstd).unwrap(), k.download(&mean).unwrap())
                }};
            }
            let (gy, gro, grs, gmu) = fwd!(*k);
            let (cy, cro, crs, cmu) = fwd!(cpu);
            let close = |a: &HostBuf, b: &HostBuf, what: &str, tol: f32| {
                let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
                for i in 0..m {
                    for j in 0..n.min(a.len()) {
                        let idx = if a.len() == m { i } else { i * stride + j };
                        let (p, q) = (a[idx], b[idx]);
                        assert!((p - q).abs() <= tol * (1.0 + q.abs()), "{ctx}: {what}[{i},{j}] gpu {p} cpu {q}");
                        if a.len() == m {
                            break;
                        }
                    }
                }
            };
            let tol = 4.0 * dt.unit_roundoff() as f32 + 1e-5;
            close(&gy, &cy, "y", tol);
            close(&grs, &crs, "rstd", 1e-5);
            if ln {
                close(&gmu, &cmu, "mean", 1e-5);
            }
            if res {
                close(&gro, &cro, "residual_out", 0.0);
            }

            // Backward from the CPU forward's outputs, on both backends.
            let hxn = if res { cro.clone() } else { hx.clone() };
            macro_rules! bwd {
                ($k:expr) => {{
                    let k = &$k;
                    let x = k.upload(&hxn).unwrap();
                    let w = k.upload(&hw).unwrap();
                    let dy = k.upload(&hdy).unwrap();
                    let dr = k.upload(&hdr).unwrap();
                    let mu = k.upload(&cmu).unwrap();
                    let rs = k.upload(&crs).unwrap();
                    let mut dx = k.upload(&HostBuf::filled(dt, len, f32::NAN)).unwrap();
                    let mut dw = k.upload(&HostBuf::filled(wdt, n, f32::NAN)).unwrap();
                    let mut db = k.upload(&HostBuf::filled(wdt, n, f32::NAN)).unwrap();
                    let mut a = Backward::new(
                        MatRef::with_layout(&x, l),
                        InOut::separate(MatRef::with_layout(&dy, l), MatMut::with_layout(&mut dx, l)),
                        VecRef::new(&rs),
                    )
                    .weight(VecRef::new(&w))
                    .dw(VecMut::new(&mut dw));
                    if ln {
                        a = a.mean(VecRef::new(&mu)).db(VecMut::new(&mut db));
                    }
                    if res {
                        a = a.d_residual_out(MatRef::with_layout(&dr, l));
                    }
                    k.backward(&desc, a).unwrap_or_else(|e| panic!("{ctx} bwd: {e}"));
                    (k.download(&dx).unwrap(), k.download(&dw).unwrap(), k.download(&db).unwrap())
                }};
            }
            let (gdx, gdw, gdb) = bwd!(*k);
            let (cdx, cdw, cdb) = bwd!(cpu);
            close(&gdx, &cdx, "dx", 8.0 * dt.unit_roundoff() as f32 + 1e-4);
            let cl = |a: &HostBuf, b: &HostBuf, what: &str| {
                for (j, (p, q)) in a.to_f32_vec().iter().zip(b.to_f32_vec()).enumerate() {
                    // Plus two units of the weight dtype's rounding (both sides round their fp32 sums).
                    let tol = (1e-4 * m as f32 + 2.0 * wdt.unit_roundoff() as f32) * (1.0 + q.abs());
                    assert!((p - q).abs() <= tol, "{ctx}: {what}[{j}] gpu {p} cpu {q}");
                }
            };
            cl(&gdw, &cdw, "dw");
            if ln {
                cl(&gdb, &cdb, "db");
            }
        }
    }
}

/// The FP8 kernels under the same tour (compute-sanitizer runs it): every case of
/// [`crate::suite::fp8_path_cases`] through the full FP8 check (poisoned outputs, values against
/// the oracle, yT bitwise the transpose of y_q).
pub fn fp8_tour<K: NormKernel>(k: &K) {
    for c in crate::suite::fp8_path_cases() {
        match crate::check::check_fp8(k, &c) {
            Ok(crate::Ran::Passed) => {}
            Ok(crate::Ran::Skipped(why)) => panic!("{c}: the backend declined an FP8 case of the tour: {why}"),
            Err(e) => panic!("{e}"),
        }
    }
}

/// The device-only tests as [`Trial`](crate::harness::Trial)s for `harness::run`: `$ctor` makes
/// the backend (a [`RawBuffers`]), `$shapes` is the backend's `kernel_tour` list of
/// `(m, n, stride, dtype)` (its own path thresholds decide which shapes reach every kernel).
#[macro_export]
macro_rules! device_trials {
    ($ctor:expr, $shapes:expr $(,)?) => {{
        fn overlapping_raw_views_are_rejected() {
            $crate::device::overlapping_raw_views_are_rejected(&$ctor)
        }
        fn misaligned_raw_pointer_is_a_typed_error() {
            $crate::device::misaligned_raw_pointer_is_a_typed_error(&$ctor)
        }
        fn misaligned_views_take_the_scalar_path() {
            $crate::device::misaligned_views_take_the_scalar_path(&$ctor)
        }
        fn kernel_tour() {
            let k = $ctor;
            $crate::device::kernel_tour(&k, &$shapes);
            $crate::device::fp8_tour(&k);
        }
        $crate::trials![
            overlapping_raw_views_are_rejected,
            misaligned_raw_pointer_is_a_typed_error,
            misaligned_views_take_the_scalar_path,
            kernel_tour
        ]
    }};
}
