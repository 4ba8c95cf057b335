#!/usr/bin/env bash
# ring call 1 (2026-11-29, eleventh session). Branch ring against main (51c14ec): the re-reading
# cluster forward's passes as rings (chunk k consumed, then chunk k + U fetched into its
# registers; the output ring's first chunks fetched before the exchange), and the 16-bit
# LayerNorm and residual builds of it back in the list (off by default: RereadOps::MEASURED).
# Old new new old on the rows it takes and controls; by environment (D A A D) the 16-bit LayerNorm
# and add + RMSNorm on it (NORMKIT_CUDA_CLUSTER_REREAD_OPS=all) against their split path; the
# suite; memcheck and racecheck on the re-reading test (now every 16-bit pair too).
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
step env
envb() { env $3 /tmp/normkit-bench run --backend cuda --ops ln_fwd,addrms_fwd --shapes 8x1048576,128x1048576,256x1048576 --dtypes bf16,f16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
envb envD1 x A=1; envb envA1 x NORMKIT_CUDA_CLUSTER_REREAD_OPS=all; envb envA2 x NORMKIT_CUDA_CLUSTER_REREAD_OPS=all; envb envD2 x A=1
/tmp/normkit-bench ab --old "$R/envD1,$R/envD2" --new "$R/envA1,$R/envA2" --out "$R/summary-all.md" | tail -n 1
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sanitizers
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-memcheck-reread.log" 2>&1; echo "memcheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-memcheck-reread.log" | head -1
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/sanitize-racecheck-reread.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 2 "$R/sanitize-racecheck-reread.log" | head -1
rm -f "$R"/*/report.html
step end
