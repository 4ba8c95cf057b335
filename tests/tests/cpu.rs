//! The conformance suite on the rayon CPU backend.

normkit_conformance::conformance_suite!(
    Ok::<_, normkit_core::NormError>(normkit_core::cpu::CpuBackend::new()),
    normkit_conformance::Grid::cpu()
);
