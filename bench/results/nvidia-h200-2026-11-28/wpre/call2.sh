#!/usr/bin/env bash
# wpre call 2 (2026-11-28, eighth session): branch wpre's landed form against main (5e64037),
# old new new old — the plain 16-bit LayerNorm forward (16-byte layouts, rows of whole chunks,
# no residual) issues each output chunk's weight and bias loads one chunk ahead (call 1's build C
# for that kernel; every other kernel main's code). The full CUDA suite, memcheck on the
# batch-invariance and kernel-tour tests, and torch eager / torch.compile / Liger 0.8.5 beside
# the new build. Then f32's forward table at N = 2048 and 4096 by environment (NORMKIT_CUDA_FWD_TABLE:
# twice and four times the threads per row, 2 and 1 chunks each), D T2 T4 T4 T2 D.
# DIR (default gpu-run/) from, on branch wpre:
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
SB=1x4096,128x4096,1024x4096,2048x4096,4096x4096,8192x4096,16384x4096,32768x4096,4096x1024,16384x1024,65536x1024,16384x512,65536x512,8192x2048,32768x2048,4096x6000,16384x6000,512x8192,2048x8192,8192x8192,32768x8192,4096x16384,16384x16384
SF=8192x4096,32768x4096,65536x512,16384x1024,32768x2048
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd --shapes $SF --dtypes f16,f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -b -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 80 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step peers
P=4096x4096,8192x4096,32768x4096,16384x1024,8192x2048,65536x512,2048x8192,32768x8192
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 130 python3 "$HERE/peers/bench_peers.py" --budget-s 110 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/gridp-f32" >> "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" "$R/gridp-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step f32
SX=8192x4096,32768x4096,16384x4096,32768x2048,8192x2048
fb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $SX --dtypes f32 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
fb Da X=1; fb T2a NORMKIT_CUDA_FWD_TABLE=2048:128:1,4096:256:1; fb T4a NORMKIT_CUDA_FWD_TABLE=2048:256:1,4096:512:1
fb T4b NORMKIT_CUDA_FWD_TABLE=2048:256:1,4096:512:1; fb T2b NORMKIT_CUDA_FWD_TABLE=2048:128:1,4096:256:1; fb Db X=1
/tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/T2a,$R/T2b" --out "$R/summary-f32-T2.md" | tail -n 1; grep -E "^slower" "$R/summary-f32-T2.md"
/tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/T4a,$R/T4b" --out "$R/summary-f32-T4.md" | tail -n 1; grep -E "^slower" "$R/summary-f32-T4.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
