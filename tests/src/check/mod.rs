//! The checks: run one case on a backend, compare with the oracle, report the worst element.
//!
//! Every check returns `Result<Ran, String>`: the `Err` string is a readable failure report naming
//! the case (op, dtypes, M, N, strides, options, seed), the worst element, what it got, what the
//! oracle expected and the allowed range. The mutation tests call these functions directly.
//!
//! One file per kind of check: `forward.rs` and `backward.rs` (a case against the oracle),
//! `invariants.rs` (batch invariance, determinism), `zero_rows.rs` (padding rows with a tiny eps);
//! this module holds what they share (running a case, gap and untouched-input checks, the tally
//! of the worst element).

mod backward;
mod forward;
mod fp8;
mod invariants;
mod zero_rows;

pub use backward::{check_backward, run_backward, BwdData, BwdOut};
pub use forward::{check_forward, run_forward, FwdData, FwdOut};
pub use fp8::{check_fp8, check_fp8_batch_invariance, check_fp8_bitwise, Fp8Case, Fp8Scale};
pub use invariants::{check_batch_invariance, check_determinism};
pub use zero_rows::{check_zero_rows, zero_row_cases, ZERO_ROW_EPS};

use crate::case::{BwdCase, FwdCase, Mat, Vector, Views};
use crate::data::{self, act_row, bits_at, gap_bits, gen_mat, grad_row, place_mat, place_vec, poison_bits, tag};
use crate::iv::Iv;
use crate::oracle::{self, BwdConsts, ColSums, FwdConsts};
use crate::par::map_chunks;
use normkit_core::{
    round_to, Backward, Buffer, CastingMode, DType, DTypes, Direction, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc,
    NormError, NormKernel, NormKind, Span, VecMut, VecRef,
};
use std::fmt::Write as _;

/// How a case ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Passed,
    /// The backend's `supports` declined the case (the reason is the backend's error).
    Skipped(String),
}

/// Result of one check.
pub type Check = Result<Ran, String>;

/// Asks `supports`; `Ok(None)` to go on, `Ok(Some(reason))` to skip, `Err` on an unexpected error.
pub(super) fn supported<K: NormKernel>(
    k: &K,
    dir: Direction,
    case_desc: &normkit_core::NormDesc,
    dtypes: &normkit_core::DTypes,
) -> Result<Option<String>, String> {
    match k.supports(dir, case_desc, dtypes) {
        Ok(()) => Ok(None),
        Err(e @ NormError::Unsupported { .. }) => Ok(Some(e.to_string())),
        Err(e) => Err(format!("supports() returned an error other than Unsupported: {e:?}")),
    }
}

pub(super) fn dl<K: NormKernel>(k: &K, b: &K::Buffer, what: &str) -> Result<HostBuf, String> {
    k.download(b).map_err(|e| format!("download of {what} failed: {e}"))
}

pub(super) fn up<K: NormKernel>(k: &K, h: &HostBuf, what: &str) -> Result<K::Buffer, String> {
    k.upload(h).map_err(|e| format!("upload of {what} failed: {e}"))
}

/// The index ranges of a buffer of `len` elements that lie outside the 2-D view `l`: before the
/// offset, between rows, after the last row.
#[allow(clippy::single_range_in_vec_init)] // a list of ranges, which may have one element
pub(super) fn mat_gaps(l: &Layout, len: usize) -> Vec<std::ops::Range<usize>> {
    if l.rows == 0 || l.cols == 0 {
        return vec![0..len];
    }
    let mut v = vec![0..l.offset.min(len)];
    for i in 0..l.rows {
        let end = (l.offset + i * l.stride + l.cols).min(len);
        let next = if i + 1 == l.rows { len } else { (l.offset + (i + 1) * l.stride).min(len) };
        v.push(end..next);
    }
    v
}

