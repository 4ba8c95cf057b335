//! Host memory: the CPU backend's buffer, and the staging format every backend uploads from and
//! downloads to.

use crate::dtype::DType;
use crate::error::{NormError, Result};
use crate::fp8::{self, F8E4M3Fnuz, F8E5M2Fnuz};
use crate::tensor::Buffer;
use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use std::marker::PhantomData;
use std::sync::OnceLock;

/// The most bytes one host buffer allocated through the fallible paths ([`HostBuf::try_zeros`],
/// [`HostBuf::try_clone`], and so `CpuBackend::alloc` / `upload` / `download`) may take:
/// `isize::MAX` (Rust's limit for one allocation) and, on Linux, the machine's physical memory
/// plus swap (`MemTotal + SwapTotal` of `/proc/meminfo`). The second bound matters because Linux
/// may overcommit: an allocation of 16 TiB on a 24 GiB machine can "succeed" lazily and kill the
/// process when it is touched; a request that can never be backed is refused up front instead.
/// Read once per process.
pub(crate) fn host_alloc_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let cap = isize::MAX as u64;
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb.saturating_mul(1024))
        };
        match field("MemTotal:") {
            Some(total) if total > 0 => cap.min(total.saturating_add(field("SwapTotal:").unwrap_or(0))),
            _ => cap,
        }
    })
}

/// The error of a refused host allocation.
fn host_limit(requested: u64, available: u64) -> NormError {
    NormError::ResourceLimit { resource: "host memory (bytes)", requested, available }
}

/// `len · elem` bytes, checked against `limit`.
fn host_bytes(len: usize, elem: usize, limit: u64) -> Result<usize> {
    let exact = len as u128 * elem as u128;
    match usize::try_from(exact) {
        Ok(b) if (b as u64) <= limit => Ok(b),
        _ => Err(host_limit(u64::try_from(exact).unwrap_or(u64::MAX), limit)),
    }
}

/// Element types whose all-zero bit pattern is a valid value (`0.0`).
///
/// # Safety
/// Implementors must be plain data for which every zero byte is a valid value.
pub(crate) unsafe trait ZeroValid: Copy {}
// SAFETY: the zero bit pattern is +0.0 for each of these float types.
unsafe impl ZeroValid for f32 {}
// SAFETY: as above.
unsafe impl ZeroValid for f16 {}
// SAFETY: as above.
unsafe impl ZeroValid for bf16 {}
// SAFETY: zero bytes are the value 0.
unsafe impl ZeroValid for u8 {}
// SAFETY: the four FP8 element types are `repr(transparent)` over a `u8`; 0x00 is +0.0 in each.
unsafe impl ZeroValid for F8E4M3 {}
// SAFETY: as above.
unsafe impl ZeroValid for F8E5M2 {}
// SAFETY: as above.
unsafe impl ZeroValid for F8E4M3Fnuz {}
// SAFETY: as above.
unsafe impl ZeroValid for F8E5M2Fnuz {}

/// The FP8 element types: one byte, any bit pattern valid.
///
/// # Safety
/// Implementors must be `repr(transparent)` over `u8`.
pub(crate) unsafe trait Fp8Elem: Copy {
    const DTYPE: DType;
    fn from_bits(b: u8) -> Self;
}
macro_rules! fp8_elem {
    ($($t:ty => $d:ident),*) => {$(
        // SAFETY: `float8::F8E4M3`/`F8E5M2` and the fnuz types of `crate::fp8` are
        // `#[repr(transparent)]` structs of one `u8`.
        unsafe impl Fp8Elem for $t {
            const DTYPE: DType = DType::$d;
            fn from_bits(b: u8) -> Self {
                <$t>::from_bits(b)
            }
        }
    )*};
}
fp8_elem!(F8E4M3 => F8E4M3, F8E5M2 => F8E5M2, F8E4M3Fnuz => F8E4M3Fnuz, F8E5M2Fnuz => F8E5M2Fnuz);

