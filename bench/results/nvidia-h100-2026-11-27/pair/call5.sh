#!/usr/bin/env bash
# Session 2026-11-27 (4), call 5: the build to land — the forward's twin in pairs for RMSNorm with
# the fused residual, the 16-bit register forwards' two-accumulator order with every rounding step
# explicit (add_chunk_rn / add_centred_rn: call 3's pair test found LayerNorm's centred sum
# contracted differently in the twin and the pair), the FP8 twin's two rows per CTA past 8 walks.
# Every CUDA test but soak; the pair test under memcheck and racecheck; A B B A against
# 49d94e1 on the forward grid; the pair swept (all / never / default) on the few-row shapes; the
# peers on the forward's decode and mid shapes, merged. DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 49d94e1
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step pairtest
timeout 60 /tmp/cuda-tests pair_forward_matches_register > "$R/pair.log" 2>&1; echo "pair rc=$?"; grep -E "mismatch|differs|test result" "$R/pair.log" | head -12
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
one() { local tag=$1 bin=$2 ops=$3 shapes=$4 dts=$5; shift 5; env "$@" /tmp/$bin run --backend cuda --ops $ops --shapes $shapes --dtypes $dts --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
F=rms_fwd,addrms_fwd,ln_fwd
step ab
G=1x4096,2x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,4096x4096,32768x4096,8x1024,128x1024,512x1024,1024x1024,4096x1024,128x512,1024x512,65536x512,128x2048,128x3000,2048x8192,32768x8192,16384x16384,2048x65536
for r in old1:normkit-bench-base new1:normkit-bench new2:normkit-bench old2:normkit-bench-base; do
  one ${r%%:*} ${r##*:} $F $G bf16 X=1; one ${r%%:*}-x ${r##*:} $F 8x4096,128x4096,32768x4096 f32,f16 X=1; done
/tmp/normkit-bench ab --old "$R/old1,$R/old2,$R/old1-x,$R/old2-x" --new "$R/new1,$R/new2,$R/new1-x,$R/new2-x" --out "$R/summary-ab.md" | tail -n 1
step sweep
S=1x4096,8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,512x4096,8x1024,128x1024,512x1024,1024x1024,128x3000
one off1 normkit-bench addrms_fwd $S bf16 NORMKIT_CUDA_FWD_PAIR=0; one def1 normkit-bench addrms_fwd $S bf16 X=1; one all1 normkit-bench addrms_fwd $S bf16 NORMKIT_CUDA_FWD_PAIR=all
one all2 normkit-bench addrms_fwd $S bf16 NORMKIT_CUDA_FWD_PAIR=all; one def2 normkit-bench addrms_fwd $S bf16 X=1; one off2 normkit-bench addrms_fwd $S bf16 NORMKIT_CUDA_FWD_PAIR=0
/tmp/normkit-bench ab --old "$R/off1,$R/off2" --new "$R/def1,$R/def2" --out "$R/summary-pair-default.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/off1,$R/off2" --new "$R/all1,$R/all2" --out "$R/summary-pair-all.md" | tail -n 1
step peers
PYTHONUNBUFFERED=1 timeout 100 python3 "$HERE/peers/bench_peers.py" --budget-s 80 --impls eager,compile,liger --ops rms_fwd,addrms_fwd,ln_fwd --shapes 1x4096,8x4096,32x4096,128x4096,512x4096,1024x4096,4096x1024,2048x8192,32768x4096 --fp32-shapes 8x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 2 "$R/peers.log"
/tmp/normkit-bench merge "$R/new1/results.json" "$R/new1-x/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R/merged/report.html"
step sanitize
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/cuda-tests pair_forward_matches_register --test-threads=1 > "$R/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; tail -n 2 "$R/sanitize-$tool.log"
done
step end
