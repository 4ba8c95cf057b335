#!/usr/bin/env bash
# rpc call 5 (2026-11-28, eighth session): branch rpc's landed rules against main (d339f7a), old
# new new old — Tuning::fwd_rpc on HBM3e (tuning::RPC_SM90_HBM3E): 16-bit RMSNorm at N in (1024,
# 2048] on 2 rows per CTA to 8192 rows, with the residual to 512 rows, LayerNorm from 8192 rows
# (call 4 took every RMSNorm call); and the half-thread kernels for groups below a warp
# (`nk_fwd_regh_*_sw`, N = 512 and 1024; no rule takes them yet). The full CUDA suite (the
# half-thread test forces them). The half-thread rows at N = 512 and 1024 by environment
# (NORMKIT_CUDA_FWD_HALF: the default rules and every call of N 512-1024), and with twice the
# table's rows per CTA there (NORMKIT_CUDA_FWD_RPC: the default rules and those), D H H8 H8 H D. Then the FP8 twins by environment at the
# sizes of issue 16's targets: non-persistent grids (NORMKIT_CUDA_FP8_GRID=rows), the per-tensor
# twin's wider CTAs from 4 walks and never (NORMKIT_CUDA_FP8_WIDE), D G W4 Woff Woff W4 G D.
# DIR (default gpu-run/) from, on branch rpc:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=1x2048,8x2048,128x2048,512x2048,513x2048,1024x2048,2048x2048,4096x2048,8192x2048,8193x2048,16384x2048,32768x2048,65536x2048,4096x1024,4096x4096
SF=8x2048,4096x2048,16384x2048,32768x2048
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SF --dtypes f16 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -b -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step half
HR=rms:4097:8192:512:max,rms:2049:4096:2048:max,ln:8192:8192:512:max,ln:4096:4096:2048:8192
SH=1x1024,8x1024,128x1024,1024x1024,2048x1024,4096x1024,16384x1024,65536x1024,1x512,128x512,2048x512,8192x512,16384x512,65536x512
hb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
H=NORMKIT_CUDA_FWD_HALF=$HR,all:512:1024:1:max
P8=NORMKIT_CUDA_FWD_RPC=rms:1025:2048:1:8192:2,addrms:1025:2048:1:512:2,ln:1025:2048:8192:max:2,rms:1024:1024:1:max:8,ln:1024:1024:1:max:8,rms:512:512:1:max:16,ln:512:512:1:max:16
hb HDa X=1; hb HHa $H; hb H8a $H $P8; hb H8b $H $P8; hb HHb $H; hb HDb X=1
/tmp/normkit-bench ab --old "$R/HDa,$R/HDb" --new "$R/HHa,$R/HHb" --out "$R/summary-half.md" | tail -n 1; grep -E "^slower" "$R/summary-half.md"
/tmp/normkit-bench ab --old "$R/HDa,$R/HDb" --new "$R/H8a,$R/H8b" --out "$R/summary-half8.md" | tail -n 1; grep -E "^slower" "$R/summary-half8.md"
step fp8
S=4096x1024,16384x4096,32768x4096,8192x8192
fb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
fb Da X=1; fb Ga NORMKIT_CUDA_FP8_GRID=rows; fb W4a NORMKIT_CUDA_FP8_WIDE=4; fb Woffa NORMKIT_CUDA_FP8_WIDE=off
fb Woffb NORMKIT_CUDA_FP8_WIDE=off; fb W4b NORMKIT_CUDA_FP8_WIDE=4; fb Gb NORMKIT_CUDA_FP8_GRID=rows; fb Db X=1
for v in G W4 Woff; do /tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^slower" "$R/summary-$v.md"; done
rm -f "$R"/*/report.html
step end
