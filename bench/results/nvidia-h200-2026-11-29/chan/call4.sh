#!/usr/bin/env bash
# chan call 4 (2026-11-29, twelfth session). Branch chan's third form against main (38a5204):
# LayerNorm's statistics behind one barrier, the warps' (s, q) folded by lanes (two butterflies)
# instead of call 2's predicated walk over the warps, which call 3's ncu found issuing 9% more
# instructions in an issue-bound kernel (this form's SASS: the twin 2096 instructions against
# main's 2152, the half-thread LayerNorm 3144 against 3912). Old new new old on the LayerNorm
# forward from decode to 16384x16384 (bf16, f16, f32) and RMSNorm controls; the suite; memcheck
# on the forward batch-invariance test, racecheck on the pairs; torch.compile and Liger beside it.
# DIR (default gpu-run/) from, on branch chan:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 38a5204
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
L=1x4096,8x4096,64x4096,128x4096,1x1024,8x2048,4096x1024,4096x2048,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,1x16384,8x16384,1024x16384,3000x3000,2048x65536
bench() { /tmp/$2 run --backend cuda --ops ln_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd --shapes 8x4096,4096x1024,32768x4096 --dtypes f32,f16 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,addrms_fwd --shapes 8x4096,32768x4096,4096x1024 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-l,$R/old2-l,$R/old1-f,$R/old2-f,$R/old1-c,$R/old2-c" --new "$R/new1-l,$R/new2-l,$R/new1-f,$R/new2-f,$R/new1-c,$R/new2-c" --out "$R/summary-ab.md" | tail -n 1
grep -E "^faster|^slower" "$R/summary-ab.md" | cut -c1-900
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck-bi.log" 2>&1; echo "memcheck bi rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-bi.log" | head -1
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests --exact pair_forward_matches_register > "$R/sanitize-racecheck-pair.log" 2>&1; echo "racecheck pair rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-pair.log" | head -1
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 120 python3 "$HERE/peers/bench_peers.py" --budget-s 90 --impls compile,liger --ops ln_fwd --shapes 1x4096,8x4096,128x4096,4096x1024,2048x8192,32768x4096,16384x16384 --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$? $(date +%T)"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 1x4096,8x4096,128x4096,4096x1024,2048x8192,32768x4096,16384x16384 --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/grid32" >> "$R/grid.log" 2>&1
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html
step end
