//! Row views: how an op finds its operands inside a backend's buffers.
//!
//! A view never owns memory. It pairs a buffer (host or device, whatever the backend's
//! [`crate::NormKernel::Buffer`] is) with a [`Layout`]: `rows × cols` elements, row `i` starting
//! at element `offset + i·stride`. The inner stride is always 1. Exclusive access to outputs is
//! enforced by the borrow checker (`&mut B`), so two outputs can never alias each other; writing
//! an output over an input is spelled explicitly with [`InOut::InPlace`].

use crate::dtype::DType;
use crate::error::{NormError, Operand, Result};

/// A buffer a backend can read and write: a dtype and a length in elements.
pub trait Buffer {
    /// The element type of every element of the buffer.
    fn dtype(&self) -> DType;
    /// Length in elements of [`Buffer::dtype`].
    fn len(&self) -> usize;
    /// Whether the buffer holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The address of element 0, for buffers whose memory could overlap another's (device
    /// buffers built from raw pointers). `None` (the default) for buffers that own their memory
    /// exclusively, which safe references can never alias.
    fn base_addr(&self) -> Option<u64> {
        None
    }
    /// Which backend instance the buffer belongs to, for the ownership check every call makes
    /// ([`crate::validate_forward_for`], [`crate::validate_backward_for`]): `Some(id)` for a
    /// buffer only the backend whose [`crate::NormKernel::owner_id`] is `Some(id)` may use (a
    /// device buffer tied to its context); `None` (the default) for one that any backend of its
    /// type may use (host memory, raw device views not tied to a backend).
    fn owner(&self) -> Option<u64> {
        None
    }
    /// Whether the buffer may be written. `false` only for buffers that borrow memory read-only
    /// (a [`crate::HostView`] made from a shared slice); validation rejects such a buffer as an
    /// output with [`NormError::ReadOnly`] before anything runs. `true` by default.
    fn is_writable(&self) -> bool {
        true
    }
}

/// Where a 2-D operand lies in its buffer (all in elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Number of rows, `M`.
    pub rows: usize,
    /// Elements per row, `N` (the hidden size the norm runs over).
    pub cols: usize,
    /// Distance between the starts of consecutive rows; `>= cols`.
    pub stride: usize,
    /// Index of the first element of row 0.
    pub offset: usize,
}

impl Layout {
    /// Densely packed rows.
    pub const fn contiguous(rows: usize, cols: usize) -> Self {
        Layout { rows, cols, stride: cols, offset: 0 }
    }

    /// Rows `stride` elements apart.
    pub const fn strided(rows: usize, cols: usize, stride: usize) -> Self {
        Layout { rows, cols, stride, offset: 0 }
    }

    /// The same layout starting at element `offset` of the buffer.
    pub const fn with_offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Elements the buffer must hold: `offset + (rows−1)·stride + cols`, or `offset` when empty.
    /// `None` on overflow.
    pub fn span(&self) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 {
            return Some(self.offset);
        }
        (self.rows - 1).checked_mul(self.stride)?.checked_add(self.cols)?.checked_add(self.offset)
    }

    /// Whether rows follow each other with no gap.
    pub const fn is_contiguous(&self) -> bool {
        self.stride == self.cols
    }
}

/// A vector operand (weight, bias, statistics, dW, dB): `len` elements from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    /// Index of the first element.
    pub offset: usize,
    /// Number of elements.
    pub len: usize,
}

/// A read-only 2-D view.
#[derive(Debug)]
pub struct MatRef<'a, B: ?Sized> {
    /// The buffer the view reads.
    pub buf: &'a B,
    /// Where the rows lie in the buffer.
    pub layout: Layout,
}

impl<B: ?Sized> Clone for MatRef<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: ?Sized> Copy for MatRef<'_, B> {}

/// A writable 2-D view.
#[derive(Debug)]
pub struct MatMut<'a, B: ?Sized> {
    /// The buffer the view writes (and, in place, reads).
    pub buf: &'a mut B,
    /// Where the rows lie in the buffer.
    pub layout: Layout,
}

/// A read-only vector view.
#[derive(Debug)]
pub struct VecRef<'a, B: ?Sized> {
    /// The buffer the view reads.
    pub buf: &'a B,
    /// Which elements of the buffer.
    pub span: Span,
}

impl<B: ?Sized> Clone for VecRef<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: ?Sized> Copy for VecRef<'_, B> {}

/// A writable vector view.
#[derive(Debug)]
pub struct VecMut<'a, B: ?Sized> {
    /// The buffer the view writes.
    pub buf: &'a mut B,
    /// Which elements of the buffer.
    pub span: Span,
}

impl<'a, B: Buffer + ?Sized> MatRef<'a, B> {
    /// The whole buffer as `rows × cols`, densely packed.
    pub fn new(buf: &'a B, rows: usize, cols: usize) -> Self {
        MatRef { buf, layout: Layout::contiguous(rows, cols) }
    }
    /// Rows where `layout` says: strided, starting at an offset (checked when the call is
    /// validated, not here).
    pub fn with_layout(buf: &'a B, layout: Layout) -> Self {
        MatRef { buf, layout }
    }
}

