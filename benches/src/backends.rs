//! The backends compiled into this build, by name: `cpu` always, `cuda` and `hip` behind the
//! features of the same names. Each is run through the generic [`runner::run`] with its own
//! concrete type (static dispatch; the timing loop never goes through a trait object).

use crate::grid::{self, Case, DeviceKind, Size};
use crate::ops::Op;
use crate::progress::Progress;
use crate::runner::{self, Plan};
use crate::schema::Run;
use normkit_core::DType;

/// Every backend name, in report order.
pub const NAMES: [&str; 3] = ["cpu", "cuda", "hip"];

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub ops: Vec<Op>,
    /// `--shapes`: replaces the default grid's shapes.
    pub shapes: Option<Vec<(usize, usize)>>,
    /// `--dtypes`: every shape in each of these dtypes (default: the grid's own, bf16 plus f32 at
    /// the first shape).
    pub dtypes: Option<Vec<DType>>,
    pub size: Size,
    /// Overrides the repetitions of the plan.
    pub reps: Option<usize>,
    /// Overrides the run's label in reports.
    pub label: Option<String>,
    /// The FP8 format of `y` for the FP8 ops (`--fp8-format`, default e4m3).
    pub fp8_format: DType,
}

impl Request {
    /// A request for `ops` on the default grid, with the default plan and FP8 format.
    pub fn new(ops: &[Op]) -> Request {
        Request {
            ops: ops.to_vec(),
            shapes: None,
            dtypes: None,
            size: Size::Default,
            reps: None,
            label: None,
            fp8_format: grid::DEFAULT_FP8,
        }
    }

    /// The cases for a device kind, op-major: the grid of its kind (the FP8 grid for the FP8
    /// ops), or the shapes/dtypes asked for.
    pub fn cases(&self, kind: DeviceKind) -> Vec<Case> {
        let plain = self.grid(grid::default_grid(kind, self.size));
        let fp8 = self.grid(grid::fp8_grid(kind, self.size));
        let mut cases = Vec::new();
        for &op in &self.ops {
            let g = if op.is_fp8() { &fp8 } else { &plain };
            cases.extend(grid::cases(&[op], g).into_iter().map(|c| Case { fp8: self.fp8_format, ..c }));
        }
        cases
    }

    /// `default`, or the shapes and dtypes asked for instead.
    fn grid(&self, default: Vec<(usize, usize, DType)>) -> Vec<(usize, usize, DType)> {
        let mut shapes: Vec<(usize, usize)> = match &self.shapes {
            Some(s) => s.clone(),
            None => default.iter().map(|&(m, n, _)| (m, n)).collect(),
        };
        shapes.dedup();
        match (&self.dtypes, &self.shapes) {
            (Some(dts), _) => shapes.iter().flat_map(|&(m, n)| dts.iter().map(move |&d| (m, n, d))).collect(),
            (None, Some(_)) => shapes.iter().map(|&(m, n)| (m, n, DType::BF16)).collect(),
            (None, None) => default,
        }
    }

    pub fn plan(&self, kind: DeviceKind) -> Plan {
        let mut plan = Plan::new(kind, self.size);
        if let Some(r) = self.reps {
            plan.reps = r.max(1);
        }
        plan
    }
}

/// Whether each backend can run here: `(name, Ok(device) | Err(reason))`.
pub fn probe() -> Vec<(&'static str, Result<String, String>)> {
    normkit::probe().into_iter().map(|s| (s.backend, s.status.map_err(|e| reason(&e)))).collect()
}

/// The reason inside a `BackendUnavailable`, or the whole message.
fn reason(e: &normkit_core::NormError) -> String {
    match e {
        normkit_core::NormError::BackendUnavailable { reason, .. } => reason.clone(),
        other => runner::error_chain(other),
    }
}

/// Whether `name` is a backend this tool knows (compiled in or not).
pub fn is_known(name: &str) -> bool {
    NAMES.contains(&name)
}

