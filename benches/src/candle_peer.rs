//! candle on the CPU, measured in the same run as normkit's CPU backend, as two peer runs:
//!
//! - **candle fused** (`rms_fwd`, `ln_fwd`): `candle_nn::ops::rms_norm` / `layer_norm`, candle's
//!   fused forward kernels. They save no statistics and have no backward.
//! - **candle unfused** (`rms_fwdbwd`, `ln_fwdbwd`, see [`Chain`]): `rms_norm_slow` /
//!   `layer_norm_slow` on `Var`s, then candle's autograd backward: the only way to train with
//!   candle's norms. Compared with normkit's forward µs + backward µs ([`crate::compare`]).
//!
//! **Timing** is the runner's on the CPU: the same [`Plan`] (repetitions, seconds per
//! repetition, at most `max_calls` calls per repetition), the per-call time of a repetition is its
//! time over its calls, and the median over repetitions is reported; bytes are normkit's count
//! for the op (a chain: forward + backward), so GB/s and speedups compare directly. Input sets
//! are rotated as the runner rotates them ([`runner::sets_needed`], past the last-level cache),
//! across repetitions as well, since a slow call may be a repetition on its own. Two differences,
//! both because candle allocates its outputs on every call: the warm-up is one call (not one
//! pass over every set: there is nothing to touch first), and the count of calls per repetition
//! may go down to one. candle's output allocation, and for the chain its gradient store, are
//! part of what is timed: a candle user pays them.
//!
//! **The gradient** of the unfused chain starts from a given `dy`, as normkit's backward does:
//! the loss is a custom op (`Seed`) whose value is a scalar that reads nothing and whose
//! gradient is `dy` itself, so no `sum(y · dy)` multiply and reduction are timed. What remains of
//! the seeding is candle's accumulation of `dy` into `y`'s gradient (a zero tensor, then an
//! add); it is timed alone on `x` (the **baseline**, the same op on the input) and its median is
//! subtracted (the row's `us_baseline`). The gradients of `x`, `w` (and `b`) are computed, as in
//! training.
//!
//! **Which cases**: the fused forward on every `rms_fwd` / `ln_fwd` case of the CPU grid in f32
//! and bf16. The unfused chain (about 2 s per call at 4096×4096 in bf16 on two cores) only on the
//! grid's first shape and on latency-bound shapes, unless `--candle-all-shapes`; and only where
//! both the forward and the backward op are asked for (normkit's side of the comparison).

use crate::backends::Request;
use crate::grid::{DeviceKind, LATENCY_BYTES};
use crate::ops::{Chain, Op};
use crate::progress::Progress;
use crate::runner::Plan;
use crate::schema::Run;
#[cfg(feature = "candle")]
use crate::{runner, schema::ResultRow};
use normkit_core::DType;

/// Said in every candle run's notes and in the reports.
pub const METHOD: &str = "candle is timed in the same run as normkit's CPU backend, with the same repetitions, median and byte \
count. candle fused = candle_nn::ops::rms_norm / layer_norm (no statistics saved, no backward). candle unfused = rms_norm_slow / \
layer_norm_slow on Vars then candle's backward, against normkit's forward + backward; the gradient is seeded with dy directly (a \
custom op, no multiply or sum), and candle's accumulation of that seed (zeros + add, timed alone on x) is subtracted (us_baseline). \
candle's times include allocating its outputs on every call (above glibc's 32 MiB mmap threshold: a fresh mapping and its page \
faults), which its API requires; normkit's are its kernels writing into buffers allocated once.";

/// What one candle case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// candle's fused forward of `rms_fwd` or `ln_fwd`.
    Fused(Op),
    /// candle's unfused forward + backward.
    Unfused(Chain),
}

/// One candle case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CandleCase {
    pub kind: Kind,
    pub m: usize,
    pub n: usize,
    pub dtype: DType,
}

impl CandleCase {
    /// The op name of its rows (`rms_fwd`, `rms_fwdbwd`, …).
    pub fn op_name(&self) -> &'static str {
        match self.kind {
            Kind::Fused(op) => op.name(),
            Kind::Unfused(chain) => chain.name(),
        }
    }

    /// normkit's byte count of the op or chain.
    pub fn bytes(&self) -> u64 {
        match self.kind {
            Kind::Fused(op) => op.bytes(self.m, self.n, self.dtype),
            Kind::Unfused(chain) => chain.bytes(self.m, self.n, self.dtype),
        }
    }

    pub fn label(&self) -> String {
        let which = if matches!(self.kind, Kind::Fused(_)) { "fused" } else { "unfused" };
        format!("candle {which} {} {}x{} {}", self.op_name(), self.m, self.n, self.dtype)
    }
}

