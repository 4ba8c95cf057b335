#!/usr/bin/env bash
# amax call 3 (2026-11-29, tenth session). main at 0b03a00 (the re-reading cluster forward and
# the acquire-release amax count, both landed): the whole CUDA suite but the soak tests, and
# memcheck on the FP8 tour (kernel_tour_general_paths, which ends with it).
# DIR (default gpu-run/) from, on main:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact kernel_tour_general_paths > "$R/sanitize-memcheck-tour.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-tour.log" | head -1
