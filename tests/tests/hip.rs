//! The conformance suite on the HIP backend (`cargo test -p normkit-conformance --features hip`),
//! plus what only a device backend has: raw-pointer views, the scalar fallback path, and a tour
//! of every kernel against the CPU backend. Without a HIP runtime or an AMD GPU every test is
//! reported as ignored (not run): see `normkit_conformance::harness`.
//!
//! Status: the HIP kernels are compiled and ISA-checked (crates/normkit-hip/tests/isa.rs) but
//! have not yet run on AMD hardware; these tests are what will check them there.

use normkit::hip::HipBackend;
use normkit_core::{
    AliasRule, Backward, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand, VecMut, VecRef,
};

/// The backend; every test here runs only after [`probe`] found a device.
fn backend() -> HipBackend {
    HipBackend::new().unwrap_or_else(|e| panic!("the hip backend failed to start: {e}"))
}

/// `Err(reason)` when this machine has no device for the backend: the harness then reports every
/// test as not run. Any other start-up error lets the tests run, and fail with it.
fn probe() -> Result<(), String> {
    match HipBackend::new() {
        Err(NormError::BackendUnavailable { reason, .. }) => Err(reason),
        _ => Ok(()),
    }
}

fn main() -> std::process::ExitCode {
    let mut trials = normkit_conformance::conformance_trials!(HipBackend::new(), normkit_conformance::Grid::full());
    trials.extend(normkit_conformance::trials![
        overlapping_raw_views_are_rejected,
        misaligned_raw_pointer_is_a_typed_error,
        misaligned_views_take_the_scalar_path,
        kernel_tour
    ]);
    normkit_conformance::harness::run("hip", probe(), trials)
}
fn overlapping_raw_views_are_rejected() {
    let k = backend();
    let (m, n) = (4usize, 64usize);
    let owner = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; 3 * m * n])).unwrap();
    let w = k.upload(&HostBuf::from_f32(DType::F32, &vec![1.0; n])).unwrap();
    let base = owner.device_ptr();
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
fn misaligned_raw_pointer_is_a_typed_error() {
    let k = backend();
    let owner = k.alloc(DType::F32, 64).unwrap();
    // SAFETY: never dereferenced: the constructor must refuse the odd address.
    let r = unsafe { k.buffer_from_raw(owner.device_ptr() + 1, 8, DType::F16) };
    assert!(matches!(r, Err(NormError::Alignment { .. })), "{r:?}");
}
fn misaligned_views_take_the_scalar_path() {
    // Element offset 1 of a bf16 buffer: not 16-byte aligned, so the element-wise kernels run;
    // the result must equal the aligned (16-byte) run of the same data bit for bit.
    let k = backend();
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
    // Both paths assign the same chunks to the same threads and reduce in the same order
    // (kernels-common/nk_common.cuh: a chunk is 8 elements whether loaded with 16-byte accesses or
    // element by element), and the planner picks the same group for both (plan.rs:
    // forward_path_never_depends_on_m_or_the_layout).
    assert_eq!(a, b[1..].to_vec(), "element-wise and 16-byte paths disagree");
}

