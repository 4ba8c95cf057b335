#!/usr/bin/env bash
# Session 2026-11-28 (2), fwd call 2: is add + RMSNorm 128×4096's bf16-only 0.9 µs (fwd/call1:
# bf16 3.35 µs, f16 2.42, the same kernels' SASS but for the conversions) the kernel or the
# process's buffers? The same case alone in fresh processes, bf16 then f16, f16 then bf16,
# each dtype alone, twice; and with PDL off.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
one() { local tag=$1 dts=$2; shift 2; env "$@" /tmp/normkit-bench run --backend cuda --ops addrms_fwd --shapes 64x4096,128x4096 --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1
  python3 -c "
import json,sys
d=json.load(open('$R/$tag/results.json'))
for c in d['runs'][0]['results']: print('$tag', c['op'], c['m'], c['n'], c['dtype'], round(c['us'],3), round(c['us_rotated'],3))"; }
for i in 1 2; do
  one bf_f$i bf16,f16 X=1; one f_bf$i f16,bf16 X=1; one bf$i bf16 X=1; one f$i f16 X=1; one bfnp$i bf16 NORMKIT_CUDA_PDL=0
done
rm -f "$R"/*/report.html
