//! Row-batch backward (kernels-cuda/rows.cuh): 16-bit rows of 512 < N ≤ 2048 in 16-byte layouts,
//! every batch size. A group of G = 128 (N ≤ 1024) or 256 threads (compile-time) takes 4 rows at
//! a time, one chunk of each per thread, so four rows' loads are in flight per group; 256-thread
//! CTAs; one partial dW/dB row per CTA, summed by `nk_bwd_finalize_wide` — a programmatic
//! dependent launch, set up while the row kernel's CTAs finish. Both kernels wait for their
//! predecessor in the stream (griddepcontrol.wait) before touching memory.

use normkit_core::{DType, NormError, Result};

use crate::params::{self, BwdParams};
use crate::{align256, dt_tag, find_kernel, CudaBackend};

/// Row-batch settings (env `NORMKIT_CUDA_ROWS` = `off`, or the groups per CTA; for measurements).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowsConfig {
    pub on: bool,
    /// Groups per CTA (default: 256 threads per CTA).
    pub rpc: Option<u32>,
}

impl RowsConfig {
    pub(crate) fn from_env() -> RowsConfig {
        match std::env::var("NORMKIT_CUDA_ROWS") {
            Ok(v) if v == "off" || v == "0" => RowsConfig { on: false, rpc: None },
            Ok(v) => RowsConfig { on: true, rpc: v.trim().parse().ok().filter(|&r| r >= 1) },
            Err(_) => RowsConfig { on: true, rpc: None },
        }
    }
}

/// What the caller knows about the backward call.
pub(crate) struct RowsCall {
    pub dt: DType,
    pub ln: bool,
    pub res: bool,
    /// 16-byte layouts, every tensor in x's dtype, dB only for LayerNorm.
    pub uniform: bool,
    pub n: usize,
    pub m: u64,
    pub nacc: usize,
}

impl CudaBackend {
    /// Runs the row-batch backward and returns true, or returns false (other paths).
    pub(crate) fn rows_backward(&self, c: &RowsCall, p: &mut BwdParams) -> Result<bool> {
        let cfg = self.rows;
        if !cfg.on || !c.uniform || c.dt == DType::F32 || c.m == 0 || c.n <= 512 || c.n > 2048 {
            return Ok(false);
        }
        // The group size is compile-time: 128 threads to N = 1024, 256 (`g256`) to 2048.
        let (group, gtag) = if c.n <= 1024 { (128u32, "") } else { (256, "g256") };
        let name =
            format!("nk_bwd_rows{ROWS}{gtag}_{}_{}{}", dt_tag(c.dt), if c.ln { "ln" } else { "rms" }, if c.res { "_res" } else { "" });
        let Ok(k) = find_kernel(&name) else {
            return Ok(false);
        };
        // 256-thread CTAs: two CTAs of 122–128 registers per SM. H100 (NOTES v7): at 4096×1024
        // four groups of 128 per CTA ran 47 / 54 / 39% (rms / addrms / ln_bwd) against 52 / 61 /
        // 45% with two; at 4096×2048 one group of 256 per CTA against two: 66 / 72 / 56% vs 58 /
        // 66 / 47%.
        let rpc = cfg.rpc.unwrap_or(256 / group).min(k.max_threads / group).max(1);
        let block = group * rpc;
        let smem = if rpc > 1 { 2 * rpc as usize * c.n * 4 } else { 0 };
        if smem > self.dyn_smem_max[k.index] {
            return Ok(false);
        }
        let batches = c.m.div_ceil(ROWS as u64).div_ceil(rpc as u64);
        let mut parts = self.persistent_blocks(k, block, smem, batches)? as u64;
        if let Some(cap) = self.bwd_ctas_per_sm {
            parts = parts.min(self.sms as u64 * cap as u64).max(1);
        }
        let too_big = || NormError::ResourceLimit { resource: "workspace bytes", requested: u64::MAX, available: usize::MAX as u64 };
        let part_bytes = (parts as usize).checked_mul(c.n * 4).ok_or_else(too_big)?;
        let total = align256(part_bytes) * c.nacc;
        let lease = self.workspace(total)?;
        let ws = lease.ptr;
        p.ws_dw = ws;
        p.ws_db = ws + if p.flags & params::F_WEIGHT != 0 { align256(part_bytes) as u64 } else { 0 };
        p.nparts = parts as i64;
        p.group = group as i32;
        p.rpc = rpc as i32;
        self.launch_pdl(k, parts as u32, block, smem as u32, p)?;
        self.finalize(c.n, c.nacc, p)?;
        Ok(true)
    }
}

/// Rows per thread at a time of the row-batch kernels (SPEC + 128·R in kernels.def).
const ROWS: u32 = 4;
