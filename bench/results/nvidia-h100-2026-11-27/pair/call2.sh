#!/usr/bin/env bash
# Session 2026-11-27 (4), call 2: the forward's twin in pairs (nk_fwd_regp_*) and the two-accumulator
# order of the 16-bit/f32 register forwards. Tests (every CUDA test but soak; the pair test under
# memcheck, racecheck and initcheck); the wide-CTA FP8 stall of NOTES v14.3, case by case and side
# by side with a time limit; the pair's rows swept by environment on the new build (pair at every
# M against never, A B B A); the new build against 49d94e1 on the forward grid (A B B A).
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
timeout 220 /tmp/cuda-tests --skip soak:: --skip fp8_twin_wide_matches_register > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
for tool in memcheck racecheck initcheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests pair_forward_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step wide
for cs in 4:wide 4:plain 6:wide 7:wide 8:wide 9:wide; do
  NORMKIT_TEST_WIDE_CASES=${cs%%:*} NORMKIT_TEST_WIDE_SIDE=${cs##*:} timeout 25 /tmp/cuda-tests fp8_twin_wide_matches_register --nocapture > "$R/wide-${cs/:/-}.log" 2>&1
  echo "wide case ${cs} rc=$? $(grep -o 'in [0-9.]* s' "$R/wide-${cs/:/-}.log")"
done
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
F=rms_fwd,addrms_fwd,ln_fwd
step sweep
S=1x4096,2x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,2048x4096,8x1024,64x1024,128x1024,512x1024,1024x1024,4096x1024,8x2048,128x2048,512x2048,2048x2048,128x3000,8x512,128x512,1024x512
one off1 normkit-bench $F $S bf16 NORMKIT_CUDA_FWD_PAIR=0; one all1 normkit-bench $F $S bf16 NORMKIT_CUDA_FWD_PAIR=1:100000000
one all2 normkit-bench $F $S bf16 NORMKIT_CUDA_FWD_PAIR=1:100000000; one off2 normkit-bench $F $S bf16 NORMKIT_CUDA_FWD_PAIR=0
/tmp/normkit-bench ab --old "$R/off1,$R/off2" --new "$R/all1,$R/all2" --out "$R/summary-sweep.md" | tail -n 1
step ab
G=1x4096,8x4096,32x4096,128x4096,512x4096,1024x4096,4096x4096,32768x4096,4096x1024,65536x512,2048x8192,32768x8192,16384x16384,2048x65536
one old1 normkit-bench-base $F $G bf16 X=1; one new1 normkit-bench $F $G bf16 X=1; one new2 normkit-bench $F $G bf16 X=1; one old2 normkit-bench-base $F $G bf16 X=1
one old1-32 normkit-bench-base $F 8x4096,128x4096,32768x4096 f32,f16 X=1; one new1-32 normkit-bench $F 8x4096,128x4096,32768x4096 f32,f16 X=1
one new2-32 normkit-bench $F 8x4096,128x4096,32768x4096 f32,f16 X=1; one old2-32 normkit-bench-base $F 8x4096,128x4096,32768x4096 f32,f16 X=1
/tmp/normkit-bench ab --old "$R/old1,$R/old2,$R/old1-32,$R/old2-32" --new "$R/new1,$R/new2,$R/new1-32,$R/new2-32" --out "$R/summary-ab.md" | tail -n 1
step end
