#!/usr/bin/env bash
# Session 2026-11-28, call 3 (call 2 ran the same script on a broken build, see call2/VOID.md): the backward's two-chunk twins load the next row while computing
# this one (SPF in bwd_reg_body: a second set of registers, the weight once), against d5251db.
# The twin tests and memcheck/racecheck on the walking test; A B B A of the default plans (a CTA
# per row: the change is idle there, the registers are not); then the new build's walks by
# environment (BWD_SMALL=1024, rows per CTA 1 2 4 8 16 32, A..F F..A) on the backward at 1-1024
# rows of 4096, 8192 and 2048.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d5251db
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
for t in twin_backward_walks twin_backward_matches_general; do
  timeout 150 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked" "$R/$t.log" | tail -6
done
SH=1x4096,2x4096,3x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,8x8192,32x8192,128x8192,512x8192,8x2048,64x2048,8x1024
one() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
step ab
one old1 normkit-bench-base X=1; one new1 normkit-bench X=1; one new2 normkit-bench X=1; one old2 normkit-bench-base X=1
/tmp/normkit-bench ab --old "$R/old1,$R/old2" --new "$R/new1,$R/new2" --out "$R/summary-ab.md" | tail -n 1
step sweep
S=NORMKIT_CUDA_BWD_SMALL=1024
for w in 2 4 8 16 32; do one w${w}a normkit-bench $S NORMKIT_CUDA_BWD_SMALL_WALK=$w; done
for w in 32 16 8 4 2; do one w${w}b normkit-bench $S NORMKIT_CUDA_BWD_SMALL_WALK=$w; done
one w1 normkit-bench $S NORMKIT_CUDA_BWD_SMALL_WALK=1
step sanitize
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests twin_backward_walks --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-$tool.log" | tail -n 3
done
rm -f "$R"/*/report.html
step end
