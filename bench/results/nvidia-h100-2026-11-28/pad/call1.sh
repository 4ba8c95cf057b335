#!/usr/bin/env bash
# Session 2026-11-28 (3), pad call 1 — one build (branch pad2, off by default), by environment:
#  * the FP8 quantised twin and the backward's twin padded to their share of an SM
#    (NORMKIT_CUDA_FP8_TWIN_CAP / NORMKIT_CUDA_BWD_TWIN_CAP = N: ⌈grid / SMs⌉ CTAs per SM where at
#    most N), as d841e68 did for the 16-bit forward twin: D (off), P1, P2, P2, P1, D at 1–256 rows;
#  * balanced persistent forward grids (NORMKIT_CUDA_BALANCE=1: every CTA the same walks) on the
#    FP8 32768×4096-class shapes and the staged long rows: D B B D;
#  * the twin tests with both forced on (the padding and the grid change no bit).
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d95b0b8
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
ON="NORMKIT_CUDA_FP8_TWIN_CAP=2 NORMKIT_CUDA_BWD_TWIN_CAP=2 NORMKIT_CUDA_BALANCE=1"
env $ON timeout 150 /tmp/cuda-tests fp8_twin_matches_register twin_backward fp8_batch_invariance fp8_twin_tile_matches_separate fp8_staged_matches_oracle --test-threads=1 > "$R/tests-on.log" 2>&1
echo "tests-on rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests-on.log" | head
step decode
one() { local tag=$1 ops=$2 shapes=$3; shift 3; env "$@" /tmp/normkit-bench run --backend cuda --ops $ops --shapes $shapes --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=1x4096,8x4096,32x4096,128x4096,256x4096,128x1024,256x2048,128x8192
O=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row,rms_bwd,ln_bwd,addrms_bwd
P1="NORMKIT_CUDA_FP8_TWIN_CAP=1 NORMKIT_CUDA_BWD_TWIN_CAP=1"
P2="NORMKIT_CUDA_FP8_TWIN_CAP=2 NORMKIT_CUDA_BWD_TWIN_CAP=2"
one d-a $O $S X=1; one p1-a $O $S $P1; one p2-a $O $S $P2; one p2-b $O $S $P2; one p1-b $O $S $P1; one d-b $O $S X=1
for v in p1 p2; do /tmp/normkit-bench ab --old "$R/d-a,$R/d-b" --new "$R/$v-a,$R/$v-b" --out "$R/summary-$v.md" | tail -n 1; done
step balance
L=32768x4096,16384x4096,65536x512,8192x8192,16384x3072
LO=rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row
X=512x262144,1024x262144,2048x65536,4096x40960
XO=rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8
for r in a b; do
  [ $r = a ] && { one bd-a $LO $L X=1; one bx-d-a $XO $X X=1; one bb-a $LO $L NORMKIT_CUDA_BALANCE=1; one bx-b-a $XO $X NORMKIT_CUDA_BALANCE=1; }
  [ $r = b ] && { one bb-b $LO $L NORMKIT_CUDA_BALANCE=1; one bx-b-b $XO $X NORMKIT_CUDA_BALANCE=1; one bd-b $LO $L X=1; one bx-d-b $XO $X X=1; }
done
/tmp/normkit-bench ab --old "$R/bd-a,$R/bd-b" --new "$R/bb-a,$R/bb-b" --out "$R/summary-balance.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/bx-d-a,$R/bx-d-b" --new "$R/bx-b-a,$R/bx-b-b" --out "$R/summary-balance-long.md" | tail -n 1
rm -f "$R"/*/report.html
step end