/// Every HIP kernel family at least once (register-resident, LDS-staged row and split paths;
/// aligned / narrow / element-wise; strided, fused add, LayerNorm with bias and stats, backward with
/// d_residual_out; the LDS bounds of the row paths and their split fallback), compared with the
/// CPU backend.
fn kernel_tour() {
    use normkit_core::cpu::CpuBackend;
    use normkit_core::{CastingMode, Layout};
    let k = backend();
    let cpu = CpuBackend::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    };
    // (m, n, stride, dtype). HIP thresholds (crates/normkit-hip/src/tuning.rs): the row paths
    // stage rows in 64 KiB of LDS, so the forward row path ends between 8192 and 16384 (bf16 with
    // a weight) and the backward row path at 4096 (f32 with dW and dB: earlier); past them the
    // split path runs. Odd N and offset 1 take the element-wise kernels.
    let shapes = [
        (3usize, 7usize, 7usize, DType::F32),
        (5, 128, 136, DType::BF16),
        (4, 769, 800, DType::F16),
        (3, 4096, 4096, DType::BF16),
        (3, 4096, 4096, DType::F32),
        (2, 8192, 8192, DType::BF16),
        (2, 16384, 16384, DType::BF16),
        (2, 20000, 20008, DType::BF16),
        (2, 20001, 20001, DType::F32),
        (70, 64, 64, DType::F16),
    ];
    for (si, &(m, n, stride, dt)) in shapes.iter().enumerate() {
        // Every other shape keeps weight and bias in x's dtype: with Gemma casting (no residual
        // below) that is the register-resident path; f32 weights take the LDS row kernels.
        let wdt = if si % 2 == 0 { dt } else { DType::F32 };
        for (ln, res) in [(false, false), (true, true), (false, true), (true, false)] {
            let desc = if ln { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-6).with_weight_offset(1.0) }
                .with_residual(res)
                .with_save_stats(true)
                .with_casting(if res { CastingMode::Llama } else { CastingMode::Gemma });
            let len = (m - 1) * stride + n;
            let hx = HostBuf::from_f32(dt, &rnd(len));
            let hr = HostBuf::from_f32(dt, &rnd(len));
            let hw = HostBuf::from_f32(wdt, &rnd(n));
            let hb = HostBuf::from_f32(wdt, &rnd(n));
            let hdy = HostBuf::from_f32(dt, &rnd(len));
            let hdr = HostBuf::from_f32(dt, &rnd(len));
            let l = Layout::strided(m, n, stride);
            let ctx = format!("m={m} n={n} stride={stride} {dt} weight {wdt} ln={ln} res={res}");

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
            let (gy, gro, grs, gmu) = fwd!(k);
            let (cy, cro, crs, cmu) = fwd!(cpu);
            // Element (i, j) of a strided matrix, or entry i of a per-row vector.
            let close = |a: &HostBuf, b: &HostBuf, what: &str, per_row: bool, tol: f32| {
                let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
                for i in 0..m {
                    let cols = if per_row { 1 } else { n };
                    for j in 0..cols {
                        let idx = if per_row { i } else { i * stride + j };
                        let (p, q) = (a[idx], b[idx]);
                        assert!((p - q).abs() <= tol * (1.0 + q.abs()), "{ctx}: {what}[{i},{j}] hip {p} cpu {q}");
                    }
                }
            };
            let tol = 4.0 * dt.unit_roundoff() as f32 + 1e-5;
            close(&gy, &cy, "y", false, tol);
            close(&grs, &crs, "rstd", true, 1e-5);
            if ln {
                close(&gmu, &cmu, "mean", true, 1e-5);
            }
            if res {
                close(&gro, &cro, "residual_out", false, 0.0);
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
            let (gdx, gdw, gdb) = bwd!(k);
            let (cdx, cdw, cdb) = bwd!(cpu);
            close(&gdx, &cdx, "dx", false, 8.0 * dt.unit_roundoff() as f32 + 1e-4);
            // dW/dB: fp32 sums in different orders (~1e-4·M), then one rounding to the weight's dtype.
            let wtol = 1e-4 * m as f32 + 2.0 * wdt.unit_roundoff() as f32;
            let cl = |a: &HostBuf, b: &HostBuf, what: &str| {
                for (j, (p, q)) in a.to_f32_vec().iter().zip(b.to_f32_vec()).enumerate() {
                    assert!((p - q).abs() <= wtol * (1.0 + q.abs()), "{ctx}: {what}[{j}] hip {p} cpu {q}");
                }
            };
            cl(&gdw, &cdw, "dw");
            if ln {
                cl(&gdb, &cdb, "db");
            }
        }
    }
}
