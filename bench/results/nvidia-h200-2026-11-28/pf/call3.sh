#!/usr/bin/env bash
# Session 2026-11-28 (4), pf call 3 — the landed build of call 2 (the same bundle) on issue 15's
# grid beside the peers in one call (eager, torch.compile and Liger 0.8.5, installed from the
# carried wheel: pip download --no-deps liger-kernel==0.8.5 -d DIR/wheels), merged into one
# report; and per-row FP8 at 32768×4096-class shapes on the H200 with two rows per CTA by
# environment (NORMKIT_CUDA_FWD_TABLE=4096:128:2), D T T D.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step grid
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
OPS=rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd
/tmp/normkit-bench run --backend cuda --ops $OPS --shapes $SH --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1; echo "grid rc=$?"
/tmp/normkit-bench run --backend cuda --ops $OPS --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/grid-f32" > "$R/grid-f32.log" 2>&1; echo "grid-f32 rc=$?"
step rowfp8
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row,rms_fwd_fp8_t --shapes 32768x4096,16384x4096,8192x4096,4096x4096,128x4096 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
one d-a X=1; one t2-a NORMKIT_CUDA_FWD_TABLE=4096:128:2; one t2-b NORMKIT_CUDA_FWD_TABLE=4096:128:2; one d-b X=1
/tmp/normkit-bench ab --old "$R/d-a,$R/d-b" --new "$R/t2-a,$R/t2-b" --out "$R/summary-rows2.md" | tail -n 1
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 330 python3 "$HERE/peers/bench_peers.py" --budget-s 290 --impls eager,compile,liger --ops $OPS --shapes $SH --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 3 "$R/peers.log"
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
