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
    /// ...but at most this many sets. This is the general rotation: a set of outputs per set of
    /// inputs, so every call reads and writes memory the caches have left.
    pub max_sets: usize,
    /// Every case that needs more than one set (its bytes under `rotate_factor` caches) is
    /// timed as the peer script (`bench_peers.py`, `fp8_peers.py`) times it: its inputs rotated
    /// over the same count of sets but at most this many (the script's `--max-sets`), and ONE
    /// set of outputs, which every call writes (PyTorch's caching allocator hands each captured
    /// call the output block the previous call freed, so the peers' outputs stay at one address
    /// and in the last-level cache). That is the case's main figure (`us`); the general rotation
    /// is timed too (`us_rotated`). See [`set_policy`].
    pub peer_max_sets: usize,
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
            // bench_peers.py's and fp8_peers.py's --max-sets.
            peer_max_sets: if quick { 8 } else { 16 },
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
    let mem_cap = if run.machine.memory_bytes > 0 { run.machine.memory_bytes / 4 } else { u64::MAX };
    let set_budget = (plan.rotate_factor * run.machine.cache_bytes.max(1 << 20) as f64) as u64;
    if cases.iter().any(|c| set_policy(c.bytes(), set_budget, mem_cap, plan).rotated.is_some()) {
        run.notes.push(format!(
            "timing: every case under {}× the last-level cache ({} bytes) is timed as the peer script times it: its inputs \
             rotated over at most {} sets, writing one set of outputs (the peer script's allocator gives every call the output \
             block the previous call freed, so its outputs stay at one address and in the cache); it is also timed with the \
             general rotation (up to {} sets of inputs and outputs each: us_rotated). Larger cases: one set of inputs and outputs",
            plan.rotate_factor, set_budget, plan.peer_max_sets, plan.max_sets
        ));
    }
    progress.note(&format!("{}: {} — copy ceiling {:.1} GB/s", backend.name(), run.device, run.copy_gbps));
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
    let sets = set_policy(bytes, set_budget, mem_cap, plan);
    let main = (sets.inputs, sets.outputs);
    let mut r = match time_case(backend, case, &desc, main, plan, copy_gbps) {
        Ok((times, calls)) => row(case, bytes, &times, main, calls, copy_gbps),
        Err(e) => return Outcome::Failed(error_chain(&e)),
    };
    if let Some(rotated) = sets.rotated {
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

/// The sets a case is timed on (see [`set_policy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetPolicy {
    /// Input sets of the main figure (`ResultRow::n_sets`).
    pub inputs: usize,
    /// Output sets of the main figure (`ResultRow::out_sets`): always 1.
    pub outputs: usize,
    /// Sets of the general rotation (inputs and outputs, a set of each per call), where the case
    /// is timed that way too (`ResultRow::n_sets_rotated`); `None` for a case that needs one set.
    pub rotated: Option<usize>,
}

