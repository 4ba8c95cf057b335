//! One test case: what is computed, on which dtypes and shapes, with which views.

use normkit_core::{CastingMode, DType, DTypes, Layout, NormDesc, Span};
use std::fmt;

/// How the 2-D operands lie in their buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Views {
    /// Densely packed, offset 0, buffers exactly as long as the view.
    Contiguous,
    /// Every operand with its own row stride `N + pad` and element offset (and spare elements after
    /// the end); `odd` picks odd pads and offsets, which break vector alignment on every row.
    Strided { odd: bool },
}

/// The 2-D operands, for the per-operand pads and offsets of [`Views::Strided`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mat {
    X = 0,
    Y = 1,
    Residual = 2,
    ResidualOut = 3,
    Dy = 4,
    Dx = 5,
    DResidualOut = 6,
}

/// The vector operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vector {
    Weight = 0,
    Bias = 1,
    Mean = 2,
    Rstd = 3,
    Dw = 4,
    Db = 5,
}

impl Views {
    /// The layout of operand `which` for an `m × n` call. Pads and offsets differ per operand so
    /// that a kernel using one operand's stride for another is caught.
    pub fn layout(&self, which: Mat, m: usize, n: usize) -> Layout {
        match self {
            Views::Contiguous => Layout::contiguous(m, n),
            Views::Strided { odd } => {
                let k = which as usize;
                let (pad, off) = if *odd {
                    ([1, 3, 5, 7, 9, 11, 13][k], [1, 3, 5, 1, 7, 3, 5][k])
                } else {
                    ([8, 16, 64, 8, 32, 24, 8][k], [0, 8, 16, 4, 8, 0, 2][k])
                };
                Layout::strided(m, n, n + pad).with_offset(off)
            }
        }
    }

    /// Elements after the last row that the buffer holds beyond the view.
    pub fn tail(&self) -> usize {
        match self {
            Views::Contiguous => 0,
            Views::Strided { .. } => 5,
        }
    }

    /// The span of vector operand `which` of length `len`.
    pub fn span(&self, which: Vector, len: usize) -> Span {
        match self {
            Views::Contiguous => Span { offset: 0, len },
            Views::Strided { odd } => {
                let k = which as usize;
                let off = if *odd { [3, 5, 1, 7, 9, 11][k] } else { [8, 4, 2, 6, 8, 2][k] };
                Span { offset: off, len }
            }
        }
    }

    /// Buffer length for a 2-D layout.
    pub fn mat_len(&self, l: &Layout) -> usize {
        l.span().expect("test layouts do not overflow") + self.tail()
    }

    /// Buffer length for a span.
    pub fn vec_len(&self, s: &Span) -> usize {
        s.offset + s.len + self.tail()
    }

    fn describe(&self, ops: &[Mat], m: usize, n: usize) -> String {
        match self {
            Views::Contiguous => "contiguous".into(),
            Views::Strided { .. } => {
                let parts: Vec<String> = ops
                    .iter()
                    .map(|&o| {
                        let l = self.layout(o, m, n);
                        format!("{:?} stride {} off {}", o, l.stride, l.offset)
                    })
                    .collect();
                format!("strided({})", parts.join(", "))
            }
        }
    }
}

/// Where a non-finite value is injected (the non-finite-rows category).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inject {
    pub row: usize,
    pub col: usize,
    pub value: f32,
}

/// A forward case.
#[derive(Debug, Clone, PartialEq)]
pub struct FwdCase {
    pub desc: NormDesc,
    /// `x`, `y`, `weight` (and bias), `residual` (and `residual_out`).
    pub dtypes: DTypes,
    pub m: usize,
    pub n: usize,
    pub views: Views,
    /// `y` written over `x` (needs `y`'s dtype = `x`'s).
    pub in_place: bool,
    /// `residual_out` written over `residual`.
    pub residual_in_place: bool,
    pub seed: u64,
    /// Non-finite values put into `x` (their rows are only required to be non-finite).
    pub inject: Vec<Inject>,
}

/// A backward case.
#[derive(Debug, Clone, PartialEq)]
pub struct BwdCase {
    pub desc: NormDesc,
    /// Backward meaning (see [`DTypes`]): `x` the normalised tensor's dtype, `y` every gradient's,
    /// `weight` the weight's and `dw`/`db`'s.
    pub dtypes: DTypes,
    pub m: usize,
    pub n: usize,
    pub views: Views,
    /// `dx` written over `dy`.
    pub in_place: bool,
    /// Whether `d_residual_out` is given (fused-add descriptors only).
    pub d_residual_out: bool,
    pub seed: u64,
    /// Non-finite values put into `dy`.
    pub inject: Vec<Inject>,
}

fn opts(desc: &NormDesc) -> String {
    let mut s = Vec::new();
    match desc.weight {
        None => s.push("no-weight".to_string()),
        Some(w) => s.push(format!("weight(offset {})", w.offset)),
    }
    if desc.bias {
        s.push("bias".into());
    }
    s.push(format!("casting={}", desc.casting.name()));
    if desc.save_stats {
        s.push("save_stats".into());
    }
    s.push(format!("eps={:e}", desc.eps));
    s.join(" ")
}

