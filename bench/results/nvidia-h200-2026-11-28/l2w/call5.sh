#!/usr/bin/env bash
# l2w call 5 (2026-11-28, seventh session): branch halfpf against main (ab8c8f2), old new new old —
# the half-thread LayerNorm's own build with the L2 prefetch (`nk_fwd_regh_bf16_ln_l2`, issued
# before its loads), taken from 2^25 elements (calls 3-4 measured that code); main's build
# below. The tests that run it (bitwise against the register kernel; batch invariance), memcheck,
# and torch eager / torch.compile / Liger 0.8.5 beside the new build.
# DIR (default gpu-run/) from, on branch halfpf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=512x8192,1024x8192,2048x8192,4096x8192,8192x8192,16384x8192,32768x8192,2048x4096,4096x4096,8192x4096,16384x4096,32768x4096,4096x6000,65536x512
bench() { /tmp/$2 run --backend cuda --ops ln_fwd,rms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-b,$R/old2-b" --new "$R/new1-b,$R/new2-b" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
for t in pair_forward_matches_register forward_batch_invariance_past_the_twin kernel_tour_general_paths; do
  timeout 120 /tmp/cuda-tests $t >> "$R/tests.log" 2>&1; echo "$t rc=$?"; done
grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step peers
P=4096x4096,8192x4096,4096x8192,8192x8192,32768x8192
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/bench_peers.py" --budget-s 70 --impls eager,compile,liger --ops ln_fwd --shapes $P --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
