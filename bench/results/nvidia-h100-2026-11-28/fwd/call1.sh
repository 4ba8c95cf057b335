#!/usr/bin/env bash
# Session 2026-11-28 (2), fwd call 1: the 32–256-row forwards (issue 15: 128×4096 behind Liger's
# 2026-11-24 figures) under the knobs that keep their bits, one build (7ca9f34) by environment,
# A B C D E E D C B A: A the default, B no programmatic dependent launch (NORMKIT_CUDA_PDL=0),
# C the twin never in pairs (NORMKIT_CUDA_FWD_PAIR=0), D in pairs everywhere (all), E the plain
# register kernel instead of the twin (NORMKIT_CUDA_FWD_DECODE=0); bf16 and f16.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
S=16x4096,32x4096,64x4096,128x4096,256x4096,128x2048,128x8192
F=rms_fwd,addrms_fwd,ln_fwd
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $F --shapes $S --dtypes bf16,f16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
one defa X=1; one pdla NORMKIT_CUDA_PDL=0; one nopa NORMKIT_CUDA_FWD_PAIR=0; one alla NORMKIT_CUDA_FWD_PAIR=all; one plaina NORMKIT_CUDA_FWD_DECODE=0
one plainb NORMKIT_CUDA_FWD_DECODE=0; one allb NORMKIT_CUDA_FWD_PAIR=all; one nopb NORMKIT_CUDA_FWD_PAIR=0; one pdlb NORMKIT_CUDA_PDL=0; one defb X=1
for v in pdl nop all plain; do /tmp/normkit-bench ab --old "$R/defa,$R/defb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
step end
