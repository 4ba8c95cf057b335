//! How big a run is: the shapes each category visits.
//!
//! The suite is not a full cross product. It covers **every option combination on a few shapes**
//! (the per-op categories: weight none / offset 0 / offset 1 × bias × three casting modes × saved
//! statistics × every dtype combination, with views rotating through contiguous, strided and in
//! place) and **every shape on a few option combinations** (the shape categories). [`Grid`] holds the
//! shape lists; [`Grid::full`] is the whole issue's grid, [`Grid::cpu`] caps the work per case so the
//! CPU instantiation stays within a few minutes on two cores.

/// The environment variable that overrides the grid of every instantiation (`smoke`, `cpu`, `full`).
pub const GRID_ENV: &str = "NORMKIT_CONFORMANCE_GRID";

/// The sizes a run visits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    pub name: &'static str,
    /// Row counts of the shape sweep.
    pub ms: Vec<usize>,
    /// Hidden sizes of the shape sweep.
    pub ns: Vec<usize>,
    /// Shapes with very large hidden sizes (kept fast by a small M).
    pub large: Vec<(usize, usize)>,
    /// Shape-sweep cases with `M·N` above this are skipped.
    pub max_elems: usize,
    /// How many of the four fixed option combinations each shape of the sweep runs (rotating, so
    /// every combination still meets many shapes).
    pub combos_per_shape: usize,
    /// Shapes on which every option combination runs.
    pub option_shapes: Vec<(usize, usize)>,
    /// Shapes of the strided and in-place categories.
    pub view_shapes: Vec<(usize, usize)>,
    /// Hidden sizes and batch sizes of the batch-invariance check.
    pub invariance_ns: Vec<usize>,
    pub invariance_ms: Vec<usize>,
    /// Batch-invariance batches above this many elements are skipped (the row under test is
    /// compared bitwise, so a huge batch adds dispatch paths but mostly costs time).
    pub max_batch_elems: usize,
    /// Shapes of the determinism check.
    pub determinism_shapes: Vec<(usize, usize)>,
}

const MS: [usize; 7] = [1, 2, 3, 17, 128, 1000, 4099];
const NS: [usize; 16] = [1, 7, 8, 33, 64, 127, 128, 500, 769, 1024, 3584, 4096, 5120, 8192, 16384, 65536];

impl Grid {
    /// Everything the issue asks for (for a GPU; the host-side oracle is parallel, but the largest
    /// cases, 4099 × 65536, still take seconds each).
    pub fn full() -> Self {
        Grid {
            name: "full",
            ms: MS.to_vec(),
            ns: NS.to_vec(),
            large: vec![(1, 131072), (3, 131072), (17, 131072), (1, 262144), (5, 262144), (1, 1048576), (2, 1048576)],
            max_elems: usize::MAX,
            combos_per_shape: 4,
            option_shapes: vec![(1, 7), (3, 33), (17, 769), (128, 4096)],
            view_shapes: vec![(1, 1), (3, 7), (17, 127), (17, 769), (128, 4096), (4, 16384), (1000, 1024), (2, 65536)],
            invariance_ns: vec![7, 769, 4096, 6000, 8192, 16384, 65536],
            invariance_ms: vec![2, 17, 128, 1000, 4099],
            max_batch_elems: 1 << 24,
            determinism_shapes: vec![(4099, 128), (1000, 769), (1000, 4096), (128, 65536)],
        }
    }

    /// The CPU instantiation: every M and N of the grid and all four option combinations per shape,
    /// but no shape-sweep case above 2²² elements (so 4099 × 65536 and the like are left to the GPU
    /// grid); huge hidden sizes only with a few rows. About a minute of test time on two cores.
    pub fn cpu() -> Self {
        Grid {
            name: "cpu",
            ms: MS.to_vec(),
            ns: NS.to_vec(),
            large: vec![(1, 131072), (3, 1048576), (2, 262144), (3, 131072)],
            max_elems: 1 << 22,
            combos_per_shape: 4,
            option_shapes: vec![(1, 7), (3, 33), (17, 769), (64, 1024)],
            view_shapes: vec![(1, 1), (3, 7), (17, 127), (17, 769), (128, 1024), (4, 16384)],
            invariance_ns: vec![7, 769, 4096],
            invariance_ms: vec![2, 17, 128, 1000],
            max_batch_elems: 1 << 22,
            determinism_shapes: vec![(4099, 128), (1000, 769), (64, 16384)],
        }
    }

    /// A small grid for slow backends (the oracle backend) and the mutation tests.
    pub fn smoke() -> Self {
        Grid {
            name: "smoke",
            ms: vec![1, 3, 17],
            ns: vec![1, 7, 33, 128, 769],
            large: vec![(1, 65536)],
            max_elems: 1 << 14,
            combos_per_shape: 4,
            option_shapes: vec![(3, 33)],
            view_shapes: vec![(1, 1), (3, 7), (5, 129)],
            invariance_ns: vec![7, 129],
            invariance_ms: vec![2, 17],
            max_batch_elems: 1 << 14,
            determinism_shapes: vec![(17, 129)],
        }
    }

    /// The grid called `name` (`"smoke"`, `"cpu"`, `"full"`).
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "smoke" => Some(Grid::smoke()),
            "cpu" => Some(Grid::cpu()),
            "full" => Some(Grid::full()),
            _ => None,
        }
    }

    /// `grid`, unless the environment variable [`GRID_ENV`] names another one (a quick smoke run
    /// of a GPU backend, a full run of the CPU backend). Panics on an unknown name.
    pub fn or_from_env(grid: Grid) -> Grid {
        match std::env::var(GRID_ENV) {
            Ok(name) => Grid::named(&name).unwrap_or_else(|| panic!("{GRID_ENV}={name}: expected smoke, cpu or full")),
            Err(_) => grid,
        }
    }

    /// The `(M, N)` pairs of the shape sweep within the cap.
    pub fn sweep_shapes(&self) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for &m in &self.ms {
            for &n in &self.ns {
                if m.saturating_mul(n) <= self.max_elems {
                    v.push((m, n));
                }
            }
        }
        v
    }
}
