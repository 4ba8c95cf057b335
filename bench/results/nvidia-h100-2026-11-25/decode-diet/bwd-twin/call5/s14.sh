#!/usr/bin/env bash
# Session 2026-11-25d: the backward's twin for 2-8 rows (partial rows + finalize), one call: tests, sanitizers,
# ABBA against dd5d363 on the decode grid's backwards, the twin's row bound (NORMKIT_CUDA_BWD_SMALL), peers.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
OLD=normkit-bench-dd5d363
for b in normkit-bench $OLD cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
san() { timeout 200 compute-sanitizer --tool $1 --error-exitcode 9 /tmp/cuda-tests $2 --test-threads=1 > "$R/sanitize-$1-$2.log" 2>&1; echo "$1 $2 rc=$?"; tail -n 2 "$R/sanitize-$1-$2.log"; }
san memcheck kernel_tour; san initcheck kernel_tour; san memcheck twin_backward; san racecheck twin_backward
DSH=1x4096,2x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,1x1024,8x2048,1x8192,32x8192
dec() { /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $DSH --dtypes bf16,f16 --no-candle --out "$R/dec-$1" > "$R/dec-$1.log" 2>&1; echo "dec-$1 rc=$? $(date +%T)"; }
dec old1 $OLD; dec new1 normkit-bench; dec new2 normkit-bench; dec old2 $OLD
for i in 1 2; do for v in 8 132; do
  NORMKIT_CUDA_BWD_SMALL=$v /tmp/normkit-bench run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes 8x4096,16x4096,32x4096,64x4096,128x4096,16x1024,64x2048,32x8192 --dtypes bf16 --no-candle --out "$R/bs$v-$i" > "$R/bs$v-$i.log" 2>&1; echo "bs$v-$i rc=$?"
done; done
/tmp/normkit-bench run --backend cuda --ops rms_bwd,ln_bwd --shapes 1x4096,8x4096,128x4096 --dtypes bf16 --no-candle --out "$R/final" > "$R/final.log" 2>&1; echo "final rc=$?"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
PYTHONUNBUFFERED=1 timeout 200 python3 "$HERE/bench_peers.py" --budget-s 150 --impls eager,compile,liger --ops rms_bwd,ln_bwd --shapes 1x4096,8x4096,128x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 3 "$R/peers.log"
cd "$OUT" && tar czf x.tgz r && rm -rf r
