#!/usr/bin/env bash
# rr call 2 (2026-11-29, tenth session). Branch reread after call 1: 512-thread CTAs only, clusters
# of 8, the calls it takes as a rule (NORMKIT_CUDA_CLUSTER_REREAD_OPS; this build: all), and the
# next row's slice prefetched into L2 after pass 1 (NORMKIT_CUDA_CLUSTER_REREAD_PF, KB). By
# environment against the split path (NORMKIT_CUDA_CLUSTER_REREAD=0): default (8 CTAs, no
# prefetch), 64 and 256 KB of prefetch, clusters of 4; each twice in mirrored order. The new test
# and the cluster tests.
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
timeout 200 /tmp/cuda-tests cluster:: > "$R/test-cluster.log" 2>&1; echo "cluster tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/test-cluster.log" | head -5
step sweep
S=8x1048576,128x1048576,256x1048576
sw() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag-s" > "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 128x524288 --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops addrms_fwd,ln_fwd --shapes 512x300000,128x1048576 --dtypes f16 --no-candle --out "$R/$tag-g" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
sw off NORMKIT_CUDA_CLUSTER_REREAD=0; sw d X=1; sw p64 NORMKIT_CUDA_CLUSTER_REREAD_PF=64; sw p256 NORMKIT_CUDA_CLUSTER_REREAD_PF=256; sw c4 NORMKIT_CUDA_CLUSTER_REREAD=4
sw c42 NORMKIT_CUDA_CLUSTER_REREAD=4; sw p2562 NORMKIT_CUDA_CLUSTER_REREAD_PF=256; sw p642 NORMKIT_CUDA_CLUSTER_REREAD_PF=64; sw d2 X=1; sw off2 NORMKIT_CUDA_CLUSTER_REREAD=0
for v in d p64 p256 c4; do
  /tmp/normkit-bench ab --old "$R/off-s,$R/off2-s,$R/off-f,$R/off2-f,$R/off-g,$R/off2-g" --new "$R/$v-s,$R/${v}2-s,$R/$v-f,$R/${v}2-f,$R/$v-g,$R/${v}2-g" --out "$R/summary-$v.md" | tail -n 1
done
rm -f "$R"/*/report.html
step end
