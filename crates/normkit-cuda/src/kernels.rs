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
    ASKED.with(|a| a.borrow_mut().insert(name.to_owned()));
    ALL.iter().copied().find(|k| k.name == name)
}

#[cfg(test)]
thread_local! {
    /// Every name [`find`] was asked for on this thread (the planner's tests check that each
    /// exists).
    static ASKED: std::cell::RefCell<std::collections::BTreeSet<String>> = const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Takes the names [`find`] was asked for on this thread since the last call.
#[cfg(test)]
pub fn take_asked() -> std::collections::BTreeSet<String> {
    ASKED.with(|a| std::mem::take(&mut *a.borrow_mut()))
}
