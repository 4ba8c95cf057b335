#!/usr/bin/env bash
# Session 2026-11-27 (7), call 7: 25d1336's build (the landed kernels; the bundle's
# normkit-bench-base) by environment around issue 16's 32768×4096 targets (per tensor 93.5% of the
# copy ceiling against 95%, per row 92% against 93%, with yT 81% against 85%): A default,
# B NORMKIT_CUDA_FP8_GRID=rows (a CTA per row group, not persistent), C NORMKIT_CUDA_FP8_WIDE=off,
# D NORMKIT_CUDA_FP8_WIDE=4, E NORMKIT_CUDA_PDL=0; A B C D E E D C B A.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 25d1336
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench-base.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
one() { local tag=$1; shift; env "$@" /tmp/nb run --backend cuda --ops $O --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
S=16384x4096,32768x4096,65536x4096
O=rms_fwd_fp8,rms_fwd_fp8_row,rms_fwd_fp8_t,addrms_fwd_fp8
for i in 1 2; do
  if [ $i = 1 ]; then order="a b c d e"; else order="e d c b a"; fi
  for v in $order; do
    case $v in
      a) one a$i X=1;; b) one b$i NORMKIT_CUDA_FP8_GRID=rows;; c) one c$i NORMKIT_CUDA_FP8_WIDE=off;;
      d) one d$i NORMKIT_CUDA_FP8_WIDE=4;; e) one e$i NORMKIT_CUDA_PDL=0;;
    esac
  done
done
for v in b c d e; do /tmp/nb ab --old "$R/a1,$R/a2" --new "$R/${v}1,$R/${v}2" --out "$R/summary-$v.md" | tail -n 1; done
echo "== end $(date +%T)"
