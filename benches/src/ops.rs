//! The benchmarked ops, their descriptors and their byte model.
//!
//! GB/s counts the minimal traffic of one call: every operand read once, every output written
//! once, at its own element size. Weights, biases and their gradients are in x's dtype (so the
//! count is the minimum any implementation could move); statistics are f32. `dw`/`db` count as
//! written once (N elements each), whatever partial buffers an implementation uses on the way.
//! Forward ops run in training mode: they save `rstd` (and `mean` for LayerNorm), and those
//! writes are counted.
//!
//! The FP8 forwards ([`Op::FP8`], run only when asked: `--ops fp8` or `--fp8`) write `y` quantised
//! to an FP8 format (e4m3 unless `--fp8-format` says otherwise) at one byte per element, and the
//! transposed `yT` of `rms_fwd_fp8_t` likewise; their f32 scalars (the per-tensor `scale` read
//! from a one-element device buffer, `amax` and `scale_inv` written) count 4 bytes each, and the
//! per-row `scale_inv` M·4 bytes. Like the other forwards they save `rstd` (M f32), which an FP8
//! training step keeps for its backward; that write is counted too.

use normkit_core::{DType, Direction, NormDesc};

/// One benchmarked operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    RmsFwd,
    RmsBwd,
    AddRmsFwd,
    AddRmsBwd,
    LnFwd,
    LnBwd,
    /// RMSNorm forward, `y` quantised per tensor with a device scale; `amax`, `scale_inv`.
    RmsFwdFp8,
    /// [`Op::RmsFwdFp8`] plus the transposed `yT` (N×M, FP8).
    RmsFwdFp8T,
    /// Residual add + RMSNorm, `y` quantised per tensor with a device scale; `amax`.
    AddRmsFwdFp8,
    /// RMSNorm forward, `y` quantised per row (dynamic scaling); `scale_inv` per row.
    RmsFwdFp8Row,
    /// Residual add + RMSNorm, `y` quantised per row (the fused add + norm + per-token
    /// quantisation of inference engines); `scale_inv` per row.
    AddRmsFwdFp8Row,
}

/// The operands of one call, as counts of M×N matrices, N-vectors, M-vectors of f32 and f32
/// scalars. `bytes = (mats·e + fp8_mats)·M·N + vecs·N·e + stats·M·4 + scalars·4`, `e` the size
/// of x's dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// M×N operands in x's dtype (read or written).
    pub mats: u64,
    /// M×N (or N×M) operands in an FP8 format, one byte per element (`y_q`, `yT`).
    pub fp8_mats: u64,
    /// N-element operands in x's dtype (weight, bias, dw, db).
    pub vecs: u64,
    /// M-element f32 vectors (mean, rstd, per-row `scale_inv`).
    pub stats: u64,
    /// One-element f32 operands (FP8 `scale`, `amax`, per-tensor `scale_inv`).
    pub scalars: u64,
}

impl Traffic {
    /// A call with no FP8 operand.
    const fn plain(mats: u64, vecs: u64, stats: u64) -> Traffic {
        Traffic { mats, fp8_mats: 0, vecs, stats, scalars: 0 }
    }
}

/// The FP8 outputs an FP8 op asks for ([`Op::fp8`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8Outputs {
    /// Per-row scaling (`scale_inv` M f32), else per tensor with a one-element device `scale`.
    pub per_row: bool,
    /// `amax` (one f32).
    pub amax: bool,
    /// Per-tensor `scale_inv` (one f32); per row it is always written.
    pub scale_inv: bool,
    /// `yT`, N×M.
    pub transposed: bool,
}

