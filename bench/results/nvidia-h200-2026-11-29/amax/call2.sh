#!/usr/bin/env bash
# amax call 2 (2026-11-29, tenth session). amax call 1's bundle by environment: how yT is written
# at few rows (NORMKIT_CUDA_FP8_T = separate (default), fused, strided), rms_fwd_fp8_t and
# addrms_fwd_fp8 with yT at 1-64 rows of 4096 and 2048; D F S S F D.
# DIR (default gpu-run/): amax call 1's, its archive holding normkit-bench alone.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
S=1x4096,8x4096,16x4096,64x4096,8x2048,64x2048,8x8192
sw() { env "$2" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
sw d1 X=1; sw f1 NORMKIT_CUDA_FP8_T=fused; sw s1 NORMKIT_CUDA_FP8_T=strided; sw s2 NORMKIT_CUDA_FP8_T=strided; sw f2 NORMKIT_CUDA_FP8_T=fused; sw d2 X=1
for v in f s; do /tmp/normkit-bench ab --old "$R/d1,$R/d2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
