//! normkit: fused normalization kernels behind one trait.
pub use normkit_core::*;
#[cfg(feature = "cuda")]
pub use normkit_cuda as cuda;
#[cfg(feature = "hip")]
pub use normkit_hip as hip;
