#!/usr/bin/env bash
# wpre call 3 (2026-11-28, eighth session): call 2's bundle (branch wpre) by environment on the
# forwards of N = 512 to 2048 that trail the peers (call 2: rms_fwd 16384x1024 0.95x, ln_fwd
# 16384x1024 0.89x, 65536x512 0.93-0.97x, rms_fwd 8192x2048 0.96x): the table's rows per CTA
# doubled and halved (the same groups, so the same bits), the L2 prefetch off, persistent grids.
# D R2 RH PF0 PS PS PF0 RH R2 D.
# DIR (default gpu-run/): call 2's.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
S=2048x1024,4096x1024,16384x1024,65536x1024,16384x512,65536x512,4096x2048,8192x2048,32768x2048
fb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
R2=NORMKIT_CUDA_FWD_TABLE=512:16:16,1024:32:8,2048:64:8
RH=NORMKIT_CUDA_FWD_TABLE=512:16:4,1024:32:2,2048:64:2
fb Da X=1; fb R2a $R2; fb RHa $RH; fb PF0a NORMKIT_CUDA_FWD_L2PF=off; fb PSa NORMKIT_CUDA_FWD_GRID=persist
fb PSb NORMKIT_CUDA_FWD_GRID=persist; fb PF0b NORMKIT_CUDA_FWD_L2PF=off; fb RHb $RH; fb R2b $R2; fb Db X=1
for v in R2 RH PF0 PS; do /tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^slower" "$R/summary-$v.md"; done
rm -f "$R"/*/report.html
step end