/// Runs `req` on the backend called `name`. `Err` only when the backend cannot be created;
/// failures of single cases are recorded in the returned run.
pub fn run(name: &str, req: &Request, progress: &mut Progress, on_case: &mut dyn FnMut(&Run)) -> Result<Run, String> {
    let kind = runner::device_kind(name);
    let cases = req.cases(kind);
    let plan = req.plan(kind);
    let label = req.label.as_deref();
    match name {
        "cpu" => {
            let b = normkit_core::cpu::CpuBackend::new();
            Ok(runner::run(&b, &cases, &plan, label, progress, on_case))
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            let b = normkit::cuda::CudaBackend::new().map_err(|e| format!("cuda: {}", reason(&e)))?;
            Ok(runner::run(&b, &cases, &plan, label, progress, on_case))
        }
        #[cfg(feature = "hip")]
        "hip" => {
            let b = normkit::hip::HipBackend::new().map_err(|e| format!("hip: {}", reason(&e)))?;
            Ok(runner::run(&b, &cases, &plan, label, progress, on_case))
        }
        #[cfg(not(feature = "cuda"))]
        "cuda" => Err(not_built(name)),
        #[cfg(not(feature = "hip"))]
        "hip" => Err(not_built(name)),
        other => Err(format!("unknown backend `{other}` (known: {})", NAMES.join(", "))),
    }
}

#[cfg(not(all(feature = "cuda", feature = "hip")))]
fn not_built(name: &str) -> String {
    format!("{name}: this normkit-bench was built without the `{name}` feature (cargo xtask bench adds it when the toolchain is installed)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(shapes: Option<Vec<(usize, usize)>>, dtypes: Option<Vec<DType>>) -> Request {
        Request { shapes, dtypes, ..Request::new(&[Op::RmsFwd, Op::LnBwd]) }
    }

    #[test]
    fn grids_follow_the_options() {
        // default: the device kind's grid (6 shapes in bf16 + f32 at the first) for each op
        assert_eq!(req(None, None).cases(DeviceKind::Gpu).len(), 2 * 7);
        assert!(req(None, None).cases(DeviceKind::Cpu).iter().all(|c| c.m * c.n <= 16 << 20));
        // --dtypes: every default shape in each dtype
        let f32_only = req(None, Some(vec![DType::F32])).cases(DeviceKind::Gpu);
        assert_eq!(f32_only.len(), 2 * 6);
        assert!(f32_only.iter().all(|c| c.dtype == DType::F32));
        // --shapes: bf16 unless --dtypes says otherwise
        let s = req(Some(vec![(8, 4096)]), None).cases(DeviceKind::Cpu);
        assert_eq!(
            s.iter().map(|c| (c.op, c.m, c.n, c.dtype)).collect::<Vec<_>>(),
            vec![(Op::RmsFwd, 8, 4096, DType::BF16), (Op::LnBwd, 8, 4096, DType::BF16)]
        );
        assert_eq!(req(Some(vec![(8, 4096)]), Some(vec![DType::F16, DType::F32])).cases(DeviceKind::Gpu).len(), 4);
    }

    #[test]
    fn fp8_ops_take_their_own_grid_and_format() {
        let mut r = Request::new(&[Op::RmsFwd, Op::RmsFwdFp8, Op::AddRmsFwdFp8]);
        r.fp8_format = DType::F8E5M2;
        let c = r.cases(DeviceKind::Gpu);
        // rms_fwd: the anchor grid (7 cases); each FP8 op: the FP8 grid (6 shapes, bf16)
        assert_eq!(c.len(), 7 + 6 + 6);
        let fp8: Vec<&Case> = c.iter().filter(|c| c.op.is_fp8()).collect();
        assert!(fp8.iter().all(|c| c.dtype == DType::BF16 && c.y_dtype() == DType::F8E5M2));
        assert!(fp8.iter().any(|c| (c.m, c.n) == (128, 4096)) && !c[..7].iter().any(|c| (c.m, c.n) == (128, 4096)));
        assert_eq!((c[7].op, c[7].m, c[7].n), (Op::RmsFwdFp8, 4096, 1024), "op-major");
        // --shapes and --dtypes apply to both grids
        r.shapes = Some(vec![(64, 512)]);
        r.dtypes = Some(vec![DType::F16]);
        let c = r.cases(DeviceKind::Cpu);
        assert_eq!(
            c.iter().map(|c| (c.op, c.m, c.n, c.dtype)).collect::<Vec<_>>(),
            vec![(Op::RmsFwd, 64, 512, DType::F16), (Op::RmsFwdFp8, 64, 512, DType::F16), (Op::AddRmsFwdFp8, 64, 512, DType::F16)]
        );
    }
}
