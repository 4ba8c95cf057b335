//! normkit: fused normalization kernels behind one trait.
pub use normkit_core::*;
