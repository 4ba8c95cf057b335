//! The conformance suite on the HIP backend (`cargo test -p normkit-conformance --features hip`),
//! plus what only a device backend has: raw-pointer views, the scalar fallback path, and a tour
//! of every kernel against the CPU backend. Without a HIP runtime or an AMD GPU every test is
//! reported as ignored (not run): see `normkit_conformance::harness`.
//!
//! Status: the HIP kernels are compiled and ISA-checked (crates/normkit-hip/tests/isa.rs) but
//! have not yet run on AMD hardware; these tests are what will check them there.

use normkit::hip::HipBackend;
use normkit_core::DType;

/// The backend; every test here runs only after `harness::device_present` found a device.
fn backend() -> HipBackend {
    HipBackend::new().unwrap_or_else(|e| panic!("the hip backend failed to start: {e}"))
}

/// `(m, n, stride, dtype)` of the kernel tour (`normkit_conformance::device::kernel_tour`):
/// HIP thresholds (crates/normkit-hip/src/tuning.rs): the row paths
/// stage rows in 64 KiB of LDS, so the forward row path ends between 8192 and 16384 (bf16 with
/// a weight) and the backward row path at 4096 (f32 with dW and dB: earlier); past them the
/// split path runs. Odd N and offset 1 take the element-wise kernels.
const KERNEL_TOUR_SHAPES: &[(usize, usize, usize, DType)] = &[
    (3usize, 7usize, 7usize, DType::F32),
    (5, 128, 136, DType::BF16),
    (4, 769, 800, DType::F16),
    (3, 4096, 4096, DType::BF16),
    (3, 4096, 4096, DType::F32),
    (2, 8192, 8192, DType::BF16),
    (2, 16384, 16384, DType::BF16),
    (2, 20000, 20008, DType::BF16),
    (2, 20001, 20001, DType::F32),
    (70, 64, 64, DType::F16),
];

fn main() -> std::process::ExitCode {
    let mut trials = normkit_conformance::conformance_trials!(HipBackend::new(), normkit_conformance::Grid::full());
    trials.extend(normkit_conformance::device_trials!(backend(), KERNEL_TOUR_SHAPES));
    normkit_conformance::harness::run("hip", normkit_conformance::harness::device_present(HipBackend::new), trials)
}
