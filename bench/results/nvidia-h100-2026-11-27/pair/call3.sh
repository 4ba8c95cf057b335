#!/usr/bin/env bash
# Session 2026-11-27 (4), call 3: the landed build (the forward's twin in pairs for RMSNorm with the
# fused residual, the 16-bit forwards' two-accumulator order, the FP8 twin's two rows per CTA past 8
# walks by default) against 49d94e1: every CUDA test but soak; A B B A on the forward grid (issue
# 15's shapes and the sweep's) and on the FP8 grid; the peers (torch eager, torch.compile, Liger)
# on the forward's decode and mid shapes, merged; the pair and wide tests under the sanitizers.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 49d94e1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
F=rms_fwd,addrms_fwd,ln_fwd
step ab
G=1x4096,2x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,4096x4096,32768x4096,8x1024,128x1024,512x1024,1024x1024,4096x1024,128x512,1024x512,65536x512,128x2048,128x3000,2048x8192,32768x8192,16384x16384,2048x65536
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  one ${r%%:*} ${r##*:} $F $G bf16 X=1; one ${r%%:*}-x ${r##*:} $F 8x4096,128x4096,32768x4096 f32,f16 X=1; done
/tmp/normkit-bench ab --old "$R/old1,$R/old2,$R/old1-x,$R/old2-x" --new "$R/new1,$R/new2,$R/new1-x,$R/new2-x" --out "$R/summary-ab.md" | tail -n 1
step fp8
fp8() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
fp8 q-old1 normkit-bench-base; fp8 q-new1 normkit-bench; fp8 q-new2 normkit-bench; fp8 q-old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2" --new "$R/q-new1,$R/q-new2" --out "$R/summary-fp8.md" | tail -n 1
step peers
PYTHONUNBUFFERED=1 timeout 200 python3 "$HERE/peers/bench_peers.py" --budget-s 170 --impls eager,compile,liger --ops rms_fwd,addrms_fwd,ln_fwd --shapes 1x4096,8x4096,32x4096,128x4096,512x4096,1024x4096,4096x1024,2048x8192,32768x4096 --fp32-shapes 8x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" "$R/new1-x/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step sanitize
for tool in memcheck racecheck initcheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests pair_forward_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests fp8_twin_wide_matches_register > "$R/sanitize-wide-memcheck.log" 2>&1
echo "wide memcheck rc=$?"; tail -n 2 "$R/sanitize-wide-memcheck.log"
step end
