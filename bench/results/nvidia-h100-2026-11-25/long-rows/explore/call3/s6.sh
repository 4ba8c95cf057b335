#!/usr/bin/env bash
# Session 2026-11-25c: staged cluster forward with a runtime lag: quick tests, sweep of lag / slice, ncu of one kernel.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-quick sweep ncu}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has quick; then
  timeout 300 /tmp/cuda-tests staged kernel_tour_staged cluster_ > "$R/quick.log" 2>&1; echo "quick rc=$?"; grep -E "test result|FAIL|panicked" "$R/quick.log" | head -20
fi
LONG=${LONG:-2048x65536,256x131072,512x262144,128x1048576}
run() { # tag shapes [env...]
  local tag=$1 sh=$2; shift 2
  env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $sh --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1
  echo "$tag done $(date +%T)"
}
if has sweep; then
  M=NORMKIT_CUDA_CSTAGE_MIN_N=65536
  run off1 $LONG NORMKIT_CUDA_CSTAGE=0
  run def1 $LONG $M
  for l in 1 2 3 6 100; do run lag$l $LONG $M NORMKIT_CUDA_CSTAGE_LAG=$l; done
  run s48 $LONG $M NORMKIT_CUDA_CSTAGE_SLICE=49152
  run s32 $LONG $M NORMKIT_CUDA_CSTAGE_SLICE=32768
  run s32l3 $LONG $M NORMKIT_CUDA_CSTAGE_SLICE=32768 NORMKIT_CUDA_CSTAGE_LAG=3
  run ct16-512 $LONG $M NORMKIT_CUDA_CSTAGE_CT=16,512
  run ct8-512 $LONG $M NORMKIT_CUDA_CSTAGE_CT=8,512
  run def2 $LONG $M
  run off2 $LONG NORMKIT_CUDA_CSTAGE=0
fi
if has ncu; then
  for sh in 512x262144 128x1048576; do
    ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats -k regex:"nk_fwd_cs" --launch-skip 20 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes $sh --dtypes bf16 --no-candle --out /tmp/n-$sh > "$R/ncu-$sh.txt" 2>&1
    echo "ncu $sh rc=$?"
  done
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
