#!/usr/bin/env bash
# ring call 2 (2026-11-29, eleventh session). Main's kernels (51c14ec, the bundle's
# normkit-bench-base): where do the long-row forwards stop? ncu's speed-of-light, memory workload
# and occupancy sections at the benchmark's clocks (--clock-control none) for the re-reading
# cluster forward (rms_fwd 128×1M), the staged forward (rms_fwd, ln_fwd 512×262144), the split
# path (ln_fwd 128×1M) and the register forward that reaches ~97% of the copy ceiling (rms_fwd
# 32768×4096) as the reference.
# DIR (default gpu-run/): call 1's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
prof() { # name op shape dtype kernels
  timeout 100 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats -k regex:nk_ --launch-skip 6 --launch-count $5 -o /tmp/ncu-$1 /tmp/normkit-bench-base run --backend cuda --ops $2 --shapes $3 --dtypes $4 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$1.log" 2>&1; echo "ncu $1 rc=$? $(date +%T)"
  ncu -i /tmp/ncu-$1.ncu-rep --page details >> "$R/ncu-$1.log" 2>&1
  grep -E "^  nk_|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Duration|L2 Hit Rate|Mem Busy|Max Bandwidth|Achieved Occupancy|Memory Throughput" "$R/ncu-$1.log" | head -40
}
step ncu
prof reread-rms-1M rms_fwd 128x1048576 bf16 1
prof staged-rms-262144 rms_fwd 512x262144 bf16 1
prof staged-ln-262144 ln_fwd 512x262144 bf16 1
prof split-ln-1M ln_fwd 128x1048576 bf16 3
prof reg-rms-4096 rms_fwd 32768x4096 bf16 1
step end