impl<'a, B: Buffer + ?Sized> MatMut<'a, B> {
    /// The whole buffer as `rows × cols`, densely packed.
    pub fn new(buf: &'a mut B, rows: usize, cols: usize) -> Self {
        MatMut { buf, layout: Layout::contiguous(rows, cols) }
    }
    /// Rows where `layout` says: strided, starting at an offset (checked when the call is
    /// validated, not here).
    pub fn with_layout(buf: &'a mut B, layout: Layout) -> Self {
        MatMut { buf, layout }
    }
    /// Reborrows as read-only.
    pub fn as_ref(&self) -> MatRef<'_, B> {
        MatRef { buf: &*self.buf, layout: self.layout }
    }
    /// Reborrows for a shorter lifetime.
    pub fn reborrow(&mut self) -> MatMut<'_, B> {
        MatMut { buf: &mut *self.buf, layout: self.layout }
    }
}

impl<'a, B: Buffer + ?Sized> VecRef<'a, B> {
    /// The whole buffer.
    pub fn new(buf: &'a B) -> Self {
        let len = buf.len();
        VecRef { buf, span: Span { offset: 0, len } }
    }
    /// `len` elements from element `offset` (checked when the call is validated, not here).
    pub fn with_span(buf: &'a B, offset: usize, len: usize) -> Self {
        VecRef { buf, span: Span { offset, len } }
    }
}

impl<'a, B: Buffer + ?Sized> VecMut<'a, B> {
    /// The whole buffer.
    pub fn new(buf: &'a mut B) -> Self {
        let len = buf.len();
        VecMut { buf, span: Span { offset: 0, len } }
    }
    /// `len` elements from element `offset` (checked when the call is validated, not here).
    pub fn with_span(buf: &'a mut B, offset: usize, len: usize) -> Self {
        VecMut { buf, span: Span { offset, len } }
    }
    /// Reborrows for a shorter lifetime.
    pub fn reborrow(&mut self) -> VecMut<'_, B> {
        VecMut { buf: &mut *self.buf, span: self.span }
    }
}

/// An input and the output computed from it: either two views, or one view overwritten in place.
#[derive(Debug)]
pub enum InOut<'a, B: ?Sized> {
    /// The output is written to its own view; the input is only read.
    Separate {
        /// The input view.
        input: MatRef<'a, B>,
        /// The output view: same rows and columns as the input, its own buffer (the borrow
        /// checker keeps it apart from the input).
        output: MatMut<'a, B>,
    },
    /// The output overwrites the input (same buffer, same layout, same dtype).
    InPlace(MatMut<'a, B>),
}

impl<'a, B: Buffer + ?Sized> InOut<'a, B> {
    /// Read `input`, write `output` ([`InOut::Separate`]).
    pub fn separate(input: MatRef<'a, B>, output: MatMut<'a, B>) -> Self {
        InOut::Separate { input, output }
    }
    /// Read `io`, then overwrite it with the output ([`InOut::InPlace`]).
    pub fn in_place(io: MatMut<'a, B>) -> Self {
        InOut::InPlace(io)
    }
    /// Layout of the input.
    pub fn input_layout(&self) -> Layout {
        match self {
            InOut::Separate { input, .. } => input.layout,
            InOut::InPlace(m) => m.layout,
        }
    }
    /// Layout of the output.
    pub fn output_layout(&self) -> Layout {
        match self {
            InOut::Separate { output, .. } => output.layout,
            InOut::InPlace(m) => m.layout,
        }
    }
    /// Dtype of the input's buffer.
    pub fn input_dtype(&self) -> DType {
        match self {
            InOut::Separate { input, .. } => input.buf.dtype(),
            InOut::InPlace(m) => m.buf.dtype(),
        }
    }
    /// Dtype of the output's buffer (the input's, in place).
    pub fn output_dtype(&self) -> DType {
        match self {
            InOut::Separate { output, .. } => output.buf.dtype(),
            InOut::InPlace(m) => m.buf.dtype(),
        }
    }
    /// Whether the output overwrites the input.
    pub fn is_in_place(&self) -> bool {
        matches!(self, InOut::InPlace(_))
    }
    /// Reborrows for a shorter lifetime (to pass the same views to several calls).
    pub fn reborrow(&mut self) -> InOut<'_, B> {
        match self {
            InOut::Separate { input, output } => InOut::Separate { input: *input, output: output.reborrow() },
            InOut::InPlace(m) => InOut::InPlace(m.reborrow()),
        }
    }
}

/// Checks that a 2-D view lies inside its buffer.
pub(crate) fn check_mat(operand: Operand, layout: &Layout, buf_len: usize) -> Result<()> {
    if layout.stride < layout.cols {
        return Err(NormError::Stride { operand, stride: layout.stride, cols: layout.cols });
    }
    let needed = layout.span().ok_or(NormError::Overflow { operand })?;
    if needed > buf_len {
        return Err(NormError::OutOfBounds { operand, needed, len: buf_len });
    }
    Ok(())
}

/// Checks that a vector view lies inside its buffer.
pub(crate) fn check_span(operand: Operand, span: &Span, buf_len: usize) -> Result<()> {
    let needed = span.offset.checked_add(span.len).ok_or(NormError::Overflow { operand })?;
    if needed > buf_len {
        return Err(NormError::OutOfBounds { operand, needed, len: buf_len });
    }
    Ok(())
}
