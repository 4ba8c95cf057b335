//! Host memory: the CPU backend's buffer, and the staging format every backend uploads from and
//! downloads to.

use crate::dtype::DType;
use crate::tensor::Buffer;
use half::{bf16, f16};

/// An owned host tensor of one dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuf {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
}

impl HostBuf {
    /// `len` zeros.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        Self::filled(dtype, len, 0.0)
    }

    /// `len` copies of `v` rounded to `dtype` (NaN is a good poison for outputs).
    pub fn filled(dtype: DType, len: usize, v: f32) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(vec![v; len]),
            DType::F16 => HostBuf::F16(vec![f16::from_f32(v); len]),
            DType::BF16 => HostBuf::BF16(vec![bf16::from_f32(v); len]),
        }
    }

    /// `values` rounded to `dtype` (round to nearest even).
    pub fn from_f32(dtype: DType, values: &[f32]) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(values.to_vec()),
            DType::F16 => HostBuf::F16(values.iter().map(|&v| f16::from_f32(v)).collect()),
            DType::BF16 => HostBuf::BF16(values.iter().map(|&v| bf16::from_f32(v)).collect()),
        }
    }

    /// Every element widened to `f32`.
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match self {
            HostBuf::F32(v) => v.clone(),
            HostBuf::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            HostBuf::BF16(v) => v.iter().map(|x| x.to_f32()).collect(),
        }
    }

    /// Element `i` widened to `f32`. Panics if `i` is out of range, like slice indexing.
    pub fn get_f32(&self, i: usize) -> f32 {
        match self {
            HostBuf::F32(v) => v[i],
            HostBuf::F16(v) => v[i].to_f32(),
            HostBuf::BF16(v) => v[i].to_f32(),
        }
    }

    /// The raw bit patterns, widened to `u32`, for bitwise comparisons (NaN-safe).
    pub fn to_bits_vec(&self) -> Vec<u32> {
        match self {
            HostBuf::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            HostBuf::F16(v) => v.iter().map(|x| x.to_bits() as u32).collect(),
            HostBuf::BF16(v) => v.iter().map(|x| x.to_bits() as u32).collect(),
        }
    }

    /// Bitwise equality (unlike `==`, NaN equals the same NaN).
    pub fn bits_eq(&self, other: &HostBuf) -> bool {
        self.dtype() == other.dtype() && self.to_bits_vec() == other.to_bits_vec()
    }

    /// The bytes of the buffer, little-endian as in memory.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: f32, f16 and bf16 are plain-old-data with no padding and no invalid bit
        // patterns; the byte slice covers exactly the vector's initialised elements and borrows
        // `self`, so it cannot outlive or alias a mutation of the vector.
        unsafe {
            match self {
                HostBuf::F32(v) => std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 4),
                HostBuf::F16(v) => std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 2),
                HostBuf::BF16(v) => std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 2),
            }
        }
    }

    /// The bytes of the buffer, writable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_bytes`; every bit pattern is a valid f32/f16/bf16, so any bytes
        // written through the slice leave the vector valid.
        unsafe {
            match self {
                HostBuf::F32(v) => std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 4),
                HostBuf::F16(v) => std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 2),
                HostBuf::BF16(v) => std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 2),
            }
        }
    }

    /// Builds a buffer of `dtype` from little-endian bytes. `None` if the length is not a
    /// multiple of the element size.
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Option<Self> {
        let es = dtype.size_bytes();
        if !bytes.len().is_multiple_of(es) {
            return None;
        }
        let mut b = HostBuf::zeros(dtype, bytes.len() / es);
        b.as_bytes_mut().copy_from_slice(bytes);
        Some(b)
    }
}

impl Buffer for HostBuf {
    fn dtype(&self) -> DType {
        match self {
            HostBuf::F32(_) => DType::F32,
            HostBuf::F16(_) => DType::F16,
            HostBuf::BF16(_) => DType::BF16,
        }
    }
    fn len(&self) -> usize {
        match self {
            HostBuf::F32(v) => v.len(),
            HostBuf::F16(v) => v.len(),
            HostBuf::BF16(v) => v.len(),
        }
    }
}

impl From<Vec<f32>> for HostBuf {
    fn from(v: Vec<f32>) -> Self {
        HostBuf::F32(v)
    }
}
impl From<Vec<f16>> for HostBuf {
    fn from(v: Vec<f16>) -> Self {
        HostBuf::F16(v)
    }
}
impl From<Vec<bf16>> for HostBuf {
    fn from(v: Vec<bf16>) -> Self {
        HostBuf::BF16(v)
    }
}