/// How a case moving `bytes` per call is timed, `set_budget` being `plan.rotate_factor` times the
/// last-level cache.
///
/// The general rotation needs [`sets_needed`] sets (at most `plan.max_sets`). Where that is more
/// than one — the case's bytes are under the budget — the main figure is the peer script's
/// policy: inputs rotated over at most `plan.peer_max_sets` sets, one set of outputs; the
/// general rotation is timed as well. Where one set is enough (the case alone is larger than the
/// budget), both policies are one set of inputs and outputs, timed once.
///
/// This is `bench_peers.py`'s rule (`n_sets = min(--max-sets, ceil(rotate_factor · l2 /
/// nbytes))` where `nbytes < rotate_factor · l2`, else 1; outputs at one address), so the same
/// cases rotate on both sides, with the same counts, except where the inputs differ:
/// - the bytes: [`Case::bytes`] is the peer script's `min_bytes` for every op it times (the
///   tests of `ops.rs` check it) but `addrms_fwd`, where normkit also counts the `rstd` it
///   writes (M·4 bytes). A case whose normkit bytes are at most M·4 over the budget rotates 2
///   sets in the peer script and 1 here (no shape of the grids is that close: the nearest,
///   `addrms_fwd` 65536×512 bf16, moves 268.7 MB against an H100's 209.7 MB). `fp8_peers.py`
///   uses normkit's byte model, so its FP8 cases agree exactly;
/// - the cache: normkit reads the backend's `DeviceInfo::cache_bytes` (CUDA's
///   `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`, at least 1 MiB), the peer script torch's
///   `L2_cache_size` (the same attribute), or 50 MiB where torch gives none;
/// - the factors: the peer script's `--rotate-factor` (4.0) and `--max-sets` (16) must be
///   `plan.rotate_factor` and `plan.peer_max_sets`; `--quick` uses 1.0 and 8;
/// - memory: normkit keeps all sets within `mem_cap` (a quarter of the device's memory), the peer
///   script has no such cap (on an 80 GB H100 it never binds: at most 32 sets of under 210 MB).
pub fn set_policy(bytes: u64, set_budget: u64, mem_cap: u64, plan: &Plan) -> SetPolicy {
    let rotated = sets_needed(bytes, set_budget, mem_cap, plan.max_sets);
    if rotated > 1 {
        SetPolicy { inputs: sets_needed(bytes, set_budget, mem_cap, plan.peer_max_sets), outputs: 1, rotated: Some(rotated) }
    } else {
        SetPolicy { inputs: 1, outputs: 1, rotated: None }
    }
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
    use crate::grid::LATENCY_BYTES;
    use crate::ops::Op;
    use normkit_core::{Backward, DType, DTypes, Direction, Forward, HostBuf, InOut, NormKernel};
    use std::cell::RefCell;

    /// A host backend that does nothing, fails every LayerNorm backward with a device error and
    /// supports neither the fused add nor an FP8 `y` (as the CUDA backend before its FP8 kernels).
    /// It logs every upload (`None`: a new set of inputs) and, for every forward call, the
    /// addresses of the `x` and `y` buffers it was given.
    #[derive(Debug, Default)]
    struct Mock {
        /// The last-level cache it reports; 64 KiB where 0.
        cache_bytes: u64,
        log: RefCell<Vec<Option<(usize, usize)>>>,
    }

    impl Mock {
        /// The forward calls of each timing, split where a timing uploads its input sets: per
        /// timing, (distinct `x` buffers, distinct `y` buffers, calls).
        fn timings(&self) -> Vec<(usize, usize, usize)> {
            let log = self.log.borrow();
            let mut out = Vec::new();
            for calls in log.split(Option::is_none).filter(|c| !c.is_empty()) {
                let distinct = |f: fn(&(usize, usize)) -> usize| {
                    let mut v: Vec<usize> = calls.iter().flatten().map(f).collect();
                    v.sort_unstable();
                    v.dedup();
                    v.len()
                };
                out.push((distinct(|c| c.0), distinct(|c| c.1), calls.len()));
            }
            out
        }
    }

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
            if let InOut::Separate { input, output } = &a.x {
                let addr = |b: &HostBuf| b as *const HostBuf as usize;
                self.log.borrow_mut().push(Some((addr(input.buf), addr(output.buf))));
            }
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
            self.log.borrow_mut().push(None);
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
                cache_bytes: if self.cache_bytes > 0 { self.cache_bytes } else { 1 << 16 },
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
            peer_max_sets: 2,
            copy_bytes: 1 << 20,
            max_consecutive_errors: 3,
        }
    }

    #[test]
    fn errors_are_recorded_and_the_other_cases_kept() {
        let grid = [(16, 64, DType::BF16), (8, 32, DType::F32)];
        let cases = crate::grid::cases(&Op::DEFAULT, &grid);
        let mut seen = Vec::new();
        let run = run(&Mock::default(), &cases, &tiny_plan(), None, &mut Progress::quiet(), &mut |r| seen.push(r.results.len()));
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
        // Under the budget (2 × 1 MiB, the least cache counted): timed on the peer policy's 2
        // input sets writing one output set, and again on the general 3 (inputs and outputs each).
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

    /// The H100's L2 (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`, torch's `L2_cache_size`: 50 MiB).
    const H100_L2: u64 = 52_428_800;

    #[test]
    fn every_case_under_the_budget_takes_the_peer_policy() {
        let plan = Plan::new(DeviceKind::Gpu, Size::Default);
        assert_eq!((plan.rotate_factor, plan.peer_max_sets, plan.max_sets), (4.0, 16, 32));
        let budget = (plan.rotate_factor * H100_L2 as f64) as u64;
        let policy = |op: Op, m, n| set_policy(op.bytes(m, n, DType::BF16), budget, u64::MAX, &plan);
        let peer = |inputs, rotated| SetPolicy { inputs, outputs: 1, rotated: Some(rotated) };
        // Decode sizes: 16 input sets, one output set; 32 sets of each rotated.
        assert_eq!(policy(Op::RmsFwd, 1, 4096), peer(16, 32));
        assert_eq!(policy(Op::AddRmsFwd, 128, 4096), peer(16, 32));
        // Mid sizes, under 4 × 50 MiB: the peer policy too (4096×1024 wrote 13 output sets before).
        assert_eq!(policy(Op::RmsFwd, 4096, 1024), peer(13, 13));
        assert_eq!(policy(Op::AddRmsFwd, 4096, 1024), peer(7, 7));
        assert_eq!(policy(Op::RmsFwd, 2048, 8192), peer(4, 4));
        assert_eq!(policy(Op::RmsBwd, 65536, 512), peer(2, 2));
        // A case over the budget: one set of each, timed once.
        let one = SetPolicy { inputs: 1, outputs: 1, rotated: None };
        assert_eq!(policy(Op::AddRmsFwd, 65536, 512), one);
        assert_eq!(policy(Op::RmsFwd, 32768, 4096), one);
        // Within a memory cap that holds one set: one set, no rotation.
        assert_eq!(set_policy(1000, 10_000, 1500, &plan), one);
    }

    /// `bench_peers.py`'s `min_bytes`, transcribed.
    fn peer_min_bytes(op: Op, m: u64, n: u64, elt: u64) -> u64 {
        let (xs, w) = (m * n * elt, n * elt);
        match op {
            Op::RmsFwd => 2 * xs + w + m * 4,
            Op::RmsBwd => 3 * xs + 2 * w + m * 4,
            Op::AddRmsFwd => 4 * xs + w,
            Op::LnFwd => 2 * xs + 2 * w + 2 * m * 4,
            Op::LnBwd => 3 * xs + 3 * w + 2 * m * 4,
            _ => unreachable!("not an op of the peer script"),
        }
    }

    /// On every case the peer script times (its ops, the full GPU grid and the peer grid's extra
    /// shapes, on an H100), normkit rotates the same count of input sets and writes one output set.
    #[test]
    fn the_peer_script_and_normkit_rotate_the_same_cases() {
        let plan = Plan::new(DeviceKind::Gpu, Size::Full);
        let l2 = H100_L2;
        let mut grid = crate::grid::default_grid(DeviceKind::Gpu, Size::Full);
        // The peer script's grid adds these to normkit's.
        grid.extend([(1, 4096, DType::BF16), (128, 4096, DType::BF16), (2048, 8192, DType::BF16)]);
        let budget = (plan.rotate_factor * l2 as f64) as u64;
        let mut rotated = 0;
        for case in crate::grid::cases(&[Op::RmsFwd, Op::RmsBwd, Op::AddRmsFwd, Op::LnFwd, Op::LnBwd], &grid) {
            // n_sets = min(max_sets, ceil(rotate_factor · l2 / nbytes)) if nbytes < rotate_factor · l2 else 1
            let nbytes = peer_min_bytes(case.op, case.m as u64, case.n as u64, case.dtype.size_bytes() as u64);
            let peer_sets =
                if (nbytes as f64) < 4.0 * l2 as f64 { (16.0f64).min((4.0 * l2 as f64 / nbytes as f64).ceil()) as usize } else { 1 };
            let p = set_policy(case.bytes(), budget, u64::MAX / 4, &plan);
            assert_eq!((p.inputs, p.outputs), (peer_sets, 1), "{}", case.label());
            assert_eq!(p.rotated.is_some(), peer_sets > 1, "{}", case.label());
            rotated += usize::from(peer_sets > 1);
        }
        // 1, 8, 128 × 4096, 4096×1024 and 2048×8192 for the five ops; 65536×512 but addrms_fwd.
        assert_eq!(rotated, 5 * 5 + 4);
    }

    /// A mid-size case (over the 4 MB of decode sizes, under 4 × the L2): one output set for its
    /// main figure, written by every call of that timing, and the general rotation timed too.
    #[test]
    fn a_mid_size_case_writes_one_output_set_and_is_also_timed_rotated() {
        let mock = Mock { cache_bytes: H100_L2, ..Mock::default() };
        let plan = Plan { reps: 2, ..Plan::new(DeviceKind::Gpu, Size::Default) };
        let cases = crate::grid::cases(&[Op::RmsFwd], &[(4096, 1024, DType::BF16)]);
        assert!(cases[0].bytes() > LATENCY_BYTES, "mid-size, not decode-sized");
        let run = run(&mock, &cases, &plan, None, &mut Progress::quiet(), &mut |_| {});
        assert!(run.errors.is_empty(), "{:?}", run.errors);
        let r = &run.results[0];
        assert_eq!((r.n_sets, r.out_sets), (Some(13), Some(1)), "the peer policy: 13 input sets, ONE output set");
        assert_eq!(r.n_sets_rotated, Some(13));
        assert!(r.us_rotated.is_some(), "the general rotation is timed too");
        // What the kernels were given: 13 x buffers and one y, then 13 of each.
        let t = mock.timings();
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!((t[0].0, t[0].1), (13, 1), "main timing: {t:?}");
        assert_eq!((t[1].0, t[1].1), (13, 13), "rotated timing: {t:?}");
        assert!(run.notes.iter().any(|n| n.contains("every case under 4× the last-level cache (209715200 bytes)")), "{:?}", run.notes);
    }

    #[test]
    fn unsupported_fp8_cases_are_skipped_with_the_reason() {
        let cases = crate::grid::cases(&Op::FP8, &[(16, 64, DType::BF16)]);
        let run = run(&Mock::default(), &cases, &tiny_plan(), None, &mut Progress::quiet(), &mut |_| {});
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
            assert_eq!(run.results.len(), 2 * Op::FP8.len());
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
        let run = run(&Mock::default(), &cases, &tiny_plan(), Some("mock run"), &mut Progress::quiet(), &mut |_| {});
        assert_eq!(run.errors.len(), 3);
        assert!(run.notes.iter().any(|n| n.contains("stopped after 3 errors in a row; 2 cases not run")));
        assert_eq!(run.label, "mock run");
    }

    /// The peer policy builds its input sets and one output set; the general one a set of each
    /// per input set; every call of a rotation runs on the CPU backend.
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
        // 16.8 MB: under 2 × this machine's last-level cache the peer policy and the rotation,
        // over it one set of each.
        let budget = (2.0 * run.machine.cache_bytes.max(1 << 20) as f64) as u64;
        let mem_cap = if run.machine.memory_bytes > 0 { run.machine.memory_bytes / 4 } else { u64::MAX };
        let want = set_policy(big[0].bytes(), budget, mem_cap, &plan);
        assert_eq!((r.n_sets, r.out_sets, r.n_sets_rotated), (Some(want.inputs as u64), Some(1), want.rotated.map(|k| k as u64)));
        assert_eq!(r.us_rotated.is_some(), want.rotated.is_some());
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