impl Op {
    /// Every op, in report order.
    pub const ALL: [Op; 11] = [
        Op::RmsFwd,
        Op::RmsBwd,
        Op::AddRmsFwd,
        Op::AddRmsBwd,
        Op::LnFwd,
        Op::LnBwd,
        Op::RmsFwdFp8,
        Op::RmsFwdFp8T,
        Op::AddRmsFwdFp8,
        Op::RmsFwdFp8Row,
        Op::AddRmsFwdFp8Row,
    ];
    /// The ops a run measures when none is named.
    pub const DEFAULT: [Op; 6] = [Op::RmsFwd, Op::RmsBwd, Op::AddRmsFwd, Op::AddRmsBwd, Op::LnFwd, Op::LnBwd];
    /// The FP8 forwards (`--ops fp8`, `--fp8`), measured only when asked for, on their own grid.
    pub const FP8: [Op; 5] = [Op::RmsFwdFp8, Op::RmsFwdFp8T, Op::AddRmsFwdFp8, Op::RmsFwdFp8Row, Op::AddRmsFwdFp8Row];

    pub const fn name(self) -> &'static str {
        match self {
            Op::RmsFwd => "rms_fwd",
            Op::RmsBwd => "rms_bwd",
            Op::AddRmsFwd => "addrms_fwd",
            Op::AddRmsBwd => "addrms_bwd",
            Op::LnFwd => "ln_fwd",
            Op::LnBwd => "ln_bwd",
            Op::RmsFwdFp8 => "rms_fwd_fp8",
            Op::RmsFwdFp8T => "rms_fwd_fp8_t",
            Op::AddRmsFwdFp8 => "addrms_fwd_fp8",
            Op::RmsFwdFp8Row => "rms_fwd_fp8_row",
            Op::AddRmsFwdFp8Row => "addrms_fwd_fp8_row",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == s)
    }

    /// What the op computes and which bytes it moves, in words (for reports).
    pub const fn describe(self) -> &'static str {
        match self {
            Op::RmsFwd => "y = rmsnorm(x)·w — reads x, w; writes y, rstd",
            Op::RmsBwd => "dx, dw of RMSNorm — reads x, dy, w, rstd; writes dx, dw",
            Op::AddRmsFwd => "h = x + residual; y = rmsnorm(h)·w — reads x, residual, w; writes y, h, rstd",
            Op::AddRmsBwd => "dx (+ d_residual_out), dw — reads h, dy, d_residual_out, w, rstd; writes dx, dw",
            Op::LnFwd => "y = layernorm(x)·w + b — reads x, w, b; writes y, mean, rstd",
            Op::LnBwd => "dx, dw, db of LayerNorm — reads x, dy, w, mean, rstd; writes dx, dw, db",
            Op::RmsFwdFp8 => {
                "y_q = fp8(rmsnorm(x)·w · scale), one scale per tensor from a 1-element f32 device buffer — reads x, w, scale; \
                 writes y_q (1 B/element), amax, scale_inv (f32 each) and rstd (saved, as every forward here does)"
            }
            Op::RmsFwdFp8T => {
                "rms_fwd_fp8 plus yT = y_qᵀ (N×M, FP8) for a GEMM's second operand — reads x, w, scale; writes y_q, yT \
                 (1 B/element each), amax, scale_inv, rstd"
            }
            Op::AddRmsFwdFp8 => {
                "h = x + residual; y_q = fp8(rmsnorm(h)·w · scale), device scale per tensor — reads x, residual, w, scale; \
                 writes h (x's dtype), y_q (1 B/element), amax, rstd"
            }
            Op::RmsFwdFp8Row => {
                "y_q = fp8(rmsnorm(x)·w · scale_r), scale_r = max_finite / amax_r per row (dynamic) — reads x, w; writes y_q \
                 (1 B/element), scale_inv (M f32), rstd"
            }
            Op::AddRmsFwdFp8Row => {
                "h = x + residual; y_q = fp8(rmsnorm(h)·w · scale_r), scale_r per row (dynamic) — reads x, residual, w; \
                 writes h (x's dtype), y_q (1 B/element), scale_inv (M f32), rstd"
            }
        }
    }

    pub const fn direction(self) -> Direction {
        match self {
            Op::RmsBwd | Op::AddRmsBwd | Op::LnBwd => Direction::Backward,
            _ => Direction::Forward,
        }
    }

    pub const fn is_layer(self) -> bool {
        matches!(self, Op::LnFwd | Op::LnBwd)
    }

    pub const fn has_residual(self) -> bool {
        matches!(self, Op::AddRmsFwd | Op::AddRmsBwd | Op::AddRmsFwdFp8 | Op::AddRmsFwdFp8Row)
    }

    pub const fn is_fp8(self) -> bool {
        self.fp8().is_some()
    }

    /// The FP8 outputs of an FP8 op; `None` for the others.
    pub const fn fp8(self) -> Option<Fp8Outputs> {
        let per_tensor = Fp8Outputs { per_row: false, amax: true, scale_inv: true, transposed: false };
        match self {
            Op::RmsFwdFp8 => Some(per_tensor),
            Op::RmsFwdFp8T => Some(Fp8Outputs { transposed: true, ..per_tensor }),
            Op::AddRmsFwdFp8 => Some(Fp8Outputs { scale_inv: false, ..per_tensor }),
            Op::RmsFwdFp8Row | Op::AddRmsFwdFp8Row => Some(Fp8Outputs { per_row: true, amax: false, scale_inv: true, transposed: false }),
            _ => None,
        }
    }

    /// The op without its FP8 quantisation (the same descriptor): `rms_fwd` or `addrms_fwd` for
    /// the FP8 ops, the op itself otherwise.
    pub const fn base(self) -> Op {
        match self {
            Op::RmsFwdFp8 | Op::RmsFwdFp8T | Op::RmsFwdFp8Row => Op::RmsFwd,
            Op::AddRmsFwdFp8 | Op::AddRmsFwdFp8Row => Op::AddRmsFwd,
            op => op,
        }
    }

    /// The descriptor benchmarked: eps 1e-6, a weight, a bias for LayerNorm, Gemma casting
    /// (fp32 math, one rounding), statistics saved by the forward ops (the FP8 ones too).
    pub fn desc(self) -> NormDesc {
        let base = if self.is_layer() { NormDesc::layer(1e-6) } else { NormDesc::rms(1e-6) };
        base.with_residual(self.has_residual()).with_save_stats(true)
    }

    /// The operands one call reads and writes.
    pub const fn traffic(self) -> Traffic {
        match self {
            // x, y | w | rstd
            Op::RmsFwd => Traffic::plain(2, 1, 1),
            // x, residual, y, residual_out | w | rstd
            Op::AddRmsFwd => Traffic::plain(4, 1, 1),
            // x, y | w, b | mean, rstd
            Op::LnFwd => Traffic::plain(2, 2, 2),
            // x, dy, dx | w, dw | rstd
            Op::RmsBwd => Traffic::plain(3, 2, 1),
            // h, dy, d_residual_out, dx | w, dw | rstd
            Op::AddRmsBwd => Traffic::plain(4, 2, 1),
            // x, dy, dx | w, dw, db | mean, rstd
            Op::LnBwd => Traffic::plain(3, 3, 2),
            // x | y_q | w | rstd | scale, amax, scale_inv
            Op::RmsFwdFp8 => Traffic { mats: 1, fp8_mats: 1, vecs: 1, stats: 1, scalars: 3 },
            // x | y_q, yT | w | rstd | scale, amax, scale_inv
            Op::RmsFwdFp8T => Traffic { mats: 1, fp8_mats: 2, vecs: 1, stats: 1, scalars: 3 },
            // x, residual, residual_out | y_q | w | rstd | scale, amax
            Op::AddRmsFwdFp8 => Traffic { mats: 3, fp8_mats: 1, vecs: 1, stats: 1, scalars: 2 },
            // x | y_q | w | rstd, scale_inv (per row)
            Op::RmsFwdFp8Row => Traffic { mats: 1, fp8_mats: 1, vecs: 1, stats: 2, scalars: 0 },
            // x, residual, residual_out | y_q | w | rstd, scale_inv (per row)
            Op::AddRmsFwdFp8Row => Traffic { mats: 3, fp8_mats: 1, vecs: 1, stats: 2, scalars: 0 },
        }
    }

    /// Bytes read plus bytes written by one call on an `m × n` input of `dtype` (FP8 outputs at
    /// one byte per element, whatever their format).
    pub fn bytes(self, m: usize, n: usize, dtype: DType) -> u64 {
        let t = self.traffic();
        let e = dtype.size_bytes() as u64;
        let (m, n) = (m as u64, n as u64);
        (t.mats * e + t.fp8_mats) * m * n + t.vecs * n * e + t.stats * m * 4 + t.scalars * 4
    }
}

