#!/usr/bin/env bash
# Session 2026-11-28 (4), pf call 1 — branch bound2 (two changes) against main (703310b):
#  * the quantised RMSNorm-with-residual twins (nk_fwd_regqd{|r}_{bf16,f16}_rms_res) at launch
#    bound (256, 2): 128 registers (was 158-168), two 256-thread CTAs per SM at N = 8192;
#  * the staged cluster forward's L2 prefetch of a later row's slice (NORMKIT_CUDA_CSTAGE_PF=S[:D],
#    off by default; the code is in the kernels either way).
# Steps: the staged tests with the prefetch on, the FP8 twin tests; A B B A (default: prefetch
# off) on the FP8 grid, the FP8 residual ops at 1-1024 rows and N = 8192, the long rows, issue
# 15's forward grid; the prefetch by environment on the long rows (off, 2:1, 4:1, 8:1, 32:1, 4:2,
# 8:2, then back); the staged path at N = 1048576 (slices of 128 KiB by NORMKIT_CUDA_CSTAGE_SLICE)
# with and without the prefetch, against the default (split) path.
# DIR (default gpu-run/) from
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 703310b
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step tests
NORMKIT_CUDA_CSTAGE_PF=4:1 timeout 90 /tmp/cuda-tests cluster::staged fp8_staged_matches_oracle --test-threads=2 > "$R/tests-pf.log" 2>&1
echo "tests-pf rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests-pf.log" | head -5
timeout 60 /tmp/cuda-tests fp8_twin_matches_register fp8_batch_invariance --test-threads=2 > "$R/tests-twin.log" 2>&1
echo "tests-twin rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests-twin.log" | head -5
step ab
Q8=1x8192,8x8192,128x8192,512x8192,1024x8192,2048x8192,4096x8192,8192x8192,8x4096,128x4096,512x4096,4096x4096,16384x4096,128x1024,1024x1024
QR=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,addrms_fwd_fp8_row
L=2048x65536,256x131072,512x262144,1024x262144,128x1048576
SH=1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384
bench() { /tmp/$2 run --backend cuda --fp8 --no-candle --out "$R/$1-g" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops $QR --shapes $Q8 --dtypes bf16,f16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8,addrms_fwd_fp8_row --shapes $L --dtypes bf16 --no-candle --out "$R/$1-l" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$1-i" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -g -q -l -i; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step pf
X=2048x65536,256x131072,512x262144,1024x262144
one() { local tag=$1 ops=$2 shapes=$3; shift 3; env "$@" /tmp/normkit-bench run --backend cuda --ops $ops --shapes $shapes --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
XO=rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8
for v in off 2:1 4:1 8:1 32:1 4:2 8:2; do one "pf-${v/:/_}-a" $XO $X NORMKIT_CUDA_CSTAGE_PF=${v/off/0}; done
for v in 8:2 4:2 32:1 8:1 4:1 2:1 off; do one "pf-${v/:/_}-b" $XO $X NORMKIT_CUDA_CSTAGE_PF=${v/off/0}; done
for v in 2_1 4_1 8_1 32_1 4_2 8_2; do /tmp/normkit-bench ab --old "$R/pf-off-a,$R/pf-off-b" --new "$R/pf-$v-a,$R/pf-$v-b" --out "$R/summary-pf-$v.md" | tail -n 1; done
python3 "$HERE/pivot.py" "$R" off:pf-off-a,pf-off-b 2:1:pf-2_1-a,pf-2_1-b 4:1:pf-4_1-a,pf-4_1-b 8:1:pf-8_1-a,pf-8_1-b 32:1:pf-32_1-a,pf-32_1-b 4:2:pf-4_2-a,pf-4_2-b 8:2:pf-8_2-a,pf-8_2-b > "$R/summary-pf.md" 2>&1 || true
step 1m
M=64x1048576,128x1048576,256x1048576
MO=rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8
S1=NORMKIT_CUDA_CSTAGE_SLICE=131072
for r in a b; do
  one m-def-$r $MO $M X=1; one m-st-$r $MO $M $S1; one m-stpf-$r $MO $M $S1 NORMKIT_CUDA_CSTAGE_PF=32:1; one m-stpf2-$r $MO $M $S1 NORMKIT_CUDA_CSTAGE_PF=4:1
done
for v in st stpf stpf2; do /tmp/normkit-bench ab --old "$R/m-def-a,$R/m-def-b" --new "$R/m-$v-a,$R/m-$v-b" --out "$R/summary-1m-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
step end
