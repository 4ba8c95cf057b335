#!/usr/bin/env bash
# h100t call 3 (2026-12-06, fifteenth session). Issue 15's grid (the 12 bf16 shapes and f32
# 32768x4096, five ops) and issue 16's FP8 grid on the H100 with Hopper's tables of call 2, beside
# eager, torch.compile and Liger 0.8.5 (bench_peers.py) and torch.compile's FP8 path
# (fp8_peers.py) in one call — the grid last measured whole on an H200 (grid13/call1). First the
# H100's half-thread rule for RMSNorm at N = 4096 (2048 to 4096 rows, HALF_SM90) against the
# H200's (from 2048 rows: NORMKIT_CUDA_FWD_HALF=rms:2049:4096:2048:max, the rule call 2 measured),
# old new new old at its edges.
# DIR (default gpu-run/) from branch h100t, as call 2's, with the Liger wheel:
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
S=1x4096,8x4096,128x4096,4096x1024,2048x8192,32768x4096,32768x8192,16384x16384,65536x512,2048x65536,512x262144,128x1048576
O=rms_fwd,addrms_fwd,ln_fwd,rms_bwd,ln_bwd
Q=8x4096,128x4096,4096x1024,2048x8192,8192x8192,32768x4096,2048x65536
step edge
E=2048x4096,3072x4096,4096x4096,4097x4096,6144x4096,8192x4096,32768x4096
bench() { local e=A=1; [ "${1#old}" != "$1" ] && e=NORMKIT_CUDA_FWD_HALF=rms:2049:4096:2048:max
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes $E --dtypes bf16 --no-candle --out "$R/$1-e" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1; bench new1; bench new2; bench old2
nk_ab_summary e
step normkit
/tmp/normkit-bench run --backend cuda --ops $O --shapes $S --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1; echo "grid rc=$? $(date +%T)"
/tmp/normkit-bench run --backend cuda --ops $O --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/grid32" >> "$R/grid.log" 2>&1; echo "grid32 rc=$? $(date +%T)"
/tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/fp8" > "$R/fp8.log" 2>&1; echo "fp8 rc=$? $(date +%T)"
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 330 python3 "$HERE/peers/bench_peers.py" --budget-s 270 --impls eager,compile,liger --ops $O --shapes $S --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$? $(date +%T)"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step fp8peers
PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/fp8_peers.py" --budget-s 70 --shapes $Q --impls compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$? $(date +%T)"; tail -n 1 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/fp8/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8" && grep "at or ahead" "$R/merged-fp8/report.md"
nk_end
