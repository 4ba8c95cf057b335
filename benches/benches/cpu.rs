//! Criterion benchmark of the rayon CPU backend: 8192×4096, f32 and bf16, RMSNorm and LayerNorm
//! forward and backward, each next to a parallel memcpy of the same byte count measured in the
//! same run (the copy ceiling).
//!
//! Bytes counted (criterion `Throughput::Bytes`): every tensor read once and every tensor written
//! once. Forward: x, w (+ b), y, rstd (+ mean). Backward: x, dy, w, rstd (+ mean), dx, dw (+ db).
//! The memcpy case copies half that many bytes, so its read + write equals the op's count.
//!
//! Inputs and outputs rotate through several sets totalling ≥ 1 GiB so that nothing is served
//! from the last-level cache; the outputs are allocated and faulted in once, up front.
//!
//! `cargo bench -p normkit-benches --bench cpu` (≈ 2 minutes on 2 cores). Set
//! `RAYON_NUM_THREADS` to choose the thread count.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use normkit_core::cpu::CpuBackend;
use normkit_core::{Backward, Buffer, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, Span, VecMut, VecRef};
use rayon::prelude::*;

const M: usize = 8192;
const N: usize = 4096;
/// Every case rotates through at least this many bytes of operands.
const ROTATE_BYTES: usize = 1 << 30;

fn vref(b: &HostBuf) -> VecRef<'_, HostBuf> {
    VecRef { buf: b, span: Span { offset: 0, len: b.len() } }
}
fn vmut(b: &mut HostBuf) -> VecMut<'_, HostBuf> {
    let len = b.len();
    VecMut { buf: b, span: Span { offset: 0, len } }
}

/// Random-ish values in [-2, 2), filled in parallel.
fn fill(dtype: DType, len: usize, seed: u32) -> HostBuf {
    let v: Vec<f32> = (0..len)
        .into_par_iter()
        .map(|i| {
            let h = (i as u32 ^ seed).wrapping_mul(0x9e37_79b9).rotate_left(13).wrapping_mul(0x85eb_ca6b);
            (h >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
        })
        .collect();
    HostBuf::from_f32(dtype, &v)
}

/// One set of forward operands.
struct FwdSet {
    x: HostBuf,
    y: HostBuf,
    mean: HostBuf,
    rstd: HostBuf,
}

/// One set of backward operands.
struct BwdSet {
    x: HostBuf,
    dy: HostBuf,
    dx: HostBuf,
    mean: HostBuf,
    rstd: HostBuf,
}

/// Parallel memcpy over the rayon threads (the copy ceiling).
fn par_copy(dst: &mut [u8], src: &[u8]) {
    let chunk = src.len().div_ceil(rayon::current_num_threads()).max(1 << 16);
    dst.par_chunks_mut(chunk).zip(src.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s));
}

fn bench_memcpy(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: u64) {
    let half = (bytes / 2) as usize;
    // Rotate sources and destinations alike, as the ops rotate their inputs and outputs.
    let sets = (ROTATE_BYTES / bytes as usize).max(2);
    let src: Vec<Vec<u8>> = (0..sets).map(|i| vec![i as u8 + 1; half]).collect();
    let mut dst: Vec<Vec<u8>> = (0..sets).map(|_| vec![1u8; half]).collect();
    let mut k = 0;
    c.bench_function("memcpy", |b| {
        b.iter(|| {
            par_copy(&mut dst[k % sets], &src[k % sets]);
            k += 1;
        })
    });
    black_box(&dst);
}

