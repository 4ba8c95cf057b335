#!/usr/bin/env bash
# Session 2026-11-27 (5), call 5: the landed build (3089564), rms_fwd_fp8_t by environment around
# the tile defaults (clusters of 2, 16-row tiles, two rows per CTA past 8 walks): one row per CTA
# (NORMKIT_CUDA_FP8_WIDE=off: 128-thread CTAs, more per SM), clusters of 4 with 8-row tiles (a
# 32-row supertile in 33 KB per CTA), both; the separate transpose; twice each, in the order
# d s w c wc wc c w s d.
# DIR (default gpu-run/) from NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR (then xz).
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
S=32768x4096,16384x4096,8192x4096,65536x4096,32768x2048,16384x3072
tt() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tt d1 X=1; tt s1 NORMKIT_CUDA_FP8_TWIN_TM=0; tt w1 NORMKIT_CUDA_FP8_WIDE=off; tt c1 NORMKIT_CUDA_FP8_TWIN_CL=4 NORMKIT_CUDA_FP8_TWIN_TM=8
tt wc1 NORMKIT_CUDA_FP8_WIDE=off NORMKIT_CUDA_FP8_TWIN_CL=4 NORMKIT_CUDA_FP8_TWIN_TM=8
tt wc2 NORMKIT_CUDA_FP8_WIDE=off NORMKIT_CUDA_FP8_TWIN_CL=4 NORMKIT_CUDA_FP8_TWIN_TM=8
tt c2 NORMKIT_CUDA_FP8_TWIN_CL=4 NORMKIT_CUDA_FP8_TWIN_TM=8; tt w2 NORMKIT_CUDA_FP8_WIDE=off; tt s2 NORMKIT_CUDA_FP8_TWIN_TM=0; tt d2 X=1
for v in s w c wc; do /tmp/normkit-bench ab --old "$R/d1,$R/d2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; done
