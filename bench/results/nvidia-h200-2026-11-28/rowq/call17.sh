#!/usr/bin/env bash
# Call 17 (2026-11-28, sixth session): branch l2t against main (9e2e7ea): the FP8 yT tile twins
# (RMSNorm without the residual) take call 16's L2 prefetch too, the row of the next tile walk.
# The FP8 tile and oracle tests; memcheck on the tile test; old new new old on the FP8 grid and
# rms_fwd_fp8_t at N = 2048-4096.
# DIR (default gpu-run/) from, on branch l2t:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 120 /tmp/cuda-tests fp8 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_twin_tile_matches_separate --test-threads=1 > "$R/memcheck.log" 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/memcheck.log" | head -5
step ab
T=2048x4096,8192x4096,16384x4096,32768x4096,65536x4096,8192x2048,32768x2048,65536x2048
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $T --dtypes bf16 --no-candle --out "$R/$1-t" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -t; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
rm -f "$R"/*/report.html
step end
