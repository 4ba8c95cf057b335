#!/usr/bin/env bash
# Session 2026-11-27 (7), call 5: the landed build of call 4 (86df53c's kernels) by environment —
# the staged slice (NORMKIT_CUDA_CSTAGE_SLICE: 64 KiB default, 32 KiB, 16 KiB; the cluster size
# follows, chosen by N alone, so any of them keeps batch invariance) on the FP8 long rows from 1
# to 4096 rows, default A, 32 KiB B, 16 KiB C in the order A B C C B A.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 9cbd2c1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $O --shapes $L --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
L=1x65536,8x65536,32x65536,128x65536,512x65536,2048x65536,8x40960,4096x40960,8x131072,256x131072,8x262144,512x262144
O=rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
step sweep
one a1 X=1; one b1 NORMKIT_CUDA_CSTAGE_SLICE=32768; one c1 NORMKIT_CUDA_CSTAGE_SLICE=16384
one c2 NORMKIT_CUDA_CSTAGE_SLICE=16384; one b2 NORMKIT_CUDA_CSTAGE_SLICE=32768; one a2 X=1
/tmp/normkit-bench ab --old "$R/a1,$R/a2" --new "$R/b1,$R/b2" --out "$R/summary-32k.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/a1,$R/a2" --new "$R/c1,$R/c2" --out "$R/summary-16k.md" | tail -n 1
step end
