#!/usr/bin/env bash
# rpc call 8 (2026-11-28, eighth session): main (6914664) with the half-thread test's new shapes
# (partial chunks below a warp: N = 264, 520, 1000, the `_sw` builds forced), bitwise against
# the plain register kernel; and memcheck on it.
# DIR (default gpu-run/) from, on branch subtest:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo test --release -p normkit-conformance --features cuda --test cuda --no-run
#   (the executable stripped, xz'd to DIR/bin/cuda-tests.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/cuda-tests.xz" > /tmp/cuda-tests; chmod +x /tmp/cuda-tests
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
echo "== test $(date +%T)"
timeout 120 /tmp/cuda-tests pair_forward_matches_register > "$R/tests.log" 2>&1; echo "test rc=$?"; grep -E "test result|FAIL|panicked|differs" "$R/tests.log" | head -20
echo "== memcheck $(date +%T)"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests pair_forward_matches_register > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
echo "== end $(date +%T)"