/// The candle cases of a request (see the module docs): fused forwards first, then the chains.
pub fn cases(req: &Request, all_shapes: bool) -> Vec<CandleCase> {
    let grid = req.cases(DeviceKind::Cpu);
    let ours = |d: DType| matches!(d, DType::F32 | DType::BF16);
    let mut out: Vec<CandleCase> = grid
        .iter()
        .filter(|c| matches!(c.op, Op::RmsFwd | Op::LnFwd) && ours(c.dtype))
        .map(|c| CandleCase { kind: Kind::Fused(c.op), m: c.m, n: c.n, dtype: c.dtype })
        .collect();
    let first = grid.iter().find(|c| !c.op.is_fp8()).map(|c| (c.m, c.n));
    for chain in Chain::ALL {
        let [fwd, bwd] = chain.parts();
        if !(req.ops.contains(&fwd) && req.ops.contains(&bwd)) {
            continue;
        }
        for c in grid.iter().filter(|c| c.op == fwd && ours(c.dtype)) {
            let case = CandleCase { kind: Kind::Unfused(chain), m: c.m, n: c.n, dtype: c.dtype };
            if all_shapes || first == Some((c.m, c.n)) || case.bytes() < LATENCY_BYTES {
                out.push(case);
            }
        }
    }
    out
}

/// The candle-core version linked in (from `Cargo.lock`, by `build.rs`).
pub fn version() -> &'static str {
    env!("NORMKIT_CANDLE_VERSION")
}

/// Whether this build has candle (the `candle` feature).
pub const BUILT: bool = cfg!(feature = "candle");

/// Measures `cases` with candle. `cpu` is normkit's CPU run of the same process: its device,
/// machine, copy ceiling and cache size are the peers' too. `on_case` sees the candle runs after
/// every case. `Err` only when this build has no candle; failed cases are recorded in the runs.
pub fn run(
    cases: &[CandleCase],
    plan: &Plan,
    cpu: &Run,
    progress: &mut Progress,
    on_case: &mut dyn FnMut(&[Run]),
) -> Result<Vec<Run>, String> {
    #[cfg(feature = "candle")]
    {
        Ok(imp::run(cases, plan, cpu, progress, on_case))
    }
    #[cfg(not(feature = "candle"))]
    {
        let _ = (cases, plan, cpu, progress, on_case);
        Err("this normkit-bench was built without the `candle` feature".into())
    }
}

#[cfg(feature = "candle")]
mod imp {
    use super::*;
    use crate::schema::CaseNote;
    use candle_core::{CpuStorage, CustomOp1, Device, Layout, Shape, Tensor, Var};
    use std::time::Instant;

    /// `loss = seed(y)`: a scalar that reads nothing, whose gradient with respect to `y` is the
    /// stored `dy`, so candle's backward starts from `dy` as normkit's backward does.
    pub(super) struct Seed(pub Tensor);

