#!/usr/bin/env bash
# amax call 1 (2026-11-29, tenth session). Branch amax against main (d5edeeb): the FP8 amax
# commit's arrival count as one GPU-scope atom.acq_rel (MEMBAR.ALL.GPU before it, CCTL.IVALL
# after) instead of a relaxed increment between sequentially consistent fences (MEMBAR.SC.GPU,
# twice for the last CTA); the max becomes a non-returning RED. Old new new old on the FP8 ops
# from decode sizes to long rows; the FP8 tests, memcheck; torch.compile's FP8 path at the decode
# cells in the same call (fp8_peers.py).
# DIR (default gpu-run/) from, on branch amax:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d5edeeb
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
Q=1x4096,8x4096,128x4096,4096x1024,2048x8192,32768x4096,2048x65536
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_t --shapes $Q --dtypes bf16 --no-candle --out "$R/$1-q" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,rms_fwd,rms_bwd --shapes 8x4096,32768x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -q -c; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step fp8peers
PYTHONUNBUFFERED=1 timeout 60 python3 "$HERE/peers/fp8_peers.py" --budget-s 45 --shapes 8x4096,128x4096 --impls compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$?"; tail -n 1 "$R/fp8peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row,rms_fwd_fp8_t --shapes 8x4096,128x4096 --dtypes bf16 --no-candle --out "$R/grid8" > "$R/grid8.log" 2>&1
/tmp/normkit-bench merge "$R/grid8/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8" && grep "at or ahead" "$R/merged-fp8/report.md"
step tests
timeout 150 /tmp/cuda-tests fp8 > "$R/tests.log" 2>&1; echo "fp8 tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact fp8_batch_invariance > "$R/sanitize-memcheck-fp8bi.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-fp8bi.log" | head -1
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
