//! The suite against the oracle backend: checks the harness itself (a correct backend must pass
//! every category) without any production backend. The oracle is slow, so the smoke grid.

normkit_conformance::conformance_suite!(
    Ok::<_, normkit_core::NormError>(normkit_conformance::OracleBackend),
    normkit_conformance::Grid::smoke()
);
