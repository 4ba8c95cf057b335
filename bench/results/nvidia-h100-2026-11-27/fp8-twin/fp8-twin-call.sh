#!/usr/bin/env bash
# The quantised register forward's twin (nk_fwd_regqd_*, 2026-11-27, issue 16): tests (all CUDA
# tests but soak, then the twin-vs-plain FP8 test under memcheck, racecheck and initcheck), ABBA
# against d2e7320 (the plain nk_fwd_regq_* kernels) on the FP8 grid, at decode sizes and two more
# row-batch shapes, the FP8
# peers (torch.compile) in the same call. DIR (default gpu-run/) is made by
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline d2e7320
#   (cd DIR/bin && xz -T2 -6 normkit-bench normkit-bench-base cuda-tests)
# Run: bash bench/results/nvidia-h100-2026-11-27/fp8-twin/fp8-twin-call.sh gpu-run, carry gpu-run.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
for tool in memcheck racecheck initcheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step ab
OPS=rms_fwd_fp8,rms_fwd_fp8_t,addrms_fwd_fp8,rms_fwd_fp8_row
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $OPS --shapes 1x4096,8x4096,128x4096,1024x4096,8192x2048,65536x512 --dtypes bf16 --no-candle --out "$R/$1-dec" >> "$R/$1.log" 2>&1
  echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in "" -dec; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-fp8.md"
tail -n 3 "$R/summary-fp8.md"
step peers
PYTHONUNBUFFERED=1 timeout 200 python3 "$HERE/peers/fp8_peers.py" --budget-s 170 --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step end
