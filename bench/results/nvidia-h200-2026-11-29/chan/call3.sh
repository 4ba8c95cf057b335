#!/usr/bin/env bash
# chan call 3 (2026-11-29, twelfth session). Call 2's bundle under ncu: LayerNorm forward's twin at
# 1x4096 and 8x4096 bf16 and the half-thread kernel at 16384x16384, main (normkit-bench-base)
# against branch chan's second form (normkit-bench): duration, warp states (where the one-barrier
# form loses), instructions. Clocks as the benchmark runs them (--clock-control none).
# DIR (default gpu-run/): chan call 2's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
prof() { timeout 100 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy -k regex:nk_fwd -c 3 -s 20 -o /tmp/ncu-$1 /tmp/$2 run --backend cuda --ops ln_fwd --shapes $3 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$1.log" 2>&1; echo "ncu $1 rc=$? $(date +%T)"
  ncu -i /tmp/ncu-$1.ncu-rep --page details >> "$R/ncu-$1.log" 2>&1
  grep -E "^  nk_|Duration|Executed Instructions |Warp Cycles Per Issued|Avg. Active Threads|Stall|Registers Per|Achieved Occupancy" "$R/ncu-$1.log" | head -24; }
step ncu
prof old-1 normkit-bench-base 1x4096; prof new-1 normkit-bench 1x4096
prof old-8 normkit-bench-base 8x4096; prof new-8 normkit-bench 8x4096
prof old-16k normkit-bench-base 16384x16384; prof new-16k normkit-bench 16384x16384
step end
