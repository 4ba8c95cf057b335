#!/usr/bin/env bash
# Session 2026-11-28 (2), cols call 3: the landed form — column CTAs from 2 to 1024 rows and at
# most 4 Mi elements (1024×8192 back on the twin and its finalize, +31–34% in call 2) — against
# main (543fa35): every CUDA test but soak (the stream test's refused growth now at 2048 rows);
# A B B A on issue 15's grid (every op, bf16) and the backward's shapes around the new limit.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 240 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
FEW=2x4096,4x4096,64x4096,512x4096,1024x4096,256x8192,512x8192,1024x8192,768x8192
B=rms_bwd,ln_bwd,addrms_bwd
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $B --shapes $FEW --dtypes bf16 --no-candle --out "$R/$1-few" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in "" -few; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-grid.md" | tail -n 1
grep -E "^slower" "$R/summary-grid.md"
rm -f "$R"/*/report.html
step end
