#!/usr/bin/env bash
# f32o3 call 2 (2026-11-29, thirteenth session). Call 1's bundle by environment, the three-CTA
# builds off everywhere (NORMKIT_CUDA_FWD_F32_O3=0: main's kernels): the f32 forwards of short
# rows, which call 1's peers put far behind (rms_fwd / ln_fwd f32 4096x1024 0.72x / 0.73x of
# torch.compile / Liger), on other rows of the table (they apply to every dtype; f32 only is
# measured): two chunks per thread (A: 512:32:4, 1024:64:2, 2048:128:2), one chunk per thread
# as Liger's one row per 128-thread program at N = 1024 (B: 512:64:2, 1024:128:1, 2048:256:1),
# the table's groups on twice the rows per CTA (C: 512:16:16, 1024:32:8, 2048:64:4), and the L2
# prefetch for f32 RMSNorm (P: rms:f32:1:max:0:50 plus main's rules). Mirrored D A B C P P C B A D;
# each against D.
# DIR: call 1's bundle (f32o3/call1.sh's header).
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step sweep
S=4096x512,65536x512,1x1024,4096x1024,16384x1024,8x2048,4096x2048,16384x2048
run() { env NORMKIT_CUDA_FWD_F32_O3=0 $3 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes f32 --no-candle --out "$R/$1$2" > "$R/$1$2.log" 2>&1; echo "$1$2 rc=$? $(date +%T)"; }
P0="ln:16:4096:4096:33554432:50,ln:16:8192:8192:33554432:50,ln:16:1:8192:16777216:50,ln:f32:1:max:16777216:50,ln:16:16384:16384:33554432:50,rms:16:1:8192:16777216:50"
declare -A E=([D]="NK_NONE=1" [A]="NORMKIT_CUDA_FWD_TABLE=512:32:4,1024:64:2,2048:128:2" [B]="NORMKIT_CUDA_FWD_TABLE=512:64:2,1024:128:1,2048:256:1" [C]="NORMKIT_CUDA_FWD_TABLE=512:16:16,1024:32:8,2048:64:4" [P]="NORMKIT_CUDA_FWD_L2PF=$P0,rms:f32:1:max:0:50")
for v in D A B C P; do run $v 1 "${E[$v]}"; done
for v in P C B A D; do run $v 2 "${E[$v]}"; done
for v in A B C P; do
  /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1
  grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-700
done
nk_end