/// A forward and its backward timed as one unit, for implementations that have no separate
/// backward call: candle's unfused chain (`rms_norm_slow` then autograd) and the peer script's
/// `*_fwdbwd` ops (`torch.autograd.grad` of the forward). normkit's figure for a chain is the sum
/// of its two calls' times, and its bytes are the sum of their bytes (the peer script's count
/// too), so GB/s and time ratios compare alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Chain {
    RmsFwdBwd,
    LnFwdBwd,
}

impl Chain {
    pub const ALL: [Chain; 2] = [Chain::RmsFwdBwd, Chain::LnFwdBwd];

    pub const fn name(self) -> &'static str {
        match self {
            Chain::RmsFwdBwd => "rms_fwdbwd",
            Chain::LnFwdBwd => "ln_fwdbwd",
        }
    }

    pub fn parse(s: &str) -> Option<Chain> {
        Chain::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The forward and the backward op.
    pub const fn parts(self) -> [Op; 2] {
        match self {
            Chain::RmsFwdBwd => [Op::RmsFwd, Op::RmsBwd],
            Chain::LnFwdBwd => [Op::LnFwd, Op::LnBwd],
        }
    }

    pub const fn describe(self) -> &'static str {
        match self {
            Chain::RmsFwdBwd => "RMSNorm forward then backward (dx, dw); bytes = rms_fwd + rms_bwd",
            Chain::LnFwdBwd => "LayerNorm forward then backward (dx, dw, db); bytes = ln_fwd + ln_bwd",
        }
    }

    /// The bytes of the forward call plus those of the backward call.
    pub fn bytes(self, m: usize, n: usize, dtype: DType) -> u64 {
        self.parts().iter().map(|op| op.bytes(m, n, dtype)).sum()
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The bytes of the op or chain called `name`; `None` for a name neither knows.
pub fn bytes_of(name: &str, m: usize, n: usize, dtype: DType) -> Option<u64> {
    match (Op::parse(name), Chain::parse(name)) {
        (Some(op), _) => Some(op.bytes(m, n, dtype)),
        (_, Some(chain)) => Some(chain.bytes(m, n, dtype)),
        _ => None,
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a comma-separated list of op names and groups: `default` (the six ops of a plain run),
/// `fp8` (the four FP8 forwards), `all`. The error lists the known names.
pub fn parse_ops(list: &str) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let group: &[Op] = match name {
            "default" => &Op::DEFAULT,
            "fp8" => &Op::FP8,
            "all" => &Op::ALL,
            _ => &[Op::parse(name).ok_or_else(|| format!("unknown op `{name}` (known: {})", known_ops()))?],
        };
        for &op in group {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    if ops.is_empty() {
        return Err(format!("no op given (known: {})", known_ops()));
    }
    Ok(ops)
}

fn known_ops() -> String {
    format!("{}; groups default, fp8, all", Op::ALL.map(Op::name).join(", "))
}

/// Parses an FP8 format for `y` of the FP8 ops: `e4m3` (`float8_e4m3fn`), `e5m2`, `e4m3fnuz`,
/// `e5m2fnuz`.
pub fn parse_fp8_format(s: &str) -> Result<DType, String> {
    DType::parse(s.trim()).filter(|d| d.is_fp8()).ok_or_else(|| format!("unknown FP8 format `{s}` (known: e4m3, e5m2, e4m3fnuz, e5m2fnuz)"))
}

/// Parses `bf16`, `f16`, `f32` (and the spellings [`DType::parse`] knows).
pub fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::parse(s.trim()).ok_or_else(|| format!("unknown dtype `{s}` (known: bf16, f16, f32)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_model_matches_the_peer_script() {
        // bench_peers.py min_bytes: rms_fwd = 2·xs + w + 4M, rms_bwd = 3·xs + 2w + 4M,
        // ln_fwd = 2·xs + 2w + 8M, ln_bwd = 3·xs + 3w + 8M (w at x's element size).
        let (m, n) = (32768usize, 4096usize);
        let xs = (m * n * 2) as u64;
        let w = (n * 2) as u64;
        let st = (m * 4) as u64;
        assert_eq!(Op::RmsFwd.bytes(m, n, DType::BF16), 2 * xs + w + st);
        assert_eq!(Op::RmsBwd.bytes(m, n, DType::BF16), 3 * xs + 2 * w + st);
        assert_eq!(Op::LnFwd.bytes(m, n, DType::BF16), 2 * xs + 2 * w + 2 * st);
        assert_eq!(Op::LnBwd.bytes(m, n, DType::BF16), 3 * xs + 3 * w + 2 * st);
        // the fused add also saves rstd (training mode), which the peer script does not count
        assert_eq!(Op::AddRmsFwd.bytes(m, n, DType::BF16), 4 * xs + w + st);
    }

    #[test]
    fn a_chain_counts_its_two_calls() {
        // bench_peers.py: rms_fwdbwd = rms_fwd + rms_bwd, ln_fwdbwd = ln_fwd + ln_bwd
        let (m, n) = (4096usize, 4096usize);
        for (chain, fwd, bwd) in [(Chain::RmsFwdBwd, Op::RmsFwd, Op::RmsBwd), (Chain::LnFwdBwd, Op::LnFwd, Op::LnBwd)] {
            for dt in [DType::BF16, DType::F32] {
                assert_eq!(chain.bytes(m, n, dt), fwd.bytes(m, n, dt) + bwd.bytes(m, n, dt));
                assert_eq!(bytes_of(chain.name(), m, n, dt), Some(chain.bytes(m, n, dt)));
            }
            assert_eq!(Chain::parse(chain.name()), Some(chain));
            assert_eq!(Op::parse(chain.name()), None, "a chain is not a measured op");
        }
        // 4096×4096 bf16 RMSNorm: x, y, x, dy, dx (5 matrices) + w, w, dw + rstd twice
        assert_eq!(Chain::RmsFwdBwd.bytes(m, n, DType::BF16), 5 * (m * n * 2) as u64 + 3 * (n * 2) as u64 + 2 * (m * 4) as u64);
        assert_eq!(bytes_of("softmax", 1, 1, DType::F32), None);
    }

    #[test]
    fn op_names_round_trip_and_match_the_descriptor() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.name()), Some(op));
            let backward = op.direction() == Direction::Backward;
            assert_eq!(op.desc().op_name(backward), op.base().name());
            assert_eq!(op.is_fp8(), Op::FP8.contains(&op));
            assert_eq!(Op::DEFAULT.contains(&op), !op.is_fp8(), "FP8 ops only when asked for");
        }
        assert!(parse_ops("rms_fwd,nope").unwrap_err().contains("unknown op `nope`"));
        assert_eq!(parse_ops("ln_bwd, rms_fwd,ln_bwd").unwrap(), vec![Op::LnBwd, Op::RmsFwd]);
        assert_eq!(parse_ops("fp8").unwrap(), Op::FP8.to_vec());
        assert_eq!(parse_ops("rms_fwd_fp8_row,default").unwrap()[..2], [Op::RmsFwdFp8Row, Op::RmsFwd]);
        assert_eq!(parse_ops("all,fp8").unwrap(), Op::ALL.to_vec());
        assert_eq!(parse_fp8_format("float8_e4m3fn"), Ok(DType::F8E4M3));
        assert_eq!(parse_fp8_format("e5m2"), Ok(DType::F8E5M2));
        assert!(parse_fp8_format("bf16").unwrap_err().contains("unknown FP8 format `bf16`"));
    }

    #[test]
    fn fp8_byte_model() {
        // bf16 x at 4096×1024: x 8 MiB, y_q 4 MiB (1 B/element), w 2 KiB, rstd 16 KiB
        let (m, n) = (4096usize, 1024usize);
        let (xs, q, w, st) = ((m * n * 2) as u64, (m * n) as u64, (n * 2) as u64, (m * 4) as u64);
        // x, w, scale read; y_q, amax, scale_inv, rstd written
        assert_eq!(Op::RmsFwdFp8.bytes(m, n, DType::BF16), xs + w + 4 + q + 4 + 4 + st);
        assert_eq!(Op::RmsFwdFp8.bytes(m, n, DType::BF16), 12_601_356);
        // plus yT, N×M at 1 B/element
        assert_eq!(Op::RmsFwdFp8T.bytes(m, n, DType::BF16), Op::RmsFwdFp8.bytes(m, n, DType::BF16) + q);
        // x, residual, w, scale read; residual_out (bf16), y_q, amax, rstd written
        assert_eq!(Op::AddRmsFwdFp8.bytes(m, n, DType::BF16), 3 * xs + q + w + 4 + 4 + st);
        // x, w read; y_q, scale_inv (M f32), rstd written; no scale, no amax
        assert_eq!(Op::RmsFwdFp8Row.bytes(m, n, DType::BF16), xs + q + w + 2 * st);
        assert_eq!(Op::AddRmsFwdFp8Row.bytes(m, n, DType::BF16), 3 * xs + q + w + 2 * st);
        // the FP8 output is one byte per element whatever x's dtype: f32 x moves 4 + 1 per element
        assert_eq!(Op::RmsFwdFp8.bytes(m, n, DType::F32) - Op::RmsFwdFp8.bytes(m, n, DType::BF16), 2 * (m * n) as u64 + 2 * n as u64);
        // the quantised y replaces the bf16 y of rms_fwd: one byte less per element, plus the scalars
        assert_eq!(Op::RmsFwd.bytes(m, n, DType::BF16) - Op::RmsFwdFp8.bytes(m, n, DType::BF16), q - 12);
        // the FP8 outputs the call asks for follow the byte model
        for op in Op::FP8 {
            let (t, f) = (op.traffic(), op.fp8().unwrap());
            assert_eq!(t.fp8_mats, 1 + u64::from(f.transposed), "{op}");
            let scalars = u64::from(!f.per_row) + u64::from(f.amax) + u64::from(f.scale_inv && !f.per_row);
            assert_eq!(t.scalars, scalars, "{op}");
            assert_eq!(t.stats, 1 + u64::from(f.per_row), "{op}: rstd, and scale_inv per row");
            assert_eq!(op.direction(), Direction::Forward);
        }
        for op in Op::DEFAULT {
            assert_eq!((op.traffic().fp8_mats, op.traffic().scalars, op.fp8()), (0, 0, None));
        }
    }

    /// The peer script `peers/fp8_peers.py` states the same byte model as a table: its GB/s and
    /// normkit's count the same bytes.
    #[test]
    fn fp8_peer_script_counts_the_same_bytes() {
        let script = include_str!("../peers/fp8_peers.py");
        for op in Op::FP8 {
            let t = op.traffic();
            let line = format!("\"{}\": ({}, {}, {}, {}, {}),", op.name(), t.mats, t.fp8_mats, t.vecs, t.stats, t.scalars);
            assert!(script.contains(&line), "fp8_peers.py's TRAFFIC lacks `{line}`");
        }
    }
}
