#!/usr/bin/env bash
# s16 call 5 (2026-12-06, sixteenth session), call 4's bundle (the landed form): the f16 per-row
# add + RMSNorm -> FP8 twin (built at (256, 1), not the bf16 twin's (256, 2)) on a CTA per row
# group by environment (NORMKIT_CUDA_FP8_GRID=rows), mirrored D GR GR D, before the rule covers it.
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
F=8x4096,128x4096,512x4096,1024x4096,2048x4096,4096x1024,16384x1024,65536x512,512x8192,2048x8192,8192x8192,16384x4096,32768x4096
one() { env $2 /tmp/normkit-bench run --backend cuda --ops addrms_fwd_fp8_row --shapes $F --dtypes f16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
one D1 A=1; one GR1 NORMKIT_CUDA_FP8_GRID=rows; one GR2 NORMKIT_CUDA_FP8_GRID=rows; one D2 A=1
/tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/GR1,$R/GR2" --out "$R/summary-GR16.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-GR16.md" | cut -c1-700
nk_end
