#!/usr/bin/env bash
# grid13 call 1 (2026-11-29, thirteenth session). Issue 15's whole grid (the 12 bf16 shapes and
# f32 32768x4096, five ops) on main after this session's two changes (the one-barrier LayerNorm
# at N = 8192 / 16384 / 32768, f32 RMSNorm at N = 8192 on three CTAs per SM), beside eager,
# torch.compile and Liger 0.8.5 in one call, as ring/call5 measured it after the eleventh session.
# DIR (default gpu-run/) from main (55ceaae's code):
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
S=1x4096,8x4096,128x4096,4096x1024,2048x8192,32768x4096,32768x8192,16384x16384,65536x512,2048x65536,512x262144,128x1048576
O=rms_fwd,addrms_fwd,ln_fwd,rms_bwd,ln_bwd
step normkit
/tmp/normkit-bench run --backend cuda --ops $O --shapes $S --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1; echo "grid rc=$? $(date +%T)"
/tmp/normkit-bench run --backend cuda --ops $O --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/grid32" >> "$R/grid.log" 2>&1; echo "grid32 rc=$? $(date +%T)"
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 380 python3 "$HERE/peers/bench_peers.py" --budget-s 320 --impls eager,compile,liger --ops $O --shapes $S --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$? $(date +%T)"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
nk_end
