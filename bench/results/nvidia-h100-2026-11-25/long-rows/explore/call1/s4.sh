#!/usr/bin/env bash
# Session 2026-11-25c: the staged cluster forward (nk_fwd_cs_*): tests, sanitizers on its tour, and a sweep.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-00f8bec cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-tests sanitize sweep}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has quick; then
  timeout 300 /tmp/cuda-tests staged kernel_tour_staged cluster_ > "$R/quick.log" 2>&1; echo "quick rc=$?"; grep -E "test result|FAIL|panicked" "$R/quick.log" | head -20
fi
if has tests; then
  timeout 400 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fi
if has sanitize; then
  for tool in memcheck racecheck initcheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests kernel_tour_staged --test-threads=1 > "$R/sanitize-$tool.log" 2>&1; echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
  done
fi
LONG=2048x65536,256x131072,512x262144,128x1048576
run() { # tag binary shapes [env...]
  local tag=$1 bin=$2 sh=$3; shift 3
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $sh --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1
  echo "$tag done $(date +%T)"
}
if has sweep; then
  run off1 normkit-bench $LONG NORMKIT_CUDA_CSTAGE=0
  run on1 normkit-bench $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536
  for ct in 8,256 16,512 8,512 4,256; do run ct-$ct normkit-bench $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536 NORMKIT_CUDA_CSTAGE_CT=$ct; done
  run on2 normkit-bench $LONG NORMKIT_CUDA_CSTAGE_MIN_N=65536
  run off2 normkit-bench $LONG NORMKIT_CUDA_CSTAGE=0
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
