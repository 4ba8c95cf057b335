#!/usr/bin/env bash
# ring call 3 (2026-11-29, eleventh session). Branch ring at its second form against main
# (51c14ec): the re-reading cluster forward's pass 1 through a ring of shared-memory stages
# filled by bulk copies (ClusterTuning::reread_stages, default 6 × 32 KiB; the slots refilled
# with the cluster's next row as soon as read), the 16-bit LayerNorm and residual builds back in
# the list (off by default). Old new new old; by environment the ring's depth (0 = registers, 3,
# 7) and the 16-bit LayerNorm / residual calls on it (NORMKIT_CUDA_CLUSTER_REREAD_OPS=all)
# against their split path; the suite; memcheck and racecheck on the re-reading test.
# DIR (default gpu-run/) from, on branch ring:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 51c14ec
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
L=8x1048576,128x1048576,256x1048576
bench() { /tmp/$2 run --backend cuda --ops rms_fwd --shapes $L --dtypes bf16,f16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 128x524288,8x524288,16x1048576 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd,addrms_fwd,rms_fwd --shapes 128x1048576,512x262144,2048x65536 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_bwd --shapes 32768x4096,8x4096 --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -l -f -c -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step stages
sw() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes 8x1048576,128x1048576 --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd,addrms_fwd --shapes 8x524288,128x524288 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
sw swD1 A=1; sw swS0a NORMKIT_CUDA_CLUSTER_REREAD_STAGES=0; sw swS3a NORMKIT_CUDA_CLUSTER_REREAD_STAGES=3; sw swS7a NORMKIT_CUDA_CLUSTER_REREAD_STAGES=8
sw swS7b NORMKIT_CUDA_CLUSTER_REREAD_STAGES=8; sw swS3b NORMKIT_CUDA_CLUSTER_REREAD_STAGES=3; sw swS0b NORMKIT_CUDA_CLUSTER_REREAD_STAGES=0; sw swD2 A=1
for v in S0 S3 S7; do /tmp/normkit-bench ab --old "$R/swD1-l,$R/swD2-l,$R/swD1-f,$R/swD2-f" --new "$R/sw${v}a-l,$R/sw${v}b-l,$R/sw${v}a-f,$R/sw${v}b-f" --out "$R/summary-$v.md" | tail -n 1; done
step ops
envb() { env $2 /tmp/normkit-bench run --backend cuda --ops ln_fwd,addrms_fwd --shapes 8x1048576,128x1048576,256x1048576 --dtypes bf16,f16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
envb envD1 A=1; envb envA1 NORMKIT_CUDA_CLUSTER_REREAD_OPS=all; envb envA2 NORMKIT_CUDA_CLUSTER_REREAD_OPS=all; envb envD2 A=1
/tmp/normkit-bench ab --old "$R/envD1,$R/envD2" --new "$R/envA1,$R/envA2" --out "$R/summary-all.md" | tail -n 1
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
timeout 80 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-memcheck-reread.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-reread.log" | head -1
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-racecheck-reread.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-reread.log" | head -1
rm -f "$R"/*/report.html
step end
