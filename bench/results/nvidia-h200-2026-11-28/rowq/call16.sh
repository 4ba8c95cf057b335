#!/usr/bin/env bash
# Call 16 (2026-11-28, sixth session): branch l2pf's landing form against main (348a0d6): the
# quantised RMSNorm twin without the residual prefetches into L2 the row one walk past its
# registers' (Fp8Tuning::twin_l2_ahead = 1 on HBM3e; call 15 measured it by environment). The
# full CUDA suite (the prefetch on by default), memcheck on the FP8 batch-invariance test, A B B A on the
# FP8 grid and the per-row cells.
# DIR (default gpu-run/) from, on branch l2pf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_batch_invariance --test-threads=1 > "$R/memcheck.log" 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/memcheck.log" | head -5
step ab
Q8=1x8192,8x8192,128x8192,2048x8192,8192x8192,8x4096,128x4096,4096x4096,16384x4096,32768x4096,128x1024,4096x1024
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $Q8 --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
rm -f "$R"/*/report.html
step end
