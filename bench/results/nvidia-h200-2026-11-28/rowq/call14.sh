#!/usr/bin/env bash
# Call 14 (2026-11-28, sixth session): branch half's landing form against main (f955905), old
# new new old — the per-row FP8 twin without the bias code where it keeps its products (call 13:
# the same kernel code), nk_fwd_regh_* under tuning::HALF_SM90_HBM3E's rules (chosen from call
# 13's sweep), and the small backward's column CTAs never in place (planner). Then the full CUDA
# suite, and torch eager / torch.compile / Liger 0.8.5 on the cells half moves, beside the new
# build's run of the same cells.
# DIR (default gpu-run/) from, on branch half:
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
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
S8=1x8192,8x8192,128x8192,256x8192,384x8192,512x8192,1024x8192,4096x8192,8192x8192,16384x8192,1x6000,512x6000,4096x6000,16384x6000
S4=256x4096,512x4096,1024x4096,2048x4096,4096x4096,8192x4096,16384x4096
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $S8,$S4 --dtypes bf16 --no-candle --out "$R/$1-e" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -i -e; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step peers
P=512x8192,2048x8192,4096x8192,32768x8192,2048x4096,8192x4096,32768x4096,4096x6000
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/peers/bench_peers.py" --budget-s 130 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
