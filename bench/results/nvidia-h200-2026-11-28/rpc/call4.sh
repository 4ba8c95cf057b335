#!/usr/bin/env bash
# rpc call 4 (2026-11-28, eighth session): branch rpc against main (d339f7a), old new new old —
# Tuning::fwd_rpc on HBM3e: 16-bit RMSNorm (with or without the residual) at N in (1024, 2048]
# on 2 rows per CTA instead of the table's 4 (the same groups: the same bits), LayerNorm from
# 8192 rows (wpre/call3). The full CUDA suite; eager / torch.compile / Liger 0.8.5 beside the new
# build. Then the new build by environment at N = 512 and 1024: the 8-chunk rows at N = 1024
# (NORMKIT_CUDA_FWD_K8W=1024:16:8 and 1024:16:16: other bits, a rule by N) and persistent grids,
# D K8 K16 PS PS K16 K8 D.
# DIR (default gpu-run/) from, on branch rpc:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -9e > all.tar.xz): one
#   solid archive (5 MB instead of 13: the carry's 64 MiB)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=1x2048,8x2048,128x2048,512x2048,1024x2048,2048x2048,4096x2048,8192x2048,16384x2048,32768x2048,65536x2048,4096x1024,16384x1024,65536x512,4096x4096,32768x4096
SF=4096x2048,8192x2048,32768x2048
bench() { /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$1-b" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SF --dtypes f16,f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -b -f; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step peers
P=4096x2048,8192x2048,32768x2048,16384x1024,65536x512
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/bench_peers.py" --budget-s 80 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step sweep
S=1x1024,128x1024,1024x1024,4096x1024,16384x1024,65536x1024,8192x512,16384x512,32768x512,65536x512
fb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
fb Da X=1; fb K8a NORMKIT_CUDA_FWD_K8W=1024:16:8; fb K16a NORMKIT_CUDA_FWD_K8W=1024:16:16; fb PSa NORMKIT_CUDA_FWD_GRID=persist
fb PSb NORMKIT_CUDA_FWD_GRID=persist; fb K16b NORMKIT_CUDA_FWD_K8W=1024:16:16; fb K8b NORMKIT_CUDA_FWD_K8W=1024:16:8; fb Db X=1
for v in K8 K16 PS; do /tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^slower" "$R/summary-$v.md"; done
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
