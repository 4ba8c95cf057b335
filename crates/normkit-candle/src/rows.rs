//! From candle's strided layouts to normkit's row views.
//!
//! normkit reads an `M × N` operand as rows of `N` contiguous elements, `stride` elements apart,
//! from an element offset. A candle tensor of any rank `[d0, …, dk, N]` is such a view when its
//! last dimension has stride 1 and its leading dimensions collapse into one with a uniform row
//! stride (a contiguous tensor, a narrow of the last dimension of a wider one, a slice of rows,
//! …). Anything else (a transpose, a broadcast along a leading dimension) is made contiguous by
//! the caller first, through candle's own `contiguous`, which keeps the gradient path.

use candle_core::{Layout, Tensor};

/// The rows of `layout` as normkit sees them, or `None` when they are not evenly spaced rows of
/// contiguous elements. A rank-0 layout is one row of one element.
pub(crate) fn rows_of(layout: &Layout) -> Option<normkit::Layout> {
    let dims = layout.dims();
    let strides = layout.stride();
    let (n, lead_dims, lead_strides) = match dims.split_last() {
        Some((&n, lead)) => (n, lead, &strides[..lead.len()]),
        None => (1, &[][..], &[][..]),
    };
    // The inner stride must be 1 (it does not matter for a row of at most one element).
    if n > 1 && strides.last().copied() != Some(1) {
        return None;
    }
    let m: usize = lead_dims.iter().product();
    // Leading dimensions of size 1 never move the pointer; the others must nest exactly: each
    // steps over all the rows of the ones inside it.
    let moving: Vec<(usize, usize)> = lead_dims.iter().zip(lead_strides).filter(|(&d, _)| d > 1).map(|(&d, &s)| (d, s)).collect();
    let stride = match moving.last() {
        None => n,
        Some(&(_, s)) => s,
    };
    for pair in moving.windows(2) {
        let ((_, s_outer), (d_inner, s_inner)) = (pair[0], pair[1]);
        if Some(s_outer) != d_inner.checked_mul(s_inner) {
            return None;
        }
    }
    Some(normkit::Layout::strided(m, n, stride).with_offset(layout.start_offset()))
}

/// `t` itself when normkit can read its rows in place, else a contiguous copy (through candle,
/// so gradients still flow to `t`).
pub(crate) fn rowable(t: &Tensor) -> candle_core::Result<Tensor> {
    if rows_of(t.layout()).is_some_and(|l| l.stride >= l.cols) {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}
