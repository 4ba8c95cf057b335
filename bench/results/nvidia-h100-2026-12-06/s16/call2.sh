#!/usr/bin/env bash
# s16 call 2 (2026-12-06, sixteenth session), branch x5's first build: the quantised bf16 RMSNorm
# twin without the residual compiled again at five 128-thread CTAs per SM (`nk_fwd_regqd{|r}_bf16_
# rms_x5`, 96 registers, no spills; the per-row one recomputing its products), off by default
# (Fp8Tuning::twin_x5_min_elems). (1) Tests: the new fp8_twin_builds_match (the _x5 and _x2
# builds bitwise against the default twin) and fp8_batch_invariance (its forced _x2 case had never
# run), memcheck on the new test. (2) By environment, mirrored: D X5 X5 D
# (NORMKIT_CUDA_FP8_TWIN_X5=0: the _x5 builds wherever the CTA holds 128 threads) on rms_fwd_fp8
# and rms_fwd_fp8_row; D GR GRP GRP GR D on add + RMSNorm per row (GR: NORMKIT_CUDA_FP8_GRID=rows,
# a CTA per row group — 8-9% faster from 4096x1024 up in call 1; GRP: with NORMKIT_CUDA_FP8_PAIR=all).
# Bundle: NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out gpu-run
#   (cd gpu-run/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step tests
timeout 150 /tmp/cuda-tests fp8_twin_builds_match fp8_batch > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
nk_sanitize memcheck fp8_twin_builds_match 90
step x5
RS=32768x4096,16384x4096,8192x4096,4096x4096,2048x4096,1024x4096,4096x1024,16384x1024,65536x512,32768x2048,8192x2048,16384x3072,128x4096,8x4096,1x4096,8192x8192
one() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row --shapes $RS --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
one D1 A=1; one X51 NORMKIT_CUDA_FP8_TWIN_X5=0; one X52 NORMKIT_CUDA_FP8_TWIN_X5=0; one D2 A=1
/tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/X51,$R/X52" --out "$R/summary-X5.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-X5.md" | cut -c1-700
step grid
AS=32768x4096,16384x4096,8192x8192,4096x8192,2048x8192,1024x8192,4096x4096,2048x4096,1024x4096,512x4096,256x4096,4096x1024,16384x1024,65536x512,8192x2048,128x4096,8x4096
two() { env $2 /tmp/normkit-bench run --backend cuda --ops addrms_fwd_fp8_row --shapes $AS --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
two E1 A=1; two GR1 NORMKIT_CUDA_FP8_GRID=rows; two GRP1 "NORMKIT_CUDA_FP8_GRID=rows NORMKIT_CUDA_FP8_PAIR=all"
two GRP2 "NORMKIT_CUDA_FP8_GRID=rows NORMKIT_CUDA_FP8_PAIR=all"; two GR2 NORMKIT_CUDA_FP8_GRID=rows; two E2 A=1
for v in GR GRP; do /tmp/normkit-bench ab --old "$R/E1,$R/E2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-700; done
nk_end
