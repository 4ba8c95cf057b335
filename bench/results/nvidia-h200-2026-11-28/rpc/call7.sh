#!/usr/bin/env bash
# rpc call 7 (2026-11-28, eighth session): branch rpc's landed form against main (d339f7a), old
# new new old, at the edges of the half-thread rules below a warp after call 6 found 4096×512
# slower: RMSNorm and LayerNorm at N = 512 from 8192 rows, at N = 1024 from 4096.
# DIR (default gpu-run/) from, on branch rpc:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base | xz -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=2048x512,4096x512,6000x512,8191x512,8192x512,16384x512,65536x512,2048x1024,4095x1024,4096x1024,16384x1024,4096x700,16384x700,1x4096
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-b,$R/old2-b" --new "$R/new1-b,$R/new2-b" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
rm -f "$R"/*/report.html
step end
