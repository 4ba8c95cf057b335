#!/usr/bin/env bash
# Session 2026-11-28, call 1: the backward's twin walking R rows per CTA
# (NORMKIT_CUDA_BWD_SMALL_WALK; Tuning::bwd_small_walk, no entry by default = a CTA per row).
# Its device tests (bitwise against the register kernel on one CTA per SM; one CTA writing dW
# itself against the CPU backend) and memcheck on them; then one build, configurations by
# environment, A B C D E E D C B A: the default, the twin up to 1024 rows (BWD_SMALL=1024) walking
# 1, 2, 4 and 8 rows per CTA, on rms/ln/add+rms backward at 2-1024 rows of 4096, 8192 and 2048;
# the peers (eager, torch.compile) on the same shapes.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d5251db
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
for t in twin_backward_walks twin_backward_matches_general; do
  timeout 150 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked" "$R/$t.log" | tail -6
done
step sweep
SH=2x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,32x8192,128x8192,512x8192,16x2048,64x2048
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=NORMKIT_CUDA_BWD_SMALL=1024
one def1 X=1; one w1a $S NORMKIT_CUDA_BWD_SMALL_WALK=1; one w2a $S NORMKIT_CUDA_BWD_SMALL_WALK=2; one w4a $S NORMKIT_CUDA_BWD_SMALL_WALK=4; one w8a $S NORMKIT_CUDA_BWD_SMALL_WALK=8
one w8b $S NORMKIT_CUDA_BWD_SMALL_WALK=8; one w4b $S NORMKIT_CUDA_BWD_SMALL_WALK=4; one w2b $S NORMKIT_CUDA_BWD_SMALL_WALK=2; one w1b $S NORMKIT_CUDA_BWD_SMALL_WALK=1; one def2 X=1
for w in w1 w2 w4 w8; do /tmp/normkit-bench ab --old "$R/def1,$R/def2" --new "$R/${w}a,$R/${w}b" --out "$R/summary-$w.md" | tail -n 1; done
step sanitize
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda-tests twin_backward_walks --test-threads=1 > "$R/sanitize-memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-memcheck.log" | tail -n 3
step peers
PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/peers/bench_peers.py" --ops rms_bwd,ln_bwd --impls eager,compile --shapes $SH --fp32-shapes "" --budget-s 130 --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/def1/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/merged*/report.html "$R"/*/report.html
step end
