#!/usr/bin/env bash
# s16 call 3 (2026-12-06, sixteenth session), branch x5 (1e691d7 + the rows-grid rule's code, both
# rules off by default) against main 3baa42a's build (normkit-bench-base), in one call:
# (1) the FP8 tests (fp8_twin_builds_match: the _x5 and _x2 builds bitwise against the default
# twin; the twin, tile, wide, staged and batch-invariance tests; the conformance suite's Fp8
# category) and memcheck on the new test; (2) O N G G N O over issue 16's grid and the rules'
# edges: O main, N both rules on by environment (NORMKIT_CUDA_FP8_TWIN_X5=0: the bf16 RMSNorm
# twin without the residual at five 128-thread CTAs per SM wherever its CTA holds 128 threads;
# NORMKIT_CUDA_FP8_ROW_RES_GRID=0: the per-row bf16 add + RMSNorm twin on a CTA per row group),
# G the rows grid only; (3) the rows grid with pairs at every M (GP) against G at mid sizes;
# (4) torch.compile's FP8 path (fp8_peers.py) on the grid, normkit after it with N's and G's rules.
# DIR (default gpu-run/) from branch x5 with main's normkit-bench as normkit-bench-base:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
step tests
timeout 200 /tmp/cuda-tests fp8 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
nk_sanitize memcheck fp8_twin_builds_match 120
step ab
F=1x4096,8x4096,128x4096,512x4096,1024x4096,2048x4096,4096x1024,16384x1024,65536x512,32768x2048,2048x8192,8192x8192,16384x4096,32768x4096,2048x65536
NE="NORMKIT_CUDA_FP8_TWIN_X5=0 NORMKIT_CUDA_FP8_ROW_RES_GRID=0"; GE="NORMKIT_CUDA_FP8_ROW_RES_GRID=0"
bench() { env $3 /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $F --dtypes bf16 --no-candle --out "$R/$1-f" > "$R/$1.log" 2>&1
  env $3 /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes 4096x1024,2048x8192,32768x4096 --dtypes bf16 --no-candle --out "$R/$1-t" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench O1 normkit-bench-base A=1; bench N1 normkit-bench "$NE"; bench G1 normkit-bench "$GE"
bench G2 normkit-bench "$GE"; bench N2 normkit-bench "$NE"; bench O2 normkit-bench-base A=1
ab() { /tmp/normkit-bench ab --old "$R/${1}1-f,$R/${1}2-f,$R/${1}1-t,$R/${1}2-t" --new "$R/${2}1-f,$R/${2}2-f,$R/${2}1-t,$R/${2}2-t" --out "$R/summary-$2-$1.md" | tail -n 1
  grep -E "^faster|^slower" "$R/summary-$2-$1.md" | cut -c1-900; }
ab O N; ab O G; ab G N
step pairs
P=256x4096,512x4096,1024x4096,2048x4096,4096x1024,16384x1024,4096x2048,2048x8192
pb() { env $2 /tmp/normkit-bench run --backend cuda --ops addrms_fwd_fp8_row --shapes $P --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
pb G1p "$GE"; pb GP1 "$GE NORMKIT_CUDA_FP8_PAIR=all"; pb GP2 "$GE NORMKIT_CUDA_FP8_PAIR=all"; pb G2p "$GE"
/tmp/normkit-bench ab --old "$R/G1p,$R/G2p" --new "$R/GP1,$R/GP2" --out "$R/summary-GP.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-GP.md" | cut -c1-700
step fp8peers
Q=8x4096,128x4096,4096x1024,2048x8192,8192x8192,32768x4096,2048x65536
PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/fp8_peers.py" --budget-s 70 --shapes $Q --impls compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$? $(date +%T)"; tail -n 1 "$R/fp8peers.log"
env $NE /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/fp8" > "$R/fp8.log" 2>&1; echo "fp8 rc=$? $(date +%T)"
/tmp/normkit-bench merge "$R/fp8/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8" && grep "at or ahead" "$R/merged-fp8/report.md"
env $GE /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/fp8g" > "$R/fp8g.log" 2>&1; echo "fp8g rc=$? $(date +%T)"
/tmp/normkit-bench merge "$R/fp8g/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8g" && grep "at or ahead" "$R/merged-fp8g/report.md"
nk_end
