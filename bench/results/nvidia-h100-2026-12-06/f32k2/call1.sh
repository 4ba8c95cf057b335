#!/usr/bin/env bash
# f32k2 call 1 (2026-12-06, fourteenth session). The f32 register forwards on two chunks per
# thread (`nk_fwd_reg2_f32_*`, 56-64 registers at the 1024-thread bound; the 4-chunk kernels take
# 113 at their 512-thread bound), groups twice the 4-chunk table's (Tuning::fwd_f32, env
# NORMKIT_CUDA_FWD_F32; `on`: tuning::F32_K2_SM90). The new kernels are in the FP8 unit and every
# other kernel's SASS is main's (sass-diff), so the A/B is one build by environment: old =
# NORMKIT_CUDA_FWD_F32=off (main's choice), new = on; old new new old. Then the table's rows per
# CTA at N <= 2048 by environment (mirrored), the suite with the new kernels taking every f32
# forward they can, memcheck / racecheck on the kernel tour with them, and torch.compile / Liger
# beside the f32 cells.
# DIR (default gpu-run/) from branch f32k2:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
S=1x4096,8x4096,128x4096,8x1024,4096x1024,16384x1024,65536x512,4096x2048,8192x4096,32768x4096,1x8192,4096x8192,16384x8192,1024x16384,4096x16384,3000x3000,128x256,32768x128
step ab
bench() { local e=NORMKIT_CUDA_FWD_F32=on; [ "${1#old}" != "$1" ] && e=NORMKIT_CUDA_FWD_F32=off
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd,ln_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x4096,32768x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
nk_abba bench
nk_ab_summary f c
step rows
# Rows per CTA of the two-chunk table at N = 512 / 1024 / 2048 (on: 8 / 4 / 4).
declare -A T=([on]=on [r1]=512:32:4,1024:64:1,2048:128:1 [r2]=512:32:16,1024:64:2,2048:128:2 [r8]=512:32:32,1024:64:8,2048:128:8)
for v in on r1 r2 r8 r8 r2 r1 on; do
  NORMKIT_CUDA_FWD_F32=${T[$v]} /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd,ln_fwd --shapes 8x1024,4096x1024,16384x1024,65536x1024,65536x512,4096x2048,32768x2048,128x2048 --dtypes f32 --no-candle --out "$R/rows-$v-$(ls -d "$R"/rows-$v-* 2>/dev/null | wc -l)" > /dev/null 2>&1; echo "rows $v rc=$? $(date +%T)"
done
step tests
export NORMKIT_CUDA_FWD_F32=on
nk_tests 300
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests kernel_tour > "$R/sanitize-memcheck-tour.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-tour.log" | head -1
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests kernel_tour_general_paths > "$R/sanitize-racecheck-tour.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-tour.log" | head -1
unset NORMKIT_CUDA_FWD_F32
step peers
P=4096x1024,16384x1024,4096x2048,8192x4096,32768x4096,4096x8192,65536x512
nk_peers --budget-s 120 --impls compile,liger --ops rms_fwd,addrms_fwd,ln_fwd --shapes 8x4096 --fp32-shapes $P,8x4096 --no-check
for v in off on; do
  NORMKIT_CUDA_FWD_F32=$v /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd,ln_fwd --shapes $P,8x4096 --dtypes f32 --no-candle --out "$R/grid32-$v" > "$R/grid-$v.log" 2>&1
  NORMKIT_CUDA_FWD_F32=$v /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd,ln_fwd --shapes 8x4096 --dtypes bf16 --no-candle --out "$R/grid16-$v" >> "$R/grid-$v.log" 2>&1
  /tmp/normkit-bench merge "$R/grid16-$v/results.json" "$R/grid32-$v/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged-$v" && echo "$v: $(grep 'at or ahead' "$R/merged-$v/report.md")"
done
nk_end
