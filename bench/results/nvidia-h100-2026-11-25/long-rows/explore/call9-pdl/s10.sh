#!/usr/bin/env bash
# Session 2026-11-25c: decode twin with and without programmatic dependent launch, by rows (per-op PDL threshold).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
SH=1x4096,8x4096,16x4096,32x4096,64x4096,128x4096,16x2048,64x2048,128x8192
for tag in pdl1 nopdl1 pdl2 nopdl2; do
  case $tag in nopdl*) E=NORMKIT_CUDA_PDL=0;; *) E=X=1;; esac
  env $E /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16,f16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag done"
done
cd "$OUT" && tar czf x.tgz r && rm -rf r
