#!/usr/bin/env bash
# Session 2026-11-25c, final: tests, sanitizers, ABBA against 00f8bec, and normkit + peers on issue 15's grid in one call.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-00f8bec cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
STEPS="${*:-tests}"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has tests; then
  timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
fi
for tool in memcheck racecheck initcheck; do
  if has $tool; then
    timeout 280 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests kernel_tour --test-threads=1 > "$R/sanitize-$tool.log" 2>&1; echo "$tool rc=$?"; tail -n 3 "$R/sanitize-$tool.log"
  fi
done
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { # tag binary
  /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1
  echo "$1 done $(date +%T)"
}
if has ab; then
  bench old1 normkit-bench-00f8bec; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-00f8bec
fi
if has bench; then bench final normkit-bench; fi
if has peers; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
  PYTHONUNBUFFERED=1 timeout 500 python3 "$HERE/bench_peers.py" --budget-s 380 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes $SH --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
  echo "peers rc=$?"; tail -n 5 "$R/peers.log"
fi
cd "$OUT" && tar czf x.tgz r && rm -rf r
