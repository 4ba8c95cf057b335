#!/usr/bin/env bash
# Session 2026-11-27 (7), call 6: the amax commit's fences acquire-release instead of
# sequentially consistent (nk_fence_acq_rel: MEMBAR.ALL.GPU for MEMBAR.SC.GPU in every FP8
# kernel that writes amax) against 25d1336: every CUDA test but soak (the FP8 tests refactored
# onto shared helpers included); A B B A on the FP8 grid and the per-tensor FP8 ops from 1 to 2048
# rows of 4096 and at 8 and 128 rows of 65536.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 25d1336
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
one() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --ops $O --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
fp8() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=1x4096,8x4096,32x4096,128x4096,512x4096,2048x4096,8x65536,128x65536
O=rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_t
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  fp8 q-${r%%:*} ${r##*:} X=1; one d-${r%%:*} ${r##*:} X=1; done
/tmp/normkit-bench ab --old "$R/q-old1,$R/q-old2" --new "$R/q-new1,$R/q-new2" --out "$R/summary-fp8.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/d-old1,$R/d-old2" --new "$R/d-new1,$R/d-new2" --out "$R/summary-decode.md" | tail -n 1
step end
