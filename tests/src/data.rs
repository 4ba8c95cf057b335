//! Test data: seeded inputs, poison and gap sentinels, placing dense rows into strided buffers.

use crate::rng::Rng;
use normkit_core::{bf16, f16, round_to, DType, HostBuf, Layout, Span};

/// Bits written into every output element before a call (a quiet NaN with a recognisable payload):
/// an output element the kernel forgets to write fails the value check.
pub fn poison_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => 0x7FC0_0BAD,
        DType::F16 => 0x7E0B,
        DType::BF16 => 0x7FCB,
        // A NaN in every FP8 format (the fnuz formats have only 0x80).
        DType::F8E4M3 | DType::F8E5M2 => 0x7F,
        other => fp8_nan_or_panic(other),
    }
}

/// Bits of the gap elements of *input* buffers (between rows, before the offset, after the end):
/// another NaN, so a kernel that reads outside its rows (wrong stride, masked tails multiplied by
/// zero) produces NaN and fails.
pub fn gap_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => 0x7FC0_0DAD,
        DType::F16 => 0x7E0D,
        DType::BF16 => 0x7FCD,
        DType::F8E4M3 | DType::F8E5M2 => 0xFF,
        other => fp8_nan_or_panic(other),
    }
}

/// A buffer of `len` elements all holding `bits`.
pub fn buf_of_bits(dtype: DType, len: usize, bits: u32) -> HostBuf {
    match dtype {
        DType::F32 => HostBuf::F32(vec![f32::from_bits(bits); len]),
        DType::F16 => HostBuf::F16(vec![f16::from_bits(bits as u16); len]),
        DType::BF16 => HostBuf::BF16(vec![bf16::from_bits(bits as u16); len]),
        other => HostBuf::from_fp8_bits(other, &vec![bits as u8; len]).unwrap_or_else(|| panic!("unknown dtype {other}")),
    }
}

/// The NaN of the fnuz formats (`0x80`, their only one); panics on a dtype the suite does not know.
fn fp8_nan_or_panic(d: DType) -> u32 {
    match d {
        DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => 0x80,
        other => panic!("unknown dtype {other}"),
    }
}

/// Writes `v` (rounded to the buffer's dtype) at `i`.
pub fn set_f32(buf: &mut HostBuf, i: usize, v: f32) {
    match buf {
        HostBuf::F32(b) => b[i] = v,
        HostBuf::F16(b) => b[i] = f16::from_f32(v),
        HostBuf::BF16(b) => b[i] = bf16::from_f32(v),
        other => {
            let dt = normkit_core::Buffer::dtype(other);
            let bits = HostBuf::from_f32(dt, &[v]).as_bytes()[0];
            other.as_bytes_mut()[i] = bits;
        }
    }
}

/// Element `i` as raw bits.
pub fn bits_at(buf: &HostBuf, i: usize) -> u32 {
    match buf {
        HostBuf::F32(b) => b[i].to_bits(),
        HostBuf::F16(b) => b[i].to_bits() as u32,
        HostBuf::BF16(b) => b[i].to_bits() as u32,
        other => other.as_bytes()[i] as u32,
    }
}

/// A buffer of `len` elements of `fill_bits` with the dense `rows × cols` matrix `dense` placed at
/// `layout` (rows converted in parallel for large matrices).
pub fn place_mat(dtype: DType, dense: &[f32], layout: &Layout, len: usize, fill_bits: u32) -> HostBuf {
    let mut b = buf_of_bits(dtype, len, fill_bits);
    match &mut b {
        HostBuf::F32(v) => place_rows(v, dense, layout, |x| x),
        HostBuf::F16(v) => place_rows(v, dense, layout, f16::from_f32),
        HostBuf::BF16(v) => place_rows(v, dense, layout, bf16::from_f32),
        other => {
            // FP8 (outputs only; used for reference buffers): encode, then copy row by row.
            let enc = HostBuf::from_f32(normkit_core::Buffer::dtype(other), dense);
            let bytes = other.as_bytes_mut();
            for i in 0..layout.rows {
                let at = layout.offset + i * layout.stride;
                bytes[at..at + layout.cols].copy_from_slice(&enc.as_bytes()[i * layout.cols..(i + 1) * layout.cols]);
            }
        }
    }
    b
}

fn place_rows<T: Copy + Send>(buf: &mut [T], dense: &[f32], l: &Layout, conv: fn(f32) -> T) {
    if l.rows == 0 || l.cols == 0 {
        return;
    }
    let body = &mut buf[l.offset..];
    // Row i starts at i·stride of `body`; hand out disjoint row slices to the workers.
    let mut rows: Vec<(&mut [T], &[f32])> = Vec::with_capacity(l.rows);
    let mut rest = body;
    for i in 0..l.rows {
        let take = if i + 1 == l.rows { l.cols } else { l.stride };
        let (row, tail) = rest.split_at_mut(take);
        rows.push((&mut row[..l.cols], &dense[i * l.cols..(i + 1) * l.cols]));
        rest = tail;
    }
    let per = rows.len().div_ceil(crate::par::workers(l.rows, l.cols));
    std::thread::scope(|s| {
        for chunk in rows.chunks_mut(per.max(1)) {
            s.spawn(move || {
                for (dst, src) in chunk.iter_mut() {
                    for (d, &v) in dst.iter_mut().zip(src.iter()) {
                        *d = conv(v);
                    }
                }
            });
        }
    });
}