/// The bytes of a slice of FP8 elements.
fn fp8_bytes<T: Fp8Elem>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is `repr(transparent)` over `u8` (`Fp8Elem`), so the slice is `v.len()` initialised
    // bytes; the result borrows `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len()) }
}

/// The bytes of a slice of FP8 elements, writable (every byte is a valid element).
fn fp8_bytes_mut<T: Fp8Elem>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `fp8_bytes`; any byte written is a valid `T`.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len()) }
}

/// `values` rounded to the FP8 format of `T` (saturating round to nearest even).
fn fp8_from_f32<T: Fp8Elem>(values: &[f32]) -> Vec<T> {
    match fp8::format(T::DTYPE) {
        Some(f) => values.iter().map(|&v| T::from_bits(fp8::encode(f, v))).collect(),
        None => Vec::new(),
    }
}

/// `len` zeros, or [`NormError::ResourceLimit`] when `len` elements exceed `limit` bytes (or
/// `usize`) or the allocator refuses. Never panics or aborts. The memory comes from the global
/// allocator's zeroed allocation (fresh pages stay untouched until used, as with `vec![0; len]`).
pub(crate) fn try_zeroed_vec<T: ZeroValid>(len: usize, limit: u64) -> Result<Vec<T>> {
    let bytes = host_bytes(len, std::mem::size_of::<T>(), limit)?;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| host_limit(bytes as u64, limit))?;
    // SAFETY: `layout` has a non-zero size (`bytes > 0`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(host_limit(bytes as u64, limit));
    }
    // SAFETY: `p` was allocated by the global allocator with the layout of `[T; len]` (so `T`'s
    // alignment and a size of `len · size_of::<T>()` bytes, exactly what a `Vec<T>` of capacity
    // `len` uses), and its `len` elements are initialised: zero bytes are a valid `T` (`ZeroValid`).
    Ok(unsafe { Vec::from_raw_parts(p.cast::<T>(), len, len) })
}

/// A copy of `v`, with the same checks as [`try_zeroed_vec`].
fn try_copy<T: Copy>(v: &[T], limit: u64) -> Result<Vec<T>> {
    let bytes = host_bytes(v.len(), std::mem::size_of::<T>(), limit)?;
    let mut out = Vec::new();
    out.try_reserve_exact(v.len()).map_err(|_| host_limit(bytes as u64, limit))?;
    out.extend_from_slice(v);
    Ok(out)
}

/// An owned host tensor of one dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuf {
    /// f32 elements.
    F32(Vec<f32>),
    /// f16 elements.
    F16(Vec<f16>),
    /// bf16 elements.
    BF16(Vec<bf16>),
    /// FP8 e4m3 (OCP E4M3FN) elements.
    F8E4M3(Vec<F8E4M3>),
    /// FP8 e5m2 (OCP E5M2) elements.
    F8E5M2(Vec<F8E5M2>),
    /// FP8 e4m3fnuz (AMD gfx942) elements.
    F8E4M3Fnuz(Vec<F8E4M3Fnuz>),
    /// FP8 e5m2fnuz (AMD gfx942) elements.
    F8E5M2Fnuz(Vec<F8E5M2Fnuz>),
}

