//! Measures cases on one backend: builds rotated input sets, times with the backend's own
//! [`BenchBackend::time_calls`], and turns medians into GB/s of counted bytes.

use crate::grid::{Case, DeviceKind, Size};
use crate::inputs::{HostInputs, Sets};
use crate::progress::Progress;
use crate::schema::{CaseNote, Machine, ResultRow, Run};
use crate::sysinfo;
use normkit_core::{BenchBackend, NormDesc, NormError};
use std::error::Error as _;

/// How long and how often each case is timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Repetitions of the timed batch; the median is reported.
    pub reps: usize,
    /// Aim for at least this many seconds per repetition.
    pub rep_target_s: f64,
    /// At most this many calls per repetition (a GPU captures them into one graph).
    pub max_calls: usize,
    /// Input sets are added until they total this many last-level caches...
    pub rotate_factor: f64,
    /// ...but at most this many sets.
    pub max_sets: usize,
    /// Decode-sized cases — x and y in 16 bits move less than this many bytes, the peer
    /// script's `--graph-max-bytes` rule — rotate at most `resident_max_sets` sets, as the peer
    /// script does: their data stays in the last-level cache, as in a decode step where the
    /// previous kernel has just written the activations. Where the general rotation would use
    /// a different number of sets, the case is timed that way too (`us_rotated`).
    pub resident_max_bytes: u64,
    /// See [`Plan::resident_max_bytes`].
    pub resident_max_sets: usize,
    /// The copy ceiling is measured on a buffer of this many bytes (each way)...
    pub copy_bytes: usize,
    /// Stop a backend after this many errors in a row (a lost device fails every later case).
    pub max_consecutive_errors: usize,
}

impl Plan {
    pub fn new(kind: DeviceKind, size: Size) -> Plan {
        let (reps, rep_target_s) = match (kind, size) {
            (DeviceKind::Gpu, Size::Quick) => (5, 0.002),
            (DeviceKind::Gpu, _) => (15, 0.003),
            (DeviceKind::Cpu, Size::Quick) => (5, 0.03),
            (DeviceKind::Cpu, _) => (7, 0.12),
        };
        let quick = size == Size::Quick;
        Plan {
            reps,
            rep_target_s,
            max_calls: 256,
            // A smoke run rotates through one cache's worth only: faster to set up, less exact.
            rotate_factor: if quick { 1.0 } else { 4.0 },
            max_sets: if quick { 8 } else { 32 },
            resident_max_bytes: 4_000_000,
            resident_max_sets: if quick { 8 } else { 16 },
            copy_bytes: match (kind, quick) {
                (_, true) => 256 << 20,
                (DeviceKind::Gpu, false) => 2 << 30,
                (DeviceKind::Cpu, false) => 1 << 30,
            },
            max_consecutive_errors: 3,
        }
    }
}

/// The device kind of a backend, by its name.
pub fn device_kind(backend_name: &str) -> DeviceKind {
    if backend_name == "cpu" {
        DeviceKind::Cpu
    } else {
        DeviceKind::Gpu
    }
}

/// The error and its sources on one line.
pub fn error_chain(e: &NormError) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    s
}

/// A run with no results yet: the machine, versions and the copy ceiling.
fn start_run<B: BenchBackend>(backend: &B, plan: &Plan, label: Option<&str>) -> Run {
    let info = backend.device_info();
    let mem_cap = if info.memory_bytes > 0 { (info.memory_bytes / 8) as usize } else { usize::MAX };
    let copy_bytes = plan.copy_bytes.min(mem_cap).max(1 << 20);
    let mut notes = Vec::new();
    if let Some(load) = sysinfo::load_average() {
        notes.push(format!("host load average {load:.1} (1 min) at the start, on {} cores", sysinfo::cores()));
    }
    let copy_gbps = match backend.copy_gbps(copy_bytes) {
        Ok(g) => g,
        Err(e) => {
            notes.push(format!("copy ceiling failed: {}", error_chain(&e)));
            0.0
        }
    };
    let mut versions: std::collections::BTreeMap<String, String> = sysinfo::versions().into_iter().collect();
    versions.insert("backend".into(), backend.name().into());
    Run {
        device: if info.name.is_empty() { backend.device_name() } else { info.name.clone() },
        driver: info.driver.clone(),
        copy_gbps,
        results: Vec::new(),
        backend: backend.name().to_string(),
        label: label.map_or_else(String::new, str::to_string),
        schema_version: Some(crate::schema::SCHEMA_VERSION),
        units: Some(Default::default()),
        date: sysinfo::utc_now(),
        copy_bytes: copy_bytes as u64,
        machine: Machine {
            compute_units: info.compute_units,
            clocks: info.clocks,
            memory_bytes: info.memory_bytes,
            cache_bytes: info.cache_bytes,
            host_cpu: sysinfo::cpu_model(),
            host_cores: sysinfo::cores(),
            os: sysinfo::os(),
        },
        versions,
        errors: Vec::new(),
        skipped: Vec::new(),
        notes,
    }
}

