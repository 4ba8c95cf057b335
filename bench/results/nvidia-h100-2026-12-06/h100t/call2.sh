#!/usr/bin/env bash
# h100t call 2 (2026-12-06, fifteenth session). The landed form of call 1: Hopper's tables take the
# H200's forward rules on the H100 too (8-chunk rows at N = 16384, LayerNorm's one barrier, f32
# three CTAs, half-thread rows, rows per CTA, the forwards' L2 prefetch) and the per-row FP8 twin's
# L2 prefetch (Fp8Tuning::row_l2_ahead); the H100 keeps its twin rule, its f32 two-chunk rows and
# no per-tensor or tile prefetch. Planner only: one build, old = those rules off by environment
# (plan.rs `hopper_rules_off_by_environment`: main's H100 tables), new = the default; old new new
# old over the FP8 cells, issue 15's forwards and the rules' edges. Then the CUDA suite with the
# new defaults and memcheck on the forward batch-invariance test.
# DIR (default gpu-run/) from branch h100t:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
OLD="NORMKIT_CUDA_FWD_K8W=off NORMKIT_CUDA_FWD_LN1B=off NORMKIT_CUDA_FWD_F32_O3=off NORMKIT_CUDA_FWD_HALF=off NORMKIT_CUDA_FWD_RPC=off NORMKIT_CUDA_FWD_L2PF=off NORMKIT_CUDA_FP8_ROW_L2PF=0"
Q=8x4096,128x4096,4096x1024,2048x8192,8192x8192,16384x3072,32768x2048,16384x4096,32768x4096,65536x4096
S=1x4096,8x4096,128x4096,512x4096,2048x4096,8192x4096,32768x4096,4096x1024,16384x1024,8192x512,65536x512,4096x2048,4096x6000,512x8192,2048x8192,32768x8192,1024x16384,16384x16384,2048x65536,512x262144,128x1048576
E=1x16384,8x16384,256x16384,4096x16384,8x8192,64x8192,256x8192,1024x8192,4096x512,16384x512,2048x1024,8x2048,128x2048,1024x2048,2048x2048,8192x2048,32768x2048,3000x3000
F=4096x1024,4096x2048,8192x4096,32768x4096,4096x8192,16384x8192,16384x16384
bench() { local e=A=1; [ "${1#old}" != "$1" ] && e=$OLD
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1-q" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S,$E --dtypes bf16 --no-candle --out "$R/$1-w" >> "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 8x2048,2048x2048,8192x2048,32768x4096,2048x8192 --dtypes f16 --no-candle --out "$R/$1-h" >> "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $F --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step ab
bench old1; bench new1; bench new2; bench old2
nk_ab_summary q w h f
step tests
nk_tests 220
nk_sanitize memcheck forward_batch_invariance_past_the_twin 90
nk_end
