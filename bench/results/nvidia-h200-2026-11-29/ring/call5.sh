#!/usr/bin/env bash
# ring call 5 (2026-11-29, eleventh session): where issue 15's grid stands. Main's kernels (the
# branch's host change only adds cluster sizes by environment) on the whole grid of the issue —
# 1, 8, 128 × 4096; 4096×1024; 2048×8192; 32768×4096; 32768×8192; 16384×16384; 65536×512;
# 2048×65536; 512×262144; 128×1048576 in bf16 and 32768×4096 in f32; the five ops — and beside it
# in the same call eager, torch.compile and Liger 0.8.5 (bench_peers.py, the same timing policy).
# DIR (default gpu-run/): call 4's bundle, plus
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
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
rm -f "$R"/*/report.html
step end
