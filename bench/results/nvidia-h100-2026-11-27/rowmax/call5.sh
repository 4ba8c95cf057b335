#!/usr/bin/env bash
# Session 2026-11-27 (6), call 5: a second form of call 4's change (not landed; call 6 has the
# landed one) against 6f246bb — every quantised kernel's two-accumulator order, the per-row
# RMSNorm twin at launch bound (256, 2) (128 registers again), and the quantised twin in pairs by
# default for 1..=512 rows of RMSNorm per row or with the residual (Fp8Tuning::pair_rows): the twin test (plain, twin, pairs), the
# batch-invariance test (pairs at few rows, the twin above: the same bits), racecheck and memcheck
# on the twin test; A B B A on the FP8 grid, the per-row ops at many rows and the decode and mid
# sizes; every CUDA test but soak; the FP8 peers, merged.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 6f246bb
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step fp8-tests
for t in fp8_twin_matches_register fp8_batch_invariance; do
  timeout 90 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked" "$R/$t.log" | head -5
done
for tool in racecheck memcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step ab
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=65536x512,32768x1024,16384x3072,8192x8192,32768x4096,8192x4096,1x4096,32x4096,512x4096,2048x4096,128x1024,128x2048,1024x2048
O=rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; one r-${r%%:*} ${r##*:} $O $S bf16 X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2,$R/r-old1,$R/r-old2" --new "$R/q-new1,$R/q-new2,$R/r-new1,$R/r-new2" --out "$R/summary-fp8.md" | tail -n 1
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step peers
PYTHONUNBUFFERED=1 timeout 110 python3 "$HERE/peers/fp8_peers.py" --budget-s 95 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/q-new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step end
