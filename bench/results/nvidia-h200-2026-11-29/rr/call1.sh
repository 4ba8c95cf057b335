#!/usr/bin/env bash
# rr call 1 (2026-11-29, tenth session). Branch reread: rows past the register and staged cluster
# kernels (N = 1M at 16 bits, 524288 in f32, 300000 with the residual) on the re-reading cluster
# forward (nk_fwd_clr*: one row per cluster of 16 CTAs, the slice streamed in pass 1 and read
# again from L2 for the output) instead of the split path (three kernels, x read twice from
# HBM), against main (39585e6): the new test and the cluster tests first, shapes by environment
# (16 × 512 default, 16 × 1024, 8 × 512, off), old new new old, the suite, memcheck and racecheck.
# DIR (default gpu-run/) from, on branch reread:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 39585e6
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step newtest
timeout 150 /tmp/cuda-tests cluster::reread_matches_cpu > "$R/test-reread.log" 2>&1; echo "reread test rc=$?"; grep -E "test result|FAIL|panicked" "$R/test-reread.log" | head -5
step sweep
S=8x1048576,128x1048576,256x1048576
sw() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag-s" > "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops addrms_fwd --shapes 512x300000 --dtypes bf16 --no-candle --out "$R/$tag-g" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
sw off NORMKIT_CUDA_CLUSTER_REREAD=0; sw d X=1; sw w NORMKIT_CUDA_CLUSTER_REREAD=16,1024; sw c8 NORMKIT_CUDA_CLUSTER_REREAD=8,512
sw c82 NORMKIT_CUDA_CLUSTER_REREAD=8,512; sw w2 NORMKIT_CUDA_CLUSTER_REREAD=16,1024; sw d2 X=1; sw off2 NORMKIT_CUDA_CLUSTER_REREAD=0
for v in d w c8; do
  /tmp/normkit-bench ab --old "$R/off-s,$R/off2-s,$R/off-f,$R/off2-f,$R/off-g,$R/off2-g" --new "$R/$v-s,$R/${v}2-s,$R/$v-f,$R/${v}2-f,$R/$v-g,$R/${v}2-g" --out "$R/summary-$v.md" | tail -n 1
done
step ab
L=128x1048576,8x1048576,512x262144,1024x262144
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,rms_bwd --shapes 4096x4096,8x4096,2048x65536 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -l -f -c; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-$tool-reread.log" 2>&1; echo "$tool rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-$tool-reread.log" | head -1
done
rm -f "$R"/*/report.html
step end
