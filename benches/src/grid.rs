//! Which (op, shape, dtype) cases a run measures.
//!
//! The GPU grid is the anchor set of `ANCHORS.md` (the shapes the peers were measured on). The CPU
//! grid keeps the same hidden sizes with fewer rows, so that a default CPU run takes about two
//! minutes on two cores; `--quick` is a ~20 s smoke run.
//!
//! The FP8 ops have a grid of their own ([`fp8_grid`]): bf16 x at the shapes an FP8 training or
//! inference step quantises (hidden sizes 1024 to 64K, and the decode-like 8 and 128 rows).

use crate::ops::Op;
use normkit_core::{DType, DTypes};

/// One measured case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Case {
    pub op: Op,
    pub m: usize,
    pub n: usize,
    /// x's dtype (and the weight's, the residual's).
    pub dtype: DType,
    /// The FP8 format of `y` (and `yT`) for the FP8 ops; unused by the others.
    pub fp8: DType,
}

impl Case {
    pub fn bytes(&self) -> u64 {
        self.op.bytes(self.m, self.n, self.dtype)
    }

    /// `y`'s dtype: the FP8 format for an FP8 op, x's dtype otherwise.
    pub fn y_dtype(&self) -> DType {
        if self.op.is_fp8() {
            self.fp8
        } else {
            self.dtype
        }
    }

    /// The dtypes of the call, for `supports`.
    pub fn dtypes(&self) -> DTypes {
        DTypes { y: self.y_dtype(), ..DTypes::uniform(self.dtype) }
    }

    pub fn label(&self) -> String {
        if self.op.is_fp8() {
            format!("{} {}x{} {}→{}", self.op, self.m, self.n, self.dtype, self.fp8)
        } else {
            format!("{} {}x{} {}", self.op, self.m, self.n, self.dtype)
        }
    }
}

/// How much to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Size {
    Quick,
    #[default]
    Default,
    Full,
}

/// The kind of device a grid is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Cpu,
    Gpu,
}

/// Calls moving fewer bytes than this are latency-bound: reports give µs per call for them and
/// leave them out of the GB/s charts (the same threshold as the peer script's `--graph-max-bytes`).
pub const LATENCY_BYTES: u64 = 4_000_000;

const GPU_SHAPES: [(usize, usize); 6] = [(32768, 4096), (16384, 16384), (4096, 1024), (65536, 512), (2048, 65536), (8, 4096)];
const GPU_FULL_EXTRA: [(usize, usize); 6] = [(32768, 2048), (32768, 8192), (4096, 32768), (1024, 131072), (512, 262144), (128, 1048576)];
/// 16 M elements per matrix (32 MiB in bf16): large enough to leave the caches of the cores,
/// small enough that 36 cases fit in two minutes.
const CPU_SHAPES: [(usize, usize); 6] = [(4096, 4096), (1024, 16384), (16384, 1024), (32768, 512), (256, 65536), (8, 4096)];
const CPU_FULL_EXTRA: [(usize, usize); 4] = [(8192, 2048), (2048, 8192), (64, 262144), (16, 1048576)];
const QUICK_SHAPES: [(usize, usize); 3] = [(2048, 4096), (8192, 512), (8, 4096)];
/// The FP8 grid on GPUs: hidden sizes 1024 to 64K with the anchor set's large shapes, then the
/// latency-bound decode shapes.
const GPU_FP8_SHAPES: [(usize, usize); 6] = [(4096, 1024), (32768, 4096), (2048, 8192), (2048, 65536), (8, 4096), (128, 4096)];
const GPU_FP8_FULL_EXTRA: [(usize, usize); 1] = [(16384, 16384)];
/// The FP8 grid on the CPU: the same hidden sizes, at most 16 M elements per matrix.
const CPU_FP8_SHAPES: [(usize, usize); 6] = [(4096, 1024), (4096, 4096), (2048, 8192), (256, 65536), (8, 4096), (128, 4096)];
const CPU_FP8_FULL_EXTRA: [(usize, usize); 1] = [(1024, 16384)];

/// The shapes and dtypes of the default grid: bf16 everywhere, f32 at the first shape.
pub fn default_grid(kind: DeviceKind, size: Size) -> Vec<(usize, usize, DType)> {
    type Shapes = &'static [(usize, usize)];
    let (base, extra): (Shapes, Shapes) = match (kind, size) {
        (_, Size::Quick) => (&QUICK_SHAPES, &[]),
        (DeviceKind::Gpu, Size::Default) => (&GPU_SHAPES, &[]),
        (DeviceKind::Gpu, Size::Full) => (&GPU_SHAPES, &GPU_FULL_EXTRA),
        (DeviceKind::Cpu, Size::Default) => (&CPU_SHAPES, &[]),
        (DeviceKind::Cpu, Size::Full) => (&CPU_SHAPES, &CPU_FULL_EXTRA),
    };
    let mut grid = Vec::new();
    for (i, &(m, n)) in base.iter().chain(extra).enumerate() {
        grid.push((m, n, DType::BF16));
        if i == 0 {
            grid.push((m, n, DType::F32));
            if size == Size::Full {
                grid.push((m, n, DType::F16));
            }
        }
    }
    grid
}

