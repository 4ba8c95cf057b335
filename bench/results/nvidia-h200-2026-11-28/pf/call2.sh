#!/usr/bin/env bash
# Session 2026-11-28 (4), pf call 2 — the landed form against main (703310b):
#  * the staged cluster forward's L2 prefetch of the next row's first stages, in the kernels where
#    call 1 measured it faster (16-bit add + RMSNorm: 2 stages; LayerNorm without the residual and
#    per-row FP8 RMSNorm without it: 4); no code in the other staged kernels;
#  * bf16 per-row quantised RMSNorm with the residual at launch bound (256, 2);
#  * bf16 per-tensor quantised RMSNorm with the residual: a second build at (256, 2) (`_x2`) for
#    calls of at least 2^25 elements.
# Steps: every CUDA test but soak; memcheck on the per-row FP8 staged test (prefetching kernels);
# A B B A on the FP8 grid, the FP8 ops at 1-16384 rows of 1024-8192 (bf16, f16), the long rows,
# issue 15's forward grid; the FP8 peers (eager, torch.compile) merged with the new build's runs.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 703310b
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
Q8=1x8192,8x8192,128x8192,512x8192,1024x8192,2048x8192,4096x8192,8192x8192,8x4096,128x4096,512x4096,4096x4096,16384x4096,128x1024,1024x1024
QR=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row
L=2048x65536,256x131072,512x262144,1024x262144,128x1048576
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $QR --shapes $Q8 --dtypes bf16,f16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd,addrms_fwd --shapes 2048x65536,512x262144 --dtypes f16 --no-candle --out "$R/$1-h" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q -l -h -i; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step sanitize
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_staged_matches_oracle --test-threads=1 > "$R/sanitize-memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-memcheck.log" | tail -n 2
step peers
PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/fp8_peers.py" --budget-s 75 --shapes 4096x1024,32768x4096,2048x8192,2048x65536,8x4096,128x4096 --impls eager,compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/new1-g/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
