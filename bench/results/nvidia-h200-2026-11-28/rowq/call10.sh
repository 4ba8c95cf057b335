#!/usr/bin/env bash
# Session 2026-11-28 (5), rowq call 10 — call 9's bundle (branch k8ln's build; with
# NORMKIT_CUDA_FWD_K8W_LN=off it plans as main, where that knob is off), by environment, D X X D:
#  * TW: the 8-chunk twin (`nk_fwd_regd8_*`) at every grid of N = 16384 (NORMKIT_CUDA_FWD_DECODE=
#    1000000; the same bits as the plain 8-chunk kernel, which spills 16-24 bytes at its
#    1024-thread bound) against main's rule (the twin for one wave);
#  * R8: RMSNorm at N = 8192 on 128 threads of 8 chunks (NORMKIT_CUDA_FWD_K8W=8192:128:1, which
#    also drops the N = 16384 row: only N = 8192 cells count) over its whole M range, decode rows
#    included (call 9 measured 512-4096 rows only).
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
export NORMKIT_CUDA_FWD_K8W_LN=off
step twin
S=256x16384,512x16384,1024x16384,2048x16384,4096x16384,8192x16384,16384x16384
one() { local tag=$1; shift; env "$@" timeout 60 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
one D-a X=1; one TW-a NORMKIT_CUDA_FWD_DECODE=1000000; one TW-b NORMKIT_CUDA_FWD_DECODE=1000000; one D-b X=1
/tmp/normkit-bench ab --old "$R/D-a,$R/D-b" --new "$R/TW-a,$R/TW-b" --out "$R/summary-twin.md" | tail -n 1
step r8
S8=1x8192,8x8192,32x8192,128x8192,512x8192,2048x8192,4096x8192,16384x8192,32768x8192
two() { local tag=$1; shift; env "$@" timeout 60 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes $S8 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
two E-a X=1; two R8-a NORMKIT_CUDA_FWD_K8W=8192:128:1; two R8-b NORMKIT_CUDA_FWD_K8W=8192:128:1; two E-b X=1
/tmp/normkit-bench ab --old "$R/E-a,$R/E-b" --new "$R/R8-a,$R/R8-b" --out "$R/summary-r8.md" | tail -n 1
rm -f "$R"/*/report.html
step end
