//! Fused normalization kernels — **RMSNorm, LayerNorm and residual add + norm, forward and
//! backward** — behind one backend-agnostic trait, [`NormKernel`], with a rayon CPU backend, a
//! CUDA backend for NVIDIA Hopper / Blackwell and a HIP backend for AMD Instinct GPUs.
//!
//! A call is a [`NormDesc`] (what to compute: RMSNorm or LayerNorm, `eps`, weight and its
//! offset, bias, fused residual add, [`CastingMode`], whether to save statistics) plus the
//! operands ([`Forward`] or [`Backward`], built from row views [`MatRef`], [`MatMut`],
//! [`VecRef`], [`VecMut`], [`InOut`] into the backend's buffers). Every call is validated first;
//! bad input is a typed [`NormError`], never a panic.
//!
//! # Backends and cargo features
//!
//! | backend | type | cargo feature | runs on |
//! |---|---|---|---|
//! | `cpu` | [`cpu::CpuBackend`] (buffers: [`HostBuf`]) | always built | any CPU; parallel over the current rayon thread pool, AVX-512 / AVX2 where present |
//! | `cuda` | `normkit::cuda::CudaBackend` | `cuda` | NVIDIA sm_90a (H100, H200) and sm_100a (Blackwell); the kernels are compiled by nvcc 13.0 at build time, the driver is loaded at run time |
//! | `hip` | `normkit::hip::HipBackend` | `hip` | AMD gfx90a, gfx942 (MI300X), gfx950 (MI355X); kernels compiled by clang at build time, the HIP runtime loaded at run time; not yet run on AMD hardware |
//!
//! With the `cuda` and `hip` features the backend crates are re-exported as `normkit::cuda` and
//! `normkit::hip`. A binary built with a GPU feature still starts on a machine without that GPU:
//! opening the backend then returns [`NormError::BackendUnavailable`] with the reason.
//!
//! [`AnyBackend`] holds whichever backend was chosen at run time, with [`AnyBuffer`] as its
//! buffer type. **With default features it has only the CPU**: [`auto`] returns the CPU backend
//! and [`backend`]`("cuda")` says normkit was built without the `cuda` feature. With the
//! features, [`auto`] picks a CUDA device, else an AMD device, else the CPU; [`probe`] reports
//! every backend's status.
//!
//! ```toml
//! [dependencies]
//! normkit = { version = "0.1", features = ["cuda"] }  # or "hip", or both; none: CPU only
//! ```
//!
//! # Forward
//!
//! RMSNorm of a bf16 `M × N` matrix with a weight, on the best backend available:
//!
//! ```
//! use normkit::{DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, VecRef};
//!
//! let nk = normkit::auto(); // the CPU with default features
//! let (m, n) = (4, 8);
//! let xs: Vec<f32> = (0..m * n).map(|i| 1.0 + 0.1 * i as f32).collect();
//! let x = nk.upload(&HostBuf::from_f32(DType::BF16, &xs))?;
//! let w = nk.upload(&HostBuf::from_f32(DType::BF16, &vec![1.0; n]))?;
//! let mut y = nk.alloc(DType::BF16, m * n)?;
//!
//! // y = x / sqrt(mean(x²) + eps) · w, computed in fp32, rounded once to bf16.
//! let desc = NormDesc::rms(1e-6);
//! let io = InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n));
//! nk.forward(&desc, Forward::new(io).weight(VecRef::new(&w)))?;
//!
//! let y = nk.download(&y)?; // waits for the call on a GPU
//! let rms0 = (xs[..n].iter().map(|v| v * v).sum::<f32>() / n as f32).sqrt();
//! assert!((y.get_f32(0) - xs[0] / rms0).abs() < 1e-2);
//! # Ok::<(), normkit::NormError>(())
//! ```
//!
//! Options are set on the descriptor: [`NormDesc::layer`] for LayerNorm (weight and bias),
//! [`NormDesc::with_residual`] for the fused `h = x + residual` (pass
//! [`Forward::residual`]), [`NormDesc::with_weight_offset`] for Gemma's `1 + w`,
//! [`NormDesc::with_casting`], [`NormDesc::with_save_stats`] to keep `rstd` (and LayerNorm's
//! `mean`) for the backward. The operands must match the descriptor exactly: a missing or extra
//! operand is [`NormError::Missing`] / [`NormError::Unexpected`].
//!
//! # Backward
//!
//! The backward pass reads the input, the incoming gradient `dy` and the `rstd` the forward
//! saved, and writes `dx` and, for a norm with a weight, `dw` (and `db` with a bias):
//!
//! ```
//! use normkit::cpu::CpuBackend;
//! use normkit::{Backward, DType, Forward, HostBuf, InOut, MatMut, MatRef, NormDesc, NormKernel, VecMut, VecRef};
//!
//! let cpu = CpuBackend::new();
//! let (m, n) = (2, 4);
//! let x = HostBuf::from_f32(DType::F32, &[1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.0, 2.0]);
//! let w = HostBuf::from_f32(DType::F32, &[1.0, 0.5, 2.0, 1.0]);
//! let desc = NormDesc::rms(1e-6).with_save_stats(true);
//!
//! // Forward, saving rstd = 1/sqrt(mean(x²) + eps): one f32 per row.
//! let mut y = HostBuf::zeros(DType::F32, m * n);
//! let mut rstd = HostBuf::zeros(DType::F32, m);
//! let io = InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n));
//! cpu.forward(&desc, Forward::new(io).weight(VecRef::new(&w)).rstd(VecMut::new(&mut rstd)))?;
//! assert!((rstd.get_f32(0) - 1.0 / (7.5f32 + 1e-6).sqrt()).abs() < 1e-6); // (1 + 4 + 9 + 16) / 4
//!
//! // Backward: dx (M × N) and dw (N) from x, dy and the saved rstd.
//! let dy = HostBuf::from_f32(DType::F32, &[0.1, -0.2, 0.3, 0.0, 1.0, 1.0, -1.0, 0.5]);
//! let mut dx = HostBuf::zeros(DType::F32, m * n);
//! let mut dw = HostBuf::zeros(DType::F32, n);
//! let grads = InOut::separate(MatRef::new(&dy, m, n), MatMut::new(&mut dx, m, n));
//! let args = Backward::new(MatRef::new(&x, m, n), grads, VecRef::new(&rstd)).weight(VecRef::new(&w)).dw(VecMut::new(&mut dw));
//! cpu.backward(&desc, args)?;
//!
//! // What was computed: x̂ = x·rstd, g = dy·w, dx = rstd·(g − x̂·mean(g·x̂)), dw = Σ_rows dy·x̂.
//! let (x, dy, w) = (x.to_f32_vec(), dy.to_f32_vec(), w.to_f32_vec());
//! for r in 0..m {
//!     let rs = rstd.get_f32(r);
//!     let xhat: Vec<f32> = (0..n).map(|j| x[r * n + j] * rs).collect();
//!     let g: Vec<f32> = (0..n).map(|j| dy[r * n + j] * w[j]).collect();
//!     let c = (0..n).map(|j| g[j] * xhat[j]).sum::<f32>() / n as f32;
//!     for j in 0..n {
//!         assert!((dx.get_f32(r * n + j) - rs * (g[j] - xhat[j] * c)).abs() < 1e-5);
//!     }
//! }
//! for j in 0..n {
//!     let want: f32 = (0..m).map(|r| dy[r * n + j] * x[r * n + j] * rstd.get_f32(r)).sum();
//!     assert!((dw.get_f32(j) - want).abs() < 1e-5);
//! }
//! # Ok::<(), normkit::NormError>(())
//! ```
//!
//! LayerNorm also needs the saved `mean` ([`Backward::mean`]) and, with a bias, writes `db`
//! ([`Backward::db`]). With the fused residual add, `x` is the forward's `residual_out` and the
//! gradient arriving at `residual_out` from later layers, [`Backward::d_residual_out`], is added
//! to `dx`. `dx` may overwrite `dy` ([`InOut::in_place`]).
//!
//! # What is computed
//!
//! RMSNorm: `rstd = 1/sqrt(mean(x²) + eps)`, `x̂ = x·rstd`. LayerNorm: `μ = mean(x)`,
//! `rstd = 1/sqrt(mean((x−μ)²) + eps)` (two passes in fp32, never `E[x²]−μ²`), `x̂ = (x−μ)·rstd`.
//! Then `y = x̂·(w + offset) + b`, rounded as the [`CastingMode`] says. Backward:
//! `g = dy·(w + offset)`, RMSNorm `dx = rstd·(g − x̂·mean(g·x̂))`, LayerNorm
//! `dx = rstd·(g − mean(g) − x̂·mean(g·x̂))`, `dw = Σ_rows dy·x̂`, `db = Σ_rows dy`.
//! Dtypes ([`DTypes`]): `x` in f32, f16 or bf16; weight, bias, residual and `y` each in `x`'s
//! dtype or f32; statistics always f32. Rows may be strided and start at an element offset
//! ([`Layout`]).
//!
//! # Guarantees
//!
//! - **Validated before anything runs**: every rule of the contract is checked once, in
//!   [`validate_forward`] / [`validate_backward`], by every backend; an invalid call returns a
//!   [`NormError`] and writes no output. Nothing panics on bad input.
//! - **Batch-invariant forward**: a row's outputs are bitwise the same whatever `M` is and
//!   whatever rows surround it.
//! - **Deterministic backward**: the same inputs give bitwise the same `dx`, `dw`, `db` on every
//!   run (partial sums reduced in a fixed order, no floating-point atomics).
//! - **Asynchronous on GPUs**: calls are queued on the backend's stream;
//!   [`NormKernel::download`] waits for earlier calls, [`NormKernel::synchronize`] for all.
//!
//! # Crates
//!
//! This crate re-exports all of `normkit-core` (the contract, [`cpu`] and the types above) and
//! adds [`auto`], [`backend`], [`probe`], [`AnyBackend`] and [`AnyBuffer`]. The GPU backends
//! live in `normkit-cuda` and `normkit-hip`.

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub use normkit_core::*;
#[cfg(feature = "cuda")]
pub use normkit_cuda as cuda;
#[cfg(feature = "hip")]
pub use normkit_hip as hip;

mod any;
pub use any::{auto, backend, probe, AnyBackend, AnyBuffer, BackendStatus, BACKENDS};

/// The README's examples, run as doctests (the README is not the crate page: its relative links
/// only work on GitHub).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