impl HostBuf {
    /// `len` zeros. Panics (or aborts) like `vec![0; len]` when the memory cannot be had; see
    /// [`HostBuf::try_zeros`] for sizes that come from outside the program.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        Self::filled(dtype, len, 0.0)
    }

    /// The most bytes one buffer of the fallible paths ([`HostBuf::try_zeros`],
    /// [`HostBuf::try_clone`], so `CpuBackend::alloc`/`upload`/`download`) may take:
    /// `isize::MAX` and, on Linux, physical memory + swap (see the source of `host_alloc_limit`).
    pub fn alloc_limit() -> u64 {
        host_alloc_limit()
    }

    /// `len` zeros, or [`NormError::ResourceLimit`] (`requested` and `available` in bytes) when
    /// `len` elements overflow `usize`, exceed [`HostBuf::alloc_limit`], or the allocator refuses.
    /// Never panics or aborts. `CpuBackend::alloc` is this.
    pub fn try_zeros(dtype: DType, len: usize) -> Result<Self> {
        Self::try_zeros_within(dtype, len, host_alloc_limit())
    }

    /// [`HostBuf::try_zeros`] with an explicit byte limit (tests use it to reach the allocator
    /// with requests the machine's limit would refuse first).
    pub(crate) fn try_zeros_within(dtype: DType, len: usize, limit: u64) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => HostBuf::F32(try_zeroed_vec(len, limit)?),
            DType::F16 => HostBuf::F16(try_zeroed_vec(len, limit)?),
            DType::BF16 => HostBuf::BF16(try_zeroed_vec(len, limit)?),
            DType::F8E4M3 => HostBuf::F8E4M3(try_zeroed_vec(len, limit)?),
            DType::F8E5M2 => HostBuf::F8E5M2(try_zeroed_vec(len, limit)?),
            DType::F8E4M3Fnuz => HostBuf::F8E4M3Fnuz(try_zeroed_vec(len, limit)?),
            DType::F8E5M2Fnuz => HostBuf::F8E5M2Fnuz(try_zeroed_vec(len, limit)?),
        })
    }

    /// A copy, or [`NormError::ResourceLimit`] when the memory cannot be had (never panics or
    /// aborts). `CpuBackend::upload` and `download` are this.
    pub fn try_clone(&self) -> Result<Self> {
        let limit = host_alloc_limit();
        Ok(match self {
            HostBuf::F32(v) => HostBuf::F32(try_copy(v, limit)?),
            HostBuf::F16(v) => HostBuf::F16(try_copy(v, limit)?),
            HostBuf::BF16(v) => HostBuf::BF16(try_copy(v, limit)?),
            HostBuf::F8E4M3(v) => HostBuf::F8E4M3(try_copy(v, limit)?),
            HostBuf::F8E5M2(v) => HostBuf::F8E5M2(try_copy(v, limit)?),
            HostBuf::F8E4M3Fnuz(v) => HostBuf::F8E4M3Fnuz(try_copy(v, limit)?),
            HostBuf::F8E5M2Fnuz(v) => HostBuf::F8E5M2Fnuz(try_copy(v, limit)?),
        })
    }

    /// `len` copies of `v` rounded to `dtype` (NaN is a good poison for outputs; FP8 saturates).
    pub fn filled(dtype: DType, len: usize, v: f32) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(vec![v; len]),
            DType::F16 => HostBuf::F16(vec![f16::from_f32(v); len]),
            DType::BF16 => HostBuf::BF16(vec![bf16::from_f32(v); len]),
            _ => Self::from_f32(dtype, &[v]).repeat(len),
        }
    }

    /// A buffer of `len` copies of element 0 (FP8 only; empty otherwise).
    fn repeat(&self, len: usize) -> Self {
        match self {
            HostBuf::F8E4M3(v) => HostBuf::F8E4M3(vec![v[0]; len]),
            HostBuf::F8E5M2(v) => HostBuf::F8E5M2(vec![v[0]; len]),
            HostBuf::F8E4M3Fnuz(v) => HostBuf::F8E4M3Fnuz(vec![v[0]; len]),
            HostBuf::F8E5M2Fnuz(v) => HostBuf::F8E5M2Fnuz(vec![v[0]; len]),
            other => HostBuf::zeros(other.dtype(), 0),
        }
    }

    /// `values` rounded to `dtype` (round to nearest even; the FP8 dtypes saturate to ±max finite
    /// and keep NaN, see [`crate::round_to`]).
    pub fn from_f32(dtype: DType, values: &[f32]) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(values.to_vec()),
            DType::F16 => HostBuf::F16(values.iter().map(|&v| f16::from_f32(v)).collect()),
            DType::BF16 => HostBuf::BF16(values.iter().map(|&v| bf16::from_f32(v)).collect()),
            DType::F8E4M3 => HostBuf::F8E4M3(fp8_from_f32(values)),
            DType::F8E5M2 => HostBuf::F8E5M2(fp8_from_f32(values)),
            DType::F8E4M3Fnuz => HostBuf::F8E4M3Fnuz(fp8_from_f32(values)),
            DType::F8E5M2Fnuz => HostBuf::F8E5M2Fnuz(fp8_from_f32(values)),
        }
    }

    /// An FP8 buffer from its bit patterns; `None` if `dtype` is not an FP8 dtype.
    pub fn from_fp8_bits(dtype: DType, bits: &[u8]) -> Option<Self> {
        dtype.is_fp8().then(|| {
            let mut b = HostBuf::zeros(dtype, bits.len());
            b.as_bytes_mut().copy_from_slice(bits);
            b
        })
    }

    /// The FP8 format and bit patterns of an FP8 buffer.
    fn fp8_view(&self) -> Option<(fp8::Format, &[u8])> {
        let bytes = match self {
            HostBuf::F8E4M3(v) => fp8_bytes(v),
            HostBuf::F8E5M2(v) => fp8_bytes(v),
            HostBuf::F8E4M3Fnuz(v) => fp8_bytes(v),
            HostBuf::F8E5M2Fnuz(v) => fp8_bytes(v),
            _ => return None,
        };
        Some((fp8::format(self.dtype())?, bytes))
    }

    /// Every element widened to `f32`.
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match self {
            HostBuf::F32(v) => v.clone(),
            HostBuf::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            HostBuf::BF16(v) => v.iter().map(|x| x.to_f32()).collect(),
            _ => self.fp8_view().map(|(f, b)| b.iter().map(|&c| fp8::decode(f, c)).collect()).unwrap_or_default(),
        }
    }

    /// Element `i` widened to `f32`. Panics if `i` is out of range, like slice indexing.
    pub fn get_f32(&self, i: usize) -> f32 {
        match self {
            HostBuf::F32(v) => v[i],
            HostBuf::F16(v) => v[i].to_f32(),
            HostBuf::BF16(v) => v[i].to_f32(),
            _ => self.fp8_view().map_or(f32::NAN, |(f, b)| fp8::decode(f, b[i])),
        }
    }

    /// The raw bit patterns, widened to `u32`, for bitwise comparisons (NaN-safe).
    pub fn to_bits_vec(&self) -> Vec<u32> {
        match self {
            HostBuf::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            HostBuf::F16(v) => v.iter().map(|x| x.to_bits() as u32).collect(),
            HostBuf::BF16(v) => v.iter().map(|x| x.to_bits() as u32).collect(),
            _ => self.as_bytes().iter().map(|&b| b as u32).collect(),
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
                HostBuf::F8E4M3(v) => fp8_bytes(v),
                HostBuf::F8E5M2(v) => fp8_bytes(v),
                HostBuf::F8E4M3Fnuz(v) => fp8_bytes(v),
                HostBuf::F8E5M2Fnuz(v) => fp8_bytes(v),
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
                HostBuf::F8E4M3(v) => fp8_bytes_mut(v),
                HostBuf::F8E5M2(v) => fp8_bytes_mut(v),
                HostBuf::F8E4M3Fnuz(v) => fp8_bytes_mut(v),
                HostBuf::F8E5M2Fnuz(v) => fp8_bytes_mut(v),
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
            HostBuf::F8E4M3(_) => DType::F8E4M3,
            HostBuf::F8E5M2(_) => DType::F8E5M2,
            HostBuf::F8E4M3Fnuz(_) => DType::F8E4M3Fnuz,
            HostBuf::F8E5M2Fnuz(_) => DType::F8E5M2Fnuz,
        }
    }
    fn len(&self) -> usize {
        match self {
            HostBuf::F32(v) => v.len(),
            HostBuf::F16(v) => v.len(),
            HostBuf::BF16(v) => v.len(),
            HostBuf::F8E4M3(v) => v.len(),
            HostBuf::F8E5M2(v) => v.len(),
            HostBuf::F8E4M3Fnuz(v) => v.len(),
            HostBuf::F8E5M2Fnuz(v) => v.len(),
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for float8::F8E4M3 {}
    impl Sealed for float8::F8E5M2 {}
    impl Sealed for crate::F8E4M3Fnuz {}
    impl Sealed for crate::F8E5M2Fnuz {}
}

/// An element type a [`HostView`] can borrow: `f32`, [`struct@f16`], [`struct@bf16`], and the FP8
/// element types `float8::F8E4M3`, `float8::F8E5M2`, [`crate::F8E4M3Fnuz`], [`crate::F8E5M2Fnuz`]
/// (outputs only). Sealed.
pub trait HostElem: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The [`DType`] of this element type.
    const DTYPE: DType;
}

