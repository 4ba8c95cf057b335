#!/usr/bin/env bash
# tpf call 2 (2026-11-28, ninth session). Branch tpf (23d9cc9-class build: the tiles' L2 distance
# knob of call 1, and cluster barriers that do not wait for global stores) against main
# (ecfae69), old new new old: call 1's ncu put 6% of the yT tile twin's stall samples on the
# ERRBAR of the release-form cluster arrive after a supertile's write-out (every thread waits for
# its yT stores to be acknowledged). Now the tiles' barrier before the write-out releases only
# the CTA's shared memory (fence.release.sync_restrict::shared::cta.cluster + a relaxed arrive)
# and the arrive after it is relaxed; the cluster kernels' per-row exchange (nk_fwd_cl*,
# nk_fwd_cs* without the push, nk_bwd_cl*) takes the same smem-only barrier. Cells: yT, the long
# rows (forward, FP8, backward), controls. The full CUDA suite; memcheck and racecheck on the
# tile test, the cluster test and the FP8 staged test.
# DIR (default gpu-run/) from, on branch tpf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T1 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
ST=8192x4096,16384x4096,32768x4096,65536x4096,16384x3072,32768x2048,8192x2048
L=2048x65536,256x131072,512x262144,1024x262144,128x1048576,8x65536
B=2048x65536,256x131072,512x262144,4096x16384,8x65536
C=32768x4096,16384x16384
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1-t" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8 --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes 2048x65536,512x262144 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_bwd,ln_bwd --shapes $B --dtypes bf16 --no-candle --out "$R/$1-b" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,rms_fwd_fp8 --shapes $C --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -t -l -f -b -c; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
for t in fp8_twin_tile_matches_separate fp8_staged_matches_oracle cluster::cluster_matches_cpu; do
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/cuda-tests --exact $t > "$R/sanitize-$tool-${t#*::}.log" 2>&1; echo "$tool $t rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-$tool-${t#*::}.log" | head -1
  done
done
rm -f "$R"/*/report.html
step end
