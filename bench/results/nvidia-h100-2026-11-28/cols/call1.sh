#!/usr/bin/env bash
# Session 2026-11-28 (2), cols call 1: the backward's twin with column CTAs in its launch
# (nk_bwd_smc*, Tuning::bwd_small_cols, off by default; branch bwd-cols): its tests and the
# three sanitizers; the lanes' rows swept by environment on one build, A B C D E E D C B A (A: the
# default, no column CTAs); the peers (eager, torch.compile) on the backward's few-row shapes.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
for t in twin_backward_columns twin_backward_walks twin_backward_matches_general; do
  timeout 120 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked" "$R/$t.log" | tail -4
done
step sweep
FEW=1x4096,2x4096,3x4096,4x4096,6x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,8x1024,128x1024,8x2048,64x2048,8x3000,128x3000,32x8192,128x8192
B=rms_bwd,ln_bwd,addrms_bwd
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $B --shapes $FEW --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
C=NORMKIT_CUDA_BWD_SMALL_COLS=1:1024; W=NORMKIT_CUDA_BWD_SMALL_COLS_ROWS
one def1 X=1; one r4a $C $W=4; one r2a $C $W=2; one r1a $C $W=1; one r8a $C $W=8
one r8b $C $W=8; one r1b $C $W=1; one r2b $C $W=2; one r4b $C $W=4; one def2 X=1
/tmp/normkit-bench ab --old "$R/def1,$R/def2" --new "$R/r4a,$R/r4b" --out "$R/summary-r4.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/def1,$R/def2" --new "$R/r2a,$R/r2b" --out "$R/summary-r2.md" | tail -n 1
step sanitize
for tool in memcheck racecheck initcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests twin_backward_columns --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-$tool.log" | tail -n 3
done
step peers
PYTHONUNBUFFERED=1 timeout 130 python3 "$HERE/peers/bench_peers.py" --budget-s 110 --impls eager,compile --ops rms_bwd,ln_bwd --shapes 2x4096,3x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096 --fp32-shapes "" --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
rm -f "$R"/*/report.html
step end
