#!/usr/bin/env bash
# Session 2026-11-28 (2), fwd call 4: the landed form — the forward's twin (and its pairs) padded
# to its own share of CTAs per SM, ⌈grid / SMs⌉ up to 2 (Tuning::fwd_twin_cap_auto) — against
# main (7ca9f34): the twin-against-register tests and the kernel tours; A B B A on issue 15's grid
# (every op, bf16) and the forward's few-row and mid shapes (bf16, f16).
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 120 /tmp/cuda-tests pair_forward_matches_register kernel_tour fp8_twin_matches_register > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -10
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
FEW=2x4096,4x4096,16x4096,32x4096,64x4096,200x4096,256x4096,512x4096,1024x4096,128x1024,1024x1024,128x2048,128x8192,512x8192
F=rms_fwd,addrms_fwd,ln_fwd
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $F --shapes $FEW --dtypes bf16,f16 --no-candle --out "$R/$1-few" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in "" -few; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-grid.md" | tail -n 1
grep -E "^slower" "$R/summary-grid.md"
rm -f "$R"/*/report.html
step end
