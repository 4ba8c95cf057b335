#!/usr/bin/env bash
# s16 call 4 (2026-12-06, sixteenth session): the landed form (branch x5's last commit: the per-row
# bf16 add + RMSNorm -> FP8 twin on a CTA per row group from 2^22 elements on Hopper's tables, not
# its pairs; the _x5 builds removed, every kernel main's) against main 3baa42a, old new new old on
# the FP8 cells it changes and controls; the FP8 tests (fp8_batch_invariance's per-row residual
# case at 5000 rows of 4096 now takes the rows grid, bitwise against the row alone on the pairs)
# and memcheck on fp8_batch_invariance.
# DIR (default gpu-run/) with main's normkit-bench as normkit-bench-base:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step tests
timeout 200 /tmp/cuda-tests fp8 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
step ab
F=8x4096,128x4096,512x4096,1024x4096,2048x4096,4096x1024,16384x1024,65536x512,512x8192,2048x8192,8192x8192,16384x4096,32768x4096
bench() { /tmp/$2 run --backend cuda --ops addrms_fwd_fp8_row --shapes $F --dtypes bf16 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8 --shapes 4096x1024,32768x4096 --dtypes bf16,f16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
nk_abba bench
nk_ab_summary f c
nk_sanitize memcheck fp8_batch_invariance 200
nk_end