/// A buffer of `len` elements of `fill_bits` with `values` placed at `span`.
pub fn place_vec(dtype: DType, values: &[f32], span: &Span, len: usize, fill_bits: u32) -> HostBuf {
    let mut b = buf_of_bits(dtype, len, fill_bits);
    for (j, &v) in values.iter().enumerate() {
        set_f32(&mut b, span.offset + j, v);
    }
    b
}

/// Reads the dense `rows × cols` matrix at `layout` out of `vals` (a buffer widened to f32).
pub fn gather_mat(vals: &[f32], layout: &Layout) -> Vec<f32> {
    let mut out = Vec::with_capacity(layout.rows * layout.cols);
    for i in 0..layout.rows {
        let s = layout.offset + i * layout.stride;
        out.extend_from_slice(&vals[s..s + layout.cols]);
    }
    out
}

/// The scale pattern of an activation row, chosen by the row's identity so that every batch of
/// five or more rows mixes them: unit scale, 1e-3, 1e3, and a large mean (1e3 + noise) that makes
/// LayerNorm's `E[x²] − μ²` cancel catastrophically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Unit,
    Small,
    Large,
    LargeMean,
}

impl RowKind {
    pub fn of(row_id: u64) -> RowKind {
        match row_id % 5 {
            0 | 4 => RowKind::Unit,
            1 => RowKind::LargeMean,
            2 => RowKind::Small,
            _ => RowKind::Large,
        }
    }
}

/// A non-zero sample of `dtype`: `center + std·N(0,1)` rounded, resampled while it rounds to zero.
fn sample(rng: &mut Rng, dtype: DType, center: f64, std: f64) -> f32 {
    loop {
        let v = round_to(dtype, (center + std * rng.normal()) as f32);
        if v != 0.0 && v.is_finite() {
            return v;
        }
    }
}

/// Tensor tags for [`Rng::keyed`], so `x`, `residual`, `dy`… of one row are independent.
pub mod tag {
    pub const X: u64 = 1;
    pub const RESIDUAL: u64 = 2;
    pub const WEIGHT: u64 = 3;
    pub const BIAS: u64 = 4;
    pub const DY: u64 = 5;
    pub const DRES: u64 = 6;
}

/// One activation row (`x`, `residual`, the normalised input of a backward case) of `dtype`,
/// determined by `(seed, tag, row_id)` alone.
pub fn act_row(seed: u64, tag: u64, row_id: u64, n: usize, dtype: DType) -> Vec<f32> {
    let mut rng = Rng::keyed(seed, tag, row_id);
    let (center, std) = match RowKind::of(row_id) {
        RowKind::Unit => (0.0, 1.0),
        RowKind::Small => (0.0, 1e-3),
        RowKind::Large => (0.0, 1e3),
        // Noise of at least 4 ulps of the dtype at 1e3, so the row is not constant after rounding
        // (f32: 1, f16 ulp 0.5 → 2, bf16 ulp 8 → 32).
        RowKind::LargeMean => (1e3, (4.0 * 2.0 * dtype.unit_roundoff() * 1e3).max(1.0)),
    };
    (0..n).map(|_| sample(&mut rng, dtype, center, std)).collect()
}

/// One gradient row (`dy`, `d_residual_out`): unit normal with a per-row scale of 1e-2, 1 or 1e2.
pub fn grad_row(seed: u64, tag: u64, row_id: u64, n: usize, dtype: DType) -> Vec<f32> {
    let mut rng = Rng::keyed(seed, tag, row_id);
    let std = [1.0, 1e-2, 1.0, 1e2][(row_id % 4) as usize];
    (0..n).map(|_| sample(&mut rng, dtype, 0.0, std)).collect()
}

/// A weight vector: around 1 (offset 0) or around 0 (zero-centred, offset 1), so `w + offset` is
/// around 1 either way.
pub fn weight_vec(seed: u64, n: usize, dtype: DType, offset: f32) -> Vec<f32> {
    let mut rng = Rng::keyed(seed, tag::WEIGHT, 0);
    let center = if offset == 0.0 { 1.0 } else { 0.0 };
    (0..n).map(|_| sample(&mut rng, dtype, center, 0.5)).collect()
}

/// A bias vector.
pub fn bias_vec(seed: u64, n: usize, dtype: DType) -> Vec<f32> {
    let mut rng = Rng::keyed(seed, tag::BIAS, 0);
    (0..n).map(|_| sample(&mut rng, dtype, 0.0, 0.5)).collect()
}

/// A dense `ids.len() × n` matrix whose row `i` is `row(ids[i])`, generated in parallel for large
/// sizes.
pub fn gen_mat(ids: &[u64], n: usize, row: impl Fn(u64) -> Vec<f32> + Sync) -> Vec<f32> {
    let chunks = crate::par::map_chunks(ids.len(), n, |r| {
        let mut out = Vec::with_capacity(r.len() * n);
        for &id in &ids[r] {
            out.extend(row(id));
        }
        out
    });
    chunks.concat()
}
