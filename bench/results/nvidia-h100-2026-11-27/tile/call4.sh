#!/usr/bin/env bash
# Session 2026-11-27 (5), call 4: the landed form — call 3's tiles (clusters of 2 CTAs, 16-row
# tiles) compiled in a unit of their own (normkit_fp8t.fatbin; the other 284 kernels' SASS
# identical to 22a0bb6), where the supertiles fill 150% of a wave of clusters, N = 2048..4096 —
# against 22a0bb6: the tile test first; A B B A on the FP8 grid plus rms_fwd_fp8_t at more
# shapes, on the long-row forwards (call 3 found them slower with the tiles in norm.cu's unit)
# and on decode-sized forwards (the launch counter); on the new build rms_fwd_fp8_t by
# environment (separate / default); the FP8 peers, merged; every CUDA test but soak; the tile
# test under memcheck, racecheck and initcheck.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 22a0bb6
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tile-test
timeout 60 /tmp/cuda-tests fp8_twin_tile_matches_separate --nocapture > "$R/tile-test.log" 2>&1; echo "tile test rc=$?"; grep -E "test result|FAIL|panicked|differs" "$R/tile-test.log" | head -5
step ab
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
T=4096x4096,8192x4096,16384x4096,65536x4096,4096x2048,8192x2048,16384x2048,32768x2048,16384x3072
L=512x131072,512x262144,128x1048576,64x524288
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; one t-${r%%:*} ${r##*:} rms_fwd_fp8_t $T bf16 X=1; one l-${r%%:*} ${r##*:} rms_fwd,addrms_fwd,ln_fwd $L bf16,f32 X=1
  one d-${r%%:*} ${r##*:} rms_fwd,addrms_fwd,rms_bwd 1x4096,8x4096,128x4096 bf16 X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2,$R/t-old1,$R/t-old2" --new "$R/q-new1,$R/q-new2,$R/t-new1,$R/t-new2" --out "$R/summary-fp8.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/l-old1,$R/l-old2,$R/d-old1,$R/d-old2" --new "$R/l-new1,$R/l-new2,$R/d-new1,$R/d-new2" --out "$R/summary-long.md" | tail -n 1
step sweep
tt() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $T,32768x4096,1024x4096,2048x8192,4096x1024,65536x512 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tt sep NORMKIT_CUDA_FP8_TWIN_TM=0
tt dflt X=1
step peers
PYTHONUNBUFFERED=1 timeout 115 python3 "$HERE/peers/fp8_peers.py" --budget-s 100 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/q-new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitize
for tool in memcheck racecheck initcheck; do
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_tile_matches_separate --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step end
