#!/usr/bin/env bash
# Session 2026-11-27 (7), call 8: where per-tensor FP8 at decode sizes spends the 1.5-1.7 µs it
# takes over per-row scaling (8×4096: add + RMSNorm 4.1 against 2.4 µs; RMSNorm 3.8 against 2.3):
# ncu (full set: the launch, the warp states, the source counters) of the landed kernels
# (25d1336's build, the bundle's normkit-bench-base) for both modes at 8 rows of 4096.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 25d1336
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench-base.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
for op in addrms_fwd_fp8 addrms_fwd_fp8_row rms_fwd_fp8 rms_fwd_fp8_row; do
  timeout 100 ncu --set full --import-source yes -k regex:nk_fwd --launch-skip 4 --launch-count 1 /tmp/nb run --backend cuda --ops $op --shapes 8x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-8x4096.log" 2>&1; echo "ncu $op rc=$?"
  grep -E "^\s+nk_|Duration|Executed Instructions  |Registers Per|Stall|Warp Cycles Per Issued" "$R/ncu-$op-8x4096.log" | head -12
done
echo "== end $(date +%T)"