impl FwdCase {
    /// A contiguous case with no injected values.
    pub fn new(desc: NormDesc, dtypes: DTypes, m: usize, n: usize, seed: u64) -> Self {
        FwdCase { desc, dtypes, m, n, views: Views::Contiguous, in_place: false, residual_in_place: false, seed, inject: Vec::new() }
    }
    /// Whether `y` can be written over `x` (same dtype).
    pub fn can_in_place(&self) -> bool {
        self.dtypes.x == self.dtypes.y
    }
}

impl BwdCase {
    pub fn new(desc: NormDesc, dtypes: DTypes, m: usize, n: usize, seed: u64) -> Self {
        BwdCase { desc, dtypes, m, n, views: Views::Contiguous, in_place: false, d_residual_out: desc.residual, seed, inject: Vec::new() }
    }
}

fn dtypes_str(d: &DTypes, fwd: bool, desc: &NormDesc) -> String {
    let mut s = format!("x={} {}={}", d.x, if fwd { "y" } else { "grads" }, d.y);
    if desc.weight.is_some() || desc.bias {
        s += &format!(" w={}", d.weight);
    }
    if fwd && desc.residual {
        s += &format!(" residual={}", d.residual);
    }
    s
}

impl fmt::Display for FwdCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ops = vec![Mat::X];
        if !self.in_place {
            ops.push(Mat::Y);
        }
        if self.desc.residual {
            ops.push(Mat::Residual);
            if !self.residual_in_place {
                ops.push(Mat::ResidualOut);
            }
        }
        write!(
            f,
            "{} {} M={} N={} {} {}",
            self.desc.op_name(false),
            dtypes_str(&self.dtypes, true, &self.desc),
            self.m,
            self.n,
            opts(&self.desc),
            self.views.describe(&ops, self.m, self.n)
        )?;
        if self.in_place {
            write!(f, " in-place(y over x)")?;
        }
        if self.residual_in_place {
            write!(f, " in-place(residual_out over residual)")?;
        }
        if !self.inject.is_empty() {
            write!(f, " inject={:?}", self.inject)?;
        }
        write!(f, " seed={}", self.seed)
    }
}

impl fmt::Display for BwdCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ops = vec![Mat::X, Mat::Dy];
        if !self.in_place {
            ops.push(Mat::Dx);
        }
        if self.d_residual_out {
            ops.push(Mat::DResidualOut);
        }
        write!(
            f,
            "{} {} M={} N={} {} {}",
            self.desc.op_name(true),
            dtypes_str(&self.dtypes, false, &self.desc),
            self.m,
            self.n,
            opts(&self.desc),
            self.views.describe(&ops, self.m, self.n)
        )?;
        if self.in_place {
            write!(f, " in-place(dx over dy)")?;
        }
        if self.desc.residual {
            write!(f, " d_residual_out={}", if self.d_residual_out { "given" } else { "absent" })?;
        }
        if !self.inject.is_empty() {
            write!(f, " inject={:?}", self.inject)?;
        }
        write!(f, " seed={}", self.seed)
    }
}

/// The dtype combinations of forward cases: uniform, f32 weights with half activations, an f32
/// output, an f32 residual stream (only meaningful with the fused add), and everything-f32-but-x.
pub fn fwd_dtype_combos(residual: bool) -> Vec<DTypes> {
    use DType::*;
    let mut v = vec![
        DTypes::uniform(F32),
        DTypes::uniform(F16),
        DTypes::uniform(BF16),
        DTypes::f32_weight(F16),
        DTypes::f32_weight(BF16),
        DTypes { x: BF16, y: F32, weight: BF16, residual: BF16 },
        DTypes { x: F16, y: F32, weight: F32, residual: F32 },
    ];
    if residual {
        v.push(DTypes { x: BF16, y: BF16, weight: F32, residual: F32 });
        v.push(DTypes { x: F16, y: F16, weight: F16, residual: F32 });
    }
    v
}

/// The dtype combinations of backward cases (`x` = the normalised tensor, `y` = gradients).
pub fn bwd_dtype_combos() -> Vec<DTypes> {
    use DType::*;
    vec![
        DTypes::uniform(F32),
        DTypes::uniform(F16),
        DTypes::uniform(BF16),
        DTypes::f32_weight(F16),
        DTypes::f32_weight(BF16),
        DTypes { x: BF16, y: F32, weight: F32, residual: BF16 },
        DTypes { x: F16, y: F32, weight: F16, residual: F16 },
    ]
}

/// Every descriptor option combination for one norm kind and fused-add flag: weight (none, offset
/// 0, offset 1) × bias × casting × save_stats.
pub fn all_fwd_descs(base: NormDesc) -> Vec<NormDesc> {
    let mut out = Vec::new();
    for weight in [None, Some(0.0f32), Some(1.0f32)] {
        for bias in [false, true] {
            for casting in CastingMode::ALL {
                for save in [false, true] {
                    let mut d = base.with_bias(bias).with_casting(casting).with_save_stats(save);
                    d = match weight {
                        None => d.without_weight(),
                        Some(o) => d.with_weight_offset(o),
                    };
                    out.push(d);
                }
            }
        }
    }
    out
}

/// Every backward-relevant option combination: weight (none, offset 0, offset 1) × bias.
pub fn all_bwd_descs(base: NormDesc) -> Vec<NormDesc> {
    let mut out = Vec::new();
    for weight in [None, Some(0.0f32), Some(1.0f32)] {
        for bias in [false, true] {
            let d = base.with_bias(bias);
            out.push(match weight {
                None => d.without_weight(),
                Some(o) => d.with_weight_offset(o),
            });
        }
    }
    out
}
