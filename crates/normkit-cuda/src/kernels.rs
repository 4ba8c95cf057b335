//! The generated kernel table (from kernels-cuda/kernels.def by build.rs): one [`Kernel`] per
//! entry point of the fatbin, the constants both sides share, and [`ALL`].

/// One kernel entry point of the fatbin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// Position in [`ALL`] (and in the backend's function table).
    pub index: usize,
    /// The extern "C" symbol.
    pub name: &'static str,
    /// The largest CTA the kernel was compiled for (`__launch_bounds__`).
    pub max_threads: u32,
}

#[allow(dead_code)]
mod generated {
    use super::Kernel;
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}
pub use generated::*;

/// The kernel named `name`, if the table has it.
pub fn find(name: &str) -> Option<Kernel> {
    #[cfg(test)]
    crate::plan::tests::asked(name);
    ALL.iter().copied().find(|k| k.name == name)
}
