#!/usr/bin/env bash
# yt64 call 1 (2026-12-06, fifteenth session). Issue 16's yT (83.4% of the copy ceiling at
# 32768x4096 on the H100 in h100t/call3; target 85%): the tiles' write-out by 8-byte cluster loads,
# 8 columns x 8 rows per item, one mapa per item (branch yt64) against h100t's build, old new new
# old at the yT shapes (rms_fwd_fp8_t) with per-row and per-tensor controls; the tile and FP8
# batch-invariance tests, memcheck and racecheck on the tile test (cut to the session's last
# device time). Then, by environment on the new build, the residual FP8 twins'
# choices on the H100 (the cells behind torch.compile in h100t/call3): D, WR
# (NORMKIT_CUDA_FP8_WIDE_ROW=res, the H200's), T0 (NORMKIT_CUDA_FP8_TWIN=0: the plain quantised
# kernel, same bits), X0 (NORMKIT_CUDA_FP8_TWIN_X2=off: the per-tensor residual twin at one CTA
# per SM from 2^25 elements too; its two-CTA build was measured on the H200 only), mirrored.
# DIR (default gpu-run2/) from branch yt64, with h100t's normkit-bench as normkit-bench-base:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run2}"
T=32768x4096,16384x4096,65536x4096,8192x4096,4096x4096,32768x2048,16384x3072,8192x8192,2048x8192,40976x4096,40968x4096
step ab
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $T --dtypes bf16,f16 --no-candle --out "$R/$1-t" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row --shapes 32768x4096,8192x4096,8x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
nk_abba bench
nk_ab_summary t c
step tests
timeout 70 /tmp/cuda-tests fp8_twin_tile fp8_batch > "$R/tests.log" 2>&1; echo "fp8 tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
nk_sanitize memcheck fp8_twin_tile_matches_separate 80
nk_sanitize racecheck fp8_twin_tile_matches_separate 80
# The residual section is the H100's question only.
if ! grep -q H100 "$R/device.txt"; then nk_end; exit 0; fi
step residual
Q=128x4096,4096x1024,2048x8192,8192x8192,16384x4096,32768x4096
one() { env $2 /tmp/normkit-bench run --backend cuda --ops addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
one D1 A=1; one WR1 NORMKIT_CUDA_FP8_WIDE_ROW=res; one T01 NORMKIT_CUDA_FP8_TWIN=0; one X01 NORMKIT_CUDA_FP8_TWIN_X2=off
one X02 NORMKIT_CUDA_FP8_TWIN_X2=off; one T02 NORMKIT_CUDA_FP8_TWIN=0; one WR2 NORMKIT_CUDA_FP8_WIDE_ROW=res; one D2 A=1
for v in WR T0 X0; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; grep -E "^slower" "$R/summary-$v.md" | cut -c1-400; done
nk_end
