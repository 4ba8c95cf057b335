#!/usr/bin/env bash
# chan call 5 (2026-11-29, twelfth session). Call 4's bundle (branch chan's third form against
# main, 38a5204) under ncu: LayerNorm's decode twin at 1x4096 bf16, where the third form is 0.13 us
# slower although its SASS is shorter: warp states and the source counters (the stalls by SASS
# line), main against the new form. Clocks as the benchmark runs them (--clock-control none).
# DIR (default gpu-run/): chan call 4's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
prof() { timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats -k regex:nk_fwd -c 5 -s 20 -o /tmp/ncu-$1 /tmp/$2 run --backend cuda --ops ln_fwd --shapes $3 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$1.log" 2>&1; echo "ncu $1 rc=$? $(date +%T)"
  ncu -i /tmp/ncu-$1.ncu-rep --page details >> "$R/ncu-$1.log" 2>&1
  ncu -i /tmp/ncu-$1.ncu-rep --page source --csv --print-source sass > "$R/src-$1.csv" 2>&1 || true
  grep -E "Duration|Executed Instructions |Warp Cycles Per Issued" "$R/ncu-$1.log" | head -6; }
step ncu
prof old-1 normkit-bench-base 1x4096; prof new-1 normkit-bench 1x4096
gzip -9 "$R"/src-*.csv
step end