impl HostElem for f32 {
    const DTYPE: DType = DType::F32;
}
impl HostElem for f16 {
    const DTYPE: DType = DType::F16;
}
impl HostElem for bf16 {
    const DTYPE: DType = DType::BF16;
}
impl HostElem for F8E4M3 {
    const DTYPE: DType = DType::F8E4M3;
}
impl HostElem for F8E5M2 {
    const DTYPE: DType = DType::F8E5M2;
}
impl HostElem for F8E4M3Fnuz {
    const DTYPE: DType = DType::F8E4M3Fnuz;
}
impl HostElem for F8E5M2Fnuz {
    const DTYPE: DType = DType::F8E5M2Fnuz;
}

/// A borrowed host tensor: the CPU backend's way to run on memory it does not own (another
/// library's tensor storage) without copying it. Pass views to
/// [`CpuBackend::forward_view`](crate::cpu::CpuBackend::forward_view) and
/// [`CpuBackend::backward_view`](crate::cpu::CpuBackend::backward_view).
///
/// A view made from a shared slice ([`HostView::new`]) is read-only: given as an output it is
/// rejected by validation with [`NormError::ReadOnly`], before anything is written. A view made
/// from a mutable slice ([`HostView::new_mut`]) holds the exclusive borrow for `'a` and may be
/// an input or an output. So, as with [`HostBuf`], the borrow checker rules out an output that
/// overlaps another operand.
///
/// ```
/// use normkit_core::cpu::CpuBackend;
/// use normkit_core::{Forward, HostView, InOut, MatMut, MatRef, NormDesc, NormError, Operand, VecRef};
///
/// let x = [1.0f32, 2.0, 3.0, 4.0];
/// let w = [1.0f32, 1.0];
/// let mut y = [0.0f32; 4];
/// let (xv, wv) = (HostView::new(&x[..]), HostView::new(&w[..]));
/// let mut yv = HostView::new_mut(&mut y[..]);
/// let args = Forward::new(InOut::separate(MatRef::new(&xv, 2, 2), MatMut::new(&mut yv, 2, 2))).weight(VecRef::new(&wv));
/// CpuBackend::new().forward_view(&NormDesc::rms(1e-6), args)?;
/// assert!((y[0] - 1.0 / 2.5f32.sqrt()).abs() < 1e-6);
///
/// // A shared slice cannot be an output.
/// let mut ro = HostView::new(&x[..]);
/// let args = Forward::new(InOut::separate(MatRef::new(&xv, 2, 2), MatMut::new(&mut ro, 2, 2))).weight(VecRef::new(&wv));
/// let err = CpuBackend::new().forward_view(&NormDesc::rms(1e-6), args).unwrap_err();
/// assert!(matches!(err, NormError::ReadOnly { operand: Operand::Y }));
/// # Ok::<(), NormError>(())
/// ```
pub struct HostView<'a> {
    ptr: crate::cpu::convert::Ptr,
    len: usize,
    writable: bool,
    /// The borrow the view was made from (shared or exclusive; the stricter is recorded).
    _borrow: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for HostView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostView").field("dtype", &self.dtype()).field("len", &self.len).field("writable", &self.writable).finish()
    }
}

