//! `NORMKIT_HIP_LIBRARY` replaces the library list (its own test binary: it sets a process-wide
//! environment variable).

use normkit_core::NormError;
use normkit_hip::{HipBackend, LIBRARY_ENV};

#[test]
fn env_var_points_the_loader_elsewhere() {
    std::env::set_var(LIBRARY_ENV, "libamdhip64-normkit-env-test.so");
    let r = HipBackend::new();
    std::env::remove_var(LIBRARY_ENV);
    match r {
        Err(NormError::BackendUnavailable { backend: "hip", reason }) => {
            assert_eq!(reason, "HIP runtime not found (tried libamdhip64-normkit-env-test.so)")
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}
