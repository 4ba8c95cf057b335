#!/usr/bin/env bash
# Session 2026-11-28 (3), xchg call 3 (branch park): the staged cluster forward's DSMEM push for
# LayerNorm and 16-bit RMSNorm alone too, which keep the cluster barrier on main (2657680) —
# PARK: warp 0 alone waits on the exchange's transaction barrier, the other warps at a CTA
# barrier after it (call 1's push with every thread waiting was 3–18% slower there) — against
# main: the staged tests; A B B A on the long rows (bf16 and f32 forwards, the FP8 ops) and the
# FP8 grid; memcheck and racecheck on the FP8 staged test, racecheck on the bf16 one (longer
# limit than call 2's 100 s).
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 2657680
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 100 /tmp/cuda-tests staged fp8_batch_invariance --test-threads=2 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -10
step ab
L=8x65536,128x65536,2048x65536,4096x40960,256x131072,512x262144,1024x262144
Q=8x65536,128x65536,2048x65536,4096x40960,512x262144
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row --shapes $Q --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes 256x131072,512x262144 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do /tmp/${r##*:} run --backend cuda --fp8 --no-candle --out "$R/${r%%:*}-g" > "$R/${r%%:*}-g.log" 2>&1; echo "${r%%:*}-g rc=$?"; done
O=""; N=""; for s in -l -q -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-long.md" | tail -n 1
grep -E "^slower" "$R/summary-long.md"
/tmp/normkit-bench ab --old "$R/old1-g,$R/old2-g" --new "$R/new1-g,$R/new2-g" --out "$R/summary-fp8.md" | tail -n 1; grep -E "^slower" "$R/summary-fp8.md"
rm -f "$R"/*/report.html
step sanitize
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_staged_matches_oracle --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "case|ERROR SUMMARY|test result" "$R/sanitize-$tool.log" | tail -n 3
done
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/cuda-tests cluster::staged_matches_cpu --test-threads=1 > "$R/sanitize-racecheck-bf16.log" 2>&1
echo "racecheck bf16 rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-racecheck-bf16.log" | tail -n 2
step end
