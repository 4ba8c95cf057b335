#!/usr/bin/env bash
# Session 2026-11-25c: 28f12aa (unreachable FP8 row kernels removed): every CUDA test, and the FP8 grid ABBA against fdb9604.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-fdb9604 cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fp8() { /tmp/$2 run --backend cuda --fp8 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
fp8 old1 normkit-bench-fdb9604; fp8 new1 normkit-bench; fp8 new2 normkit-bench; fp8 old2 normkit-bench-fdb9604
cd "$OUT" && tar czf x.tgz r && rm -rf r
