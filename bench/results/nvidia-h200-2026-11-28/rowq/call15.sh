#!/usr/bin/env bash
# Call 15 (2026-11-28, sixth session): branch l2pf against main (348a0d6) — the quantised twin's
# L2 prefetch of a later row (Fp8Tuning::twin_l2_ahead, env NORMKIT_CUDA_FP8_L2PF, off by default
# in this build): main, K = 1, K = 2, off, off, K = 2, K = 1, main on the FP8 grid and the per-row
# cells; the FP8 tests with K = 1. Then LayerNorm at N = 16384 on the half-thread kernel (the
# 4-chunk table's bits) by environment, against today's 8-chunk row.
# DIR (default gpu-run/) from, on branch l2pf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
NORMKIT_CUDA_FP8_L2PF=1 timeout 150 /tmp/cuda-tests fp8 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
Q8=1x8192,8x8192,128x8192,2048x8192,8192x8192,8x4096,128x4096,4096x4096,16384x4096,32768x4096,128x1024,4096x1024
bench() { local tag=$1 bin=$2; shift 2
  env "$@" /tmp/$bin run --backend cuda --fp8 --no-candle --out "$R/$tag-g" > "$R/$tag.log" 2>&1
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $Q8 --dtypes bf16 --no-candle --out "$R/$tag-q" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
bench base1 normkit-bench-base X=1; bench pf1a normkit-bench NORMKIT_CUDA_FP8_L2PF=1; bench pf2a normkit-bench NORMKIT_CUDA_FP8_L2PF=2
bench off1 normkit-bench X=1; bench off2 normkit-bench X=1
bench pf2b normkit-bench NORMKIT_CUDA_FP8_L2PF=2; bench pf1b normkit-bench NORMKIT_CUDA_FP8_L2PF=1; bench base2 normkit-bench-base X=1
s() { local O="" N=""; for x in -g -q; do O="$O,$R/$1a$x,$R/$1b$x"; N="$N,$R/$2a$x,$R/$2b$x"; done; /tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/$3" | tail -n 1; grep -E "^slower" "$R/$3"; }
mv_pair() { for x in -g -q; do cp -r "$R/${1}1$x" "$R/${1}a$x"; cp -r "$R/${1}2$x" "$R/${1}b$x"; done; }
mv_pair base; mv_pair off
s base off summary-off.md; s base pf1 summary-pf1.md; s base pf2 summary-pf2.md
step ln16k
L=256x16384,1024x16384,4096x16384,16384x16384
two() { local tag=$1; shift; env "$@" timeout 60 /tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes $L --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
two D-a X=1; two H-a NORMKIT_CUDA_FWD_K8W=off NORMKIT_CUDA_FWD_HALF=ln:16384:16384:1:max; two H-b NORMKIT_CUDA_FWD_K8W=off NORMKIT_CUDA_FWD_HALF=ln:16384:16384:1:max; two D-b X=1
/tmp/normkit-bench ab --old "$R/D-a,$R/D-b" --new "$R/H-a,$R/H-b" --out "$R/summary-ln16k.md" | tail -n 1
rm -f "$R"/*/report.html; rm -rf "$R"/base1-* "$R"/base2-* "$R"/off1-* "$R"/off2-*
step end
