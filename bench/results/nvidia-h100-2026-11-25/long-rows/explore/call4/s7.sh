#!/usr/bin/env bash
# Session 2026-11-25c: staged forward v3 (per-stage empty mbarriers, 256x3 bound) against v2 (CTA barrier per stage); grid knob.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-cs2 cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-quick sweep}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has quick; then
  timeout 300 /tmp/cuda-tests staged kernel_tour_staged cluster_ > "$R/quick.log" 2>&1; echo "quick rc=$?"; grep -E "test result|FAIL|panicked" "$R/quick.log" | head -20
fi
LONG=${LONG:-2048x65536,256x131072,512x262144,1024x262144,128x1048576}
run() { # tag binary shapes [env...]
  local tag=$1 bin=$2 sh=$3; shift 3
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $sh --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1
  echo "$tag done $(date +%T)"
}
if has sweep; then
  M=NORMKIT_CUDA_CSTAGE_MIN_N=65536
  run off1 normkit-bench $LONG NORMKIT_CUDA_CSTAGE=0
  run v2a normkit-bench-cs2 $LONG $M
  run v3a normkit-bench $LONG $M
  run v3rows normkit-bench $LONG $M NORMKIT_CUDA_CSTAGE_GRID=rows
  run v3s32 normkit-bench $LONG $M NORMKIT_CUDA_CSTAGE_SLICE=32768
  run v3s96 normkit-bench $LONG $M NORMKIT_CUDA_CSTAGE_SLICE=98304
  run v3b normkit-bench $LONG $M
  run v2b normkit-bench-cs2 $LONG $M
  run off2 normkit-bench $LONG NORMKIT_CUDA_CSTAGE=0
fi
if has ncu; then
  ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats -k regex:"nk_fwd_cs" --launch-skip 20 --launch-count 1 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes 512x262144 --dtypes bf16 --no-candle --out /tmp/n1 > "$R/ncu-512x262144.txt" 2>&1
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
