#!/usr/bin/env bash
# Session 2026-11-27 (7), call 3: the build of call 2 (the staged cluster forward with an FP8
# output) — every CUDA test but soak; the FP8 grid and the long-row FP8 shapes; the FP8 peers
# (torch.compile and eager) on the grid's shapes and on the long rows, in the same call; merged.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 9cbd2c1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step bench
L=8x65536,128x65536,4096x40960,256x131072,512x262144
O=rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
/tmp/normkit-bench run --backend cuda --fp8 --no-candle --out "$R/q-new" > "$R/q-new.log" 2>&1; echo "q-new rc=$? $(date +%T)"
/tmp/normkit-bench run --backend cuda --ops $O --shapes $L --dtypes bf16 --no-candle --out "$R/l-new" > "$R/l-new.log" 2>&1; echo "l-new rc=$? $(date +%T)"
step peers
PYTHONUNBUFFERED=1 timeout 110 python3 "$HERE/peers/fp8_peers.py" --budget-s 95 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
PYTHONUNBUFFERED=1 timeout 130 python3 "$HERE/peers/fp8_peers.py" --budget-s 110 --shapes $L --tag fp8_peers_long --out "$R/fp8peers-long" > "$R/fp8peers-long.log" 2>&1
echo "peers-long rc=$?"; tail -n 2 "$R/fp8peers-long.log"
/tmp/normkit-bench merge "$R/q-new/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
/tmp/normkit-bench merge "$R/l-new/results.json" --peers "$R/fp8peers-long/fp8_peers_long.json" --out "$R/merged-long" && grep "at or ahead" "$R/merged-long/report.md"
rm -f "$R"/merged*/report.html
step end
