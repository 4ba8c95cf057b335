#!/usr/bin/env bash
# Session 2026-11-28 (4), pf call 5 — the H200 twin rule (TwinTuning::SM90_HBM3E: RMSNorm's
# forward twin past its first wave only up to 64 CTAs per SM; picked by Tuning::for_device from
# the DRAM bandwidth) against the build before it (f937fa8, the landed form of call 2): the
# forward tests (batch invariance: twin against plain kernel bitwise), A B B A on rms_fwd around
# the threshold and on issue 15's forward grid.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline f937fa8
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 70 /tmp/cuda-tests batch_invariance pair_forward kernel_tour --test-threads=2 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
step ab
S=4096x4096,8192x4096,8448x4096,8500x4096,16384x4096,32768x4096,65536x512,131072x512,65536x1024,4096x1024,1024x4096
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
bench() { /tmp/$2 run --backend cuda --ops rms_fwd --shapes $S --dtypes bf16,f16 --no-candle --out "$R/$1-r" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-r,$R/old2-r,$R/old1-i,$R/old2-i" --new "$R/new1-r,$R/new2-r,$R/new1-i,$R/new2-i" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
rm -f "$R"/*/report.html
step end
