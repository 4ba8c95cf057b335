#!/usr/bin/env bash
# Session 2026-11-25d: decode diet + the twin rules (issue 15), final verification. Steps (args): tests memcheck racecheck initcheck decode mid ab bench peers.
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
TSH=4096x512,16384x512,65536x512,512x1024,1024x1024,2048x1024,4096x1024,8192x1024,16384x1024,1024x2048,4096x2048,8192x2048,256x4096,512x4096,1024x4096,2048x4096,4096x4096,512x8192,2048x8192
mid() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $TSH --dtypes bf16 --no-candle --out "$R/mid-$1" > "$R/mid-$1.log" 2>&1; echo "mid-$1 rc=$? $(date +%T)"; }
if has mid; then mid old1 $OLD; mid new1 normkit-bench; mid new2 normkit-bench; mid old2 $OLD; fi
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { # tag binary
  /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1
  echo "$1 done $(date +%T)"
}
if has ab; then bench old1 $OLD; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 $OLD; fi
if has bench; then bench final normkit-bench; fi
if has peers; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
  PYTHONUNBUFFERED=1 timeout 500 python3 "$HERE/bench_peers.py" --budget-s 380 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes $SH --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
  echo "peers rc=$?"; tail -n 5 "$R/peers.log"
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
