#!/usr/bin/env bash
# stg call 1 (2026-11-28, ninth session): main (8d7bba3: the staged forward's per-row exchange no
# longer waits for the previous row's y stores) by environment, the staged cluster forward's
# shape at long rows: slices of 32 KB (clusters twice as large) and 128 KB (half), the next
# row's pass 1 4 and 12 stages behind the refills (default half the slice: 8), D S32 S128 L4 L12
# L12 L4 S128 S32 D. The slice changes the cluster size, so the bits (by N only, as the table).
# DIR (default gpu-run/): tpf/call3's bundle (its normkit-bench is main's build).
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
L=256x131072,512x262144,1024x262144,2048x65536,4096x40960
sb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8 --shapes $L --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
sb Da X=1; sb S32a NORMKIT_CUDA_CSTAGE_SLICE=32768; sb S128a NORMKIT_CUDA_CSTAGE_SLICE=131072; sb L4a NORMKIT_CUDA_CSTAGE_LAG=4; sb L12a NORMKIT_CUDA_CSTAGE_LAG=12
sb L12b NORMKIT_CUDA_CSTAGE_LAG=12; sb L4b NORMKIT_CUDA_CSTAGE_LAG=4; sb S128b NORMKIT_CUDA_CSTAGE_SLICE=131072; sb S32b NORMKIT_CUDA_CSTAGE_SLICE=32768; sb Db X=1
for v in S32 S128 L4 L12; do /tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
step end
