#!/usr/bin/env bash
# Session 2026-11-28 (3), pad call 2 — the landed form: the FP8 quantised twin (and its pairs) and
# the backward's twin (alone and with its column CTAs) padded to their own share of an SM,
# ⌈grid / SMs⌉ up to 2 (Fp8Tuning::twin_cap_auto, Tuning::bwd_twin_cap_auto) — against main
# (d95b0b8): every CUDA test but soak; A B B A on the FP8 grid, the backward on issue 15's grid,
# and the FP8 and backward ops at 1–1024 rows; the FP8 peers (eager, torch.compile) on the FP8
# grid's shapes and the decode rows, merged with the new build's first runs.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d95b0b8
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144
FEW=2x4096,4x4096,16x4096,32x4096,64x4096,200x4096,256x4096,512x4096,1024x4096,128x1024,1024x1024,256x2048,128x8192,512x8192
B=rms_bwd,ln_bwd,addrms_bwd
Q=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row,rms_fwd_fp8_t
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-q" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $B --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-b" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $Q,$B --shapes $FEW --dtypes bf16 --no-candle --out "$R/$1-few" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -q -b -few; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-grid.md" | tail -n 1
grep -E "^slower" "$R/summary-grid.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step peers
PYTHONUNBUFFERED=1 timeout 110 python3 "$HERE/peers/fp8_peers.py" --budget-s 95 --shapes 4096x1024,32768x4096,2048x8192,2048x65536,8x4096,32x4096,128x4096,256x4096 --impls eager,compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/new1-q/results.json" "$R/new1-few/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
