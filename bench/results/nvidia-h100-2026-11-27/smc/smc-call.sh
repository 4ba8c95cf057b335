#!/usr/bin/env bash
# The backward's twin in clusters (nk_bwd_smc*, 2026-11-27): tests, sanitizer, ABBA against the
# build before it, its cluster-size knob, a forward sweep at 128×4096 and the peers on the same
# shapes, in one device call. DIR (default gpu-run/) is made by
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline a281be2
#   (cd DIR/bin && xz -T2 -6 normkit-bench normkit-bench-base cuda-tests)
# plus liger-kernel 0.8.5 in DIR/wheels. Run: `bash bench/plans/smc-call.sh gpu-run`, carry gpu-run.
# Results: $OUT/x.tgz.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitize
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests twin_cluster_backward > "$R/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/memcheck.log"
timeout 150 compute-sanitizer --tool synccheck --error-exitcode 9 /tmp/cuda-tests twin_cluster_backward > "$R/synccheck.log" 2>&1; echo "synccheck rc=$?"; tail -n 3 "$R/synccheck.log"
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
SM=2x4096,16x4096,32x4096,64x4096,100x4096,16x1024,64x2048,128x2048
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $SM --dtypes bf16 --no-candle --out "$R/$1-sm" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes 8x4096,128x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1,$R/old1-sm,$R/old1-f32,$R/old2,$R/old2-sm,$R/old2-f32" --new "$R/new1,$R/new1-sm,$R/new1-f32,$R/new2,$R/new2-sm,$R/new2-f32" --out "$R/summary-grid.md"
tail -n 3 "$R/summary-grid.md"
step knobs
for c in 8 4; do NORMKIT_CUDA_BWD_SMC=$c /tmp/normkit-bench run --backend cuda --ops rms_bwd,ln_bwd --shapes 8x4096,16x4096,32x4096,64x4096,128x4096 --dtypes bf16 --no-candle --out "$R/smc$c" > "$R/smc$c.log" 2>&1; echo "smc$c rc=$?"; done
SW=128x4096,64x4096,256x4096
sw() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SW --dtypes bf16 --no-candle --out "$R/sw-$1" > "$R/sw-$1.log" 2>&1; echo "sw-$1 rc=$?"; }
sw def X=1
for cfg in 256:1 512:1 64:1 128:2; do sw "t${cfg/:/-}" NORMKIT_CUDA_FWD_TABLE=4096:$cfg; done
sw notwin NORMKIT_CUDA_FWD_DECODE=0
sw t256-1-notwin NORMKIT_CUDA_FWD_TABLE=4096:256:1 NORMKIT_CUDA_FWD_DECODE=0
step peers
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
PYTHONUNBUFFERED=1 timeout 240 python3 "$HERE/peers/bench_peers.py" --budget-s 200 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes 1x4096,8x4096,32x4096,128x4096,4096x1024,2048x8192 --fp32-shapes 8x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" "$R/new1-sm/results.json" "$R/new1-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step end
cd "$OUT" && tar czf x.tgz r && rm -rf r
