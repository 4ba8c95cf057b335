#!/usr/bin/env bash
# f32k2 call 2 (2026-12-06, fourteenth session). The landed form of call 1's result: f32 RMSNorm
# and LayerNorm without the residual at N = 1024 / 2048 / 4096 on two chunks per thread, one row
# per CTA of 64 / 128 / 256 threads (tuning::F32_K2_SM90; the H100's default, none on the H200).
# One build by environment (the new kernels are in the FP8 unit; every other kernel's SASS is
# main's, sass-diff): old = NORMKIT_CUDA_FWD_F32=off (main's choice), new = on; old new new old,
# on the cells it takes and those beside it. Then the suite with the default tuning, memcheck on
# the kernel tour (one test thread, as run.sh) and racecheck on the general tour with the
# two-chunk builds on, and torch.compile / Liger beside the f32 cells.
# DIR (default gpu-run/) from branch f32k2:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
S=1x1024,8x1024,4096x1024,16384x1024,65536x1024,8x2048,128x2048,4096x2048,32768x2048,1x4096,8x4096,128x4096,8192x4096,32768x4096,4095x4096,3000x3000,65536x512,4096x8192
step ab
bench() { local e=NORMKIT_CUDA_FWD_F32=on; [ "${1#old}" != "$1" ] && e=NORMKIT_CUDA_FWD_F32=off
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x4096,32768x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
nk_abba bench
nk_ab_summary f c
step tests
nk_tests 300
NORMKIT_CUDA_FWD_F32=on timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests kernel_tour --test-threads=1 > "$R/sanitize-memcheck-tour.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; grep "test result" "$R/sanitize-memcheck-tour.log"; tail -n 2 "$R/sanitize-memcheck-tour.log" | head -1
NORMKIT_CUDA_FWD_F32=on timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests kernel_tour_general_paths > "$R/sanitize-racecheck-tour.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-tour.log" | head -1
step peers
P=4096x1024,16384x1024,4096x2048,8192x4096,32768x4096
nk_peers --budget-s 100 --impls compile,liger --ops rms_fwd,ln_fwd --shapes 8x4096 --fp32-shapes $P,8x4096,8x1024 --no-check
for v in off on; do
  NORMKIT_CUDA_FWD_F32=$v /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P,8x4096,8x1024 --dtypes f32 --no-candle --out "$R/grid32-$v" > "$R/grid-$v.log" 2>&1
  NORMKIT_CUDA_FWD_F32=$v /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x4096 --dtypes bf16 --no-candle --out "$R/grid16-$v" >> "$R/grid-$v.log" 2>&1
  /tmp/normkit-bench merge "$R/grid16-$v/results.json" "$R/grid32-$v/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged-$v" && echo "$v: $(grep 'at or ahead' "$R/merged-$v/report.md")"
done
nk_end
