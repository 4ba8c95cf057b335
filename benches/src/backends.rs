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
}

impl Request {
    /// The cases for a device kind: the grid of its kind, or the shapes/dtypes asked for.
    pub fn cases(&self, kind: DeviceKind) -> Vec<Case> {
        let default = grid::default_grid(kind, self.size);
        let mut shapes: Vec<(usize, usize)> = match &self.shapes {
            Some(s) => s.clone(),
            None => default.iter().map(|&(m, n, _)| (m, n)).collect(),
        };
        shapes.dedup();
        let grid: Vec<(usize, usize, DType)> = match (&self.dtypes, &self.shapes) {
            (Some(dts), _) => shapes.iter().flat_map(|&(m, n)| dts.iter().map(move |&d| (m, n, d))).collect(),
            (None, Some(_)) => shapes.iter().map(|&(m, n)| (m, n, DType::BF16)).collect(),
            (None, None) => default,
        };
        grid::cases(&self.ops, &grid)
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
        Request { ops: vec![Op::RmsFwd, Op::LnBwd], shapes, dtypes, size: Size::Default, reps: None, label: None }
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
}