/// Measures `cases` on `backend`. `on_case` sees the run after every case (to save it as it
/// grows). Errors of single cases are recorded in the run, never returned: the cases that ran
/// are always kept.
pub fn run<B: BenchBackend>(
    backend: &B,
    cases: &[Case],
    plan: &Plan,
    label: Option<&str>,
    progress: &mut Progress,
    on_case: &mut dyn FnMut(&Run),
) -> Run {
    progress.note(&format!("{}: measuring the copy ceiling", backend.name()));
    let mut run = start_run(backend, plan, label);
    let mut formats: Vec<&str> = cases.iter().filter(|c| c.op.is_fp8()).map(|c| c.fp8.name()).collect();
    formats.dedup();
    if !formats.is_empty() {
        run.notes.push(format!(
            "FP8 ops: y quantised to {} (1 byte per element), per-tensor scale read from a 1-element device buffer",
            formats.join(", ")
        ));
    }
    if cases.iter().any(|c| is_resident(c, plan)) {
        run.notes.push(format!(
            "timing: shapes with m·n·4 < {} bytes rotate at most {} input sets and write one set of outputs (L2-resident, \
             the peer script's policy: its allocator gives every call the output block the previous call freed); \
             they are also timed with the general rotation (up to {} sets of inputs and outputs each, {}× the last-level cache: us_rotated)",
            plan.resident_max_bytes, plan.resident_max_sets, plan.max_sets, plan.rotate_factor
        ));
    }
    progress.note(&format!("{}: {} — copy ceiling {:.1} GB/s", backend.name(), run.device, run.copy_gbps));
    let mem_cap = if run.machine.memory_bytes > 0 { run.machine.memory_bytes / 4 } else { u64::MAX };
    let set_budget = (plan.rotate_factor * run.machine.cache_bytes.max(1 << 20) as f64) as u64;
    let mut consecutive_errors = 0;
    for (i, case) in cases.iter().enumerate() {
        progress.start(i, case);
        let note = |reason: String| CaseNote {
            op: case.op.name().into(),
            m: case.m as u64,
            n: case.n as u64,
            dtype: case.dtype.name().into(),
            reason,
        };
        let outcome = if case.bytes() > mem_cap {
            Outcome::Skipped(format!("needs {} MiB, more than a quarter of the device's memory", case.bytes() >> 20))
        } else {
            measure(backend, case, plan, set_budget, mem_cap, run.copy_gbps)
        };
        match outcome {
            Outcome::Done(row) => {
                consecutive_errors = 0;
                progress.done(i, case, &format!("{:.1} GB/s ({:.0}% of copy), {:.1} µs", row.gbps, row.pct_copy.unwrap_or(0.0), row.us));
                run.results.push(*row);
            }
            Outcome::Skipped(reason) => {
                progress.done(i, case, &format!("skipped: {reason}"));
                run.skipped.push(note(reason));
            }
            Outcome::Failed(reason) => {
                consecutive_errors += 1;
                progress.done(i, case, &format!("ERROR: {reason}"));
                run.errors.push(note(reason));
            }
        }
        on_case(&run);
        if consecutive_errors >= plan.max_consecutive_errors && i + 1 < cases.len() {
            let msg = format!("stopped after {consecutive_errors} errors in a row; {} cases not run", cases.len() - i - 1);
            progress.note(&format!("{}: {msg}", backend.name()));
            run.notes.push(msg);
            break;
        }
    }
    remeasure_ceiling(backend, &mut run);
    progress.finish();
    run
}

/// Measures the copy ceiling again after the cases and keeps the higher reading (a busy machine
/// depresses one of them), recomputing every `%`. Both readings are noted in the run.
fn remeasure_ceiling<B: BenchBackend>(backend: &B, run: &mut Run) {
    if let Some(load) = sysinfo::load_average() {
        run.notes.push(format!("host load average {load:.1} (1 min) at the end"));
    }
    let Ok(end) = backend.copy_gbps(run.copy_bytes as usize) else { return };
    run.notes.push(format!("copy ceiling {:.1} GB/s before the cases, {end:.1} GB/s after; the higher is used", run.copy_gbps));
    if end > run.copy_gbps {
        run.copy_gbps = end;
        for r in &mut run.results {
            r.pct_copy = Some(100.0 * r.gbps / end);
        }
    }
}