/// The shapes and dtypes of the FP8 ops' grid: bf16 x everywhere (`--full` adds 16384×16384 on
/// GPUs); `--quick` uses the quick shapes of every op.
pub fn fp8_grid(kind: DeviceKind, size: Size) -> Vec<(usize, usize, DType)> {
    type Shapes = &'static [(usize, usize)];
    let (base, extra): (Shapes, Shapes) = match (kind, size) {
        (_, Size::Quick) => (&QUICK_SHAPES, &[]),
        (DeviceKind::Gpu, Size::Default) => (&GPU_FP8_SHAPES, &[]),
        (DeviceKind::Gpu, Size::Full) => (&GPU_FP8_SHAPES, &GPU_FP8_FULL_EXTRA),
        (DeviceKind::Cpu, Size::Default) => (&CPU_FP8_SHAPES, &[]),
        (DeviceKind::Cpu, Size::Full) => (&CPU_FP8_SHAPES, &CPU_FP8_FULL_EXTRA),
    };
    base.iter().chain(extra).map(|&(m, n)| (m, n, DType::BF16)).collect()
}

/// The FP8 format of `y` when none is asked for (`--fp8-format`).
pub const DEFAULT_FP8: DType = DType::F8E4M3;

/// Every case of `ops` × `grid`, op-major (all shapes of one op, then the next op); FP8 ops write
/// [`DEFAULT_FP8`].
pub fn cases(ops: &[Op], grid: &[(usize, usize, DType)]) -> Vec<Case> {
    ops.iter().flat_map(|&op| grid.iter().map(move |&(m, n, dtype)| Case { op, m, n, dtype, fp8: DEFAULT_FP8 })).collect()
}

/// Parses `MxN,MxN,...`.
pub fn parse_shapes(list: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut shapes = Vec::new();
    for tok in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parsed = tok.to_ascii_lowercase().split_once('x').and_then(|(m, n)| Some((m.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((m, n)) if m > 0 && n > 0 => shapes.push((m, n)),
            _ => return Err(format!("bad shape `{tok}`: expected MxN with M, N ≥ 1 (e.g. 4096x1024)")),
        }
    }
    if shapes.is_empty() {
        return Err("no shape given (expected MxN,...)".into());
    }
    Ok(shapes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_grid_is_the_anchor_set() {
        let g = default_grid(DeviceKind::Gpu, Size::Default);
        assert_eq!(g.len(), 7);
        assert!(g.contains(&(32768, 4096, DType::F32)));
        assert!(g.contains(&(2048, 65536, DType::BF16)));
        let full = default_grid(DeviceKind::Gpu, Size::Full);
        assert!(full.iter().any(|&(_, n, _)| n == 262144) && full.iter().any(|&(_, n, _)| n == 1048576));
    }

    #[test]
    fn fp8_grid_is_bf16_at_the_fp8_shapes() {
        let g = fp8_grid(DeviceKind::Gpu, Size::Default);
        let shapes: Vec<(usize, usize)> = g.iter().map(|&(m, n, _)| (m, n)).collect();
        assert_eq!(shapes, vec![(4096, 1024), (32768, 4096), (2048, 8192), (2048, 65536), (8, 4096), (128, 4096)]);
        assert!(g.iter().all(|&(_, _, d)| d == DType::BF16));
        assert!(fp8_grid(DeviceKind::Gpu, Size::Full).contains(&(16384, 16384, DType::BF16)));
        assert!(fp8_grid(DeviceKind::Cpu, Size::Full).iter().all(|&(m, n, _)| m * n <= 16 << 20));
        let c = cases(&[Op::RmsFwdFp8T], &g[..1])[0];
        assert_eq!((c.y_dtype(), c.dtypes().x, c.dtypes().y), (DType::F8E4M3, DType::BF16, DType::F8E4M3));
        assert_eq!(c.label(), "rms_fwd_fp8_t 4096x1024 bf16→e4m3");
        let plain = cases(&[Op::RmsFwd], &g[..1])[0];
        assert_eq!((plain.y_dtype(), plain.label()), (DType::BF16, "rms_fwd 4096x1024 bf16".to_string()));
    }

    #[test]
    fn shapes_parse_or_explain() {
        assert_eq!(parse_shapes("8x4096, 2X3").unwrap(), vec![(8, 4096), (2, 3)]);
        assert!(parse_shapes("8x").unwrap_err().contains("bad shape `8x`"));
        assert!(parse_shapes("0x5").is_err());
        assert!(parse_shapes("").is_err());
    }
}
