//! Host-side tests of the HIP backend that need no AMD GPU: loading the runtime, the typed
//! errors of a machine without one, the embedded code objects, raw-pointer buffers.

use normkit_core::{validate_forward, AliasRule, Buffer, DType, Forward, InOut, MatMut, MatRef, NormDesc, NormError, Operand};
use normkit_hip::ffi::{self, Api, LoadError};
use normkit_hip::{check_code_object, elf, kernels, HipBackend, HipBuffer, HipOptions, InitError};

fn options(libs: &[&str]) -> HipOptions {
    HipOptions { libraries: libs.iter().map(|s| s.to_string()).collect(), device: 0 }
}

#[test]
fn missing_library_is_backend_unavailable_with_the_names_tried() {
    let libs = ["libamdhip64-normkit-test-missing.so", "/nonexistent/libamdhip64.so.6"];
    let e = HipBackend::try_with_options(&options(&libs)).expect_err("no such library");
    assert_eq!(e, InitError::Library(LoadError::NotFound { tried: libs.iter().map(|s| s.to_string()).collect() }));
    let n: NormError = e.into();
    match n {
        NormError::BackendUnavailable { backend: "hip", reason } => {
            assert_eq!(reason, "HIP runtime not found (tried libamdhip64-normkit-test-missing.so, /nonexistent/libamdhip64.so.6)")
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}

#[test]
fn default_library_list_is_the_documented_one() {
    assert_eq!(ffi::LIB_NAMES, ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"]);
}

/// A library that opens but is not the HIP runtime (libc has no `hipInit`) is a typed error too.
#[test]
fn a_library_without_the_hip_symbols_is_rejected() {
    match Api::load(&["libc.so.6"]) {
        Err(LoadError::MissingSymbol { soname, symbol }) => assert_eq!((soname.as_str(), symbol.as_str()), ("libc.so.6", "hipInit")),
        Err(LoadError::NotFound { .. }) => println!("SKIP: libc.so.6 cannot be opened here"),
        Ok(_) => panic!("libc is not a HIP runtime"),
    }
}

/// Whatever this machine has, `HipBackend::new()` never panics and reports a reason:
/// no library (a bare CI machine), no device (Debian's `libamdhip64-5` without an AMD GPU:
/// hipInit returns hipErrorNoDevice), or a working backend on an AMD GPU.
#[test]
fn new_reports_why_it_cannot_run() {
    match HipBackend::new() {
        Ok(b) => println!("HIP device present: {b:?}"),
        Err(NormError::BackendUnavailable { backend: "hip", reason }) => {
            println!("no HIP device here, as expected on this machine: {reason}");
            assert!(
                reason.starts_with("HIP runtime not found (tried libamdhip64.so, libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5)")
                    || reason.starts_with("HIP runtime not found (tried ") // NORMKIT_HIP_LIBRARY set
                    || reason == "no AMD GPU (hipErrorNoDevice)",
                "unexpected reason: {reason}"
            );
        }
        Err(e) => panic!("expected BackendUnavailable, got {e:?}"),
    }
}

/// With a real HIP runtime installed (Debian: `apt-get install libamdhip64-5`) but no AMD GPU,
/// every declared function resolves and hipInit's hipErrorNoDevice becomes `NoDevice`.
#[test]
fn installed_runtime_without_a_gpu_is_no_device() {
    let Ok(api) = Api::load(ffi::LIB_NAMES) else {
        println!("SKIP: no libamdhip64 on this machine (install libamdhip64-5 to run this test)");
        return;
    };
    println!("loaded {}", api.soname);
    match HipBackend::try_with_options(&options(ffi::LIB_NAMES)) {
        Err(InitError::NoDevice) => {
            let n: NormError = InitError::NoDevice.into();
            assert!(matches!(n, NormError::BackendUnavailable { backend: "hip", ref reason } if reason == "no AMD GPU (hipErrorNoDevice)"));
        }
        Ok(b) => println!("an AMD GPU is present: {b:?}"),
        Err(e) => panic!("expected NoDevice on a machine without an AMD GPU, got {e:?}"),
    }
    // Error strings come from the runtime itself.
    let e = api.check(ffi::HIP_ERROR_NO_DEVICE, "hipInit").expect_err("100 is an error");
    assert_eq!(e.code, 100);
    assert!(!e.message.is_empty());
    assert!(api.check(ffi::HIP_SUCCESS, "hipInit").is_ok());
}

/// Every embedded code object parses (std-only reader), is for its arch, exports every kernel of
/// kernels-hip/variants.rs, and is built for wave64.
#[test]
fn embedded_code_objects_list_every_kernel() {
    let archs: Vec<&str> = kernels::archs().collect();
    assert!(archs.contains(&"gfx942") && archs.contains(&"gfx950"), "{archs:?}");
    for &(arch, bytes) in kernels::CODE_OBJECTS {
        let co = elf::parse(bytes).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(co.arch(), Some(arch));
        for k in kernels::KERNELS {
            let info = co.kernel(k.name).unwrap_or_else(|| panic!("{arch}: {} missing", k.name));
            assert_eq!(info.wavefront_size, 64, "{arch} {}", k.name);
        }
        assert_eq!(co.kernels.len(), kernels::KERNELS.len(), "{arch}: no kernel outside the list");
        let arch: &'static str = arch;
        check_code_object(arch, bytes, 64).unwrap_or_else(|e| panic!("{arch}: {e}"));
    }
}

/// The start-up check: a device reporting another wavefront size than the code object's is a
/// typed error, not a wrong result.
#[test]
fn wavefront_mismatch_is_a_typed_error() {
    let bytes = kernels::code_object("gfx942").expect("gfx942 code object");
    let e = check_code_object("gfx942", bytes, 32).expect_err("wave32 device");
    assert_eq!(e, InitError::WavefrontMismatch { arch: "gfx942", device: 32, code_object: 64 });
    let n: NormError = e.into();
    assert!(matches!(n, NormError::BackendUnavailable { backend: "hip", ref reason } if reason.contains("wavefront size mismatch")));
    // The wrong arch's object, or garbage, is rejected too.
    let gfx950 = kernels::code_object("gfx950").expect("gfx950 code object");
    assert!(matches!(check_code_object("gfx942", gfx950, 64), Err(InitError::CodeObject(_))));
    assert!(matches!(check_code_object("gfx942", b"not an elf", 64), Err(InitError::CodeObject(_))));
}

/// Raw device pointers expose their address, so validation rejects overlapping outputs before
/// anything is launched (no device needed: validation is host-side).
#[test]
fn raw_buffers_expose_addresses_for_the_overlap_check() {
    let (m, n) = (4usize, 64usize);
    let base = 0x7f00_0000_0000u64;
    // SAFETY: never dereferenced: only validation (host-side) sees these buffers.
    let x = unsafe { HipBuffer::from_raw(base, DType::F32, m * n) };
    // SAFETY: as above; overlaps x by half.
    let mut y = unsafe { HipBuffer::from_raw(base + (m * n / 2 * 4) as u64, DType::F32, m * n) };
    assert_eq!(x.base_addr(), Some(base));
    assert_eq!(x.device_ptr(), base);
    let desc = NormDesc::rms(1e-6).without_weight();
    let r = validate_forward(&desc, &Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y, m, n))));
    assert!(matches!(r, Err(NormError::Aliasing { operand: Operand::Y, rule: AliasRule::Overlap })), "{r:?}");
    // SAFETY: as above; disjoint from x.
    let mut y2 = unsafe { HipBuffer::from_raw(base + (m * n * 4) as u64, DType::F32, m * n) };
    validate_forward(&desc, &Forward::new(InOut::separate(MatRef::new(&x, m, n), MatMut::new(&mut y2, m, n)))).unwrap();
}
