#!/usr/bin/env bash
# Session 2026-11-28 (5), rowq call 9 — branch k8ln against main (3e24c40), old new new old:
#  * Tuning::fwd_k8_wide_ln on HBM3e: bf16 LayerNorm without the residual at N in (4096, 8192]
#    on 128 threads of 8 chunks (call 6 by environment: ln_fwd 32768×8192 −6%), with the K8 twin
#    for a few rows.
# Steps: every CUDA test but soak (a new batch-invariance case: LayerNorm 9000×8192); A B B A on
# LayerNorm's M range at N = 8192 and issue 15's forward grid; then, on the new build by
# environment (one run each, D first and last): N = 512 and 8192 table rows for the cells still
# behind on the H200 (65536×512, 2048×8192); issue 15's peers at those shapes in the same call.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 3e24c40
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 170 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step ab
L8=1x8192,8x8192,32x8192,128x8192,512x8192,1024x8192,2048x8192,4096x8192,8192x8192,16384x8192,32768x8192,64x6000,4096x6000
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
bench() { /tmp/$2 run --backend cuda --ops ln_fwd --shapes $L8 --dtypes bf16,f16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -l -i; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step sweep
S=65536x512,131072x512,2048x8192,4096x8192,512x8192
one() { local tag=$1; shift; env "$@" timeout 40 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
one D-a X=1; one T512a NORMKIT_CUDA_FWD_TABLE=512:32:4; one T512b NORMKIT_CUDA_FWD_TABLE=512:16:16; one T512c NORMKIT_CUDA_FWD_TABLE=512:64:2
one K8W8192 NORMKIT_CUDA_FWD_K8W=8192:128:1; one T8192 NORMKIT_CUDA_FWD_TABLE=8192:512:1; one D-b X=1
python3 "$HERE/pivot.py" "$R" D:D-a,D-b T512a:T512a T512b:T512b T512c:T512c K8W8192:K8W8192 T8192:T8192 > "$R/summary-sweep.md" 2>&1 || true
step peers
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 120 python3 "$HERE/peers/bench_peers.py" --budget-s 100 --impls eager,compile,liger --ops rms_fwd,ln_fwd,addrms_fwd --shapes 32768x8192,2048x8192,65536x512,8x8192 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1-i/results.json" "$R/new1-l/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
