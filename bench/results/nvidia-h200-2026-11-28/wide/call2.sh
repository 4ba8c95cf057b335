#!/usr/bin/env bash
# wide call 2 (2026-11-28, ninth session): branch wide's landed form against main (8d7bba3), old
# new new old — the yT tile calls on one row per CTA past 40960 rows where M is a multiple of 16
# (Fp8Tuning::tile_wide_max_rows), per-row FP8 add + RMSNorm on two rows per CTA past 8 walks
# where its rows are whole 4-chunk rows (Fp8Tuning::wide_row = Residual); both on HBM3e only.
# The FP8 twin, batch-invariance and tile tests; memcheck on the batch-invariance test.
# DIR (default gpu-run/) from, on branch wide:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T1 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
ST=16384x4096,32768x4096,40960x4096,40961x4096,40976x4096,49152x4096,65536x4096,65536x3072,65536x2048,32768x2048
SR=8x4096,128x4096,4096x1024,8192x4096,16384x4096,32768x4096,65536x4096,16384x3072,8192x8192
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1-t" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $SR --dtypes bf16 --no-candle --out "$R/$1-r" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops addrms_fwd_fp8_row --shapes 16384x4096,32768x4096 --dtypes f16 --no-candle --out "$R/$1-h" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,addrms_fwd_fp8 --shapes 32768x4096 --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -t -r -h -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 150 /tmp/cuda-tests fp8_twin_matches_register fp8_batch_invariance fp8_twin_tile_matches_separate fp8_twin_wide_matches_register > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact fp8_batch_invariance > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 2 "$R/sanitize-memcheck.log" | head -1
rm -f "$R"/*/report.html
step end
