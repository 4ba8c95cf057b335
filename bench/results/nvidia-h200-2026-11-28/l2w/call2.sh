#!/usr/bin/env bash
# l2w call 2 (2026-11-28, seventh session): branch l2w's landing form against main (03119d6),
# old new new old — the plain and half-thread register forwards prefetch a later CTA's row into
# L2 where tuning::L2_SM90_HBM3E says (chosen from call 1's sweep), the prefetch issued before the
# row's loads. The full CUDA suite and memcheck on the batch-invariance test whose batches take
# the prefetch; then torch eager / torch.compile / Liger 0.8.5 on the cells it moves, beside the
# new build's run of the same cells.
# DIR (default gpu-run/) from, on branch l2w:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step ab
SB=1x4096,8x4096,128x4096,4096x1024,65536x512,16384x1024,2048x4096,8192x4096,32768x4096,4096x6000,16384x6000,512x8192,2048x8192,4096x8192,32768x8192,1024x16384,4096x16384,16384x16384
SH=65536x512,8192x4096,32768x4096,4096x8192,32768x8192
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $SH --dtypes f32,f16 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -b -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step peers
P=4096x6000,8192x4096,32768x4096,2048x8192,4096x8192,32768x8192,65536x512
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 130 python3 "$HERE/peers/bench_peers.py" --budget-s 110 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/gridp-f32" >> "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" "$R/gridp-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
