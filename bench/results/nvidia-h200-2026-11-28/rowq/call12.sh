#!/usr/bin/env bash
# Call 12 (2026-11-28, sixth session): NOTES v26's next call, plus per-instruction ncu. The
# session's first call: branch rowq2 (the per-row RMSNorm FP8 twin compiled without a bias: 17 of ~39
# instructions per output chunk, NOTES v26) against main, old new new old; and RMSNorm at
# N = 8192 on 8 chunks with the 8-chunk twin at every grid (NORMKIT_CUDA_FWD_K8W=8192:128:1 on
# main's build: call 10 measured it with the plain kernel past one wave, +1.8% at 16384-32768
# rows and +5% at 1-32 rows).
# DIR (default gpu-run/) from, on branch rowq2:
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
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $Q8 --dtypes bf16,f16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step r8
S8=1x8192,8x8192,32x8192,128x8192,512x8192,2048x8192,4096x8192,16384x8192,32768x8192
two() { local tag=$1; shift; env "$@" timeout 60 /tmp/normkit-bench-base run --backend cuda --ops rms_fwd --shapes $S8 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
two E-a X=1; two R8-a NORMKIT_CUDA_FWD_K8W=8192:128:1; two R8-b NORMKIT_CUDA_FWD_K8W=8192:128:1; two E-b X=1
/tmp/normkit-bench ab --old "$R/E-a,$R/E-b" --new "$R/R8-a,$R/R8-b" --out "$R/summary-r8.md" | tail -n 1
step ncu
# Per-SASS-instruction counts and stall samples of the per-row and per-tensor twins (new build),
# 32768x4096 bf16 -> e4m3, for where the per-row twin's instructions go.
for op in rms_fwd_fp8_row rms_fwd_fp8; do
  timeout 120 ncu --set full --import-source no -k regex:nk_fwd --launch-skip 4 --launch-count 1 -o /tmp/ncu-$op /tmp/normkit-bench run --backend cuda --ops $op --shapes 32768x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op.log" 2>&1; echo "ncu $op rc=$?"
  ncu -i /tmp/ncu-$op.ncu-rep --page details >> "$R/ncu-$op.log" 2>&1
  ncu -i /tmp/ncu-$op.ncu-rep --page source --csv --print-source sass > "$R/sass-$op.csv" 2>&1; echo "src $op rc=$? $(wc -c < "$R/sass-$op.csv")"
done
rm -f "$R"/*/report.html
step end