fn forward(c: &mut Criterion) {
    let be = CpuBackend::new();
    for dtype in [DType::F32, DType::BF16] {
        let mut g = c.benchmark_group(format!("cpu_fwd_{M}x{N}_{dtype}"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        let es = dtype.size_bytes();
        let set_bytes = 2 * M * N * es;
        let sets = ROTATE_BYTES.div_ceil(set_bytes).max(2);
        let mut data: Vec<FwdSet> = (0..sets)
            .map(|i| FwdSet {
                x: fill(dtype, M * N, i as u32),
                y: HostBuf::zeros(dtype, M * N),
                mean: HostBuf::zeros(DType::F32, M),
                rstd: HostBuf::zeros(DType::F32, M),
            })
            .collect();
        let w = fill(dtype, N, 99);
        let bias = fill(dtype, N, 98);
        for desc in [NormDesc::rms(1e-6).with_save_stats(true), NormDesc::layer(1e-5).with_save_stats(true)] {
            let vecs = if desc.bias { 2 } else { 1 };
            let stats = if desc.has_mean() { 2 } else { 1 };
            let bytes = (2 * M * N * es + vecs * N * es + stats * M * 4) as u64;
            g.throughput(Throughput::Bytes(bytes));
            bench_memcpy(&mut g, bytes);
            let mut k = 0;
            g.bench_function(BenchmarkId::new(desc.op_name(false), dtype), |b| {
                b.iter(|| {
                    let s = &mut data[k % sets];
                    k += 1;
                    let mut a = Forward::new(InOut::separate(MatRef::new(&s.x, M, N), MatMut::new(&mut s.y, M, N)))
                        .weight(vref(&w))
                        .rstd(vmut(&mut s.rstd));
                    if desc.bias {
                        a = a.bias(vref(&bias));
                    }
                    if desc.has_mean() {
                        a = a.mean(vmut(&mut s.mean));
                    }
                    be.forward(&desc, a).expect("valid forward call")
                })
            });
        }
        g.finish();
    }
}

fn backward(c: &mut Criterion) {
    let be = CpuBackend::new();
    for dtype in [DType::F32, DType::BF16] {
        let mut g = c.benchmark_group(format!("cpu_bwd_{M}x{N}_{dtype}"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4));
        let es = dtype.size_bytes();
        let set_bytes = 3 * M * N * es;
        let sets = ROTATE_BYTES.div_ceil(set_bytes).max(2);
        let w = fill(dtype, N, 99);
        let bias = fill(dtype, N, 98);
        let mut data: Vec<BwdSet> = (0..sets)
            .map(|i| {
                let x = fill(dtype, M * N, i as u32);
                let mut mean = HostBuf::zeros(DType::F32, M);
                let mut rstd = HostBuf::zeros(DType::F32, M);
                let mut y = HostBuf::zeros(dtype, M * N);
                let a = Forward::new(InOut::separate(MatRef::new(&x, M, N), MatMut::new(&mut y, M, N)))
                    .weight(vref(&w))
                    .bias(vref(&bias))
                    .mean(vmut(&mut mean))
                    .rstd(vmut(&mut rstd));
                be.forward(&NormDesc::layer(1e-5).with_save_stats(true), a).expect("valid forward call");
                BwdSet { x, dy: fill(dtype, M * N, 1000 + i as u32), dx: y, mean, rstd }
            })
            .collect();
        let mut dw = HostBuf::zeros(dtype, N);
        let mut db = HostBuf::zeros(dtype, N);
        for desc in [NormDesc::rms(1e-6), NormDesc::layer(1e-5)] {
            // Reads x, dy, w, rstd (+ mean); writes dx, dw (+ db).
            let vecs = if desc.bias { 3 } else { 2 };
            let stats = if desc.has_mean() { 2 } else { 1 };
            let bytes = (3 * M * N * es + vecs * N * es + stats * M * 4) as u64;
            g.throughput(Throughput::Bytes(bytes));
            bench_memcpy(&mut g, bytes);
            let mut k = 0;
            g.bench_function(BenchmarkId::new(desc.op_name(true), dtype), |b| {
                b.iter(|| {
                    let s = &mut data[k % sets];
                    k += 1;
                    let mut a = Backward::new(
                        MatRef::new(&s.x, M, N),
                        InOut::separate(MatRef::new(&s.dy, M, N), MatMut::new(&mut s.dx, M, N)),
                        vref(&s.rstd),
                    )
                    .weight(vref(&w))
                    .dw(vmut(&mut dw));
                    if desc.has_mean() {
                        a = a.mean(vref(&s.mean));
                    }
                    if desc.bias {
                        a = a.db(vmut(&mut db));
                    }
                    be.backward(&desc, a).expect("valid backward call")
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, forward, backward);
criterion_main!(benches);
