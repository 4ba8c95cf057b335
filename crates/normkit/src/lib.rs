#![doc = include_str!("../../../README.md")]

pub use normkit_core::*;
#[cfg(feature = "cuda")]
pub use normkit_cuda as cuda;
#[cfg(feature = "hip")]
pub use normkit_hip as hip;

mod any;
pub use any::{auto, backend, probe, AnyBackend, AnyBuffer, BackendStatus};
