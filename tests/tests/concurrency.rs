//! One `CpuBackend` shared by 4 threads, each making a few hundred interleaved forward and
//! backward calls of different shapes and options; every result bitwise equal to the same call
//! made alone (`normkit_conformance::concurrency`).

use normkit_conformance::concurrency::check_concurrency;
use normkit_core::cpu::CpuBackend;

/// `CpuBackend` is `Send + Sync` (a compile-time check: this does not build otherwise).
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<CpuBackend>();
};

#[test]
fn four_threads_share_one_cpu_backend() {
    let cpu = CpuBackend::new();
    let t = std::time::Instant::now();
    match check_concurrency(&cpu, 4, 300, 0x5EED_C0C0) {
        Ok(calls) => println!("cpu: {calls} concurrent calls, each bitwise equal to the call made alone, in {:.1?}", t.elapsed()),
        Err(report) => panic!("{report}"),
    }
}
