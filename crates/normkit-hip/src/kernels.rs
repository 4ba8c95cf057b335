//! The embedded code objects and the kernel table: the typed list ([`list`],
//! kernels-hip/variants.rs; its types in [`variants`], kernels-common/variants.rs) from which
//! build.rs generates both the C++ entry points and this table — one [`Kernel`] per entry,
//! [`KERNELS`] in list order, a `pub const NK_…` per kernel, and [`get`], the lookup by
//! [`KernelKey`]. The planner asks for kernels by key; a key the list lacks is `None` (a `const`
//! lookup of it fails the build, and the planner's walk over every reachable plan checks the
//! computed ones).

// The list types, one definition for both backends (normkit-gpu-host).
pub use normkit_gpu_host::variants;

#[allow(dead_code)]
#[path = "../../../kernels-hip/variants.rs"]
pub mod list;

pub use list::{NK_ROW_MAX_THREADS, NK_SPLIT_ELEMS, NK_SPLIT_THREADS, NK_WARP_WIDTH};
pub use variants::{BwdChunks, Dt, Family, FwdChunks, Kernel, KernelKey};

mod generated {
    use super::Kernel;
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}
pub use generated::*;

/// The code object built for `arch` (`None` also when the build compiled no kernels: a clippy
/// run or `NORMKIT_KERNELS=skip`).
pub fn code_object(arch: &str) -> Option<&'static [u8]> {
    CODE_OBJECTS.iter().find(|(a, b)| *a == arch && !b.is_empty()).map(|(_, b)| *b)
}

/// The kernel called `name`, if the list has it (tools and tests; the planner uses keys).
pub fn find(name: &str) -> Option<Kernel> {
    KERNELS.iter().copied().find(|k| k.name == name)
}

/// The kernel for `key`, if the list has it, as [`get`] — and in tests remembered, so the
/// planner's walk can check every key it asked for.
pub fn lookup(key: KernelKey) -> Option<Kernel> {
    #[cfg(test)]
    ASKED.with(|a| a.borrow_mut().insert(key));
    get(key)
}

#[cfg(test)]
thread_local! {
    /// Every key [`lookup`] was asked for on this thread.
    static ASKED: std::cell::RefCell<std::collections::BTreeSet<KernelKey>> = const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Takes the keys [`lookup`] was asked for on this thread since the last call.
#[cfg(test)]
pub fn take_asked() -> std::collections::BTreeSet<KernelKey> {
    ASKED.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

/// The targets code objects were built for.
pub fn archs() -> impl Iterator<Item = &'static str> {
    CODE_OBJECTS.iter().map(|(a, _)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is the list: same order, each entry found by its key and by its name, the name
    /// and SPEC derived from the key.
    #[test]
    fn table_is_the_list() {
        assert_eq!(KERNELS.len(), list::VARIANTS.len());
        for (i, (k, v)) in KERNELS.iter().zip(list::VARIANTS).enumerate() {
            assert_eq!((k.index, k.key, k.max_threads, k.min_blocks), (i, v.key, v.max_threads, v.min_blocks));
            assert_eq!(k.name, v.key.symbol());
            assert_eq!(get(k.key), Some(*k));
            assert_eq!(find(k.name), Some(*k));
        }
    }
}
