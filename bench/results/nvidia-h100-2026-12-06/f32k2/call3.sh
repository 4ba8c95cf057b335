#!/usr/bin/env bash
# f32k2 call 3 (2026-12-06, fourteenth session). The staged cluster forward on two CTAs at least
# (19a3e61: call 2's memcheck of the staged kernel tour rejected the kernels' st.async pushes in
# the one-CTA clusters that rows forced onto the path at N = 7 took). The staged tour, then
# memcheck on `kernel_tour` with one test thread (the three tours, as run.sh's sanitizer step)
# and racecheck on the staged tour, on main with the f32 two-chunk builds (a short call: the
# session's device time was nearly spent).
# DIR (default gpu-run/) from main (19a3e61):
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step tests
timeout 60 /tmp/cuda-tests kernel_tour_staged > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head
step sanitize
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests kernel_tour --test-threads=1 > "$R/sanitize-memcheck.log" 2>&1
echo "memcheck rc=$? $(date +%T)"; grep "test result" "$R/sanitize-memcheck.log"; tail -n 2 "$R/sanitize-memcheck.log" | head -1
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/cuda-tests kernel_tour_staged > "$R/sanitize-racecheck.log" 2>&1
echo "racecheck rc=$? $(date +%T)"; grep "test result" "$R/sanitize-racecheck.log"; tail -n 2 "$R/sanitize-racecheck.log" | head -1
nk_end
