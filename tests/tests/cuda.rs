//! The conformance suite on the CUDA backend (`cargo test -p normkit-conformance --features cuda`),
//! plus what only a device backend has: raw-pointer views and their overlap check.
//! Without a CUDA driver or device every test is reported as ignored (not run): see `normkit_conformance::harness`.

use normkit::cuda::CudaBackend;
use normkit_core::{
    AliasRule, Backward, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormError, NormKernel, Operand, VecMut, VecRef,
};

/// The backend; every test here runs only after [`probe`] found a device.
fn backend() -> CudaBackend {
    CudaBackend::new().unwrap_or_else(|e| panic!("the cuda backend failed to start: {e}"))
}

/// `Err(reason)` when this machine has no device for the backend: the harness then reports every
/// test as not run. Any other start-up error lets the tests run, and fail with it.
fn probe() -> Result<(), String> {
    match CudaBackend::new() {
        Err(NormError::BackendUnavailable { reason, .. }) => Err(reason),
        _ => Ok(()),
    }
}

fn main() -> std::process::ExitCode {
    let mut trials = normkit_conformance::conformance_trials!(CudaBackend::new(), normkit_conformance::Grid::full());
    trials.extend(normkit_conformance::trials![
        overlapping_raw_views_are_rejected,
        misaligned_raw_pointer_is_a_typed_error,
        misaligned_views_take_the_scalar_path,
        kernel_tour,
        cluster::cluster_matches_cpu,
        cluster::cluster_bitwise_invariance,
        rows::rows_backward_matches_cpu
    ]);
    normkit_conformance::harness::run("cuda", probe(), trials)
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
    // Both paths assign the same chunks to the same threads and reduce in the same order.
    assert_eq!(a, b[1..].to_vec(), "element-wise and 16-byte paths disagree");
}

