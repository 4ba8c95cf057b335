#!/usr/bin/env bash
# Session 2026-11-27 (7), call 2: the staged cluster forward with an FP8 output (`nk_fwd_csq_*`,
# FP8 rows past N = 32768) against 9cbd2c1 (the split path there): its device test, the FP8
# batch-invariance test, memcheck and racecheck on the device test; A B B A on the long-row FP8
# shapes, and the new build with NORMKIT_CUDA_FP8_STAGED=0 (the split path) beside them; A B B A
# on the FP8 grid. (Call 1 found the kernels held to 48 KiB of dynamic shared memory: start-up
# did not opt them in, so only N = 40960 without the residual took them.)
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 9cbd2c1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
for t in fp8_staged_matches_oracle fp8_batch_invariance; do
  timeout 120 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked|case" "$R/$t.log" | tail -12
done
step ab
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
L=8x65536,128x65536,2048x65536,4096x40960,256x131072,512x262144
O=rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  one l-${r%%:*} ${r##*:} $O $L bf16 X=1; done
one l-off normkit-bench $O $L bf16 NORMKIT_CUDA_FP8_STAGED=0
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2" --new "$R/q-new1,$R/q-new2" --out "$R/summary-fp8.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/l-old1,$R/l-old2" --new "$R/l-new1,$R/l-new2" --out "$R/summary-long.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/l-off" --new "$R/l-new1,$R/l-new2" --out "$R/summary-off.md" | tail -n 1
step sanitize
for tool in memcheck racecheck; do
  timeout 130 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_staged_matches_oracle --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "case|ERROR SUMMARY|test result" "$R/sanitize-$tool.log" | tail -n 4
done
step end
