#!/usr/bin/env bash
# f32o3 call 1 (2026-11-29, thirteenth session). The f32 register forwards compiled for three
# 256-thread CTAs per SM (`_o3`, 80 registers) where the 512-thread bound let them take 113 (two
# CTAs of 256 or four of 128 per SM), for the table's rows of at most 256 threads: the same code
# and bits (Tuning::fwd_f32_ctas3, env NORMKIT_CUDA_FWD_F32_O3). The `_o3` kernels are in the FP8
# unit, every other kernel's SASS is main's (sass-diff), so the A/B is one build by environment:
# old = NORMKIT_CUDA_FWD_F32_O3=0 (main's choice), new = the default; old new new old. Then the
# suite, and torch.compile / Liger beside the f32 cells (issue 15's f32 32768x4096; call ln1b/1's
# f32 4096x8192).
# DIR (default gpu-run/) from branch f32occ:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step ab
S=32768x4096,8192x4096,4096x8192,16384x8192,4096x1024,65536x512,3000x3000,8x4096,1x8192,128x2048
bench() { local e=NK_NONE=1; [ "${1#old}" != "$1" ] && e=NORMKIT_CUDA_FWD_F32_O3=0
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd,ln_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 32768x4096,16384x16384 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1; bench new1; bench new2; bench old2
nk_ab_summary f c
step tests
nk_tests 220
nk_sanitize racecheck pair_forward_matches_register 90
step peers
nk_peers --budget-s 100 --impls compile,liger --ops rms_fwd,ln_fwd --shapes 8x4096 --fp32-shapes 32768x4096,8192x4096,4096x8192,4096x1024 --no-check
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 32768x4096,8192x4096,4096x8192,4096x1024 --dtypes f32 --no-candle --out "$R/grid32" > "$R/grid.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x4096 --dtypes bf16 --no-candle --out "$R/grid" >> "$R/grid.log" 2>&1
/tmp/normkit-bench merge "$R/grid/results.json" "$R/grid32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
nk_end
