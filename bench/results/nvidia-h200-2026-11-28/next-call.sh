#!/usr/bin/env bash
# Written 2026-11-28 (fourth session) with no device time left; not yet run. The first H200 call
# of the next session, on main's build (no baseline needed: one build, by environment and ncu):
#  1. ncu (full set, base clocks) of the per-row FP8 twin (nk_fwd_regqdr_bf16_rms) against the
#     per-tensor twin (nk_fwd_regqd_bf16_rms) at 32768×4096: on the H200 per row is 138 µs (68% of
#     the ceiling) against 103 (92%), where on the H100 they were within 1.5% (NOTES v25);
#  2. ncu of the yT tile twin (nk_fwd_regqdt_bf16_rms) at 32768×4096 (70% on the H200);
#  3. N = 16384 and 32768×8192 forwards by environment: 8 chunks per thread for RMSNorm and
#     LayerNorm (NORMKIT_CUDA_FWD_TABLE=16384:256:1 NORMKIT_CUDA_FWD_K8=all; bf16 only, K8 is
#     compiled for bf16), persistent grids, in f16 too (call4: ln_fwd 16384×16384 −14%);
#  4. decode LayerNorm / add + RMSNorm at 1 and 8 rows of 4096 (1.52–1.57 µs; target 1.5) under
#     ncu's launch statistics;
#  0. first, the device test written after the session's device time was spent:
#     forward_batch_invariance_past_the_twin (the H200 twin rule's plain kernel against the twin).
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 120 /tmp/cuda-tests forward_batch_invariance_past_the_twin batch_invariance --test-threads=2 > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
step ncu
for op in rms_fwd_fp8 rms_fwd_fp8_row rms_fwd_fp8_t; do
  timeout 100 ncu --set full -k regex:nk_fwd --launch-skip 4 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes 32768x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op.log" 2>&1; echo "ncu $op rc=$?"
done
for op in ln_fwd addrms_fwd rms_fwd; do
  timeout 60 ncu --set full -k regex:nk_fwd --launch-skip 4 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes 8x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-8.log" 2>&1; echo "ncu $op 8 rc=$?"
done
step n16384
S=16384x16384,8192x16384,4096x16384,32768x8192,16384x8192
O=rms_fwd,ln_fwd,addrms_fwd
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $O --shapes $S --dtypes bf16,f16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
K8="NORMKIT_CUDA_FWD_TABLE=16384:256:1 NORMKIT_CUDA_FWD_K8=all"
K8B="NORMKIT_CUDA_FWD_TABLE=8192:128:1,16384:256:1 NORMKIT_CUDA_FWD_K8=all"
one D-a X=1; one K8-a $K8; one K8B-a $K8B; one PS-a NORMKIT_CUDA_FWD_GRID=persist
one PS-b NORMKIT_CUDA_FWD_GRID=persist; one K8B-b $K8B; one K8-b $K8; one D-b X=1
python3 "$HERE/pivot.py" "$R" D:D-a,D-b K8:K8-a,K8-b K8B:K8B-a,K8B-b PS:PS-a,PS-b > "$R/summary-n16384.md" 2>&1 || true
rm -f "$R"/*/report.html
step end
