#!/usr/bin/env bash
# s16 call 1 (2026-12-06, sixteenth session), main 3baa42a's build, no kernel change. (1) What the
# H100 moves with nothing computed, by read:write mix (mix.cu, built here by nvcc): 1:1 copy, 2:1
# (an FP8 forward's bf16 in, FP8 out), 4:3 (with the residual), read only — is issue 16's 95% of the
# copy ceiling within the 2:1 mix's reach? (2) The CUDA suite on main's head (the H100's
# half-thread 6144-row edge and the _x2-off rule had not run through it; fp8_batch_invariance's
# forced _x2 case had never run). (3) By environment, mirrored (D GR P P GR D): the per-row FP8
# twins on a CTA per row group (NORMKIT_CUDA_FP8_GRID=rows: no amax commit per row, so the
# persistent grid's one reason does not hold) and in pairs at every M (NORMKIT_CUDA_FP8_PAIR=all);
# (4) the bf16 twin on a persistent grid (NORMKIT_CUDA_FWD_GRID=persist) against its CTA-per-row
# grid: what persistence alone costs the forward that reads at the ceiling.
# Bundle: NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out gpu-run
#   (cd gpu-run/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
S="$(cd "$(dirname "$0")" && pwd)"
step mix
nvcc -O3 -arch=sm_90a "$S/mix.cu" -o /tmp/mix > "$R/mix-build.log" 2>&1 && timeout 60 /tmp/mix > "$R/mix.txt" 2>&1; echo "mix rc=$?"; cat "$R/mix.txt"
step tests
nk_tests 240
step knobs
Q=32768x4096,16384x4096,8192x8192,2048x8192,4096x1024,128x4096,8x4096
one() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
one D1 A=1; one GR1 NORMKIT_CUDA_FP8_GRID=rows; one P1 NORMKIT_CUDA_FP8_PAIR=all
one P2 NORMKIT_CUDA_FP8_PAIR=all; one GR2 NORMKIT_CUDA_FP8_GRID=rows; one D2 A=1
for v in GR P; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-500; done
step persist
B=32768x4096,16384x4096,8192x8192,4096x1024
two() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $B --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
two B1 A=1; two PS1 NORMKIT_CUDA_FWD_GRID=persist; two PS2 NORMKIT_CUDA_FWD_GRID=persist; two B2 A=1
/tmp/normkit-bench ab --old "$R/B1,$R/B2" --new "$R/PS1,$R/PS2" --out "$R/summary-PS.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-PS.md" | cut -c1-500
nk_end
