#!/usr/bin/env bash
# Session 2026-11-27 (5), call 8: per-row scaling takes the twin at every M for RMSNorm with 4
# whole chunks per thread (Fp8Tuning::row_twin_full; a planner change, no kernel changed: sm_90a
# SASS of the 300 kernels as 3874416) against 3874416 (whose kernels' SASS equals 24e3f5e's):
# every CUDA test but soak; A B B A on the FP8 grid and rms_fwd_fp8_row / rms_fwd_fp8_t at many
# rows, N = 512 to 8192; the FP8 peers, merged.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 3874416
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=65536x512,131072x512,32768x1024,16384x2048,65536x2048,8192x8192,4096x8192,16384x3072,32768x4096,65536x4096,8192x4096,4096x4096
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; one r-${r%%:*} ${r##*:} rms_fwd_fp8_row,rms_fwd_fp8_t $S bf16 X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2,$R/r-old1,$R/r-old2" --new "$R/q-new1,$R/q-new2,$R/r-new1,$R/r-new2" --out "$R/summary-fp8.md" | tail -n 1
step peers
PYTHONUNBUFFERED=1 timeout 115 python3 "$HERE/peers/fp8_peers.py" --budget-s 100 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/q-new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step end
