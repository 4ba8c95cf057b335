#!/usr/bin/env bash
# Session 2026-11-25d, final: the backward's twin up to 128 rows. Tests; ABBA against dd5d363 on the backwards of
# 1-128 rows and on issue 15's grid; normkit and the peers on the grid's backward cells in one call.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
OLD=normkit-bench-dd5d363
for b in normkit-bench $OLD cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
BSH=1x4096,8x4096,1x8192,16x4096,32x4096,64x4096,96x4096,128x4096,128x512,128x1024,128x2048,64x8192,128x8192
bw() { /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $BSH --dtypes bf16,f16 --no-candle --out "$R/bw-$1" > "$R/bw-$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd --shapes 8x4096,128x4096,128x1024 --dtypes f32 --no-candle --out "$R/bw-$1-f32" >> "$R/bw-$1.log" 2>&1; echo "bw-$1 rc=$? $(date +%T)"; }
bw old1 $OLD; bw new1 normkit-bench; bw new2 normkit-bench; bw old2 $OLD
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1; echo "$1 done $(date +%T)"; }
bench old1 $OLD; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 $OLD
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/bench_peers.py" --budget-s 100 --impls eager,compile,liger --ops rms_bwd,ln_bwd --shapes 1x4096,8x4096,128x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
cd "$OUT" && tar czf x.tgz r && rm -rf r
