#!/usr/bin/env bash
# fp8w call 1 (2026-11-29, eleventh session). Issue 16's per-tensor target at 32768×4096 (95% of
# the copy ceiling; 93.8% in the tenth session): Fp8Tuning::wide_cta_walks (the per-tensor twin
# doubles its rows per CTA past 8 walks) was set on an H100 and never swept on the H200. By
# environment on main's kernels (ring/call4's bundle), mirrored D W4 W16 Woff Woff W16 W4 D
# (NORMKIT_CUDA_FP8_WIDE=4 / 16 / off; the same groups, so the same bits).
# DIR (default gpu-run/): ring/call4's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
run1() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8,addrms_fwd_fp8,rms_fwd_fp8_t --shapes 32768x4096,65536x4096,16384x4096,8192x8192,2048x8192,4096x1024 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step sweep
run1 D1 A=1; run1 W4a NORMKIT_CUDA_FP8_WIDE=4; run1 W16a NORMKIT_CUDA_FP8_WIDE=16; run1 Woffa NORMKIT_CUDA_FP8_WIDE=off
run1 Woffb NORMKIT_CUDA_FP8_WIDE=off; run1 W16b NORMKIT_CUDA_FP8_WIDE=16; run1 W4b NORMKIT_CUDA_FP8_WIDE=4; run1 D2 A=1
for v in W4 W16 Woff; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^slower" "$R/summary-$v.md" | cut -c1-300; done
rm -f "$R"/*/report.html
step end
