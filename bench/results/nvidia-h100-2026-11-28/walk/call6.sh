#!/usr/bin/env bash
# Prepared 2026-11-28 for the next session (branch few-rows-next, not run): the finalize's tail
# loads from a clamped index (default on) and the twin on one CTA of several row groups
# (NORMKIT_CUDA_BWD_SMALL_GROUPS, off by default) against main (34a583c or later): the twin tests,
# every CUDA test but soak, memcheck and racecheck on the walking/grouped test; A B B A of the
# defaults (the finalize alone) on issue 15's grid and 2-16 rows plus the cluster backwards; the
# grouped twin by environment at 4-16 rows (A B C C B A).
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
for t in twin_backward_walks twin_backward_matches_general; do
  timeout 120 /tmp/cuda-tests $t --test-threads=1 > "$R/$t.log" 2>&1; echo "$t rc=$?"; grep -E "test result|FAIL|panicked" "$R/$t.log" | tail -4
done
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,2048x65536,512x262144,128x1048576
FEW=2x4096,4x4096,5x4096,6x4096,7x4096,12x4096,16x4096,24x4096,4x2048,6x1024,8x3000
B=rms_bwd,ln_bwd,addrms_bwd
bench() { /tmp/$2 run --backend cuda --ops $B --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $B --shapes $FEW --dtypes bf16 --no-candle --out "$R/$1-few" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1,$R/old2,$R/old1-few,$R/old2-few" --new "$R/new1,$R/new2,$R/new1-few,$R/new2-few" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step ncu
# Each kernel's own duration (ncu serialises launches: no PDL overlap) at 8-128 rows.
for op in rms_bwd ln_bwd; do for s in 8x4096 32x4096 128x4096; do
  timeout 60 ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__grid_size,launch__block_size -k regex:nk_ --launch-skip 8 --launch-count 4 /tmp/normkit-bench run --backend cuda --ops $op --shapes $s --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-$s.log" 2>&1; echo "ncu $op $s rc=$?"
  grep -E "^  nk_|duration|grid_size|block_size" "$R/ncu-$op-$s.log" | tail -8
done; done
# The 128-row forwards (add + RMSNorm 0.85x of torch.compile): the full set for one launch.
for op in addrms_fwd rms_fwd; do
  timeout 100 ncu --set full -k regex:nk_fwd --launch-skip 8 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes 128x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-128x4096.log" 2>&1; echo "ncu $op rc=$?"
  grep -E "^  nk_|Duration|Executed Instructions  |Registers Per|Warp Cycles Per Issued|Achieved Occupancy|Memory Throughput" "$R/ncu-$op-128x4096.log" | head -12
done
step groups
G=4x4096,5x4096,6x4096,8x4096,12x4096,16x4096,4x2048,8x2048,8x1024,16x1024
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $B --shapes $G --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
one gdef1 X=1; one g8a NORMKIT_CUDA_BWD_SMALL_GROUPS=4:8; one g16a NORMKIT_CUDA_BWD_SMALL_GROUPS=4:16
one g16b NORMKIT_CUDA_BWD_SMALL_GROUPS=4:16; one g8b NORMKIT_CUDA_BWD_SMALL_GROUPS=4:8; one gdef2 X=1
/tmp/normkit-bench ab --old "$R/gdef1,$R/gdef2" --new "$R/g16a,$R/g16b" --out "$R/summary-groups.md" | tail -n 1
step sanitize
for tool in memcheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests twin_backward_walks --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$R/sanitize-$tool.log" | tail -n 3
done
rm -f "$R"/*/report.html
step end
