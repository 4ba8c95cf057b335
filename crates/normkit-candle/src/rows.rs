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

#[cfg(test)]
mod tests {
    use super::rows_of;
    use candle_core::{DType, Device, Tensor};

    fn rows(t: &Tensor) -> Option<(usize, usize, usize, usize)> {
        rows_of(t.layout()).map(|l| (l.rows, l.cols, l.stride, l.offset))
    }

    #[test]
    fn evenly_spaced_rows_are_read_in_place() -> candle_core::Result<()> {
        let t = Tensor::zeros((2, 3, 50), DType::F32, &Device::Cpu)?;
        assert_eq!(rows(&t), Some((6, 50, 50, 0)));
        // A narrow of the last dimension: rows 50 apart, from element 5.
        assert_eq!(rows(&t.narrow(2, 5, 40)?), Some((6, 40, 50, 5)));
        // A slice of rows of a rank-3 tensor, and a leading dimension of 1.
        assert_eq!(rows(&t.narrow(1, 1, 2)?), None, "rows 1..3 of each batch are not evenly spaced");
        assert_eq!(rows(&t.narrow(0, 1, 1)?), Some((3, 50, 50, 150)));
        assert_eq!(rows(&t.get(1)?.narrow(0, 1, 2)?), Some((2, 50, 50, 200)));
        // A rank-1 tensor is one row; a scalar one element.
        assert_eq!(rows(&Tensor::zeros(7, DType::F32, &Device::Cpu)?), Some((1, 7, 7, 0)));
        assert_eq!(rows(&Tensor::new(1f32, &Device::Cpu)?), Some((1, 1, 1, 0)));
        Ok(())
    }

    #[test]
    fn transposes_and_broadcasts_are_not_rows() -> candle_core::Result<()> {
        let t = Tensor::zeros((4, 8), DType::F32, &Device::Cpu)?;
        assert_eq!(rows(&t.t()?), None);
        // A broadcast along the rows has stride 0: rows_of reports it, rowable copies it.
        let b = Tensor::zeros(8, DType::F32, &Device::Cpu)?.broadcast_as((4, 8))?;
        assert_eq!(rows(&b), Some((4, 8, 0, 0)));
        assert!(super::rowable(&b)?.is_contiguous());
        Ok(())
    }
}
