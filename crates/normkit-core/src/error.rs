//! The one error type of normkit.

use crate::dtype::DType;
use std::fmt;

/// Which argument of an op an error is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The input `x` (M × N).
    X,
    /// The output `y` (M × N).
    Y,
    /// The residual added to `x` (M × N).
    Residual,
    /// The output `residual_out = x + residual` (M × N).
    ResidualOut,
    /// The weight `w` (N).
    Weight,
    /// The bias `b` (N).
    Bias,
    /// The saved per-row mean (M, LayerNorm).
    Mean,
    /// The saved per-row `rstd` (M).
    Rstd,
    /// The gradient of `y` (M × N).
    Dy,
    /// The gradient of `x` (M × N).
    Dx,
    /// The gradient of `residual_out`, added to `dx` (M × N).
    DResidualOut,
    /// The gradient of the weight (N).
    Dw,
    /// The gradient of the bias (N).
    Db,
    /// The per-tensor FP8 scale: a host value or one f32 element ([`crate::Scale`]).
    Scale,
    /// The FP8 `amax = max |y|` output (one f32).
    Amax,
    /// The FP8 `1/scale` output (one f32 per tensor, or M per row).
    ScaleInv,
    /// The transposed FP8 output `yT` (N × M).
    Transposed,
}

impl Operand {
    /// The operand's name as the builders spell it (`"x"`, `"residual_out"`, `"dw"`, …).
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
            Operand::Scale => "scale",
            Operand::Amax => "amax",
            Operand::ScaleInv => "scale_inv",
            Operand::Transposed => "transposed",
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
            AliasRule::Overlap => {
                "its memory overlaps another operand's, and only an output written over its own input (`InOut::InPlace`) may share memory"
            }
        })
    }
}

