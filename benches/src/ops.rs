//! The benchmarked ops, their descriptors and their byte model.
//!
//! GB/s counts the minimal traffic of one call: every operand read once, every output written
//! once, at its own element size. Weights, biases and their gradients are in x's dtype (so the
//! count is the minimum any implementation could move); statistics are f32. `dw`/`db` count as
//! written once (N elements each), whatever partial buffers an implementation uses on the way.
//! Forward ops run in training mode: they save `rstd` (and `mean` for LayerNorm), and those
//! writes are counted.

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
}

/// The operands of one call, as counts of M×N matrices, N-vectors and M-vectors of f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// M×N operands in x's dtype (read or written).
    pub mats: u64,
    /// N-element operands in x's dtype (weight, bias, dw, db).
    pub vecs: u64,
    /// M-element f32 statistics (mean, rstd).
    pub stats: u64,
}

impl Op {
    pub const ALL: [Op; 6] = [Op::RmsFwd, Op::RmsBwd, Op::AddRmsFwd, Op::AddRmsBwd, Op::LnFwd, Op::LnBwd];

    pub const fn name(self) -> &'static str {
        match self {
            Op::RmsFwd => "rms_fwd",
            Op::RmsBwd => "rms_bwd",
            Op::AddRmsFwd => "addrms_fwd",
            Op::AddRmsBwd => "addrms_bwd",
            Op::LnFwd => "ln_fwd",
            Op::LnBwd => "ln_bwd",
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
        }
    }

    pub const fn direction(self) -> Direction {
        match self {
            Op::RmsFwd | Op::AddRmsFwd | Op::LnFwd => Direction::Forward,
            Op::RmsBwd | Op::AddRmsBwd | Op::LnBwd => Direction::Backward,
        }
    }

    pub const fn is_layer(self) -> bool {
        matches!(self, Op::LnFwd | Op::LnBwd)
    }

    pub const fn has_residual(self) -> bool {
        matches!(self, Op::AddRmsFwd | Op::AddRmsBwd)
    }

    /// The descriptor benchmarked: eps 1e-6, a weight, a bias for LayerNorm, Gemma casting
    /// (fp32 math, one rounding), statistics saved by the forward ops.
    pub fn desc(self) -> NormDesc {
        let base = if self.is_layer() { NormDesc::layer(1e-6) } else { NormDesc::rms(1e-6) };
        base.with_residual(self.has_residual()).with_save_stats(true)
    }

    /// The operands one call reads and writes.
    pub const fn traffic(self) -> Traffic {
        match self {
            // x, y | w | rstd
            Op::RmsFwd => Traffic { mats: 2, vecs: 1, stats: 1 },
            // x, residual, y, residual_out | w | rstd
            Op::AddRmsFwd => Traffic { mats: 4, vecs: 1, stats: 1 },
            // x, y | w, b | mean, rstd
            Op::LnFwd => Traffic { mats: 2, vecs: 2, stats: 2 },
            // x, dy, dx | w, dw | rstd
            Op::RmsBwd => Traffic { mats: 3, vecs: 2, stats: 1 },
            // h, dy, d_residual_out, dx | w, dw | rstd
            Op::AddRmsBwd => Traffic { mats: 4, vecs: 2, stats: 1 },
            // x, dy, dx | w, dw, db | mean, rstd
            Op::LnBwd => Traffic { mats: 3, vecs: 3, stats: 2 },
        }
    }

    /// Bytes read plus bytes written by one call on an `m × n` input of `dtype`.
    pub fn bytes(self, m: usize, n: usize, dtype: DType) -> u64 {
        let t = self.traffic();
        let e = dtype.size_bytes() as u64;
        let (m, n) = (m as u64, n as u64);
        t.mats * m * n * e + t.vecs * n * e + t.stats * m * 4
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a comma-separated list of op names; the error lists the known names.
pub fn parse_ops(list: &str) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let op = Op::parse(name).ok_or_else(|| format!("unknown op `{name}` (known: {})", known_ops()))?;
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    if ops.is_empty() {
        return Err(format!("no op given (known: {})", known_ops()));
    }
    Ok(ops)
}

fn known_ops() -> String {
    Op::ALL.map(Op::name).join(", ")
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
    fn op_names_round_trip_and_match_the_descriptor() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.name()), Some(op));
            let backward = op.direction() == Direction::Backward;
            assert_eq!(op.desc().op_name(backward), op.name());
        }
        assert!(parse_ops("rms_fwd,nope").unwrap_err().contains("unknown op `nope`"));
        assert_eq!(parse_ops("ln_bwd, rms_fwd,ln_bwd").unwrap(), vec![Op::LnBwd, Op::RmsFwd]);
    }
}
