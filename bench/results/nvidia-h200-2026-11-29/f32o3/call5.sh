#!/usr/bin/env bash
# f32o3 call 5 (2026-11-29, thirteenth session). Call 3's bundle by environment, main's kernels
# (NORMKIT_CUDA_FWD_F32_O3=off): call 4's ncu found torch.compile's f32 4096x1024 RMSNorm on one
# row per 32-thread CTA (4096 CTAs, 72 registers, 33% achieved occupancy) where ours runs four
# rows per 128-thread CTA at 113 registers (22%). The table's row for N = 1024 on one or two rows
# per CTA of its 32 threads (S1: 1024:32:1, S2: 1024:32:2); mirrored D S1 S2 S2 S1 D.
# DIR: call 3's bundle.
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step sweep
S=1x1024,8x1024,4096x1024,16384x1024,65536x1024
run() { env NORMKIT_CUDA_FWD_F32_O3=off $3 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1$2" > "$R/$1$2.log" 2>&1; echo "$1$2 rc=$? $(date +%T)"; }
declare -A E=([D]="NK_NONE=1" [S1]="NORMKIT_CUDA_FWD_TABLE=1024:32:1" [S2]="NORMKIT_CUDA_FWD_TABLE=1024:32:2")
for v in D S1 S2; do run $v 1 "${E[$v]}"; done
for v in S2 S1 D; do run $v 2 "${E[$v]}"; done
for v in S1 S2; do
  /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1
  grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-700
done
nk_end
