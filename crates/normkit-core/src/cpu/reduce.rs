//! Row reductions in fp32 with independent lanes.
//!
//! One serial sum per row is bound by the add latency (candle's weakness, see ANCHORS.md). Here
//! a row is summed into [`LANES`] independent accumulators (element `i` goes to lane `i % LANES`),
//! which the compiler turns into vector adds, then the lanes are folded by a fixed pairwise tree.
//! The order of every addition depends only on the row length `N`: this is what makes the forward
//! pass batch-invariant (the same row gives the same bits whatever `M`, the thread count or the
//! rows around it).

/// Independent accumulators per row: two AVX-512 / four AVX2 / eight SSE registers.
pub(crate) const LANES: usize = 32;

#[inline(always)]
fn fold(mut acc: [f32; LANES]) -> f32 {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            acc[j] += acc[j + w];
        }
    }
    acc[0]
}

/// `Σ x[i]`.
#[inline(always)]
pub(crate) fn sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            acc[j] += c[j];
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += v;
    }
    fold(acc)
}

/// `Σ (x[i] − c)²`; with `c = 0` the sum of squares.
#[inline(always)]
pub(crate) fn sum_sq_dev(x: &[f32], c: f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for ch in &mut chunks {
        for j in 0..LANES {
            let d = ch[j] - c;
            acc[j] += d * d;
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        let d = v - c;
        *a += d * d;
    }
    fold(acc)
}

/// `Σ x[i]²` (no subtraction, for RMSNorm).
#[inline(always)]
pub(crate) fn sum_sq(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for ch in &mut chunks {
        for j in 0..LANES {
            acc[j] += ch[j] * ch[j];
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += v * v;
    }
    fold(acc)
}

/// `Σ a[i]·b[i]`.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let mut ca = a.chunks_exact(LANES);
    let mut cb = b.chunks_exact(LANES);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for j in 0..LANES {
            acc[j] += x[j] * y[j];
        }
    }
    for ((s, &x), &y) in acc.iter_mut().zip(ca.remainder()).zip(cb.remainder()) {
        *s += x * y;
    }
    fold(acc)
}