// SAFETY: a view is a `&'a [T]` or a `&'a mut [T]` of `T: Send + Sync` (f32, f16, bf16, the FP8
// element types), both of
// which are `Send` and `Sync`; nothing is written through a shared `&HostView` (the backend
// writes only through `&mut HostView` operands that are writable).
unsafe impl Send for HostView<'_> {}
// SAFETY: as above.
unsafe impl Sync for HostView<'_> {}

impl<'a> HostView<'a> {
    /// A read-only view of `s`: an input operand only.
    pub fn new<T: HostElem>(s: &'a [T]) -> Self {
        // Never written through: validation rejects a read-only view as an output.
        HostView { ptr: typed(s.as_ptr().cast_mut()), len: s.len(), writable: false, _borrow: PhantomData }
    }

    /// A writable view of `s`: an input or an output operand.
    pub fn new_mut<T: HostElem>(s: &'a mut [T]) -> Self {
        HostView { ptr: typed(s.as_mut_ptr()), len: s.len(), writable: true, _borrow: PhantomData }
    }

    /// A read-only view of a whole [`HostBuf`].
    pub fn of(buf: &'a HostBuf) -> Self {
        match buf {
            HostBuf::F32(v) => HostView::new(v),
            HostBuf::F16(v) => HostView::new(v),
            HostBuf::BF16(v) => HostView::new(v),
            HostBuf::F8E4M3(v) => HostView::new(v),
            HostBuf::F8E5M2(v) => HostView::new(v),
            HostBuf::F8E4M3Fnuz(v) => HostView::new(v),
            HostBuf::F8E5M2Fnuz(v) => HostView::new(v),
        }
    }

