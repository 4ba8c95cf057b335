#!/usr/bin/env bash
# Session 2026-11-25d: decode twins' instruction diet (issue 15). Steps (args): tests memcheck racecheck initcheck decode knob ab peers.
# OLD: the previous build's bench binary (bin/$OLD.xz). TOUR: the sanitizers' test filter.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
OLD="${OLD:-normkit-bench-28f12aa}"; TOUR="${TOUR:-kernel_tour}"
for b in normkit-bench $OLD cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-tests}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has tests; then
  timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fi
for tool in memcheck racecheck initcheck; do
  if has $tool; then
    timeout 280 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests $TOUR --test-threads=1 > "$R/sanitize-$tool.log" 2>&1; echo "$tool rc=$?"; tail -n 3 "$R/sanitize-$tool.log"
  fi
done
DSH=1x4096,2x4096,4x4096,8x4096,16x4096,32x4096,64x4096,128x4096,1x1024,8x2048,1x8192,32x8192
dec() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_bwd,ln_bwd,addrms_bwd --shapes $DSH --dtypes bf16,f16 --no-candle --out "$R/dec-$1" > "$R/dec-$1.log" 2>&1; echo "dec-$1 rc=$? $(date +%T)"; }
if has decode; then dec old1 $OLD; dec new1 normkit-bench; dec new2 normkit-bench; dec old2 $OLD; fi
if has knob; then # the decode twin on every register-forward grid (mid sizes)
  KSH=2048x1024,4096x1024,8192x1024,4096x2048,1024x4096,32768x4096
  for tag in tw0 tw1; do case $tag in tw1) E=NORMKIT_CUDA_FWD_DECODE=1000000;; *) E=X=1;; esac
    env $E /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $KSH --dtypes bf16 --no-candle --out "$R/knob-$tag" > "$R/knob-$tag.log" 2>&1; echo "knob-$tag rc=$?"; done
fi
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { # tag binary
  /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1
  echo "$1 done $(date +%T)"
}
if has ab; then bench old1 $OLD; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 $OLD; fi
if has peers; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
  PYTHONUNBUFFERED=1 timeout 500 python3 "$HERE/bench_peers.py" --budget-s 380 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes $SH --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
  echo "peers rc=$?"; tail -n 5 "$R/peers.log"
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
