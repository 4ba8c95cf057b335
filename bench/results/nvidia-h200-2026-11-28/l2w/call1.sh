#!/usr/bin/env bash
# l2w call 1 (2026-11-28, seventh session): branch l2w against main (03119d6) — the plain and
# half-thread register forwards prefetch into L2 the row P % of a wave further on
# (Tuning::fwd_l2_ahead, env NORMKIT_CUDA_FWD_L2PF, off by default in this build). The full CUDA
# suite with P = 100; then main, P = 0, 50, 100, 200, 200, 100, 50, 0, main on issue 15's forward
# cells that trail and their neighbours (bf16 and f32).
# DIR (default gpu-run/) from, on branch l2w:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
NORMKIT_CUDA_FWD_L2PF=100 timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sweep
SB=4096x1024,65536x512,16384x1024,2048x4096,8192x4096,32768x4096,4096x6000,16384x6000,2048x8192,4096x8192,32768x8192,1024x16384,4096x16384,16384x16384,1x4096,128x4096
SF=32768x4096,8192x4096,65536x512
bench() { local tag=$1 bin=$2; shift 2
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$tag-b" > "$R/$tag.log" 2>&1
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd --shapes $SF --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
bench basea normkit-bench-base X=1; bench p0a normkit-bench X=1; bench p50a normkit-bench NORMKIT_CUDA_FWD_L2PF=50
bench p100a normkit-bench NORMKIT_CUDA_FWD_L2PF=100; bench p200a normkit-bench NORMKIT_CUDA_FWD_L2PF=200
bench p200b normkit-bench NORMKIT_CUDA_FWD_L2PF=200; bench p100b normkit-bench NORMKIT_CUDA_FWD_L2PF=100
bench p50b normkit-bench NORMKIT_CUDA_FWD_L2PF=50; bench p0b normkit-bench X=1; bench baseb normkit-bench-base X=1
s() { local O="" N=""; for x in -b -f; do O="$O,$R/$1a$x,$R/$1b$x"; N="$N,$R/$2a$x,$R/$2b$x"; done; /tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/$3" | tail -n 1; grep -E "^slower" "$R/$3"; }
s base p0 summary-code.md; s p0 p50 summary-p50.md; s p0 p100 summary-p100.md; s p0 p200 summary-p200.md
rm -f "$R"/*/report.html
step end
