#!/usr/bin/env bash
# Session 2026-11-27 (6), call 3 (6f246bb, the landed per-row twin, and its fixed twin test):
# the twin test under memcheck and racecheck; by environment on that build, per-row scaling with
# two rows per 256-thread CTA (N = 4096 and 1024) and the plain kernel at N = 8192, each twice
# against the default; ncu (full set) of the per-row twin and the bf16 forward at 8 and 128 rows
# of 4096 (the decode gap: per row 3.35 µs against torch.compile's 2.85 at 128 rows).
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline fb71481
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step twin-test
timeout 60 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/twin.log" 2>&1; echo "twin rc=$?"; grep -E "test result|FAIL|panicked" "$R/twin.log" | head -5
for tool in memcheck racecheck; do
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests fp8_twin_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step env
one() { local tag=$1 ops=$2 shapes=$3; shift 3; env "$@" /tmp/normkit-bench run --backend cuda --ops $ops --shapes $shapes --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
OPS=rms_fwd_fp8_row,addrms_fwd_fp8_row
W=32768x4096,65536x4096,16384x4096,8192x4096,4096x4096,32768x1024,65536x1024
for r in d1:X=1 w1:NORMKIT_CUDA_FWD_TABLE=4096:128:2,1024:32:8 w2:NORMKIT_CUDA_FWD_TABLE=4096:128:2,1024:32:8 d2:X=1; do
  one w-${r%%:*} $OPS $W ${r#*:}; done
/tmp/normkit-bench ab --old "$R/w-d1,$R/w-d2" --new "$R/w-w1,$R/w-w2" --out "$R/summary-wide.md" | tail -n 1
E=2048x8192,4096x8192,8192x8192
for r in d1:X=1 p1:NORMKIT_CUDA_FP8_TWIN=0 p2:NORMKIT_CUDA_FP8_TWIN=0 d2:X=1; do
  one n-${r%%:*} $OPS $E ${r#*:}; done
/tmp/normkit-bench ab --old "$R/n-d1,$R/n-d2" --new "$R/n-p1,$R/n-p2" --out "$R/summary-n8192.md" | tail -n 1
step ncu
for c in rms_fwd_fp8_row:128x4096 rms_fwd:128x4096 rms_fwd_fp8_row:8x4096 rms_fwd:8x4096; do
  op=${c%%:*}; s=${c#*:}
  timeout 100 ncu --set full -k regex:nk_fwd --launch-skip 4 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes $s --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-$s.log" 2>&1; echo "ncu $op $s rc=$?"
done
step end
