#!/usr/bin/env bash
# f32o3 call 3 (2026-11-29, thirteenth session). The landed rule (tuning::O3_SM90_HBM3E: f32
# RMSNorm without the residual at N = 8192 from 4096 rows on its three-CTA build) by
# environment in one build: old = NORMKIT_CUDA_FWD_F32_O3=off (main's choice; every other kernel's
# SASS is main's, sass-diff), new = the default; old new new old on the cells it takes and those
# beside them. Then the whole suite on the final build (the o3 bit-for-bit test with it).
# DIR (default gpu-run/) from branch f32occ's last commit:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step ab
bench() { local e=NK_NONE=1; [ "${1#old}" != "$1" ] && e=NORMKIT_CUDA_FWD_F32_O3=off
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 1x8192,64x8192,4095x8192,4096x8192,16384x8192,32768x4096,8x4096 --dtypes f32 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x4096,2048x8192,16384x16384 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1; bench new1; bench new2; bench old2
nk_ab_summary f c
step tests
nk_tests 240
nk_sanitize memcheck pair_forward_matches_register 150
nk_end
