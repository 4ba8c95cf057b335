#!/usr/bin/env bash
# Session 2026-11-27 (5), call 6: per-row scaling (rms_fwd_fp8_row) at many rows of 4096 by
# environment on the 3089564 build: the default (the plain nk_fwd_regq kernel past 8 walks), the
# per-row twin at every M (NORMKIT_CUDA_FP8_TWIN=100), and the twin with two row groups per CTA
# (NORMKIT_CUDA_FWD_TABLE=4096:128:2: 256-thread CTAs, the group and so the bits unchanged); the
# order d t t2 t2 t d.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
S=32768x4096,65536x4096,16384x4096,8192x4096,4096x4096
tt() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_row,rms_fwd_fp8 --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tt d1 X=1; tt t1 NORMKIT_CUDA_FP8_TWIN=100; tt w1 NORMKIT_CUDA_FP8_TWIN=100 NORMKIT_CUDA_FWD_TABLE=4096:128:2
tt w2 NORMKIT_CUDA_FP8_TWIN=100 NORMKIT_CUDA_FWD_TABLE=4096:128:2; tt t2 NORMKIT_CUDA_FP8_TWIN=100; tt d2 X=1
for v in t w; do /tmp/normkit-bench ab --old "$R/d1,$R/d2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; done
