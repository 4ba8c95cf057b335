#!/usr/bin/env bash
# Call 13 (2026-11-28, sixth session): branch half against main (f955905), old new new old.
#  - the per-row FP8 twin without the bias code where it keeps its products (call 12 measured
#    rowq2, which dropped it from every per-row RMSNorm twin: bf16 add + RMSNorm lost 1.3-3.5%);
#  - nk_fwd_regh_bf16_{rms,ln}: the 4-chunk table's rows on half the threads, 8 chunks each, the
#    same bits (Tuning::fwd_half on HBM3e: N in (4096, 8192], RMSNorm from 256 rows, LayerNorm
#    from 8192).
# Then one build by environment (new build): NORMKIT_CUDA_FWD_HALF=2049:8192:1:1 (everywhere,
# N = 4096 included) against off, for the thresholds.
# DIR (default gpu-run/) from, on branch half:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
Q8=1x8192,8x8192,128x8192,2048x8192,8192x8192,8x4096,128x4096,4096x4096,16384x4096,32768x4096,128x1024,4096x1024
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
S8=1x8192,8x8192,128x8192,255x8192,256x8192,512x8192,1024x8192,4096x8192,8192x8192,16384x8192,1x6000,512x6000,4096x6000,16384x6000
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $Q8 --dtypes bf16,f16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $S8 --dtypes bf16 --no-candle --out "$R/$1-e" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q -i -e; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step sweep
SW=1x4096,8x4096,128x4096,256x4096,512x4096,2048x4096,8192x4096,32768x4096,1x8192,8x8192,128x8192,256x8192,512x8192,2048x8192,4096x8192,8192x8192,32768x8192
two() { local tag=$1; shift; env "$@" timeout 90 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $SW --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
two OFF-a NORMKIT_CUDA_FWD_HALF=off; two H-a NORMKIT_CUDA_FWD_HALF=2049:8192:1:1; two H-b NORMKIT_CUDA_FWD_HALF=2049:8192:1:1; two OFF-b NORMKIT_CUDA_FWD_HALF=off
/tmp/normkit-bench ab --old "$R/OFF-a,$R/OFF-b" --new "$R/H-a,$R/H-b" --out "$R/summary-half.md" | tail -n 1
rm -f "$R"/*/report.html
step end
