#!/usr/bin/env bash
# rpc call 6 (2026-11-28, eighth session): branch rpc's landed form against main (d339f7a), old
# new new old — Tuning::fwd_rpc (16-bit RMSNorm at N in (1024, 2048] on 2 rows per CTA to 8192
# rows, with the residual to 512, LayerNorm from 8192; call 5) and the half-thread kernels for
# groups below a warp (`nk_fwd_regh_*_sw`) under tuning::HALF_SM90_HBM3E's new rules: bf16 RMSNorm
# at N in (256, 1024] and LayerNorm at N = 512 and 1024, from 4096 rows (call 5's sweep). The full
# CUDA suite, memcheck on the half-thread test (it forces the `_sw` builds at N = 512 and 1024),
# and eager / torch.compile / Liger 0.8.5 beside the new build.
# DIR (default gpu-run/) from, on branch rpc:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=1x1024,128x1024,2048x1024,4096x1024,16384x1024,65536x1024,128x512,2048x512,4096x512,16384x512,65536x512,8x2048,128x2048,2048x2048,4096x2048,8192x2048,32768x2048,1x4096,4096x4096,32768x4096,2048x8192,32768x8192,4096x6000
SF=4096x1024,65536x512,16384x1024
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SF --dtypes f16 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -b -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests pair_forward_matches_register > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step peers
P=4096x1024,16384x1024,65536x512,4096x2048,8192x2048,4096x4096,32768x8192
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/bench_peers.py" --budget-s 80 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