    /// A writable view of a whole [`HostBuf`].
    pub fn of_mut(buf: &'a mut HostBuf) -> Self {
        match buf {
            HostBuf::F32(v) => HostView::new_mut(v),
            HostBuf::F16(v) => HostView::new_mut(v),
            HostBuf::BF16(v) => HostView::new_mut(v),
            HostBuf::F8E4M3(v) => HostView::new_mut(v),
            HostBuf::F8E5M2(v) => HostView::new_mut(v),
            HostBuf::F8E4M3Fnuz(v) => HostView::new_mut(v),
            HostBuf::F8E5M2Fnuz(v) => HostView::new_mut(v),
        }
    }

    /// The typed base pointer (the CPU kernels' handle on the memory).
    pub(crate) fn raw(&self) -> crate::cpu::convert::Ptr {
        self.ptr
    }
}

/// The typed pointer of `p`. `HostElem` is sealed and implemented exactly for f32 (`F32`), f16
/// (`F16`), bf16 (`BF16`) and the four FP8 element types (one byte each, `repr(transparent)` over
/// `u8`), so the cast names the type `p` already points to.
fn typed<T: HostElem>(p: *mut T) -> crate::cpu::convert::Ptr {
    use crate::cpu::convert::Ptr;
    match T::DTYPE {
        DType::F32 => Ptr::F32(p.cast()),
        DType::F16 => Ptr::F16(p.cast()),
        DType::BF16 => Ptr::BF16(p.cast()),
        DType::F8E4M3 | DType::F8E5M2 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => Ptr::F8(T::DTYPE, p.cast()),
    }
}

impl<'a, T: HostElem> From<&'a [T]> for HostView<'a> {
    fn from(s: &'a [T]) -> Self {
        HostView::new(s)
    }
}
impl<'a, T: HostElem> From<&'a mut [T]> for HostView<'a> {
    fn from(s: &'a mut [T]) -> Self {
        HostView::new_mut(s)
    }
}

impl Buffer for HostView<'_> {
    fn dtype(&self) -> DType {
        match self.ptr {
            crate::cpu::convert::Ptr::F32(_) => DType::F32,
            crate::cpu::convert::Ptr::F16(_) => DType::F16,
            crate::cpu::convert::Ptr::BF16(_) => DType::BF16,
            crate::cpu::convert::Ptr::F8(d, _) => d,
        }
    }
    fn len(&self) -> usize {
        self.len
    }
    fn is_writable(&self) -> bool {
        self.writable
    }
}
