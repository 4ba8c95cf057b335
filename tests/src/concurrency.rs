//! One backend shared by several threads: every thread issues interleaved forward and backward
//! calls of different shapes, options and views, and every result must be bitwise equal to the
//! same call made alone.
//!
//! Written over any [`NormKernel`] that is `Sync` (the CPU backend with 4 threads in
//! `tests/tests/concurrency.rs`; a GPU backend's test file can call [`check_concurrency`] with 8).
//! The calls go through [`crate::check::run_forward`] / [`crate::check::run_backward`], so every
//! call also checks that nothing outside its output views was written and no input changed.

use crate::case::{BwdCase, FwdCase, Views};
use crate::check::{run_backward, run_forward, BwdData, BwdOut, FwdData, FwdOut};
use crate::rng::Rng;
use normkit_core::{CastingMode, DType, DTypes, HostBuf, NormDesc, NormKernel};

/// One call of the pool.
#[derive(Debug, Clone)]
pub enum Call {
    /// A forward case and its inputs.
    Fwd(FwdCase, FwdData),
    /// A backward case and its inputs.
    Bwd(BwdCase, BwdData),
}

impl Call {
    fn describe(&self) -> String {
        match self {
            Call::Fwd(c, _) => c.to_string(),
            Call::Bwd(c, _) => c.to_string(),
        }
    }
}

/// The bits of every output of a call, in a fixed order.
fn fwd_bits(o: &FwdOut) -> Vec<HostBuf> {
    let mut v = vec![o.y.clone()];
    v.extend(o.residual_out.as_ref().map(|(b, _)| b.clone()));
    v.extend(o.mean.as_ref().map(|(b, _)| b.clone()));
    v.extend(o.rstd.as_ref().map(|(b, _)| b.clone()));
    v
}

fn bwd_bits(o: &BwdOut) -> Vec<HostBuf> {
    let mut v = vec![o.dx.clone()];
    v.extend(o.dw.as_ref().map(|(b, _)| b.clone()));
    v.extend(o.db.as_ref().map(|(b, _)| b.clone()));
    v
}

/// Runs one call on `k`, returning all its outputs.
fn run<K: NormKernel>(k: &K, call: &Call) -> Result<Vec<HostBuf>, String> {
    match call {
        Call::Fwd(c, d) => run_forward(k, c, d).map(|o| fwd_bits(&o)),
        Call::Bwd(c, d) => run_backward(k, c, d).map(|o| bwd_bits(&o)),
    }
}

/// The pool of calls: RMSNorm and LayerNorm, with and without the fused add, the three casting
/// modes, saved statistics, weight offsets, f32/f16/bf16 (uniform and mixed), contiguous, strided
/// and in-place views, on shapes from 1×1 to 64×1024 and an odd 5×4097.
pub fn call_pool(seed: u64) -> Vec<Call> {
    use DType::*;
    let shapes = [(1, 1), (3, 33), (17, 256), (64, 1024), (5, 4097), (128, 64), (2, 769)];
    let descs = [
        NormDesc::rms(1e-6),
        NormDesc::layer(1e-5).with_save_stats(true),
        NormDesc::rms(1e-6).with_residual(true).with_weight_offset(1.0).with_casting(CastingMode::Llama).with_save_stats(true),
        NormDesc::layer(1e-5).with_residual(true).with_casting(CastingMode::None),
        NormDesc::rms(1e-5).without_weight().with_bias(true).with_casting(CastingMode::None).with_save_stats(true),
    ];
    let dtypes =
        [DTypes::uniform(BF16), DTypes::uniform(F32), DTypes::f32_weight(F16), DTypes { x: BF16, y: F32, weight: F32, residual: BF16 }];
    let mut rng = Rng::new(seed);
    let mut pool = Vec::new();
    for (i, &(m, n)) in shapes.iter().enumerate() {
        for j in 0..4 {
            let desc = descs[(i + j) % descs.len()];
            let dt = dtypes[(i * 3 + j) % dtypes.len()];
            let views = [Views::Contiguous, Views::Strided { odd: true }, Views::Strided { odd: false }][(i + j) % 3];
            let s = rng.next_u64();
            if j % 2 == 0 {
                let mut c = FwdCase::new(desc, dt, m, n, s);
                c.views = views;
                c.in_place = j == 2 && c.can_in_place();
                c.residual_in_place = desc.residual && i % 2 == 1;
                let d = FwdData::generate(&c);
                pool.push(Call::Fwd(c, d));
            } else {
                let bdesc = desc.with_casting(CastingMode::Gemma).with_save_stats(false);
                let mut c = BwdCase::new(bdesc, dt, m, n, s);
                c.views = views;
                c.in_place = i % 3 == 0;
                let d = BwdData::generate(&c);
                pool.push(Call::Bwd(c, d));
            }
        }
    }
    pool
}

/// Shares `k` between `threads` threads, each making `calls_per_thread` calls drawn from
/// [`call_pool`] in its own random order (so forward and backward calls of different shapes
/// interleave across threads), and compares every result bitwise with the same call made alone
/// beforehand. Returns the number of calls checked, or a report of the first mismatches.
pub fn check_concurrency<K: NormKernel + Sync>(k: &K, threads: usize, calls_per_thread: usize, seed: u64) -> Result<usize, String> {
    let pool = call_pool(seed);
    let mut alone = Vec::with_capacity(pool.len());
    for c in &pool {
        alone.push(run(k, c).map_err(|e| format!("{} (alone): {e}", c.describe()))?);
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (pool, alone) = (&pool, &alone);
                s.spawn(move || {
                    let mut rng = Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let mut fails = Vec::new();
                    for call in 0..calls_per_thread {
                        let i = rng.below(pool.len() as u64) as usize;
                        match run(k, &pool[i]) {
                            Err(e) => fails.push(format!("thread {t} call {call}: {}: {e}", pool[i].describe())),
                            Ok(got) => {
                                if let Some(o) = got.iter().zip(&alone[i]).position(|(a, b)| !a.bits_eq(b)) {
                                    fails.push(format!(
                                        "thread {t} call {call}: {}: output {o} differs from the same call made alone",
                                        pool[i].describe()
                                    ));
                                }
                            }
                        }
                        if fails.len() >= 4 {
                            break;
                        }
                    }
                    fails
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|_| vec!["a worker thread panicked".into()])).collect()
    });
    if failures.is_empty() {
        Ok(threads * calls_per_thread)
    } else {
        Err(format!("{} concurrent call(s) failed (seed {seed}):\n  - {}", failures.len(), failures.join("\n  - ")))
    }
}
