#!/usr/bin/env bash
# Session 2026-11-27 (5), call 7: per-row scaling (rms_fwd_fp8_row) at many rows, N = 512 to 8192, by
# environment on the 3089564 build: the default (the plain nk_fwd_regq kernel past 8 walks) and
# the per-row twin at every M (NORMKIT_CUDA_FP8_TWIN=1000000), in the order d t t d.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
S=65536x512,131072x512,32768x1024,16384x2048,65536x2048,8192x8192,4096x8192,16384x3072,32768x4096
tt() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_row --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tt d1 X=1; tt t1 NORMKIT_CUDA_FP8_TWIN=1000000
tt t2 NORMKIT_CUDA_FP8_TWIN=1000000; tt d2 X=1
for v in t; do /tmp/normkit-bench ab --old "$R/d1,$R/d2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; done