    impl CustomOp1 for Seed {
        fn name(&self) -> &'static str {
            "normkit-bench-seed"
        }
        fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
            Ok((CpuStorage::F32(vec![0.0]), Shape::from(())))
        }
        fn bwd(&self, _: &Tensor, _: &Tensor, _: &Tensor) -> candle_core::Result<Option<Tensor>> {
            Ok(Some(self.0.clone()))
        }
    }

    /// One rotated set of inputs. `x`, `w`, `b` are `Var`s for the chain (their gradients are
    /// computed), plain tensors for the fused forward.
    struct Set {
        x: Tensor,
        w: Tensor,
        b: Tensor,
        dy: Tensor,
    }

    const EPS: f32 = 1e-6;

    fn candle_dtype(d: DType) -> candle_core::DType {
        match d {
            DType::F32 => candle_core::DType::F32,
            DType::F16 => candle_core::DType::F16,
            _ => candle_core::DType::BF16,
        }
    }

    /// The same values as normkit's inputs (`crate::inputs::random`, same seeds and ranges).
    fn host(dtype: DType, len: usize, seed: u64, lo: f32, hi: f32, shape: &[usize]) -> candle_core::Result<Tensor> {
        let v = crate::inputs::random(DType::F32, len, seed, lo, hi).to_f32_vec();
        Tensor::from_vec(v, shape, &Device::Cpu)?.to_dtype(candle_dtype(dtype))
    }

    fn sets(case: &CandleCase, n_sets: usize) -> candle_core::Result<Vec<Set>> {
        let (m, n, dt) = (case.m, case.n, case.dtype);
        let chain = matches!(case.kind, Kind::Unfused(_));
        let x = host(dt, m * n, 1, -2.0, 2.0, &[m, n])?;
        let dy = if chain { host(dt, m * n, 2, -2.0, 2.0, &[m, n])? } else { Tensor::zeros(1, candle_dtype(dt), &Device::Cpu)? };
        let w = host(dt, n, 4, 0.5, 1.5, &[n])?;
        let b = host(dt, n, 5, -0.5, 0.5, &[n])?;
        // Var::from_tensor copies: every set owns its memory.
        let own = |t: &Tensor| -> candle_core::Result<Tensor> {
            if chain {
                Ok(Var::from_tensor(t)?.as_tensor().clone())
            } else {
                t.copy()
            }
        };
        (0..n_sets).map(|_| Ok(Set { x: own(&x)?, w: own(&w)?, b: own(&b)?, dy: dy.copy()? })).collect()
    }

    /// One call of the case on `s`; `baseline`: the gradient seeding alone, on `x`.
    fn call(kind: Kind, s: &Set, baseline: bool) -> candle_core::Result<()> {
        use candle_nn::ops;
        match kind {
            Kind::Fused(Op::RmsFwd) => drop(ops::rms_norm(&s.x, &s.w, EPS)?),
            Kind::Fused(_) => drop(ops::layer_norm(&s.x, &s.w, &s.b, EPS)?),
            Kind::Unfused(chain) => {
                let y = match (baseline, chain) {
                    (true, _) => s.x.clone(),
                    (false, Chain::RmsFwdBwd) => ops::rms_norm_slow(&s.x, &s.w, EPS)?,
                    (false, Chain::LnFwdBwd) => ops::layer_norm_slow(&s.x, &s.w, &s.b, EPS)?,
                };
                let grads = y.apply_op1(Seed(s.dy.clone()))?.backward()?;
                drop(grads);
            }
        }
        Ok(())
    }

    /// The loop of the CPU backend's `time_calls`: per repetition, its time over its calls.
    fn time_calls(calls: usize, reps: usize, f: &mut dyn FnMut() -> candle_core::Result<()>) -> candle_core::Result<Vec<f64>> {
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..calls {
                    f()?;
                }
                Ok(t.elapsed().as_secs_f64() / calls as f64)
            })
            .collect()
    }

    /// Warm-up call, one timed call for the estimate, then `plan.reps` repetitions.
    fn time(sets: &[Set], kind: Kind, baseline: bool, plan: &Plan) -> candle_core::Result<(Vec<f64>, usize)> {
        let mut k = 0;
        let mut f = || {
            let s = &sets[k % sets.len()];
            k += 1;
            call(kind, s, baseline)
        };
        f()?;
        let est = time_calls(1, 1, &mut f)?[0].max(1e-7);
        let calls = ((plan.rep_target_s / est).ceil() as usize).clamp(1, plan.max_calls.max(1));
        Ok((time_calls(calls, plan.reps.max(1), &mut f)?, calls))
    }

    fn measure(case: &CandleCase, plan: &Plan, cpu: &Run) -> candle_core::Result<ResultRow> {
        let bytes = case.bytes();
        let mem_cap = if cpu.machine.memory_bytes > 0 { cpu.machine.memory_bytes / 4 } else { u64::MAX };
        let budget = (plan.rotate_factor * cpu.machine.cache_bytes.max(1 << 20) as f64) as u64;
        let n_sets = runner::sets_needed(bytes, budget, mem_cap, plan.max_sets);
        let sets = sets(case, n_sets)?;
        let (mut times, calls) = time(&sets, case.kind, false, plan)?;
        let us_baseline = if matches!(case.kind, Kind::Unfused(_)) {
            let base = runner::median(&time(&sets, case.kind, true, plan)?.0);
            // Never below a tenth of the whole call: a noisy baseline cannot make the op free.
            for t in &mut times {
                *t = (*t - base).max(*t / 10.0);
            }
            Some(base * 1e6)
        } else {
            None
        };
        let med = runner::median(&times);
        let gbps = bytes as f64 / med / 1e9;
        Ok(ResultRow {
            op: case.op_name().into(),
            m: case.m as u64,
            n: case.n as u64,
            dtype: case.dtype.name().into(),
            gbps,
            us: med * 1e6,
            bytes: Some(bytes),
            pct_copy: (cpu.copy_gbps > 0.0).then(|| 100.0 * gbps / cpu.copy_gbps),
            us_min: times.iter().copied().reduce(f64::min).map(|t| t * 1e6),
            us_max: times.iter().copied().reduce(f64::max).map(|t| t * 1e6),
            n_sets: Some(n_sets as u64),
            calls: Some(calls as u64),
            reps: Some(times.len() as u64),
            us_baseline,
            y_dtype: None,
            us_rotated: None,
            n_sets_rotated: None,
            out_sets: None,
        })
    }

    fn peer_run(cpu: &Run, which: &str) -> Run {
        let mut versions = cpu.versions.clone();
        versions.remove("backend");
        versions.insert("measured by".into(), "normkit-bench, in process, in the same run as the cpu backend".into());
        versions.insert("candle".into(), format!("candle-core {} (CPU, default features)", version()));
        Run {
            device: cpu.device.clone(),
            driver: String::new(),
            copy_gbps: cpu.copy_gbps,
            results: Vec::new(),
            backend: "peer".into(),
            label: format!("candle {which} · {}", cpu.device),
            schema_version: Some(crate::schema::SCHEMA_VERSION),
            units: Some(Default::default()),
            date: crate::sysinfo::utc_now(),
            copy_bytes: cpu.copy_bytes,
            machine: cpu.machine.clone(),
            versions,
            errors: Vec::new(),
            skipped: Vec::new(),
            notes: vec![METHOD.to_string()],
        }
    }

    pub(super) fn run(cases: &[CandleCase], plan: &Plan, cpu: &Run, progress: &mut Progress, on_case: &mut dyn FnMut(&[Run])) -> Vec<Run> {
        let mut fused = peer_run(cpu, "fused");
        let mut unfused = peer_run(cpu, "unfused");
        unfused.notes.push(
            "a subset of the shapes (the grid's first and the latency-bound ones; --candle-all-shapes for all): about 2 s per \
             bf16 call at 4096x4096 on two cores"
                .into(),
        );
        for (i, case) in cases.iter().enumerate() {
            let label = case.label();
            progress.start_label(i, &label);
            let target = if matches!(case.kind, Kind::Fused(_)) { &mut fused } else { &mut unfused };
            match measure(case, plan, cpu) {
                Ok(row) => {
                    let base =
                        row.us_baseline.map_or_else(String::new, |b| format!(" (baseline {} µs subtracted)", crate::report::fmt_us(b)));
                    let msg = format!("{:.2} GB/s, {} µs{base}", row.gbps, crate::report::fmt_us(row.us));
                    progress.done_label(i, &label, &msg);
                    target.results.push(row);
                }
                Err(e) => {
                    progress.done_label(i, &label, &format!("ERROR: {e}"));
                    let reason = e.to_string().lines().next().unwrap_or("").to_string();
                    let (op, m, n, dtype) = (case.op_name().into(), case.m as u64, case.n as u64, case.dtype.name().into());
                    target.errors.push(CaseNote { op, m, n, dtype, reason });
                }
            }
            on_case(&[fused.clone(), unfused.clone()]);
        }
        progress.finish();
        [fused, unfused].into_iter().filter(|r| !r.results.is_empty() || !r.errors.is_empty()).collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The seed gives `y` the gradient `dy` exactly: seeding `x` itself returns `dy` as `x`'s
        /// gradient, and the chain's gradient equals the one of `sum(y · dy)`.
        #[test]
        fn the_seed_makes_dy_the_gradient_of_y() -> candle_core::Result<()> {
            let dev = Device::Cpu;
            let x = Var::from_tensor(&Tensor::arange(1f32, 13.0, &dev)?.reshape((3, 4))?)?;
            let w = Var::from_tensor(&Tensor::new(&[0.5f32, 1.0, 1.5, 2.0], &dev)?)?;
            let dy = Tensor::new(&[[1f32, -2.0, 3.0, 0.5], [0.25, 1.0, -1.0, 2.0], [1.0, 1.0, -3.0, 0.0]], &dev)?;
            let g = x.as_tensor().apply_op1(Seed(dy.clone()))?.backward()?;
            assert_eq!(g.get(&x).unwrap().to_vec2::<f32>()?, dy.to_vec2::<f32>()?);
            let y = candle_nn::ops::rms_norm_slow(x.as_tensor(), w.as_tensor(), EPS)?;
            let seeded = y.apply_op1(Seed(dy.clone()))?.backward()?;
            let y = candle_nn::ops::rms_norm_slow(x.as_tensor(), w.as_tensor(), EPS)?;
            let summed = (y * &dy)?.sum_all()?.backward()?;
            for v in [&x, &w] {
                let (a, b) =
                    (seeded.get(v).unwrap().flatten_all()?.to_vec1::<f32>()?, summed.get(v).unwrap().flatten_all()?.to_vec1::<f32>()?);
                assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs().max(1.0)), "{a:?} vs {b:?}");
            }
            Ok(())
        }

        #[test]
        fn a_tiny_run_has_both_peers_with_the_cpu_runs_machine() {
            let plan = Plan {
                reps: 3,
                rep_target_s: 1e-4,
                max_calls: 2,
                rotate_factor: 1.0,
                max_sets: 2,
                peer_max_sets: 2,
                copy_bytes: 1 << 20,
                max_consecutive_errors: 3,
            };
            let cpu = Run { device: "cpu-model".into(), copy_gbps: 10.0, ..crate::compare::tests_run() };
            let cases = [
                CandleCase { kind: Kind::Fused(Op::LnFwd), m: 4, n: 64, dtype: DType::BF16 },
                CandleCase { kind: Kind::Unfused(Chain::RmsFwdBwd), m: 4, n: 64, dtype: DType::F32 },
            ];
            let mut seen = 0;
            let runs = run(&cases, &plan, &cpu, &mut Progress::quiet(), &mut |_| seen += 1);
            assert_eq!(seen, 2);
            assert_eq!(runs.len(), 2);
            assert!(runs[0].label.starts_with("candle fused") && runs[1].label.starts_with("candle unfused"));
            let (f, u) = (&runs[0].results[0], &runs[1].results[0]);
            assert_eq!((f.op.as_str(), f.bytes), ("ln_fwd", Some(Op::LnFwd.bytes(4, 64, DType::BF16))));
            assert_eq!((u.op.as_str(), u.bytes), ("rms_fwdbwd", Some(Chain::RmsFwdBwd.bytes(4, 64, DType::F32))));
            assert!(f.us_baseline.is_none() && u.us_baseline.is_some_and(|b| b > 0.0));
            assert!(runs.iter().all(|r| r.device == "cpu-model" && r.copy_gbps == 10.0 && r.backend == "peer"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(ops: &[Op], dtypes: Option<Vec<DType>>) -> Request {
        Request { dtypes, ..Request::new(ops) }
    }

    #[test]
    fn the_unfused_chain_runs_on_the_first_shape_and_latency_bound_ones() {
        let c = cases(&req(&Op::DEFAULT, None), false);
        let fused: Vec<_> = c.iter().filter(|c| matches!(c.kind, Kind::Fused(_))).collect();
        let chains: Vec<_> = c.iter().filter(|c| matches!(c.kind, Kind::Unfused(_))).map(|c| (c.op_name(), c.m, c.n, c.dtype)).collect();
        // the default CPU grid: 6 shapes in bf16 + f32 at the first, for rms_fwd and ln_fwd
        assert_eq!(fused.len(), 2 * 7);
        assert_eq!(
            chains,
            vec![
                ("rms_fwdbwd", 4096, 4096, DType::BF16),
                ("rms_fwdbwd", 4096, 4096, DType::F32),
                ("rms_fwdbwd", 8, 4096, DType::BF16),
                ("ln_fwdbwd", 4096, 4096, DType::BF16),
                ("ln_fwdbwd", 4096, 4096, DType::F32),
                ("ln_fwdbwd", 8, 4096, DType::BF16),
            ]
        );
        assert_eq!(cases(&req(&Op::DEFAULT, None), true).len(), 2 * 7 + 2 * 7);
        // a chain needs normkit's forward and backward; f16 is not timed with candle
        let only_fwd = cases(&req(&[Op::RmsFwd], Some(vec![DType::F16, DType::BF16])), true);
        assert!(only_fwd.iter().all(|c| c.kind == Kind::Fused(Op::RmsFwd) && c.dtype == DType::BF16));
        assert_eq!(c[0].label(), "candle fused rms_fwd 4096x4096 bf16");
    }

    #[test]
    fn the_candle_version_comes_from_the_lock_file() {
        if BUILT {
            assert!(version().starts_with("0."), "{}", version());
        }
    }
}
