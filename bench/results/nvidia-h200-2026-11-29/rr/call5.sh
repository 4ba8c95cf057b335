#!/usr/bin/env bash
# rr call 5 (2026-11-29, tenth session). Call 4's bundle (the landed form of branch reread) beside
# eager, torch.compile and Liger 0.8.5 (bench_peers.py, Liger from the carried wheel) on the rows
# the re-reading cluster forward takes or leaves: N = 1M bf16, f32 524288.
# DIR (default gpu-run/) as for call 4, plus
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step peers
P=8x1048576,128x1048576
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/peers/bench_peers.py" --budget-s 130 --impls eager,compile,liger --ops rms_fwd,ln_fwd,addrms_fwd --shapes $P --fp32-shapes 128x524288 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/grid32" >> "$R/grid.log" 2>&1
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/grid*/report.html
step end
