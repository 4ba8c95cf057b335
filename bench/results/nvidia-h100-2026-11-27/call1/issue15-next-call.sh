#!/usr/bin/env bash
# Issue 15, the next device call (written 2026-11-27 in a session with no device time left;
# not yet run). Everything it needs travels in one carried folder, DIR (default gpu-run/), made by
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline a7c26f9
#   (cd DIR/bin && xz -T2 -6 normkit-bench normkit-bench-base cuda-tests)
#   (the bundle copies ../shared/peers/bench_peers.py into DIR/peers/); pip download liger-kernel==0.8.5
#   into DIR/wheels (the device README's recipe)
# so that DIR/bin holds this build's bench and test binaries and normkit-bench-base: a7c26f9's
# kernels and planner with this build's runner (the two sides time graphs of the same length and
# the same set policy).
# Run as `bash bench/plans/issue15-next-call.sh gpu-run` with `carry: ["gpu-run"]`; ~9 minutes on
# an H100. Results come back as $OUT/x.tgz (one file: the tool returns at most 8).
#
# What it settles (kernels-cuda/NOTES.md v12):
#  1. tests: the stop-24 kernels (twins, backward twin up to 128 rows) on this build, 38 device tests;
#  2. sweep: the forward table's N = 1024 row (group × rows per CTA) and the twin, at 2048..16384 rows
#     — the 4096×1024 forwards are at 66–72% of the copy ceiling, 0.77–0.85× the best peer;
#  3. ncu: the few-row backward's two kernels (twin + finalize) timed apart at 8 and 128 rows —
#     where the 3.75 / 7.18 µs go before a finalize-free design is chosen;
#  4. alone: rms_bwd / ln_bwd 512×262144, each build in a fresh process (ABBA), plus ncu of both
#     builds' kernels there — call 6 of 2026-11-25 read +6–8% for the backward-twin build with the
#     same kernels and plan, and its ln_bwd old run with 7-call graphs (423 µs) rules out the call
#     count as the cause;
#  5. ab: issue 15's grid, ABBA against a7c26f9 with the same runner (normkit-bench ab summarises);
#  6. peers on the decode and mid shapes in the same call (eager, torch.compile, Liger), merged with
#     the first new run into one report whose peers section scores normkit against the fastest peer.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
timeout 300 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step sweep
SW=2048x1024,4096x1024,8192x1024,16384x1024
sw() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SW --dtypes bf16 --no-candle --out "$R/sw-$1" > "$R/sw-$1.log" 2>&1; echo "sw-$1 rc=$?"; }
sw def X=1
for cfg in 128:1 128:2 64:1 64:2 32:2 32:8 32:1; do sw "t${cfg/:/-}" NORMKIT_CUDA_FWD_TABLE=1024:$cfg; done
sw notwin NORMKIT_CUDA_FWD_DECODE=0
sw t128-1-notwin NORMKIT_CUDA_FWD_TABLE=1024:128:1 NORMKIT_CUDA_FWD_DECODE=0
sw def2 X=1
step ncu
for s in 8x4096 128x4096; do for op in rms_bwd ln_bwd; do
  timeout 60 ncu --metrics gpu__time_duration.sum -k regex:nk_ --launch-count 12 /tmp/normkit-bench run --backend cuda --ops $op --shapes $s --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-$s.log" 2>&1; echo "ncu $op $s rc=$?"; done; done
step alone
for t in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  /tmp/${t#*:} run --backend cuda --ops rms_bwd,ln_bwd --shapes 512x262144 --dtypes bf16 --no-candle --out "$R/alone-${t%%:*}" > "$R/alone-${t%%:*}.log" 2>&1; echo "alone-${t%%:*} rc=$?"; done
for b in normkit-bench-base normkit-bench; do
  timeout 90 ncu --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed -k regex:nk_ --launch-count 6 /tmp/$b run --backend cuda --ops rms_bwd --shapes 512x262144 --dtypes bf16 --quick --no-candle --out /tmp/ncu-y > "$R/ncu-alone-$b.log" 2>&1; echo "ncu-alone $b rc=$?"; done
/tmp/normkit-bench ab --old "$R/alone-old1,$R/alone-old2" --new "$R/alone-new1,$R/alone-new2" --out "$R/summary-alone.md"
step ab
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,2048x65536,512x262144,128x1048576
bench() { /tmp/$2 run --backend cuda --shapes $SH --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$1-f32" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1,$R/old1-f32,$R/old2,$R/old2-f32" --new "$R/new1,$R/new1-f32,$R/new2,$R/new2-f32" --out "$R/summary-grid.md"
tail -n 3 "$R/summary-grid.md"
step peers
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nk-site "$HERE"/wheels/*.whl && export PYTHONPATH=/tmp/nk-site
PYTHONUNBUFFERED=1 timeout 200 python3 "$HERE/peers/bench_peers.py" --budget-s 150 --impls eager,compile,liger --ops rms_fwd,rms_bwd,addrms_fwd,ln_fwd,ln_bwd --shapes 1x4096,8x4096,128x4096,4096x1024 --fp32-shapes 8x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" "$R/new1-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
step end
cd "$OUT" && tar czf x.tgz r && rm -rf r