/// Every kernel once (row and split paths, vector and scalar, strided, fused add, LayerNorm with
/// bias and stats, backward with d_residual_out), compared with the CPU backend. Small enough to
/// run under compute-sanitizer (`run.sh sanitize` runs exactly this test).
fn kernel_tour() {
    use normkit_core::cpu::CpuBackend;
    use normkit_core::{CastingMode, Layout};
    let k = backend();
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
    // (m, n, stride, dtype): vector row path, scalar row path (odd N), strided, split path; the
    // register-resident kernels' tables: backward 4 chunks per thread (16-bit N = 3000, 4096,
    // 8192, 16384), 1 chunk per thread (f32 N = 6000), forward 8 chunks per thread (bf16 N = 65536),
    // the cluster kernels (N = 24576 with more rows than clusters, 65536, 131072, 262144), the split
    // forward and backward (N = 300000).
    let shapes = [
        (3usize, 7usize, 7usize, DType::F32),
        (5, 128, 136, DType::BF16),
        (4, 769, 800, DType::F16),
        (3, 4096, 4096, DType::BF16),
        // The row-batch backward (rows.cuh, in-kernel finalize after a grid barrier): a partial
        // batch, idle threads of a group (N = 520), strided rows, several batches per group.
        (3, 1024, 1024, DType::BF16),
        (5, 520, 520, DType::F16),
        (37, 2048, 2056, DType::BF16),
        (2, 20000, 20008, DType::BF16),
        (2, 20001, 20001, DType::F32),
        (70, 64, 64, DType::F16),
        (3, 8192, 8192, DType::BF16),
        (2, 16384, 16392, DType::BF16),
        (2, 65536, 65536, DType::BF16),
        // The cluster backward with more rows than clusters (its prefetch of the next row).
        (200, 24576, 24576, DType::BF16),
        (3, 6000, 6000, DType::F32),
        (3, 4096, 4104, DType::F16),
        (2, 3000, 3000, DType::BF16),
        // Clusters of 16 CTAs (the RMSNorm forward, the LayerNorm backward's prefetching twin),
        // and of 16 × 512 threads (the prefetching backward twins of RMSNorm and LayerNorm).
        (2, 131072, 131072, DType::BF16),
        (2, 262144, 262144, DType::BF16),
        // Past every cluster cap: the split forward's per-row reduce, and the split backward with
        // two partial rows (the one-column-per-thread finalize).
        (2, 300000, 300000, DType::BF16),
    ];
    for &(m, n, stride, dt) in &shapes {
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
            let (gy, gro, grs, gmu) = fwd!(k);
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
            let (gdx, gdw, gdb) = bwd!(k);
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

// ---------------------------------------------------------------------------------------------
// Cluster row kernels (sm_90+, kernels-cuda/cluster.cuh): large N, every tensor in x's dtype,
// Gemma casting. Forward to N = 524288 (16-bit; residual to 262144), backward to 262144 (16-bit) /
// 131072 (f32); odd N and misaligned views run the element-wise forward twin.

mod cluster {
    use super::backend;
    use normkit_core::cpu::CpuBackend;
    use normkit_core::{Backward, DType, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormKernel, VecMut, VecRef};

    pub(super) fn rnd(seed: &mut u64, len: usize) -> Vec<f32> {
        (0..len)
            .map(|_| {
                *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    pub(super) fn desc(ln: bool, res: bool) -> NormDesc {
        if ln { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-6).with_weight_offset(1.0) }.with_residual(res).with_save_stats(true)
    }

    pub(super) struct Inputs {
        pub(super) x: HostBuf,
        pub(super) r: HostBuf,
        pub(super) w: HostBuf,
        pub(super) b: HostBuf,
        pub(super) dy: HostBuf,
        pub(super) dr: HostBuf,
    }

    pub(super) fn inputs(len: usize, n: usize, dt: DType, seed: u64) -> Inputs {
        let mut s = seed;
        // An offset mean makes LayerNorm's centring matter.
        let x: Vec<f32> = rnd(&mut s, len).iter().map(|v| v + 0.5).collect();
        Inputs {
            x: HostBuf::from_f32(dt, &x),
            r: HostBuf::from_f32(dt, &rnd(&mut s, len)),
            w: HostBuf::from_f32(dt, &rnd(&mut s, n)),
            b: HostBuf::from_f32(dt, &rnd(&mut s, n)),
            dy: HostBuf::from_f32(dt, &rnd(&mut s, len)),
            dr: HostBuf::from_f32(dt, &rnd(&mut s, len)),
        }
    }

    /// (y, residual_out, rstd, mean)
    #[allow(clippy::too_many_arguments)] // one argument per knob of the call under test
    pub(super) fn fwd<K: NormKernel>(
        k: &K,
        ln: bool,
        res: bool,
        l: Layout,
        m: usize,
        dt: DType,
        len: usize,
        i: &Inputs,
    ) -> (HostBuf, HostBuf, HostBuf, HostBuf) {
        let d = desc(ln, res);
        let x = k.upload(&i.x).unwrap();
        let w = k.upload(&i.w).unwrap();
        let b = k.upload(&i.b).unwrap();
        let r = k.upload(&i.r).unwrap();
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
        k.forward(&d, a).unwrap();
        (k.download(&y).unwrap(), k.download(&ro).unwrap(), k.download(&rstd).unwrap(), k.download(&mean).unwrap())
    }

    /// (dx, dw, db) from x = `hx`, stats from the CPU forward.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bwd<K: NormKernel>(
        k: &K,
        ln: bool,
        res: bool,
        l: Layout,
        dt: DType,
        len: usize,
        n: usize,
        hx: &HostBuf,
        mu: &HostBuf,
        rs: &HostBuf,
        i: &Inputs,
    ) -> (HostBuf, HostBuf, HostBuf) {
        let d = desc(ln, res);
        let x = k.upload(hx).unwrap();
        let w = k.upload(&i.w).unwrap();
        let dy = k.upload(&i.dy).unwrap();
        let dr = k.upload(&i.dr).unwrap();
        let mu = k.upload(mu).unwrap();
        let rs = k.upload(rs).unwrap();
        let mut dx = k.upload(&HostBuf::filled(dt, len, f32::NAN)).unwrap();
        let mut dw = k.upload(&HostBuf::filled(dt, n, f32::NAN)).unwrap();
        let mut db = k.upload(&HostBuf::filled(dt, n, f32::NAN)).unwrap();
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
        k.backward(&d, a).unwrap();
        (k.download(&dx).unwrap(), k.download(&dw).unwrap(), k.download(&db).unwrap())
    }

    pub(super) fn close(ctx: &str, what: &str, a: &HostBuf, b: &HostBuf, rows: &[(usize, usize)], tol: f32) {
        let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
        for &(start, n) in rows {
            for j in start..start + n {
                let (p, q) = (a[j], b[j]);
                assert!((p - q).abs() <= tol * (1.0 + q.abs()), "{ctx}: {what}[{j}] gpu {p} cpu {q}");
            }
        }
    }

    /// Forward and backward against the CPU backend at large N (cluster kernels), every flag combination.
    pub(super) fn cluster_matches_cpu() {
        let k = backend();
        let cpu = CpuBackend::new();
        // (m, n, stride, offset, dtype)
        let shapes = [
            (3usize, 65536usize, 65536usize, 0usize, DType::BF16),
            (2, 131072, 131080, 0, DType::F16),
            (3, 70001, 70001, 0, DType::BF16), // odd N: element-wise twin (forward)
            (2, 262144, 262144, 0, DType::BF16),
            (2, 100000, 100008, 0, DType::F32),
            (2, 131072, 131072, 0, DType::F32),
            (1, 1048576, 1048576, 0, DType::BF16),
            (2, 40000, 40000, 3, DType::BF16), // misaligned: element-wise twin
            // More rows than clusters: clusters walk several rows, so the prefetching backward
            // stages and consumes rows (K = 3 chunks per thread: a partial slice).
            (300, 49152, 49160, 0, DType::F16),
        ];
        for (si, &(m, n, stride, off, dt)) in shapes.iter().enumerate() {
            for (ln, res) in [(false, false), (true, true), (false, true), (true, false)] {
                if n > 262144 && res {
                    continue; // split path; covered elsewhere
                }
                let len = off + (m - 1) * stride + n;
                let l = Layout::strided(m, n, stride).with_offset(off);
                let rows: Vec<(usize, usize)> = (0..m).map(|i| (off + i * stride, n)).collect();
                let ctx = format!("m={m} n={n} stride={stride} off={off} {dt} ln={ln} res={res}");
                let i = inputs(len, n, dt, 0x5eed + si as u64);
                let (gy, gro, grs, gmu) = fwd(&k, ln, res, l, m, dt, len, &i);
                let (cy, cro, crs, cmu) = fwd(&cpu, ln, res, l, m, dt, len, &i);
                let tol = 4.0 * dt.unit_roundoff() as f32 + 1e-5;
                close(&ctx, "y", &gy, &cy, &rows, tol);
                close(&ctx, "rstd", &grs, &crs, &[(0, m)], 1e-5);
                if ln {
                    close(&ctx, "mean", &gmu, &cmu, &[(0, m)], 1e-5);
                }
                if res {
                    close(&ctx, "residual_out", &gro, &cro, &rows, 0.0);
                }
                if n > 262144 {
                    continue;
                }
                let hx = if res { cro.clone() } else { i.x.clone() };
                let (gdx, gdw, gdb) = bwd(&k, ln, res, l, dt, len, n, &hx, &cmu, &crs, &i);
                let (cdx, cdw, cdb) = bwd(&cpu, ln, res, l, dt, len, n, &hx, &cmu, &crs, &i);
                close(&ctx, "dx", &gdx, &cdx, &rows, 8.0 * dt.unit_roundoff() as f32 + 1e-4);
                let wtol = 4.0 * dt.unit_roundoff() as f32 + 1e-4 * m as f32;
                close(&ctx, "dw", &gdw, &cdw, &[(0, n)], wtol);
                if ln {
                    close(&ctx, "db", &gdb, &cdb, &[(0, n)], wtol);
                }
            }
        }
    }

    /// Bitwise: run to run (forward and backward), aligned vs element-wise twin, and a row's
    /// forward output alone (M = 1) vs inside a batch (M = 37, not a multiple of the cluster count).
    pub(super) fn cluster_bitwise_invariance() {
        let k = backend();
        for &(n, dt) in &[(65536usize, DType::BF16), (262144, DType::F16), (131072, DType::F32), (1048576, DType::BF16)] {
            for (ln, res) in [(true, true), (false, false), (true, false)] {
                if n > 262144 && res {
                    continue;
                }
                let ctx = format!("n={n} {dt} ln={ln} res={res}");
                let m = 37usize;
                let len = m * n;
                let i = inputs(len + 1, n, dt, 0xb17 + n as u64);
                let l = Layout::contiguous(m, n);
                let a = fwd(&k, ln, res, l, m, dt, len + 1, &i);
                let b = fwd(&k, ln, res, l, m, dt, len + 1, &i);
                assert!(a.0.bits_eq(&b.0) && a.1.bits_eq(&b.1) && a.2.bits_eq(&b.2) && a.3.bits_eq(&b.3), "{ctx}: forward not repeatable");
                // Element-wise twin: the same rows one element into the buffer.
                let shifted = Inputs {
                    x: HostBuf::from_f32(dt, &[&[0.0f32][..], &i.x.to_f32_vec()[..len]].concat()),
                    r: HostBuf::from_f32(dt, &[&[0.0f32][..], &i.r.to_f32_vec()[..len]].concat()),
                    w: i.w.clone(),
                    b: i.b.clone(),
                    dy: i.dy.clone(),
                    dr: i.dr.clone(),
                };
                let u = fwd(&k, ln, res, Layout::contiguous(m, n).with_offset(1), m, dt, len + 1, &shifted);
                let (ay, uy) = (a.0.to_bits_vec(), u.0.to_bits_vec());
                assert_eq!(ay[..len], uy[1..len + 1], "{ctx}: element-wise twin differs from the 16-byte kernel");
                assert!(a.2.bits_eq(&u.2), "{ctx}: rstd differs between the twins");
                // Row 5 alone.
                let row = 5usize;
                let one = Inputs {
                    x: HostBuf::from_f32(dt, &i.x.to_f32_vec()[row * n..(row + 1) * n]),
                    r: HostBuf::from_f32(dt, &i.r.to_f32_vec()[row * n..(row + 1) * n]),
                    w: i.w.clone(),
                    b: i.b.clone(),
                    dy: i.dy.clone(),
                    dr: i.dr.clone(),
                };
                let s = fwd(&k, ln, res, Layout::contiguous(1, n), 1, dt, n, &one);
                assert_eq!(ay[row * n..(row + 1) * n], s.0.to_bits_vec()[..], "{ctx}: row depends on M");
                if n > 262144 || (dt == DType::F32 && n > 131072) {
                    continue;
                }
                let x = if res { a.1.clone() } else { i.x.clone() };
                let g1 = bwd(&k, ln, res, l, dt, len + 1, n, &x, &a.3, &a.2, &i);
                let g2 = bwd(&k, ln, res, l, dt, len + 1, n, &x, &a.3, &a.2, &i);
                assert!(g1.0.bits_eq(&g2.0) && g1.1.bits_eq(&g2.1) && g1.2.bits_eq(&g2.2), "{ctx}: backward not repeatable");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Row-batch backward (kernels-cuda/rows.cuh): 16-bit, 16-byte layouts, 512 < N ≤ 2048, every M;
// four rows per thread at a time, one partial row per CTA, the finalize a programmatic dependent
// launch.

mod rows {
    use super::backend;
    use super::cluster::{bwd, fwd, inputs};
    use normkit_core::cpu::CpuBackend;
    use normkit_core::{DType, HostBuf, Layout};

    /// |gpu − cpu| within two units of the output dtype's rounding, plus what an fp32 sum of `terms`
    /// products of O(1) values can lose (the GPU sums in another order than the oracle).
    fn check(ctx: &str, what: &str, a: &HostBuf, b: &HostBuf, rows: &[(usize, usize)], dt: DType, terms: usize) {
        let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
        let u = dt.unit_roundoff() as f32;
        for &(start, n) in rows {
            for j in start..start + n {
                let (p, q) = (a[j], b[j]);
                let tol = 2.0 * u * q.abs() + 4e-6 * terms as f32 + 1e-5;
                assert!((p - q).abs() <= tol, "{ctx}: {what}[{j}] gpu {p} cpu {q} (tol {tol})");
            }
        }
    }

    /// dx, dW, dB against the CPU backend over batches that leave a partial batch of four rows
    /// (M = 1, 3, 5, 37, 4099), more batches than groups (M = 1000 and up), idle threads (N = 520:
    /// 65 chunks on a 128-thread group; N = 1536: 192 on 256), strided rows, every op; then the
    /// same call again (bitwise).
    pub(super) fn rows_backward_matches_cpu() {
        let k = backend();
        let cpu = CpuBackend::new();
        // (m, n, stride, dtype)
        let shapes = [
            (1usize, 1024usize, 1024usize, DType::BF16),
            (3, 520, 520, DType::F16),
            (5, 2048, 2048, DType::BF16),
            (37, 1024, 1032, DType::F16),
            (1000, 1024, 1024, DType::BF16),
            (4099, 1536, 1544, DType::BF16),
            (8192, 1024, 1024, DType::F16),
            (30001, 1024, 1024, DType::BF16),
        ];
        for (si, &(m, n, stride, dt)) in shapes.iter().enumerate() {
            for (ln, res) in [(false, false), (true, true), (false, true), (true, false)] {
                let len = (m - 1) * stride + n;
                let l = Layout::strided(m, n, stride);
                let rows: Vec<(usize, usize)> = (0..m).map(|i| (i * stride, n)).collect();
                let ctx = format!("m={m} n={n} stride={stride} {dt} ln={ln} res={res}");
                let i = inputs(len, n, dt, 0x40e5 + si as u64);
                let (_, cro, crs, cmu) = fwd(&cpu, ln, res, l, m, dt, len, &i);
                let hx = if res { cro.clone() } else { i.x.clone() };
                let g = bwd(&k, ln, res, l, dt, len, n, &hx, &cmu, &crs, &i);
                let c = bwd(&cpu, ln, res, l, dt, len, n, &hx, &cmu, &crs, &i);
                check(&ctx, "dx", &g.0, &c.0, &rows, dt, n);
                check(&ctx, "dw", &g.1, &c.1, &[(0, n)], dt, m);
                if ln {
                    check(&ctx, "db", &g.2, &c.2, &[(0, n)], dt, m);
                }
                let again = bwd(&k, ln, res, l, dt, len, n, &hx, &cmu, &crs, &i);
                assert!(g.0.bits_eq(&again.0) && g.1.bits_eq(&again.1) && g.2.bits_eq(&again.2), "{ctx}: backward not repeatable");
            }
        }
    }
}
