#!/usr/bin/env bash
# Session 2026-11-25c: the staged cluster forward with the fused pass 1: quick tests, a sweep of slice size / threads.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-quick sweep}"
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
  run off1 $LONG NORMKIT_CUDA_CSTAGE=0
  run s64 $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536
  run s32 $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536 NORMKIT_CUDA_CSTAGE_SLICE=32768
  run s128 $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536 NORMKIT_CUDA_CSTAGE_SLICE=131072
  run s96 $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536 NORMKIT_CUDA_CSTAGE_SLICE=98304
  for ct in 16,512 8,512 16,256 8,256 4,256 4,512; do run ct-$ct $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536 NORMKIT_CUDA_CSTAGE_CT=$ct; done
  run s64b $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536
  run off2 $LONG NORMKIT_CUDA_CSTAGE=0
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
