#!/usr/bin/env bash
# Session 2026-11-28 (5), rowq call 7 — this branch against main (264bf21), old new new old:
#  * the per-row RMSNorm FP8 twin (QF) keeps its products x·(w + offset) from the sum pass for
#    the output pass (y = p·rstd: no second unpack and multiply), runs the output pass once per
#    format (a uniform branch per row instead of two predicated conversions per pair), and every
#    per-row twin takes the tensor amax from its rows' maxima (one max per row, not per element).
#    Same bits; ncu in call 6 had the twin issue-bound (109.8M instructions against 68.8M per
#    tensor at 32768×4096).
#  * Tuning::fwd_k8_wide on HBM3e: bf16 RMSNorm / LayerNorm without the residual at N = 16384 on
#    256 threads of 8 chunks (call 6 by environment: ln −14%, rms −6%); decode rows too.
# Steps: every CUDA test but soak; memcheck on the FP8 twin tests; A B B A; FP8 peers and issue
# 15's peers at N = 16384 in the same call, merged with the new build's runs.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 264bf21
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
Q8=1x8192,8x8192,128x8192,2048x8192,8192x8192,8x4096,128x4096,4096x4096,16384x4096,32768x4096,128x1024,4096x1024
QR=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row
W=1x16384,8x16384,128x16384,1024x16384,4096x16384,8192x16384,16384x16384
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $QR --shapes $Q8 --dtypes bf16,f16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $W --dtypes bf16,f16 --no-candle --out "$R/$1-w" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q -w; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step sanitize
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_batch_invariance --test-threads=1 > "$R/sanitize-memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-memcheck.log" | tail -n 2
step fp8peers
PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/fp8_peers.py" --budget-s 80 --shapes 4096x1024,32768x4096,2048x8192,2048x65536,8x4096,128x4096 --impls eager,compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/new1-g/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8" && grep "at or ahead" "$R/merged-fp8/report.md"
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/peers/bench_peers.py" --budget-s 130 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes 16384x16384,4096x16384,8x16384 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 3 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 16384x16384,4096x16384,8x16384 --dtypes bf16 --no-candle --out "$R/grid16k" > "$R/grid16k.log" 2>&1
/tmp/normkit-bench merge "$R/grid16k/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
