#!/usr/bin/env bash
# stream call 1 (2026-11-29, tenth session). Branch stream: the split forward (rows past every
# other path: N = 1M at 16 bits, 524288 in f32, non-Gemma casting or mixed dtypes at long rows)
# as one persistent launch that hands out each tile's statistics and, a lag later, its apply by
# an integer ticket (kernels-cuda/stream.cuh), against main (39585e6): the new test alone first
# (a hang would show there), the env sweep (stream off / on / lag S / lag 4000; the staged path
# off at 262144 so the stream runs there), old new new old, the suite, memcheck on the new test.
# DIR (default gpu-run/) from, on branch stream:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 39585e6
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step newtest
timeout 150 /tmp/cuda-tests split_stream_matches_split > "$R/test-stream.log" 2>&1; echo "stream test rc=$?"; grep -E "test result|FAIL|panicked" "$R/test-stream.log" | head
step sweep
S=8x1048576,128x1048576,256x524288
sw() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag-s" > "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1
  env "$@" NORMKIT_CUDA_CSTAGE=0 NORMKIT_CUDA_CLUSTER=0 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/$tag-g" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
sw off NORMKIT_CUDA_FWD_STREAM=0; sw on X=1; sw lag0 NORMKIT_CUDA_FWD_STREAM_LAG=0; sw lag4k NORMKIT_CUDA_FWD_STREAM_LAG=4000
sw lag4k2 NORMKIT_CUDA_FWD_STREAM_LAG=4000; sw lag02 NORMKIT_CUDA_FWD_STREAM_LAG=0; sw on2 X=1; sw off2 NORMKIT_CUDA_FWD_STREAM=0
for v in on lag0 lag4k; do
  /tmp/normkit-bench ab --old "$R/off-s,$R/off2-s,$R/off-f,$R/off2-f,$R/off-g,$R/off2-g" --new "$R/$v-s,$R/${v}2-s,$R/$v-f,$R/${v}2-f,$R/$v-g,$R/${v}2-g" --out "$R/summary-$v.md" | tail -n 1
done
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/staged" > "$R/staged.log" 2>&1
step ab
L=128x1048576,8x1048576,512x262144
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,rms_bwd --shapes 4096x4096,8x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -l -f -c; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
for tool in memcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/cuda-tests --exact split_stream_matches_split > "$R/sanitize-$tool-stream.log" 2>&1; echo "$tool rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-$tool-stream.log" | head -1
done
rm -f "$R"/*/report.html
step end