/// Checks that every element of `after` in `gaps` still holds the bits of `before`.
pub(super) fn check_gaps(what: &str, before: &HostBuf, after: &HostBuf, gaps: &[std::ops::Range<usize>]) -> Result<(), String> {
    if after.len() != before.len() || after.dtype() != before.dtype() {
        return Err(format!("{what}: buffer changed from {} × {} to {} × {}", before.len(), before.dtype(), after.len(), after.dtype()));
    }
    let es = before.dtype().size_bytes();
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let mut bad = 0usize;
    let mut first = None;
    for r in gaps {
        if b[r.start * es..r.end * es] == a[r.start * es..r.end * es] {
            continue;
        }
        for i in r.clone() {
            if bits_at(before, i) != bits_at(after, i) {
                bad += 1;
                first.get_or_insert(i);
            }
        }
    }
    match first {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: {bad} element(s) outside the view were written (first at buffer index {i}: bits {:#x} became {:#x})",
            bits_at(before, i),
            bits_at(after, i)
        )),
    }
}

pub(super) fn check_mat_gaps(what: &str, before: &HostBuf, after: &HostBuf, l: &Layout) -> Result<(), String> {
    check_gaps(what, before, after, &mat_gaps(l, before.len()))
}

pub(super) fn check_vec_gaps(what: &str, before: &HostBuf, after: &HostBuf, s: &Span) -> Result<(), String> {
    let len = before.len();
    check_gaps(what, before, after, &[0..s.offset.min(len), (s.offset + s.len).min(len)..len])
}

#[allow(clippy::single_range_in_vec_init)] // one range: the whole buffer
pub(super) fn check_unchanged(what: &str, before: &HostBuf, after: &HostBuf) -> Result<(), String> {
    if before.dtype() == after.dtype() && before.as_bytes() == after.as_bytes() {
        Ok(())
    } else {
        check_gaps(&format!("input `{what}` was modified"), before, after, &[0..before.len()])
    }
}

/// The worst out-of-tolerance element seen so far, and counts.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub checked: usize,
    pub bad: usize,
    worst: Option<(f64, String)>,
}

impl Tally {
    fn record(&mut self, score: f64, describe: impl FnOnce() -> String) {
        self.checked += 1;
        if score > 0.0 {
            self.bad += 1;
            if self.worst.as_ref().is_none_or(|(s, _)| score > *s) {
                self.worst = Some((score, describe()));
            }
        }
    }

    /// `got` (stored in `dtype`) against an interval.
    fn iv(&mut self, what: &str, row: usize, col: usize, iv: &Iv, dtype: DType, got: f32) {
        let score = iv.violation(dtype, got as f64);
        self.record(score, || {
            let (lo, hi) = iv.stored(dtype);
            format!("{what}[{row},{col}] ({dtype}): got {got:e}, expected {:e}, allowed [{lo:e}, {hi:e}]", iv.mid)
        });
    }

    /// `got` against an exactly known value (bitwise on the value; NaN never matches).
    fn exact(&mut self, what: &str, row: usize, col: usize, want: f32, got: f32) {
        let score = if got == want { 0.0 } else { f64::INFINITY };
        self.record(score, || format!("{what}[{row},{col}]: got {got:e}, expected exactly {want:e}"));
    }

    fn fail(&mut self, msg: String) {
        self.checked += 1;
        self.bad += 1;
        if self.worst.as_ref().is_none_or(|(s, _)| *s < f64::MAX) {
            self.worst = Some((f64::MAX, msg));
        }
    }

    fn merge(&mut self, o: Tally) {
        self.checked += o.checked;
        self.bad += o.bad;
        if let Some((s, d)) = o.worst {
            if self.worst.as_ref().is_none_or(|(ws, _)| s > *ws) {
                self.worst = Some((s, d));
            }
        }
    }

    fn into_result(self) -> Result<(), String> {
        match self.worst {
            None => Ok(()),
            Some((_, d)) => Err(format!("{} of {} checked elements out of tolerance; worst: {d}", self.bad, self.checked)),
        }
    }
}
