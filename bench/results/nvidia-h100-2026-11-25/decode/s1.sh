#!/usr/bin/env bash
# Session 2026-11-25b: tests + sanitizers of the decode paths, ABBA A/B against 112fa6f on issue 15's grid, knob A/Bs.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-112fa6f cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-tests sanitize ab knobs}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has tests; then
  /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fi
if has sanitize; then
  for tool in memcheck racecheck initcheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests kernel_tour --test-threads=1 > "$R/sanitize-$tool.log" 2>&1; echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
  done
fi
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { # tag binary [env...]
  local tag=$1 bin=$2; shift 2
  env "$@" /tmp/$bin run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1
  env "$@" /tmp/$bin run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$tag-f32" >> "$R/$tag.log" 2>&1
  echo "$tag done $(date +%T)"
}
if has ab; then
  bench old1 normkit-bench-112fa6f; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-112fa6f
fi
if has knobs; then
  D=1x4096,8x4096,128x4096
  for k in "NORMKIT_CUDA_PDL=0" "NORMKIT_CUDA_FWD_DECODE=0 NORMKIT_CUDA_BWD_SMALL=0" "X=1"; do
    tag=knob-$(echo $k | tr ' =' '__')
    env $k /tmp/normkit-bench run --backend cuda --shapes $D --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag done"
  done
  # The decode twin on every grid size (not only decode-sized ones), forward ops, against the default.
  for k in "NORMKIT_CUDA_FWD_DECODE=1000000" "X=1" "NORMKIT_CUDA_FWD_DECODE=1000000"; do
    tag=big-$(echo $k | tr ' =' '__')-$RANDOM
    env $k /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 4096x1024,2048x8192,32768x4096,65536x512 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag done"
  done
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
