#!/usr/bin/env bash
# ln1b call 1 (2026-11-29, thirteenth session). LayerNorm's one-barrier statistics (chan/call4's
# third form) as their own builds (`_1b`, SPEC + 65536, in the FP8 unit) that the planner gives
# the rows whose table group is 256 threads or more (Tuning::fwd_ln_one_barrier, N > 4096 in
# 16-bit dtypes), against main (38a5204's kernels): the N <= 4096 kernels are main's. Old new
# new old on the LayerNorm forward at N = 6000 to 32768 (bf16, f16, f32) with N <= 4096 and
# RMSNorm controls; the suite; memcheck on the forward batch-invariance test (which now forces
# the _1b builds on any device), racecheck on the pairs; torch.compile and Liger beside it.
# DIR (default gpu-run/) from this commit:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 38a5204
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step ab
L=1x4096,8x4096,128x4096,8x2048,4096x1024,32768x4096,3000x3000,1x6000,64x6000,4096x6000,1x8192,8x8192,64x8192,128x8192,512x8192,2048x8192,32768x8192,1x16384,8x16384,128x16384,256x16384,1024x16384,16384x16384,8x32768,1024x32768
bench() { /tmp/$2 run --backend cuda --ops ln_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd --shapes 8x8192,4096x8192,1024x16384 --dtypes f32,f16 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,addrms_fwd --shapes 8x4096,32768x4096,2048x8192 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
nk_abba bench
nk_ab_summary l f c
step tests
nk_tests 200
nk_sanitize memcheck forward_batch_invariance_past_the_twin 90
nk_sanitize racecheck pair_forward_matches_register 60
step peers
nk_peers --budget-s 90 --impls compile,liger --ops ln_fwd --shapes 8x8192,2048x8192,32768x8192,1024x16384,16384x16384 --fp32-shapes 4096x8192 --no-check
/tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 8x8192,2048x8192,32768x8192,1024x16384,16384x16384 --dtypes bf16 --no-candle --out "$R/grid" > "$R/grid.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 4096x8192 --dtypes f32 --no-candle --out "$R/grid32" >> "$R/grid.log" 2>&1
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
nk_end
