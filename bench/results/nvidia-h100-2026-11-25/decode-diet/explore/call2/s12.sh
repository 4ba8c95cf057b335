#!/usr/bin/env bash
# Session 2026-11-25d, exploration on the decode-diet build: the 2-8-row cluster backward (NORMKIT_CUDA_BWD_SMALL=8),
# PDL at 8-128 rows, and the decode twin on every register-forward grid (NORMKIT_CUDA_FWD_DECODE), each ABAB in one call.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
run() { # tag env ops shapes
  env $2 /tmp/normkit-bench run --backend cuda --ops $3 --shapes $4 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
BSH=1x4096,2x4096,4x4096,8x4096,16x4096,2x1024,8x1024,8x2048,4x8192,8x8192
for i in 1 2; do
  run bs0-$i X=1 rms_bwd,ln_bwd,addrms_bwd $BSH
  run bs8-$i NORMKIT_CUDA_BWD_SMALL=8 rms_bwd,ln_bwd,addrms_bwd $BSH
done
PSH=8x4096,16x4096,32x4096,64x4096,128x4096,64x8192,128x2048
for i in 1 2; do
  run pdl1-$i X=1 rms_fwd,ln_fwd,addrms_fwd $PSH
  run pdl0-$i NORMKIT_CUDA_PDL=0 rms_fwd,ln_fwd,addrms_fwd $PSH
done
TSH=4096x512,16384x512,65536x512,512x1024,1024x1024,2048x1024,4096x1024,8192x1024,16384x1024,1024x2048,4096x2048,8192x2048,256x4096,512x4096,1024x4096,2048x4096,4096x4096,512x8192,2048x8192
for i in 1 2; do
  run tw0-$i X=1 rms_fwd,ln_fwd,addrms_fwd $TSH
  run tw1-$i NORMKIT_CUDA_FWD_DECODE=1000000 rms_fwd,ln_fwd,addrms_fwd $TSH
done
cd "$OUT" && tar czf x.tgz r && rm -rf r
