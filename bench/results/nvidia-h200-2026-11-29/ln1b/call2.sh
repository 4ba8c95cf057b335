#!/usr/bin/env bash
# ln1b call 2 (2026-11-29, thirteenth session). Call 1's bundle, its new build only, by
# environment: the f32 forwards that issue 15's grid and call 1's peers leave behind (f32
# 32768x4096 ln_fwd 0.96x / rms_fwd 0.98x, ring/call5; f32 4096x8192 ln_fwd 0.92x, call 1) on
# other rows of the table: two rows per 256-thread CTA (T2), two chunks per thread (TW), an
# occupancy-sized grid (P). Mirrored: D T2 TW P P TW T2 D; each against D by `normkit-bench ab`.
# (Table rows change bits where they run; f32 only is measured here, the rows apply to all.)
# DIR: call 1's bundle (ln1b/call1.sh's header).
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step sweep
S=32768x4096,8192x4096,4096x8192,16384x8192
run() { env $3 /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1$2" > "$R/$1$2.log" 2>&1; echo "$1$2 rc=$? $(date +%T)"; }
declare -A E=([D]="NK_NONE=1" [T2]="NORMKIT_CUDA_FWD_TABLE=4096:128:2,8192:256:2" [TW]="NORMKIT_CUDA_FWD_TABLE=4096:256:1,8192:512:1" [P]="NORMKIT_CUDA_FWD_GRID=persist")
for v in D T2 TW P; do run $v 1 "${E[$v]}"; done
for v in P TW T2 D; do run $v 2 "${E[$v]}"; done
for v in T2 TW P; do
  /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1
  grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-600
done
nk_end
