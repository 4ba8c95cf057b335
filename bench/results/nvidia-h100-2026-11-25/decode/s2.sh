#!/usr/bin/env bash
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-112fa6f cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-tests}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has tests; then
  /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fi
if has sanitize; then
  for tool in memcheck racecheck initcheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests kernel_tour --test-threads=1 > "$R/sanitize-$tool.log" 2>&1; echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
  done
fi
D=1x4096,8x4096,128x4096
if has decode; then
  for t in old1:normkit-bench-112fa6f new1:normkit-bench new2:normkit-bench old2:normkit-bench-112fa6f; do
    tag=${t%%:*}; bin=${t##*:}
    /tmp/$bin run --backend cuda --shapes $D --dtypes bf16 --no-candle --out "$R/dec-$tag" > "$R/dec-$tag.log" 2>&1; echo "dec-$tag done"
  done
  for t in old1:normkit-bench-112fa6f new1:normkit-bench new2:normkit-bench old2:normkit-bench-112fa6f; do
    tag=${t%%:*}; bin=${t##*:}
    /tmp/$bin run --backend cuda --ops rms_bwd,ln_bwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/long-$tag" > "$R/long-$tag.log" 2>&1; echo "long-$tag done"
  done
fi
if has long; then
  for t in old1:normkit-bench-112fa6f new1:normkit-bench old2:normkit-bench-112fa6f; do
    tag=${t%%:*}; bin=${t##*:}
    ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -k regex:"nk_bwd" --launch-skip 20 --launch-count 6 /tmp/$bin run --backend cuda --ops rms_bwd --shapes 512x262144 --dtypes bf16 --no-candle --out /tmp/l-$tag > "$R/ncu-long-$tag.txt" 2>&1
  done
  NORMKIT_CUDA_BWD_SMALL=0 NORMKIT_CUDA_FWD_DECODE=0 /tmp/normkit-bench run --backend cuda --ops rms_bwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/long-knoboff" > /dev/null 2>&1
  /tmp/normkit-bench-112fa6f run --backend cuda --ops rms_bwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/long-old3" > /dev/null 2>&1
  echo long done
fi
if has prof; then
  for k in "rms_fwd:nk_fwd_regd" "rms_bwd:nk_bwd_sm"; do
    op=${k%%:*}; re=${k##*:}
    ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --section SchedulerStats -k regex:"$re" --launch-skip 30 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes 1x4096 --dtypes bf16 --no-candle --out /tmp/p-$op > "$R/prof-$op.txt" 2>&1
    ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats -k regex:"$re" --launch-skip 30 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops $op --shapes 8x4096 --dtypes bf16 --no-candle --out /tmp/p8-$op > "$R/prof8-$op.txt" 2>&1
  done
  nvcc -O3 -arch=sm_90a -o /tmp/decode "$HERE/micro/decode.cu" && ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -k regex:"rms" --launch-skip 100 --launch-count 30 /tmp/decode > "$R/ncu-micro.txt" 2>&1
  ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -k regex:"nk_" --launch-skip 40 --launch-count 10 /tmp/normkit-bench run --backend cuda --ops rms_fwd,rms_bwd --shapes 1x4096 --dtypes bf16 --no-candle --out /tmp/nb1 > "$R/ncu-nk.txt" 2>&1
  echo prof done
fi
if has ncu; then
  nvcc -O3 -arch=sm_90a -o /tmp/decode "$HERE/micro/decode.cu" && ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:"rms" --launch-skip 64 --launch-count 6 /tmp/decode > "$R/ncu-micro.txt" 2>&1
  ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:"nk_" --launch-skip 40 --launch-count 10 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes 1x4096 --dtypes bf16 --no-candle --out /tmp/nb1 > "$R/ncu-nk.txt" 2>&1
  ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"nk_" --launch-skip 40 --launch-count 10 /tmp/normkit-bench run --backend cuda --ops rms_bwd --shapes 1x4096,8x4096 --dtypes bf16 --no-candle --out /tmp/nb2 > "$R/ncu-nk-bwd.txt" 2>&1
  echo "ncu rc=$?"
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
