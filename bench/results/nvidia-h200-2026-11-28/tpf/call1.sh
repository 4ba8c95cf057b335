#!/usr/bin/env bash
# tpf call 1 (2026-11-28, ninth session). Branch tpf against main (ecfae69), old new new old: the
# yT tile twins' L2 prefetch distance in tile walks (Fp8Tuning::tile_l2_ahead; default 1, which
# is main's distance, so the default should measure as main). Then, new build, by environment:
# the tiles' distance K = 2, 4, 8 (NORMKIT_CUDA_FP8_TILE_L2PF), other tile shapes (TM 32, CL 4,
# TM 8 + CL 4) and one row per CTA (FP8_WIDE=off); the per-row and per-tensor twins' distance
# K = 2, 3 (NORMKIT_CUDA_FP8_L2PF); LayerNorm at N = 2048 on half the threads and on 2 rows per
# CTA from fewer rows (issue 15's 4096×2048 cell). ncu of the yT tile twin at 32768×4096 (stall
# reasons per instruction). The FP8 tile test and memcheck on it (the kernel's loop changed).
# DIR (default gpu-run/) from, on branch tpf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T1 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
ST=8192x4096,16384x4096,32768x4096,65536x4096,16384x3072,32768x2048,4096x4096
SQ=32768x4096,16384x4096,128x4096
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1-t" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row --shapes $SQ --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -t -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tiles
tb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
tb TDa X=1; tb T2a NORMKIT_CUDA_FP8_TILE_L2PF=2; tb T4a NORMKIT_CUDA_FP8_TILE_L2PF=4; tb T8a NORMKIT_CUDA_FP8_TILE_L2PF=8
tb M32a NORMKIT_CUDA_FP8_TWIN_TM=32; tb C4a NORMKIT_CUDA_FP8_TWIN_CL=4; tb M8C4a NORMKIT_CUDA_FP8_TWIN_TM=8 NORMKIT_CUDA_FP8_TWIN_CL=4; tb Woffa NORMKIT_CUDA_FP8_WIDE=off
tb Woffb NORMKIT_CUDA_FP8_WIDE=off; tb M8C4b NORMKIT_CUDA_FP8_TWIN_TM=8 NORMKIT_CUDA_FP8_TWIN_CL=4; tb C4b NORMKIT_CUDA_FP8_TWIN_CL=4; tb M32b NORMKIT_CUDA_FP8_TWIN_TM=32
tb T8b NORMKIT_CUDA_FP8_TILE_L2PF=8; tb T4b NORMKIT_CUDA_FP8_TILE_L2PF=4; tb T2b NORMKIT_CUDA_FP8_TILE_L2PF=2; tb TDb X=1
for v in T2 T4 T8 M32 C4 M8C4 Woff; do /tmp/normkit-bench ab --old "$R/TDa,$R/TDb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
step rowpf
SR=32768x4096,16384x4096,8192x8192,2048x8192,4096x1024,128x4096
rb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row --shapes $SR --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
rb RDa X=1; rb R2a NORMKIT_CUDA_FP8_L2PF=2; rb R3a NORMKIT_CUDA_FP8_L2PF=3; rb R3b NORMKIT_CUDA_FP8_L2PF=3; rb R2b NORMKIT_CUDA_FP8_L2PF=2; rb RDb X=1
for v in R2 R3; do /tmp/normkit-bench ab --old "$R/RDa,$R/RDb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
step ln2048
SL=1x2048,8x2048,128x2048,1024x2048,2048x2048,4096x2048,8192x2048,16384x2048,2048x4096,4096x4096,8192x4096
lb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes $SL --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
HALF=NORMKIT_CUDA_FWD_HALF=rms:4097:8192:512:max,rms:2049:4096:2048:max,ln:8192:8192:512:max,ln:4096:4096:2048:8192,rms:513:1024:4096:max,rms:257:512:8192:max,ln:512:512:8192:max,ln:1024:1024:4096:max,ln:2048:2048:2048:max
RPC=NORMKIT_CUDA_FWD_RPC=rms:1025:2048:1:8192:2,addrms:1025:2048:1:512:2,ln:1025:2048:2048:max:2
RPC4=NORMKIT_CUDA_FWD_RPC=rms:1025:2048:1:8192:2,addrms:1025:2048:1:512:2,ln:1025:2048:8192:max:2,ln:4096:4096:2048:max:2,rms:4096:4096:2048:max:2
lb LDa X=1; lb LHa $HALF; lb LRa $RPC; lb LR4a $RPC4; lb LR4b $RPC4; lb LRb $RPC; lb LHb $HALF; lb LDb X=1
for v in LH LR LR4; do /tmp/normkit-bench ab --old "$R/LDa,$R/LDb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
step tests
timeout 100 /tmp/cuda-tests fp8_twin_tile_matches_separate > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests fp8_twin_tile_matches_separate > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step ncu
op=rms_fwd_fp8_t
timeout 120 ncu --set full --import-source no -k regex:nk_fwd --launch-skip 4 --launch-count 1 -o /tmp/ncu-$op /tmp/normkit-bench run --backend cuda --ops $op --shapes 32768x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op.log" 2>&1; echo "ncu $op rc=$?"
ncu -i /tmp/ncu-$op.ncu-rep --page details >> "$R/ncu-$op.log" 2>&1
ncu -i /tmp/ncu-$op.ncu-rep --page source --csv --print-source sass > "$R/sass-$op.csv" 2>&1; echo "src $op rc=$? $(wc -c < "$R/sass-$op.csv")"
xz -9 "$R/sass-$op.csv"
rm -f "$R"/*/report.html
step end