/// Every way a normkit call can fail.
///
/// Errors from validation (everything up to and including [`NormError::Unsupported`]) are returned
/// before any memory is touched: when a call returns one of them, no output was written.
/// Device errors can occur after a launch was queued; the operation's outputs are then unspecified.
///
/// # Which errors each backend can return
///
/// | error | where it can come from |
/// |---|---|
/// | `Shape`, `EmptyRows`, `Stride`, `OutOfBounds`, `Overflow`, `InvalidEps`, `InvalidOffset`, `InvalidScale`, `Missing`, `Unexpected`, `DType` | `forward`/`backward` of every backend (the shared validation, `validate_forward`/`validate_backward`; `supports` for the dtype and descriptor rules). `InvalidScale` only from a forward with an FP8 `y` and a host scale ([`crate::Scale::Host`]) |
/// | `Alignment` | CUDA and HIP only: a device buffer built from a raw pointer (`buffer_from_raw`) or a view whose offset is not a multiple of the element size |
/// | `ReadOnly` | every backend's validation, for buffers that can be read-only: today the CPU backend's borrowed [`crate::HostView`]s (`CpuBackend::forward_view` / `backward_view`) made from a shared slice and passed as an output; owned buffers are always writable |
/// | `Aliasing` | CUDA and HIP only, and only through their `unsafe` raw-pointer constructors (`buffer_from_raw`, `HipBuffer::from_raw`): the only buffers that expose an address. Safe borrows rule overlaps out on the CPU and through `AnyBackend`; `InOut::InPlace` is the one sanctioned overlap |
/// | `Unsupported` | a backend declining a combination in `supports` and `forward` (today: CUDA and HIP for an FP8 `y`, whose kernels do not exist yet; the CPU backend implements the whole contract), `AnyBackend::download` of another backend's buffer, or a GPU backend's internal limits (a kernel missing from its code object, an empty captured graph in `time_calls`) |
/// | `ForeignBuffer` | CUDA, HIP and `AnyBackend`: a buffer of another backend or device |
/// | `ResourceLimit` | `alloc`/`upload`/`download` of every backend (the CPU: more bytes than `usize`, physical memory + swap, or the allocator can give; never a panic or an abort); on a GPU also a workspace, grid or shared-memory limit of an op |
/// | `BackendUnavailable` | construction only (`CudaBackend::new`, `HipBackend::new`, `normkit::backend`): no driver, no device, a wrong wavefront size; never from the CPU backend |
/// | `Device` | CUDA and HIP: the runtime reported an error (a launch, a copy, an allocation); after it the outputs of the call are unspecified |
/// | `UnknownBackend` | `normkit::backend(name)` only |
/// | `Internal` | a GPU backend whose own state is wrong: a kernel its planner asked for is missing from the build, or a lock was poisoned by an earlier panic. Never the caller's fault; please report it |
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum NormError {
    /// An operand's rows, columns or length disagree with the others.
    #[error("`{operand}` has {}, but the call needs {expected}{}", count(*.got, *.dim), shape_hint(*.operand, *.dim, *.expected))]
    Shape {
        /// The operand the error is about.
        operand: Operand,
        /// Which dimension disagrees.
        dim: Dim,
        /// What the call needs.
        expected: usize,
        /// What the operand has.
        got: usize,
    },

    /// The hidden size is zero (a norm over zero elements is undefined).
    #[error("The hidden size N is 0: `x` needs at least one column (a norm over zero elements is undefined)")]
    EmptyRows,

    /// A row stride is smaller than the row length.
    #[error("`{operand}` has a row stride of {stride}, smaller than its row length of {cols}: its rows would overlap")]
    Stride {
        /// The operand the error is about.
        operand: Operand,
        /// The row stride given, in elements.
        stride: usize,
        /// The row length, in elements.
        cols: usize,
    },

    /// The view does not fit in its buffer.
    #[error("`{operand}` does not fit in its buffer: the view needs at least {needed} elements, but the buffer holds {len}")]
    OutOfBounds {
        /// The operand the error is about.
        operand: Operand,
        /// Elements the view addresses (offset included).
        needed: usize,
        /// Elements the buffer holds.
        len: usize,
    },

    /// The arithmetic `offset + (rows - 1) * stride + cols` overflows `usize`.
    #[error("`{operand}` has a view that overflows `usize`: its offset, stride and shape address more elements than exist")]
    Overflow {
        /// The operand the error is about.
        operand: Operand,
    },

    /// A pointer or offset is not aligned to its element size (device buffers only).
    #[error("`{operand}` is misaligned: it starts at byte offset {offset_bytes}, which is not a multiple of {required}")]
    Alignment {
        /// The operand the error is about.
        operand: Operand,
        /// The alignment needed, in bytes.
        required: usize,
        /// Where the operand starts, in bytes.
        offset_bytes: usize,
    },

    /// `eps` must be finite and strictly positive.
    #[error("`eps` must be finite and greater than 0, but the descriptor has {eps}")]
    InvalidEps {
        /// The value given.
        eps: f32,
    },

    /// The weight offset must be finite.
    #[error("The weight offset must be finite, but the descriptor has {offset}")]
    InvalidOffset {
        /// The value given.
        offset: f32,
    },

    /// The FP8 scale given on the host must be finite and strictly positive.
    #[error("The FP8 scale must be finite and greater than 0, but the call has {scale}")]
    InvalidScale {
        /// The value given.
        scale: f32,
    },

    /// An operand the descriptor requires is absent.
    #[error("`{operand}` is missing: the call needs it because {}; pass it with {}", needed_because(*.operand), pass_with(*.operand))]
    Missing {
        /// The operand the error is about.
        operand: Operand,
    },

    /// An operand was given that the descriptor does not use.
    #[error("`{operand}` was given, but {}; remove `.{operand}(…)` or change the descriptor", unused_because(*.operand))]
    Unexpected {
        /// The operand the error is about.
        operand: Operand,
    },

    /// The dtype of an operand is not allowed in this combination.
    #[error("`{operand}` is {dtype}, which is not allowed here: {rule}")]
    DType {
        /// The operand the error is about.
        operand: Operand,
        /// The dtype given.
        dtype: DType,
        /// The rule it breaks.
        rule: &'static str,
    },

    /// An output was given a buffer that may only be read ([`crate::Buffer::is_writable`] is
    /// false: a [`crate::HostView`] made from a shared slice). Reported by validation, so
    /// nothing has been written.
    #[error("`{operand}` is an output, but its buffer is a read-only view: build it from a mutable slice (`HostView::new_mut`)")]
    ReadOnly {
        /// The output operand the error is about.
        operand: Operand,
    },

    /// Two operands share memory in a way the op does not allow.
    #[error("`{operand}` may not share memory this way: {rule}")]
    Aliasing {
        /// The operand the error is about.
        operand: Operand,
        /// The rule it breaks.
        rule: AliasRule,
    },

    /// The backend does not implement this op, option or dtype combination.
    #[error("The `{backend}` backend does not support {what}")]
    Unsupported {
        /// The backend that reports it.
        backend: &'static str,
        /// The op, option or dtype combination.
        what: String,
    },

    /// A buffer belongs to a different backend (or a different device) than the one called.
    #[error("`{operand}` is a buffer of another backend or device: the `{backend}` backend can only use buffers it allocated or uploaded itself")]
    ForeignBuffer {
        /// The backend that reports it.
        backend: &'static str,
        /// The operand the error is about.
        operand: Operand,
    },

    /// A resource (workspace memory, shared memory, grid size) is too small for the request.
    #[error("The call needs {resource} = {requested}, {}", resource_available(*.available))]
    ResourceLimit {
        /// What ran short (workspace bytes, device memory, grid size, …).
        resource: &'static str,
        /// How much the call needs.
        requested: u64,
        /// How much there is (0 when unknown).
        available: u64,
    },

    /// The backend cannot run on this machine (no driver, no device, toolchain missing).
    #[error("The `{backend}` backend cannot run here: {reason}")]
    BackendUnavailable {
        /// The backend that reports it.
        backend: &'static str,
        /// Why, in words.
        reason: String,
    },

    /// `normkit::backend(name)` was asked for a backend name it does not know.
    #[error("No backend is called `{name}` (known: {known})")]
    UnknownBackend {
        /// The name that was asked for.
        name: String,
        /// The names that exist, comma-separated.
        known: &'static str,
    },

    /// The library itself is at fault: a kernel its planner asked for is missing from the build,
    /// or its state was left inconsistent by an earlier panic. Not caused by the call's arguments.
    #[error("Internal error in the `{backend}` backend: {what} (a normkit bug: please report it)")]
    Internal {
        /// The backend that reports it.
        backend: &'static str,
        /// What went wrong, in words.
        what: String,
    },

    /// The device runtime reported an error.
    #[error("Device error in the `{backend}` backend during {during}")]
    Device {
        /// The backend that reports it.
        backend: &'static str,
        /// What the backend was doing (allocation, copy, launch, synchronize, …).
        during: &'static str,
        /// The runtime's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

/// `7 rows`, `1 column`, `8 elements`: a count in the unit of `dim`.
fn count(n: usize, dim: Dim) -> String {
    let unit = match dim {
        Dim::Rows => "row",
        Dim::Cols => "column",
        Dim::Len => "element",
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Where the expected size of a [`NormError::Shape`] comes from.
fn shape_hint(operand: Operand, dim: Dim, expected: usize) -> String {
    match (dim, operand) {
        (Dim::Rows, Operand::Transposed) => format!(" (one per column of `x`, N = {expected})"),
        (Dim::Cols, Operand::Transposed) => format!(" (one per row of `x`, M = {expected})"),
        (Dim::Len, Operand::Scale | Operand::Amax) => " (a single f32)".into(),
        (Dim::Len, Operand::ScaleInv) if expected == 1 => " (a single f32 with per-tensor scaling)".into(),
        (Dim::Len, Operand::ScaleInv) => format!(" (one per row of `x` with per-row scaling, M = {expected})"),
        (Dim::Rows, _) => format!(" (as many rows as `x`, M = {expected})"),
        (Dim::Cols, _) => format!(" (as many columns as `x`, N = {expected})"),
        (Dim::Len, Operand::Weight | Operand::Bias | Operand::Dw | Operand::Db) => format!(" (one per column of `x`, N = {expected})"),
        (Dim::Len, Operand::Mean | Operand::Rstd) => format!(" (one per row of `x`, M = {expected})"),
        (Dim::Len, _) => String::new(),
    }
}

/// Why the descriptor needs an operand ([`NormError::Missing`]).
fn needed_because(operand: Operand) -> &'static str {
    match operand {
        Operand::Weight => "the descriptor has a weight",
        Operand::Bias => "the descriptor has a bias",
        Operand::Residual => "the descriptor has the fused residual add",
        Operand::Rstd => "the descriptor saves statistics (`save_stats`)",
        Operand::Mean => "LayerNorm saves the mean in the forward (with `save_stats`) and reads it in the backward",
        Operand::Dw => "the descriptor has a weight, whose gradient is written to `dw`",
        Operand::Db => "the descriptor has a bias, whose gradient is written to `db`",
        Operand::Scale => "`y` has an FP8 dtype, and FP8 values are quantised with a scale",
        Operand::ScaleInv => "with per-row FP8 scaling each row's `1/scale` is an output",
        _ => "the descriptor uses it",
    }
}

/// How the builders pass an operand, for [`NormError::Missing`].
fn pass_with(operand: Operand) -> String {
    match operand {
        Operand::Scale => "`.fp8(Fp8::per_tensor(…))` or `.fp8(Fp8::per_row(…))`".into(),
        Operand::ScaleInv => "`Fp8::per_row(scale_inv)`".into(),
        _ => format!("`.{operand}(…)`"),
    }
}

/// Why the descriptor has no use for an operand ([`NormError::Unexpected`]).
fn unused_because(operand: Operand) -> &'static str {
    match operand {
        Operand::Weight | Operand::Dw => "the descriptor has no weight",
        Operand::Bias | Operand::Db => "the descriptor has no bias",
        Operand::Residual | Operand::ResidualOut | Operand::DResidualOut => "the descriptor has no fused residual add",
        Operand::Rstd => "the descriptor does not save statistics (`save_stats` is false)",
        Operand::Mean => "only LayerNorm has a mean, and its forward writes it only with `save_stats`",
        _ => "the descriptor does not use it",
    }
}

/// The end of a [`NormError::ResourceLimit`] message.
fn resource_available(available: u64) -> String {
    if available == 0 {
        "which could not be provided".into()
    } else {
        format!("but at most {available} is available")
    }
}

/// Result alias used throughout normkit.
pub type Result<T, E = NormError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails to compile when a variant is added, so that the message test below covers it.
    fn listed(e: &NormError) {
        match e {
            NormError::Shape { .. }
            | NormError::EmptyRows
            | NormError::Stride { .. }
            | NormError::OutOfBounds { .. }
            | NormError::Overflow { .. }
            | NormError::Alignment { .. }
            | NormError::InvalidEps { .. }
            | NormError::InvalidOffset { .. }
            | NormError::InvalidScale { .. }
            | NormError::Missing { .. }
            | NormError::Unexpected { .. }
            | NormError::DType { .. }
            | NormError::ReadOnly { .. }
            | NormError::Aliasing { .. }
            | NormError::Unsupported { .. }
            | NormError::ForeignBuffer { .. }
            | NormError::ResourceLimit { .. }
            | NormError::BackendUnavailable { .. }
            | NormError::UnknownBackend { .. }
            | NormError::Internal { .. }
            | NormError::Device { .. } => {}
        }
    }

    /// One instance of every variant and a piece of text its message must contain (the operand,
    /// backend, name or value it was built with).
    fn every_variant() -> Vec<(NormError, &'static str)> {
        use Operand as O;
        vec![
            (
                NormError::Shape { operand: O::Weight, dim: Dim::Len, expected: 8, got: 7 },
                "`weight` has 7 elements, but the call needs 8 (one per column of `x`, N = 8)",
            ),
            (
                NormError::Shape { operand: O::Rstd, dim: Dim::Len, expected: 4, got: 1 },
                "`rstd` has 1 element, but the call needs 4 (one per row of `x`, M = 4)",
            ),
            (
                NormError::Shape { operand: O::Y, dim: Dim::Rows, expected: 4, got: 3 },
                "`y` has 3 rows, but the call needs 4 (as many rows as `x`, M = 4)",
            ),
            (
                NormError::Shape { operand: O::Dx, dim: Dim::Cols, expected: 8, got: 9 },
                "`dx` has 9 columns, but the call needs 8 (as many columns as `x`, N = 8)",
            ),
            (NormError::EmptyRows, "N is 0"),
            (
                NormError::Stride { operand: O::Residual, stride: 4, cols: 8 },
                "`residual` has a row stride of 4, smaller than its row length of 8",
            ),
            (
                NormError::OutOfBounds { operand: O::Dy, needed: 40, len: 32 },
                "`dy` does not fit in its buffer: the view needs at least 40 elements, but the buffer holds 32",
            ),
            (NormError::Overflow { operand: O::X }, "`x`"),
            (NormError::Alignment { operand: O::ResidualOut, required: 2, offset_bytes: 3 }, "`residual_out` is misaligned"),
            (NormError::InvalidEps { eps: -1.0 }, "`eps` must be finite and greater than 0, but the descriptor has -1"),
            (NormError::InvalidOffset { offset: f32::INFINITY }, "has inf"),
            (NormError::InvalidScale { scale: -2.0 }, "The FP8 scale must be finite and greater than 0, but the call has -2"),
            (
                NormError::Missing { operand: O::Scale },
                "`scale` is missing: the call needs it because `y` has an FP8 dtype, and FP8 values are quantised with a scale; pass it with `.fp8(Fp8::per_tensor(…))`",
            ),
            (
                NormError::Shape { operand: O::Transposed, dim: Dim::Rows, expected: 8, got: 4 },
                "`transposed` has 4 rows, but the call needs 8 (one per column of `x`, N = 8)",
            ),
            (
                NormError::Shape { operand: O::ScaleInv, dim: Dim::Len, expected: 4, got: 1 },
                "`scale_inv` has 1 element, but the call needs 4 (one per row of `x` with per-row scaling, M = 4)",
            ),
            (NormError::Shape { operand: O::Amax, dim: Dim::Len, expected: 1, got: 2 }, "`amax` has 2 elements, but the call needs 1 (a single f32)"),
            (
                NormError::Missing { operand: O::Bias },
                "`bias` is missing: the call needs it because the descriptor has a bias; pass it with `.bias(…)`",
            ),
            (NormError::Missing { operand: O::Mean }, "`mean` is missing"),
            (
                NormError::Unexpected { operand: O::DResidualOut },
                "`d_residual_out` was given, but the descriptor has no fused residual add",
            ),
            (NormError::Unexpected { operand: O::Rstd }, "`rstd` was given, but the descriptor does not save statistics"),
            (
                NormError::DType { operand: O::Db, dtype: DType::F16, rule: "the weight, `dw` and `db` must have one dtype" },
                "`db` is f16, which is not allowed here: the weight, `dw` and `db` must have one dtype",
            ),
            (NormError::ReadOnly { operand: O::Y }, "`y` is an output, but its buffer is a read-only view: build it from a mutable slice"),
            (NormError::Aliasing { operand: O::Dw, rule: AliasRule::Overlap }, "`dw` may not share memory this way"),
            (NormError::Unsupported { backend: "hip", what: "the fused add".into() }, "The `hip` backend does not support the fused add"),
            (
                NormError::ForeignBuffer { backend: "cuda", operand: O::Weight },
                "`weight` is a buffer of another backend or device: the `cuda` backend",
            ),
            (
                NormError::ResourceLimit { resource: "device memory", requested: 1 << 40, available: 1 << 30 },
                "The call needs device memory = 1099511627776, but at most 1073741824 is available",
            ),
            (
                NormError::ResourceLimit { resource: "workspace bytes", requested: 64, available: 0 },
                "workspace bytes = 64, which could not be provided",
            ),
            (
                NormError::BackendUnavailable { backend: "cuda", reason: "no CUDA driver".into() },
                "The `cuda` backend cannot run here: no CUDA driver",
            ),
            (
                NormError::UnknownBackend { name: "gpu".into(), known: "cpu, cuda, hip" },
                "No backend is called `gpu` (known: cpu, cuda, hip)",
            ),
            (
                NormError::Internal { backend: "cuda", what: "kernel nk_fwd_row_a is missing from the fatbin".into() },
                "Internal error in the `cuda` backend: kernel nk_fwd_row_a is missing",
            ),
            (
                NormError::Device { backend: "hip", during: "kernel launch", source: Box::new(std::io::Error::other("lost")) },
                "Device error in the `hip` backend during kernel launch",
            ),
        ]
    }

    #[test]
    fn every_message_is_a_sentence_that_names_what_was_asked_for() {
        let all = every_variant();
        let mut seen = std::collections::HashSet::new();
        for (e, must_contain) in &all {
            listed(e);
            seen.insert(std::mem::discriminant(e));
            let msg = e.to_string();
            let first = msg.chars().next().expect("empty message");
            assert!(first.is_uppercase() || first == '`', "starts with neither a capital nor a quoted name: {msg}");
            assert!(msg.contains(must_contain), "{msg:?} does not contain {must_contain:?}");
            for jargon in ["expected", " got ", "length, got", "mismatch", "requested"] {
                assert!(!msg.contains(jargon), "{msg:?} reads like a diagnostic dump ({jargon:?})");
            }
            assert!(!msg.ends_with('.') && !msg.contains("  "), "{msg:?}");
        }
        assert_eq!(seen.len(), 21, "one instance of every variant");
    }

    #[test]
    fn every_operand_has_a_reason_to_be_needed_or_not() {
        use Operand as O;
        for op in [O::Weight, O::Bias, O::Residual, O::Mean, O::Rstd, O::Dw, O::Db] {
            let missing = NormError::Missing { operand: op }.to_string();
            assert!(!missing.contains("the descriptor uses it"), "{missing}");
            assert!(missing.contains(&format!("`.{op}(…)`")), "{missing}");
        }
        for op in [O::Weight, O::Bias, O::Residual, O::Mean, O::Rstd, O::Dw, O::Db, O::DResidualOut] {
            let unexpected = NormError::Unexpected { operand: op }.to_string();
            assert!(!unexpected.contains("does not use it"), "{unexpected}");
        }
    }
}
