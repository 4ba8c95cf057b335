#!/usr/bin/env bash
# rr call 4 (2026-11-29, tenth session). The landed form of branch reread against main (39585e6):
# the re-reading cluster forward (nk_fwd_clr_*, clusters of 8 × 512 threads, no prefetch) for
# f32 rows past the staged slices (every op) and 16-bit RMSNorm without the residual at N = 1M;
# the rest of those rows keep the split path. Old new new old on the rows it takes, the rows it
# leaves, and controls (the FP8 unit's kernels, where its code was added); the suite; memcheck
# and racecheck on the new test.
# DIR (default gpu-run/) from, on branch reread:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 39585e6
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
L=8x1048576,128x1048576,256x1048576,512x262144
Q=32768x4096,8x4096,512x262144
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 128x524288,8x524288 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,rms_bwd --shapes 4096x4096,2048x4096,8x4096,2048x65536 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -l -f -q -c; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-memcheck-reread.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-reread.log" | head -1
timeout 170 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-racecheck-reread.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-reread.log" | head -1
rm -f "$R"/*/report.html
step end
