#!/usr/bin/env bash
# Session 2026-11-28 (3), peers call 1: main (6cb8cc2: the FP8 twins padded, the staged forward's
# partials pushed) against the FP8 path a PyTorch user has (torch.compile and eager,
# benches/peers/fp8_peers.py) in one call: the FP8 grid plus decode rows, and the long rows.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step bench
L=8x65536,128x65536,2048x65536,4096x40960,512x262144
Q=rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
/tmp/normkit-bench run --backend cuda --fp8 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1; echo "grid rc=$?"
/tmp/normkit-bench run --backend cuda --ops $Q --shapes $L --dtypes bf16 --no-candle --out "$R/long" > "$R/long.log" 2>&1; echo "long rc=$?"
step peers
PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/fp8_peers.py" --budget-s 85 --impls eager,compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/fp8peers.log"
PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/fp8_peers.py" --budget-s 85 --impls eager,compile --no-check --shapes $L --tag fp8_peers_long --out "$R/fp8peers-long" > "$R/fp8peers-long.log" 2>&1
echo "peers-long rc=$?"; tail -n 1 "$R/fp8peers-long.log"
/tmp/normkit-bench merge "$R/grid/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
/tmp/normkit-bench merge "$R/long/results.json" --peers "$R/fp8peers-long/fp8_peers_long.json" --out "$R/merged-long" && grep "at or ahead" "$R/merged-long/report.md"
rm -f "$R"/*/report.html
step end
