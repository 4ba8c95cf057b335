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
            assert_eq!(op.desc().op_name(backward), op.name());
        }
        assert!(parse_ops("rms_fwd,nope").unwrap_err().contains("unknown op `nope`"));
        assert_eq!(parse_ops("ln_bwd, rms_fwd,ln_bwd").unwrap(), vec![Op::LnBwd, Op::RmsFwd]);
    }
}
