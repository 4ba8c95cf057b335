#!/usr/bin/env bash
# rr call 3 (2026-11-29, tenth session). Branch reread after call 2 (the prefetch and clusters of 4 slower):
# the threads per CTA a knob (NORMKIT_CUDA_CLUSTER_REREAD=C,T, T 256 or 512: 256 puts two CTAs of
# different rows on an SM). By environment against the split path (NORMKIT_CUDA_CLUSTER_REREAD=0):
# 8 x 512 (default), 16 x 256, 8 x 256; each twice in mirrored order. The re-reading test first.
# DIR (default gpu-run/) from, on branch reread:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 39585e6
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 150 /tmp/cuda-tests cluster::reread_matches_cpu > "$R/test-reread.log" 2>&1; echo "reread test rc=$?"; grep -E "test result|FAIL|panicked" "$R/test-reread.log" | head -5
step sweep
S=8x1048576,128x1048576,256x1048576
sw() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag-s" > "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops addrms_fwd,ln_fwd --shapes 512x300000,128x1048576 --dtypes f16 --no-candle --out "$R/$tag-g" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
sw off NORMKIT_CUDA_CLUSTER_REREAD=0; sw d X=1; sw a NORMKIT_CUDA_CLUSTER_REREAD=16,256; sw b NORMKIT_CUDA_CLUSTER_REREAD=8,256
sw b2 NORMKIT_CUDA_CLUSTER_REREAD=8,256; sw a2 NORMKIT_CUDA_CLUSTER_REREAD=16,256; sw d2 X=1; sw off2 NORMKIT_CUDA_CLUSTER_REREAD=0
for v in d a b; do
  /tmp/normkit-bench ab --old "$R/off-s,$R/off2-s,$R/off-f,$R/off2-f,$R/off-g,$R/off2-g" --new "$R/$v-s,$R/${v}2-s,$R/$v-f,$R/${v}2-f,$R/$v-g,$R/${v}2-g" --out "$R/summary-$v.md" | tail -n 1
done
rm -f "$R"/*/report.html
step end
