#!/usr/bin/env bash
# Session 2026-11-27 (5), call 1: yT through the FP8 twin's own shared-memory tile
# (nk_fwd_regqd{|r}t_*, Fp8Tuning::twin_tm = 16) against 22a0bb6 (twin, then the separate
# transpose): every CUDA test but soak (the new fp8_twin_tile_matches_separate included); A B B A
# on the FP8 grid; on the new build the tile by environment (NORMKIT_CUDA_FP8_TWIN_TM = 0, 8, 16,
# 32) for rms_fwd_fp8_t; the FP8 peers (torch.compile, eager, the naive transposed copy), merged;
# the tile test under memcheck, racecheck and initcheck.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 22a0bb6
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tile-test
timeout 60 /tmp/cuda-tests fp8_twin_tile_matches_separate --nocapture > "$R/tile-test.log" 2>&1; echo "tile test rc=$?"; grep -E "test result|FAIL|panicked|differs" "$R/tile-test.log" | head -5
step fp8
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8 q-old1 normkit-bench-base X=1; fp8 q-new1 normkit-bench X=1; fp8 q-new2 normkit-bench X=1; fp8 q-old2 normkit-bench-base X=1
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2" --new "$R/q-new1,$R/q-new2" --out "$R/summary-fp8.md" | tail -n 1
step sweep
S=32768x4096,4096x1024,2048x8192,8x4096,128x4096,1024x4096,8192x2048,65536x512,4096x8192
tt() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tt t0a NORMKIT_CUDA_FP8_TWIN_TM=0; tt t16a X=1; tt t8 NORMKIT_CUDA_FP8_TWIN_TM=8; tt t32 NORMKIT_CUDA_FP8_TWIN_TM=32; tt t16b X=1; tt t0b NORMKIT_CUDA_FP8_TWIN_TM=0
/tmp/normkit-bench ab --old "$R/t0a,$R/t0b" --new "$R/t16a,$R/t16b" --out "$R/summary-tile-vs-separate.md" | tail -n 1
step peers
PYTHONUNBUFFERED=1 timeout 115 python3 "$HERE/peers/fp8_peers.py" --budget-s 100 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/q-new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitize
for tool in memcheck racecheck initcheck; do
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_tile_matches_separate --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step end
