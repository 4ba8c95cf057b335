#!/usr/bin/env bash
# The backward's few-row table (Tuning::bwd_reg4_few: 256 threads per 4096-wide row for calls of
# at most 1024 rows, 2026-11-27): tests, ABBA against a281be2 (the same kernels, the planner
# before it) on issue 15's grid and the few-row shapes, and the peers on the decode and mid
# shapes merged into a scored report, in one device call. DIR (default gpu-run/) is made by
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline a281be2
#   (cd DIR/bin && xz -T2 -6 normkit-bench normkit-bench-base cuda-tests)
# plus liger-kernel 0.8.5 in DIR/wheels. Run: `bash bench/plans/few-rows-call.sh gpu-run`, carry gpu-run.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
FEW=2x4096,16x4096,32x4096,64x4096,256x4096,512x4096,1024x4096,1025x4096,4096x4096,8x3000,128x3000
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes $FEW --dtypes bf16 --no-candle --out "$R/$1-few" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd --shapes 8x4096,128x4096,32768x4096 --dtypes f16 --no-candle --out "$R/$1-f16" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in "" -few -f16 -f32; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-grid.md"
tail -n 3 "$R/summary-grid.md"
step peers
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
PYTHONUNBUFFERED=1 timeout 280 python3 "$HERE/peers/bench_peers.py" --budget-s 240 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes 1x4096,8x4096,32x4096,128x4096,512x4096,4096x1024,2048x8192,32768x4096 --fp32-shapes 8x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" "$R/new1-few/results.json" "$R/new1-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step end
cd "$OUT" && tar czf x.tgz r && rm -rf r
