#!/usr/bin/env bash
# ln16k call 1 (2026-11-29, eleventh session). Branch ln16k against main (10aceb3): LayerNorm at
# N = 16384 on the H200 takes the table's 512-thread rows on the half-thread kernel (256 threads
# of 8 chunks), with its L2 prefetch from 2^25 elements, instead of the 8-chunk rows (other bits,
# by N only). Old new new old on LayerNorm at N = 16384 from 1 to 32768 rows and controls
# (RMSNorm at 16384, LayerNorm at 4096 and 8192); beside torch.compile and Liger on three of
# them; the suite; memcheck on the forward batch-invariance tests.
# DIR (default gpu-run/) from, on branch ln16k:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 10aceb3
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
bench() { /tmp/$2 run --backend cuda --ops ln_fwd --shapes 1x16384,8x16384,128x16384,256x16384,1024x16384,2048x16384,4096x16384,16384x16384,32768x16384 --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x16384,16384x16384,32768x4096,32768x8192,8x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-l,$R/old2-l,$R/old1-c,$R/old2-c" --new "$R/new1-l,$R/new2-l,$R/new1-c,$R/new2-c" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md" | cut -c1-400
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck-bi.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-bi.log" | head -1
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/bench_peers.py" --budget-s 60 --impls compile,liger --ops ln_fwd --shapes 8x16384,1024x16384,16384x16384 --fp32-shapes "" --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$? $(date +%T)"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1-l/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html
step end