enum Outcome {
    Done(Box<ResultRow>),
    Skipped(String),
    Failed(String),
}

fn measure<B: BenchBackend>(backend: &B, case: &Case, plan: &Plan, set_budget: u64, mem_cap: u64, copy_gbps: f64) -> Outcome {
    let desc = case.op.desc();
    match backend.supports(case.op.direction(), &desc, &case.dtypes()) {
        Ok(()) => {}
        Err(e @ NormError::Unsupported { .. }) => return Outcome::Skipped(error_chain(&e)),
        Err(e) => return Outcome::Failed(error_chain(&e)),
    }
    let bytes = case.bytes();
    let rotated = sets_needed(bytes, set_budget, mem_cap, plan.max_sets);
    // Decode-sized: the peer script's policy (inputs rotated over at most resident_max_sets
    // sets, one set of outputs), then the general rotation as well (`us_rotated`).
    let resident = is_resident(case, plan).then(|| sets_needed(bytes, set_budget, mem_cap, plan.resident_max_sets));
    let (n_sets, out_sets) = match resident {
        Some(s) => (s, 1),
        None => (rotated, rotated),
    };
    let mut r = match time_case(backend, case, &desc, (n_sets, out_sets), plan, copy_gbps) {
        Ok((times, calls)) => row(case, bytes, &times, (n_sets, out_sets), calls, copy_gbps),
        Err(e) => return Outcome::Failed(error_chain(&e)),
    };
    if resident.is_some() {
        match time_case(backend, case, &desc, (rotated, rotated), plan, copy_gbps) {
            Ok((times, _)) => {
                r.us_rotated = Some(median(&times) * 1e6);
                r.n_sets_rotated = Some(rotated as u64);
            }
            Err(e) => return Outcome::Failed(error_chain(&e)),
        }
    }
    Outcome::Done(Box::new(r))
}

/// Whether `case` is decode-sized: timed L2-resident (see [`Plan::resident_max_bytes`]).
pub fn is_resident(case: &Case, plan: &Plan) -> bool {
    (case.m as u64) * (case.n as u64) * 4 < plan.resident_max_bytes
}

/// Input sets to rotate through so that they total `budget` bytes (the caches are left between
/// two uses of a set), at least one, at most `max_sets` and within `mem_cap`.
pub fn sets_needed(bytes: u64, budget: u64, mem_cap: u64, max_sets: usize) -> usize {
    let want = budget.div_ceil(bytes.max(1)).max(1);
    let fit = (mem_cap / bytes.max(1)).max(1);
    want.min(fit).min(max_sets as u64) as usize
}

fn row(case: &Case, bytes: u64, times: &[f64], (n_sets, out_sets): (usize, usize), calls: usize, copy_gbps: f64) -> ResultRow {
    let med = median(times);
    let gbps = bytes as f64 / med / 1e9;
    ResultRow {
        op: case.op.name().into(),
        m: case.m as u64,
        n: case.n as u64,
        dtype: case.dtype.name().into(),
        gbps,
        us: med * 1e6,
        bytes: Some(bytes),
        pct_copy: (copy_gbps > 0.0).then(|| 100.0 * gbps / copy_gbps),
        us_min: times.iter().copied().reduce(f64::min).map(|t| t * 1e6),
        us_max: times.iter().copied().reduce(f64::max).map(|t| t * 1e6),
        n_sets: Some(n_sets as u64),
        calls: Some(calls as u64),
        reps: Some(times.len() as u64),
        us_baseline: None,
        y_dtype: case.op.is_fp8().then(|| case.fp8.name().to_string()),
        us_rotated: None,
        n_sets_rotated: None,
        out_sets: Some(out_sets as u64),
    }
}

/// The median (mean of the middle two for an even count); 0 for an empty slice.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let k = s.len() / 2;
    if s.len() % 2 == 1 {
        s[k]
    } else {
        (s[k - 1] + s[k]) / 2.0
    }
}

