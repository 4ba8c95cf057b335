//! The kernels of the fatbin: the typed list ([`list`], kernels-cuda/variants.rs; its types in
//! [`variants`], kernels-common/variants.rs) and the table build.rs generates from it — one
//! [`Kernel`] per entry point, [`ALL`] in list order, a `pub const NK_…` per kernel, and
//! [`get`], the lookup by [`KernelKey`]. The planner asks for kernels by key; a key the list
//! lacks is `None` (a `const` lookup of it fails the build, and the planner's walk over every
//! reachable plan checks the computed ones).

// The list types, one definition for both backends (normkit-gpu-host).
pub use normkit_gpu_host::variants;

#[allow(dead_code)]
#[path = "../../../kernels-cuda/variants.rs"]
pub mod list;

#[allow(unused_imports)]
pub use list::{NK_CS_KS16, NK_CS_KS32, NK_CS_MAX_STAGES, NK_ROW_MAX_THREADS, NK_SPLIT_ELEMS, NK_SPLIT_THREADS, NK_WARP_WIDTH};
#[allow(unused_imports)]
pub use variants::{BwdChunks, Dt, Family, FwdChunks, Kernel, KernelKey, RowsGroup};

#[allow(dead_code)]
mod generated {
    use super::Kernel;
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}
pub use generated::*;

/// The kernel for `key`, if the list has it, as [`get`] — and in tests remembered, so the
/// planner's walk can check every key it asked for.
pub fn lookup(key: KernelKey) -> Option<Kernel> {
    #[cfg(test)]
    ASKED.with(|a| a.borrow_mut().insert(key));
    get(key)
}

/// The kernel named `name`, if the table has it (the planner uses keys).
#[cfg(test)]
pub fn find(name: &str) -> Option<Kernel> {
    ALL.iter().copied().find(|k| k.name == name)
}

#[cfg(test)]
thread_local! {
    /// Every key [`lookup`] was asked for on this thread (the planner's tests check that each
    /// exists).
    static ASKED: std::cell::RefCell<std::collections::BTreeSet<KernelKey>> = const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Takes the keys [`lookup`] was asked for on this thread since the last call.
#[cfg(test)]
pub fn take_asked() -> std::collections::BTreeSet<KernelKey> {
    ASKED.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is the list: same order, each entry found by its key and by its name, the name
    /// and SPEC derived from the key.
    #[test]
    fn table_is_the_list() {
        assert_eq!(ALL.len(), list::VARIANTS.len());
        for (i, (k, v)) in ALL.iter().zip(list::VARIANTS).enumerate() {
            assert_eq!((k.index, k.key, k.max_threads, k.min_blocks), (i, v.key, v.max_threads, v.min_blocks));
            assert_eq!(k.name, v.key.symbol());
            assert_eq!(get(k.key), Some(*k));
            assert_eq!(find(k.name), Some(*k));
        }
    }

    /// A `const` lookup: a key the list lacks here would not compile.
    #[test]
    fn const_lookup() {
        const K: Kernel = get(KernelKey::BwdFinalizeCols).unwrap();
        assert_eq!(K, NK_BWD_FINALIZE_COLS);
        assert_eq!(get(KernelKey::BwdFinalize), None);
    }
}
