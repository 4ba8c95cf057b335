#!/usr/bin/env bash
# h100t call 1 (2026-12-06, fifteenth session). Every rule `Tuning::for_device` keeps for Hopper
# with HBM3e (the H200: the forward's twin rule, N = 16384 on 8 chunks, the half-thread rows,
# LayerNorm's one-barrier statistics, f32 on three CTAs, the forwards' L2 prefetch, rows per
# CTA, the FP8 twins' and tiles' L2 prefetch, the tiles' and per-row doubled rows) was measured on
# the H200 only. On an H100, one build by environment: D = the H100's tables, H =
# NORMKIT_CUDA_MEM_GBPS=4800 (the H200's), D H H D over the FP8 grid and issue 15's forwards
# (bf16 and f32), the whole tables first; then the FP8 rules one at a time at the FP8 cells
# (P: NORMKIT_CUDA_FP8_L2PF=1, T: NORMKIT_CUDA_FP8_TILE_L2PF=1), and torch.compile's FP8 path beside the FP8 cells.
# DIR (default gpu-run/) from branch h100t (main + the environment variable):
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}"
Q=8x4096,128x4096,4096x1024,2048x8192,8192x8192,16384x3072,32768x2048,16384x4096,32768x4096,65536x4096
S=1x4096,8x4096,128x4096,512x4096,2048x4096,8192x4096,32768x4096,4096x1024,16384x1024,8192x512,65536x512,4096x2048,4096x6000,512x8192,2048x8192,32768x8192,1024x16384,16384x16384,2048x65536,512x262144,128x1048576
F=4096x1024,4096x2048,8192x4096,32768x4096,4096x8192,16384x16384
bench() { local e=A=1; [ "${1#h}" != "$1" ] && e=NORMKIT_CUDA_MEM_GBPS=4800
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1-q" > "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$1-w" >> "$R/$1.log" 2>&1
  env $e /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $F --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step whole
bench d1; bench h1; bench h2; bench d2
/tmp/normkit-bench ab --old "$R/d1-q,$R/d2-q,$R/d1-w,$R/d2-w,$R/d1-f,$R/d2-f" --new "$R/h1-q,$R/h2-q,$R/h1-w,$R/h2-w,$R/h1-f,$R/h2-f" --out "$R/summary-H.md" | tail -n 1
grep -E "^faster|^slower" "$R/summary-H.md" | cut -c1-1500
step fp8rules
one() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
one Pa NORMKIT_CUDA_FP8_L2PF=1; one Ta NORMKIT_CUDA_FP8_TILE_L2PF=1; one Tb NORMKIT_CUDA_FP8_TILE_L2PF=1; one Pb NORMKIT_CUDA_FP8_L2PF=1
for v in P T; do /tmp/normkit-bench ab --old "$R/d1-q,$R/d2-q" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-600; done
step fp8peers
PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/fp8_peers.py" --budget-s 80 --shapes $Q --impls compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$? $(date +%T)"; tail -n 1 "$R/fp8peers.log"
for s in d h; do /tmp/normkit-bench merge "$R/${s}1-q/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-$s" && echo "$s: $(grep 'at or ahead' "$R/merged-$s/report.md")"; done
rm -f "$R"/merged*/report.html
nk_end