/// Calls per timed repetition: enough to last `plan.rep_target_s` at the copy ceiling measured in
/// this run (`bytes` per call), at least one per set. A count from the bytes is the same for every
/// build of the same case, so an A/B compares graphs of the same length; a count from a warm-up
/// timing flipped between 7 and 8 calls at 512×262144 and moved the per-call time by 7%
/// (kernels-cuda/NOTES.md v9, v11). Without a measured ceiling: the warm-up estimate `warm_s`.
pub fn calls_per_rep(plan: &Plan, n_sets: usize, bytes: u64, copy_gbps: f64, warm_s: f64) -> usize {
    let est = if copy_gbps > 0.0 { bytes as f64 / (copy_gbps * 1e9) } else { warm_s };
    ((plan.rep_target_s / est.max(1e-7)).ceil() as usize).clamp(n_sets.min(plan.max_calls), plan.max_calls.max(1))
}

/// Builds `n_sets` input sets and `out_sets` output sets, takes one timed pass over them, then
/// times [`calls_per_rep`] calls `plan.reps` times.
fn time_case<B: BenchBackend>(
    backend: &B,
    case: &Case,
    desc: &NormDesc,
    (n_sets, out_sets): (usize, usize),
    plan: &Plan,
    copy_gbps: f64,
) -> normkit_core::Result<(Vec<f64>, usize)> {
    let host = HostInputs::new(case);
    let mut sets = Sets::new(backend, case, &host, n_sets, out_sets)?;
    drop(host);
    let mut call = |i: usize| sets.call(backend, case, desc, i);
    // One plain call first, outside any graph capture: lazy module loading and workspace
    // allocation happen here. Then one timed pass over every set (first-touch page faults).
    call(0)?;
    backend.synchronize()?;
    let warm = backend.time_calls(n_sets.min(plan.max_calls), 1, &mut call)?;
    let calls = calls_per_rep(plan, n_sets, case.bytes(), copy_gbps, median(&warm));
    let times = backend.time_calls(calls, plan.reps.max(1), &mut call)?;
    backend.synchronize()?;
    Ok((times, calls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Op;
    use normkit_core::{Backward, DType, DTypes, Direction, Forward, HostBuf, NormKernel};

    /// A host backend that does nothing, fails every LayerNorm backward with a device error and
    /// supports neither the fused add nor an FP8 `y` (as the CUDA backend before its FP8 kernels).
    #[derive(Debug)]
    struct Mock;

    impl NormKernel for Mock {
        type Buffer = HostBuf;
        fn name(&self) -> &'static str {
            "cpu"
        }
        fn device_name(&self) -> String {
            "mock".into()
        }
        fn supports(&self, _: Direction, desc: &NormDesc, dtypes: &DTypes) -> normkit_core::Result<()> {
            if dtypes.y.is_fp8() {
                return Err(NormError::Unsupported { backend: "cpu", what: format!("an FP8 `y` ({})", dtypes.y) });
            }
            if desc.residual {
                return Err(NormError::Unsupported { backend: "cpu", what: "the fused add".into() });
            }
            Ok(())
        }
        fn forward(&self, desc: &NormDesc, a: Forward<'_, HostBuf>) -> normkit_core::Result<()> {
            normkit_core::validate_forward(desc, &a).map(|_| ())
        }
        fn backward(&self, desc: &NormDesc, a: Backward<'_, HostBuf>) -> normkit_core::Result<()> {
            normkit_core::validate_backward(desc, &a)?;
            if desc.kind == normkit_core::NormKind::Layer {
                let source = Box::new(std::io::Error::other("mock device lost"));
                return Err(NormError::Device { backend: "cpu", during: "launch", source });
            }
            Ok(())
        }
        fn alloc(&self, dtype: DType, len: usize) -> normkit_core::Result<HostBuf> {
            Ok(HostBuf::zeros(dtype, len))
        }
        fn upload(&self, src: &HostBuf) -> normkit_core::Result<HostBuf> {
            Ok(src.clone())
        }
        fn download(&self, buf: &HostBuf) -> normkit_core::Result<HostBuf> {
            Ok(buf.clone())
        }
        fn synchronize(&self) -> normkit_core::Result<()> {
            Ok(())
        }
    }

    impl BenchBackend for Mock {
        fn device_info(&self) -> normkit_core::DeviceInfo {
            normkit_core::DeviceInfo {
                backend: "cpu".into(),
                name: "mock".into(),
                cache_bytes: 1 << 16,
                memory_bytes: 1 << 30,
                ..Default::default()
            }
        }
        fn copy_gbps(&self, _bytes: usize) -> normkit_core::Result<f64> {
            Ok(10.0)
        }
        fn time_calls(
            &self,
            calls: usize,
            reps: usize,
            f: &mut dyn FnMut(usize) -> normkit_core::Result<()>,
        ) -> normkit_core::Result<Vec<f64>> {
            for i in 0..calls {
                f(i)?;
            }
            Ok(vec![1e-4; reps])
        }
    }

    fn tiny_plan() -> Plan {
        Plan {
            reps: 3,
            rep_target_s: 1e-3,
            max_calls: 4,
            rotate_factor: 2.0,
            max_sets: 3,
            resident_max_bytes: 4_000_000,
            resident_max_sets: 2,
            copy_bytes: 1 << 20,
            max_consecutive_errors: 3,
        }
    }

    #[test]
    fn errors_are_recorded_and_the_other_cases_kept() {
        let grid = [(16, 64, DType::BF16), (8, 32, DType::F32)];
        let cases = crate::grid::cases(&Op::DEFAULT, &grid);
        let mut seen = Vec::new();
        let run = run(&Mock, &cases, &tiny_plan(), None, &mut Progress::quiet(), &mut |r| seen.push(r.results.len()));
        assert_eq!(seen.len(), cases.len(), "saved after every case");
        // rms_fwd, rms_bwd, ln_fwd ran; addrms_* unsupported; ln_bwd failed
        assert_eq!(run.results.len(), 6);
        assert_eq!(run.skipped.len(), 4);
        assert!(run.skipped[0].reason.contains("does not support the fused add"));
        assert_eq!(run.errors.len(), 2);
        assert_eq!(run.errors[0].op, "ln_bwd");
        assert!(
            run.errors[0].reason.contains("Device error in the `cpu` backend during launch: mock device lost"),
            "{}",
            run.errors[0].reason
        );
        let r = &run.results[0];
        assert_eq!((r.op.as_str(), r.m, r.n, r.dtype.as_str()), ("rms_fwd", 16, 64, "bf16"));
        assert!((r.us - 100.0).abs() < 1e-9 && (r.gbps - Op::RmsFwd.bytes(16, 64, DType::BF16) as f64 / 1e-4 / 1e9).abs() < 1e-9);
        assert!((r.pct_copy.unwrap() - 10.0 * r.gbps).abs() < 1e-9);
        // Decode-sized: timed on the resident policy's 2 input sets writing one output set, and
        // again on the general 3 (inputs and outputs each).
        assert_eq!((r.n_sets, r.out_sets, r.n_sets_rotated), (Some(2), Some(1), Some(3)));
        assert!(r.us_rotated.is_some_and(|u| (u - 100.0).abs() < 1e-9));
    }

    #[test]
    fn the_call_count_follows_the_bytes_not_the_warm_up() {
        let plan = Plan::new(DeviceKind::Gpu, Size::Full);
        // 512×262144 bf16 rms_bwd: ~1 GB a call at 3 TB/s, 3 ms a repetition: 9 calls whatever
        // the warm-up read (414 or 430 µs gave 8 or 7 before).
        let bytes = 1_074_000_000u64;
        let a = calls_per_rep(&plan, 1, bytes, 3000.0, 414e-6);
        let b = calls_per_rep(&plan, 1, bytes, 3000.0, 430e-6);
        assert_eq!((a, b), (9, 9));
        // At least one call per set, at most max_calls; the warm-up only without a ceiling.
        assert_eq!(calls_per_rep(&plan, 16, 16_384, 3000.0, 2e-6), plan.max_calls);
        assert_eq!(calls_per_rep(&plan, 16, u64::MAX / 2, 3000.0, 1.0), 16);
        assert_eq!(calls_per_rep(&plan, 1, bytes, 0.0, 1e-3), 3);
    }

    #[test]
    fn decode_sized_cases_are_those_of_the_peer_script() {
        let plan = Plan::new(DeviceKind::Gpu, Size::Default);
        let case = |m, n| crate::grid::cases(&[Op::AddRmsFwd], &[(m, n, DType::F32)]).remove(0);
        // m·n·2·2 < 4e6, whatever the op or dtype: 128×4096 is, 256×4096 is not.
        assert!(is_resident(&case(1, 4096), &plan) && is_resident(&case(128, 4096), &plan));
        assert!(!is_resident(&case(256, 4096), &plan) && !is_resident(&case(4096, 1024), &plan));
        assert_eq!((plan.resident_max_sets, plan.max_sets), (16, 32));
    }

    #[test]
    fn unsupported_fp8_cases_are_skipped_with_the_reason() {
        let cases = crate::grid::cases(&Op::FP8, &[(16, 64, DType::BF16)]);
        let run = run(&Mock, &cases, &tiny_plan(), None, &mut Progress::quiet(), &mut |_| {});
        assert!(run.results.is_empty() && run.errors.is_empty());
        assert_eq!(run.skipped.iter().map(|s| s.op.as_str()).collect::<Vec<_>>(), Op::FP8.map(Op::name));
        assert!(run.skipped[0].reason.contains("an FP8 `y` (e4m3)"), "{}", run.skipped[0].reason);
        assert!(!run.notes.iter().any(|n| n.contains("stopped after")), "a skip is not an error");
        assert!(run.notes.iter().any(|n| n.contains("FP8 ops: y quantised to e4m3")));
    }

    /// The CPU backend runs every FP8 op: real calls with the FP8 operands, every format.
    #[test]
    fn the_cpu_backend_measures_the_fp8_ops() {
        let cpu = normkit_core::cpu::CpuBackend::new();
        for fmt in [DType::F8E4M3, DType::F8E5M2Fnuz] {
            let cases: Vec<Case> = crate::grid::cases(&Op::FP8, &[(24, 320, DType::BF16), (8, 128, DType::F32)])
                .into_iter()
                .map(|c| Case { fp8: fmt, ..c })
                .collect();
            let run = run(&cpu, &cases, &tiny_plan(), None, &mut Progress::quiet(), &mut |_| {});
            assert!(run.errors.is_empty() && run.skipped.is_empty(), "{:?} {:?}", run.errors, run.skipped);
            assert_eq!(run.results.len(), 8);
            for (r, c) in run.results.iter().zip(&cases) {
                assert_eq!((r.op.as_str(), r.dtype.as_str(), r.y_dtype.as_deref()), (c.op.name(), c.dtype.name(), Some(fmt.name())));
                assert_eq!(r.bytes, Some(c.bytes()));
                assert!(r.gbps > 0.0 && r.us > 0.0);
            }
        }
    }

    #[test]
    fn a_lost_device_stops_the_backend() {
        let cases = crate::grid::cases(
            &[Op::LnBwd],
            &[(8, 32, DType::BF16), (8, 64, DType::BF16), (8, 96, DType::BF16), (8, 128, DType::BF16), (8, 160, DType::BF16)],
        );
        let run = run(&Mock, &cases, &tiny_plan(), Some("mock run"), &mut Progress::quiet(), &mut |_| {});
        assert_eq!(run.errors.len(), 3);
        assert!(run.notes.iter().any(|n| n.contains("stopped after 3 errors in a row; 2 cases not run")));
        assert_eq!(run.label, "mock run");
    }

    /// The resident policy builds its input sets and one output set; the general one a set of
    /// each per input set; every call of a rotation runs on the CPU backend.
    #[test]
    fn input_and_output_sets_rotate_separately() {
        let cpu = normkit_core::cpu::CpuBackend::new();
        for op in [Op::AddRmsFwd, Op::LnBwd, Op::FP8[0]] {
            let case = crate::grid::cases(&[op], &[(8, 96, DType::BF16)]).remove(0);
            let host = HostInputs::new(&case);
            for (ni, no) in [(4, 1), (3, 3), (2, 5), (0, 0)] {
                let mut sets = Sets::new(&cpu, &case, &host, ni, no).unwrap();
                assert_eq!(sets.counts(), (ni.max(1), no.clamp(1, ni.max(1))));
                for i in 0..2 * ni.max(1) {
                    sets.call(&cpu, &case, &op.desc(), i).unwrap();
                }
            }
        }
        let plan = tiny_plan();
        let big = crate::grid::cases(&[Op::RmsFwd], &[(4096, 1024, DType::BF16)]);
        let run = run(&cpu, &big, &Plan { reps: 1, rep_target_s: 0.0, ..plan }, None, &mut Progress::quiet(), &mut |_| {});
        let r = &run.results[0];
        assert_eq!((r.out_sets, r.n_sets_rotated), (r.n_sets, None), "beyond decode sizes each input set has its outputs");
    }

    #[test]
    fn sets_rotate_past_the_cache_within_memory() {
        assert_eq!(sets_needed(100, 1000, u64::MAX, 32), 10);
        assert_eq!(sets_needed(100, 100_000, u64::MAX, 32), 32);
        assert_eq!(sets_needed(5000, 1000, u64::MAX, 32), 1);
        assert_eq!(sets_needed(100, 1000, 300, 32), 3);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
