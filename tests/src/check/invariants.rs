//! Batch invariance and determinism.

use super::forward::check_forward_values;
use super::*;

/// The bits of row `i` of a 2-D view.
pub(super) fn row_bits(buf: &HostBuf, l: &Layout, i: usize) -> Vec<u32> {
    (0..l.cols).map(|j| bits_at(buf, l.offset + i * l.stride + j)).collect()
}

/// All outputs of row `i` of a forward call, as bits: y, residual_out, mean, rstd.
pub(super) fn fwd_row_bits(out: &FwdOut, i: usize) -> Vec<u32> {
    let mut v = row_bits(&out.y, &out.y_layout, i);
    if let Some((b, l)) = &out.residual_out {
        v.extend(row_bits(b, l, i));
    }
    for (b, s) in [&out.mean, &out.rstd].into_iter().flatten() {
        v.push(bits_at(b, s.offset + i));
    }
    v
}

/// Names element `j` of [`fwd_row_bits`]'s vector.
pub(super) fn fwd_output_name(out: &FwdOut, j: usize) -> String {
    let n = out.y_layout.cols;
    let mut names = vec![("y", n)];
    if out.residual_out.is_some() {
        names.push(("residual_out", n));
    }
    if out.mean.is_some() {
        names.push(("mean", 1));
    }
    if out.rstd.is_some() {
        names.push(("rstd", 1));
    }
    let mut k = j;
    for (name, len) in names {
        if k < len {
            return if len == 1 { name.to_string() } else { format!("{name}[{k}]") };
        }
        k -= len;
    }
    format!("output element {j}")
}

/// The rows of a batch of `bm` for a batch-invariance check: fresh identities `first_id + 7·i`
/// (so the surroundings differ every time) with `targets` placed at the first, middle and last
/// positions, cycling. With M < 3 some positions coincide and the last target placed there
/// stays. Returns the identities and, for each placed target that stayed, (its position, its
/// index in `targets`).
pub(super) fn place_targets(bm: usize, first_id: u64, targets: &[u64]) -> (Vec<u64>, Vec<(usize, usize)>) {
    let mut ids: Vec<u64> = (0..bm as u64).map(|i| first_id + 7 * i).collect();
    let positions = [0, bm / 2, bm - 1];
    for (&p, &t) in positions.iter().cycle().zip(targets) {
        ids[p] = t;
    }
    let stayed = positions
        .iter()
        .cycle()
        .zip(targets.iter().enumerate())
        .filter(|&(&p, (_, &t))| ids[p] == t)
        .map(|(&p, (ti, _))| (p, ti))
        .collect();
    (ids, stayed)
}

/// Batch invariance: each of `targets` (row identities) is computed alone (M = 1), then inside
/// batches of each size in `batch_ms` at the first, middle and last positions surrounded by other
/// rows (and once more in a strided batch); every output of the row must be bitwise identical.
pub fn check_batch_invariance<K: NormKernel>(k: &K, base: &FwdCase, targets: &[u64], batch_ms: &[usize]) -> Check {
    let ctx = |e: String| format!("batch invariance, {base}\n    {e}");
    if let Some(reason) = supported(k, Direction::Forward, &base.desc, &base.dtypes).map_err(ctx)? {
        return Ok(Ran::Skipped(reason));
    }
    let single = FwdCase { m: 1, ..base.clone() };
    let mut alone = Vec::new();
    for &t in targets {
        let data = FwdData::with_rows(&single, &[t]);
        let out = run_forward(k, &single, &data).map_err(ctx)?;
        check_forward_values(&single, &data, &out, single.dtypes.x).map_err(|e| ctx(format!("row {t} alone: {e}")))?;
        alone.push(fwd_row_bits(&out, 0));
    }
    for (bi, &bm) in batch_ms.iter().enumerate() {
        for (vi, views) in [Views::Contiguous, Views::Strided { odd: true }].into_iter().enumerate() {
            // The strided batch only at the largest size, to keep the cost down.
            if vi == 1 && bi + 1 != batch_ms.len() {
                continue;
            }
            let case = FwdCase { m: bm, views, ..base.clone() };
            let (ids, stayed) = place_targets(bm, 1_000_000 + 10_000 * bi as u64 + vi as u64, targets);
            let data = FwdData::with_rows(&case, &ids);
            let out = run_forward(k, &case, &data).map_err(ctx)?;
            for (p, ti) in stayed {
                let t = targets[ti];
                let got = fwd_row_bits(&out, p);
                if got != alone[ti] {
                    let j = got.iter().zip(&alone[ti]).position(|(a, b)| a != b).unwrap_or(0);
                    return Err(ctx(format!(
                        "row {t} at position {p} of a batch of M={bm} ({}) differs from the same row computed alone (contiguous, M=1): {} bits {:#x} vs {:#x}",
                        if vi == 0 { "contiguous" } else { "strided, odd offsets" },
                        fwd_output_name(&out, j),
                        got[j],
                        alone[ti][j]
                    )));
                }
            }
        }
    }
    Ok(Ran::Passed)
}

/// Determinism: the same forward and the same backward, twice, give bitwise equal outputs.
pub fn check_determinism<K: NormKernel>(k: &K, fwd: &FwdCase, bwd: &BwdCase) -> Check {
    let mut ran = Ran::Skipped(String::new());
    if supported(k, Direction::Forward, &fwd.desc, &fwd.dtypes).map_err(|e| format!("{fwd}\n    {e}"))?.is_none() {
        let ctx = |e: String| format!("determinism, {fwd}\n    {e}");
        let data = FwdData::generate(fwd);
        let a = run_forward(k, fwd, &data).map_err(ctx)?;
        let b = run_forward(k, fwd, &data).map_err(ctx)?;
        for i in 0..fwd.m {
            if fwd_row_bits(&a, i) != fwd_row_bits(&b, i) {
                return Err(ctx(format!("two identical forward calls differ in row {i}")));
            }
        }
        ran = Ran::Passed;
    }
    if let Some(reason) = supported(k, Direction::Backward, &bwd.desc, &bwd.dtypes).map_err(|e| format!("{bwd}\n    {e}"))? {
        return Ok(if ran == Ran::Passed { ran } else { Ran::Skipped(reason) });
    }
    let ctx = |e: String| format!("determinism, {bwd}\n    {e}");
    let data = BwdData::generate(bwd);
    let a = run_backward(k, bwd, &data).map_err(ctx)?;
    let b = run_backward(k, bwd, &data).map_err(ctx)?;
    let mut msg = String::new();
    if !a.dx.bits_eq(&b.dx) {
        let _ = write!(msg, "dx differs; ");
    }
    for (what, x, y) in [("dw", &a.dw, &b.dw), ("db", &a.db, &b.db)] {
        if let (Some((x, _)), Some((y, _))) = (x, y) {
            if !x.bits_eq(y) {
                let j = (0..x.len()).find(|&j| bits_at(x, j) != bits_at(y, j)).unwrap_or(0);
                let _ = write!(msg, "{what} differs (first at buffer index {j}: {:e} vs {:e}); ", x.get_f32(j), y.get_f32(j));
            }
        }
    }
    if msg.is_empty() {
        Ok(Ran::Passed)
    } else {
        Err(ctx(format!("two identical backward calls are not bitwise equal: {msg}")))
    }
}
