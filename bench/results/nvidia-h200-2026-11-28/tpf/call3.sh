#!/usr/bin/env bash
# tpf call 3 (2026-11-28, ninth session). Branch tpf's planner rule (LayerNorm at N = 2048 on
# half the threads for 2048-4096 rows) against the build before it (7582aad: call 2's barriers),
# old new new old. Then, new build: the yT tiles at large M by environment (separate transpose,
# 32-row tiles, one row per CTA: call 2 had 65536×4096 4% slower with the new barriers), D S M W
# W M S D; the FP8 grid beside torch.compile and eager (fp8_peers.py) and LayerNorm/RMSNorm at
# N = 2048 beside Liger and torch.compile (bench_peers.py), each in this call; ncu of the yT tile
# twin (stall samples per instruction after the barrier change); racecheck on the cluster test
# (call 2's did not finish in 100 s).
# DIR (default gpu-run/) from, on branch tpf:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 7582aad
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T1 -9e > all.tar.xz)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SL=1x2048,8x2048,128x2048,1024x2048,2047x2048,2048x2048,3000x2048,4096x2048,4097x2048,8192x2048,16384x2048,4096x1024,4096x4096
bench() { /tmp/$2 run --backend cuda --ops ln_fwd,rms_fwd --shapes $SL --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1,$R/old2" --new "$R/new1,$R/new2" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step tiles
ST=16384x4096,32768x4096,49152x4096,65536x4096,65536x2048
tb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
tb TDa X=1; tb TSa NORMKIT_CUDA_FP8_TWIN_TM=0; tb TMa NORMKIT_CUDA_FP8_TWIN_TM=32; tb TWa NORMKIT_CUDA_FP8_WIDE=off
tb TWb NORMKIT_CUDA_FP8_WIDE=off; tb TMb NORMKIT_CUDA_FP8_TWIN_TM=32; tb TSb NORMKIT_CUDA_FP8_TWIN_TM=0; tb TDb X=1
for v in TS TM TW; do /tmp/normkit-bench ab --old "$R/TDa,$R/TDb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
step fp8peers
/tmp/normkit-bench run --backend cuda --fp8 --no-candle --out "$R/grid8" > "$R/grid8.log" 2>&1; echo "grid8 rc=$?"
PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/peers/fp8_peers.py" --budget-s 75 --shapes 4096x1024,32768x4096,2048x8192,2048x65536,8x4096,128x4096 --impls eager,compile --no-check --out "$R/fp8peers" > "$R/fp8peers.log" 2>&1
echo "fp8peers rc=$?"; tail -n 1 "$R/fp8peers.log"
/tmp/normkit-bench merge "$R/grid8/results.json" --peers "$R/fp8peers/fp8_peers.json" --out "$R/merged-fp8" && grep "at or ahead" "$R/merged-fp8/report.md"
step peers
P=2048x2048,4096x2048,8192x2048,4096x4096,512x262144,2048x65536
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 70 python3 "$HERE/peers/bench_peers.py" --budget-s 55 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step ncu
op=rms_fwd_fp8_t
timeout 100 ncu --set full --import-source no -k regex:nk_fwd --launch-skip 4 --launch-count 1 -o /tmp/ncu-$op /tmp/normkit-bench run --backend cuda --ops $op --shapes 32768x4096 --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op.log" 2>&1; echo "ncu $op rc=$?"
ncu -i /tmp/ncu-$op.ncu-rep --page details >> "$R/ncu-$op.log" 2>&1
ncu -i /tmp/ncu-$op.ncu-rep --page source --csv --print-source sass > "$R/sass-$op.csv" 2>&1; echo "src $op rc=$? $(wc -c < "$R/sass-$op.csv")"
xz -9 "$R/sass-$op.csv"
step racecheck
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/cuda-tests --exact cluster::cluster_matches_cpu > "$R/sanitize-racecheck-cluster_matches_cpu.log" 2>&1; echo "racecheck rc=$? $(date +%T)"; tail -n 3 "$R/sanitize-racecheck-cluster_matches_cpu.log"
rm -f "$R"/*/report.html "$R"/merged*/report.html
step end
