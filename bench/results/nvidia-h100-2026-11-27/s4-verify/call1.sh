#!/usr/bin/env bash
# Session 2026-11-27 (4), call 1: the FP8 twin test (12 cases) with 8a908c2's instruction-only
# twin under memcheck, racecheck and initcheck; the two-rows-per-CTA twin
# (fp8_twin_wide_matches_register, Fp8Tuning::wide_cta_walks forced to 0) with a time limit, to
# find the stall of NOTES v14.3; if it passes, ABBA of NORMKIT_CUDA_FP8_WIDE=8 against the
# default on the large FP8 shapes (one binary). DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 49d94e1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step twin
timeout 120 /tmp/cuda-tests fp8_twin_matches_register --nocapture > "$R/twin.log" 2>&1; echo "twin rc=$?"; grep -E "case|test result|panicked" "$R/twin.log" | tail -4
step wide
timeout 150 /tmp/cuda-tests fp8_twin_wide_matches_register --nocapture > "$R/wide.log" 2>&1; WRC=$?; echo "wide rc=$WRC"; grep -E "case|test result|panicked" "$R/wide.log" | tail -8
step sanitize
for tool in memcheck racecheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_twin_wide_matches_register --nocapture > "$R/sanitize-wide-memcheck.log" 2>&1
echo "wide memcheck rc=$?"; grep -E "case|ERROR|test result" "$R/sanitize-wide-memcheck.log" | head -12
if [ "$WRC" = 0 ]; then
  step ab
  S=32768x4096,16384x4096,8192x4096,65536x512,16384x1024,8192x2048,2048x8192
  bench() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_t --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
  bench off1 NORMKIT_CUDA_FP8_WIDE=off; bench on1 NORMKIT_CUDA_FP8_WIDE=8; bench on2 NORMKIT_CUDA_FP8_WIDE=8; bench off2 NORMKIT_CUDA_FP8_WIDE=off
  /tmp/normkit-bench ab --old "$R/off1,$R/off2" --new "$R/on1,$R/on2" --out "$R/summary-wide.md"; tail -n 30 "$R/summary-wide.md"
fi
step end
