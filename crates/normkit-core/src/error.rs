//! The one error type of normkit.

use crate::dtype::DType;
use std::fmt;

/// Which argument of an op an error is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    X,
    Y,
    Residual,
    ResidualOut,
    Weight,
    Bias,
    Mean,
    Rstd,
    Dy,
    Dx,
    DResidualOut,
    Dw,
    Db,
}

impl Operand {
    pub const fn name(self) -> &'static str {
        match self {
            Operand::X => "x",
            Operand::Y => "y",
            Operand::Residual => "residual",
            Operand::ResidualOut => "residual_out",
            Operand::Weight => "weight",
            Operand::Bias => "bias",
            Operand::Mean => "mean",
            Operand::Rstd => "rstd",
            Operand::Dy => "dy",
            Operand::Dx => "dx",
            Operand::DResidualOut => "d_residual_out",
            Operand::Dw => "dw",
            Operand::Db => "db",
        }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which dimension a [`NormError::Shape`] is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dim {
    /// Number of rows `M`.
    Rows,
    /// Hidden size `N` (columns).
    Cols,
    /// Length of a vector operand (weight, bias, stats).
    Len,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dim::Rows => "rows",
            Dim::Cols => "columns",
            Dim::Len => "length",
        })
    }
}

/// Why two operands may not share memory the way they were passed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AliasRule {
    /// An output's memory overlaps another operand's (device buffers built from raw pointers).
    Overlap,
}

impl fmt::Display for AliasRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AliasRule::Overlap => "its memory overlaps another operand; only `InOut::InPlace` may share memory",
        })
    }
}

/// Every way a normkit call can fail.
///
/// Errors from validation (everything up to and including [`NormError::Unsupported`]) are returned
/// before any memory is touched: when a call returns one of them, no output was written.
/// Device errors can occur after a launch was queued; the operation's outputs are then unspecified.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum NormError {
    /// An operand's rows, columns or length disagree with the others.
    #[error("shape mismatch on `{operand}`: expected {expected} {dim}, got {got}")]
    Shape { operand: Operand, dim: Dim, expected: usize, got: usize },

    /// The hidden size is zero (a norm over zero elements is undefined).
    #[error("hidden size N must be at least 1")]
    EmptyRows,

    /// A row stride is smaller than the row length.
    #[error("row stride of `{operand}` is {stride}, smaller than the row length {cols}")]
    Stride { operand: Operand, stride: usize, cols: usize },

    /// The view does not fit in its buffer.
    #[error("`{operand}` needs {needed} elements from its buffer but the buffer holds {len}")]
    OutOfBounds { operand: Operand, needed: usize, len: usize },

    /// The arithmetic `offset + (rows - 1) * stride + cols` overflows `usize`.
    #[error("the view of `{operand}` overflows the address space")]
    Overflow { operand: Operand },

    /// A pointer or offset is not aligned to its element size (device buffers only).
    #[error("`{operand}` is misaligned: byte offset {offset_bytes} is not a multiple of {required}")]
    Alignment { operand: Operand, required: usize, offset_bytes: usize },

    /// `eps` must be finite and strictly positive.
    #[error("eps must be finite and > 0, got {eps}")]
    InvalidEps { eps: f32 },

    /// The weight offset must be finite.
    #[error("weight offset must be finite, got {offset}")]
    InvalidOffset { offset: f32 },

    /// An operand the descriptor requires is absent.
    #[error("the descriptor requires `{operand}` but it was not given")]
    Missing { operand: Operand },

    /// An operand was given that the descriptor does not use.
    #[error("`{operand}` was given but the descriptor does not use it")]
    Unexpected { operand: Operand },

    /// The dtype of an operand is not allowed in this combination.
    #[error("dtype {dtype} is not allowed for `{operand}`: {rule}")]
    DType { operand: Operand, dtype: DType, rule: &'static str },

    /// Two operands share memory in a way the op does not allow.
    #[error("illegal aliasing on `{operand}`: {rule}")]
    Aliasing { operand: Operand, rule: AliasRule },

    /// The backend does not implement this op, option or dtype combination.
    #[error("backend `{backend}` does not support {what}")]
    Unsupported { backend: &'static str, what: String },

    /// A buffer belongs to a different backend (or a different device) than the one called.
    #[error("`{operand}` lives on another backend or device than `{backend}`")]
    ForeignBuffer { backend: &'static str, operand: Operand },

    /// A resource (workspace memory, shared memory, grid size) is too small for the request.
    #[error("{resource}: requested {requested}, available {available}")]
    ResourceLimit { resource: &'static str, requested: u64, available: u64 },

    /// The backend cannot run on this machine (no driver, no device, toolchain missing).
    #[error("backend `{backend}` is unavailable: {reason}")]
    BackendUnavailable { backend: &'static str, reason: String },

    /// The device runtime reported an error.
    #[error("device error in backend `{backend}` during {during}")]
    Device {
        backend: &'static str,
        during: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

/// Result alias used throughout normkit.
pub type Result<T, E = NormError> = std::result::Result<T, E>;
