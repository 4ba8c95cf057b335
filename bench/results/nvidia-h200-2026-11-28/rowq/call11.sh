#!/usr/bin/env bash
# Session 2026-11-28 (5), rowq call 11 — the landed form against main (3e24c40), old new new old:
# the 8-chunk twin's grids on HBM3e (TwinTuning::k8_rms_ctas_per_sm / k8_ln_ctas_per_sm: RMSNorm's
# twin at every grid of N = 16384, LayerNorm's up to 2 CTAs per SM; call 10 by environment).
# The twin and the plain kernel give the same bits; the LayerNorm-at-8192 knob stays off.
# Steps: the forward batch-invariance and kernel-tour tests; A B B A at N = 16384 (bf16, f16) and
# on issue 15's forward grid.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 80 /tmp/cuda-tests forward_batch_invariance_past_the_twin kernel_tour --test-threads=2 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
step ab
W=1x16384,8x16384,128x16384,256x16384,384x16384,512x16384,1024x16384,4096x16384,16384x16384
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $W --dtypes bf16,f16 --no-candle --out "$R/$1-w" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -w -i; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
rm -f "$R"/*/report.html
step end
