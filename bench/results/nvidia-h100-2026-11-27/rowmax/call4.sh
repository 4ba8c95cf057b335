#!/usr/bin/env bash
# Session 2026-11-27 (6), call 4: the quantised kernels sum a thread's even and odd chunks in two
# accumulators (the 16-bit forwards' order since v15), and the quantised twin in pairs
# (`nk_fwd_regqp{|r}_*`, group G's rows on 2G threads, the same bits; off by default in this
# build, Fp8Tuning::pair_rows) — against 6f246bb: the twin test (plain, twin, pairs) and racecheck;
# A B B A on the FP8 grid and the per-row ops at many rows; pairs at every M against none by
# environment on decode and mid sizes; every CUDA test but soak; the FP8 peers, merged with the
# default grid and with pairs at every M.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 6f246bb
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step twin-test
timeout 90 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/twin.log" 2>&1; echo "twin rc=$?"; grep -E "test result|FAIL|panicked" "$R/twin.log" | head -5
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/sanitize-racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -n 2 "$R/sanitize-racecheck.log"
step ab
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=65536x512,32768x1024,16384x3072,8192x8192,32768x4096,8192x4096
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; one r-${r%%:*} ${r##*:} rms_fwd_fp8_row,addrms_fwd_fp8_row $S bf16 X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2,$R/r-old1,$R/r-old2" --new "$R/q-new1,$R/q-new2,$R/r-new1,$R/r-new2" --out "$R/summary-fp8.md" | tail -n 1
step pairs
P=1x4096,8x4096,32x4096,128x4096,512x4096,2048x4096,128x1024,4096x1024,128x2048,1024x2048
O=rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8_row
for r in off1:NORMKIT_CUDA_FP8_PAIR=0 all1:NORMKIT_CUDA_FP8_PAIR=all all2:NORMKIT_CUDA_FP8_PAIR=all off2:NORMKIT_CUDA_FP8_PAIR=0; do
  one p-${r%%:*} normkit-bench $O $P bf16 ${r#*:}; done
/tmp/normkit-bench ab --old "$R/p-off1,$R/p-off2" --new "$R/p-all1,$R/p-all2" --out "$R/summary-pairs.md" | tail -n 1
fp8 q-pall normkit-bench NORMKIT_CUDA_FP8_PAIR=all
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step peers
PYTHONUNBUFFERED=1 timeout 110 python3 "$HERE/peers/fp8_peers.py" --budget-s 95 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/q-new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
/tmp/normkit-bench merge "$R/q-pall/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-pairs" && grep "at or ahead" "$R/merged-pairs/report.md"
rm -f "$R/merged/report.html" "$R/merged-pairs/report.html"
step end
