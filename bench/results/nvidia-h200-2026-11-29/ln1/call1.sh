#!/usr/bin/env bash
# ln1 call 1 (2026-11-29, twelfth session). An upper bound, not a kernel: branch exp-ln1 (a1d57e8)
# drops the register LayerNorm forward's second group reduction (the centred sums'; each thread
# keeps its own, so the values are wrong) to time what a one-reduction LayerNorm (per-thread
# (sum, M2) combined in one group reduction) could save at most. Old new new old against main
# (38a5204) on LayerNorm forward from decode to 32768x4096, RMSNorm controls.
# DIR (default gpu-run/) from, on branch exp-ln1:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline 38a5204
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
bench() { /tmp/$2 run --backend cuda --ops ln_fwd --shapes 1x4096,8x4096,128x4096,4096x1024,2048x8192,65536x512,32768x4096,32768x8192,16384x16384,1x16384,1024x16384,4096x2048 --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops ln_fwd --shapes 32768x4096,8x4096 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd --shapes 8x4096,32768x4096 --dtypes bf16 --no-candle --out "$R/$1-c" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
/tmp/normkit-bench ab --old "$R/old1-l,$R/old2-l,$R/old1-f,$R/old2-f,$R/old1-c,$R/old2-c" --new "$R/new1-l,$R/new2-l,$R/new1-f,$R/new2-f,$R/new1-c,$R/new2-c" --out "$R/summary-ab.md" | tail -n 1
grep -E "^faster|^slower" "$R/summary-ab.md" | cut -c1-900
step fp8
# The per-tensor FP8 cell of issue 16 (94% of the ceiling, 95% asked) by environment on main's build
# (normkit-bench-base), mirrored D G T P C C P T G D: G NORMKIT_CUDA_FP8_GRID=rows (a CTA per row
# group, not persistent), T NORMKIT_CUDA_FP8_TWIN=0 (the quantised register forward without its
# twin), P NORMKIT_CUDA_FP8_L2PF=2, C NORMKIT_CUDA_FP8_TWIN_CAP=off. Same bits in each.
f8() { env $2 /tmp/normkit-bench-base run --backend cuda --ops rms_fwd_fp8 --shapes 32768x4096,16384x4096,8192x8192,4096x1024 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
f8 D1 A=1; f8 Ga NORMKIT_CUDA_FP8_GRID=rows; f8 Ta NORMKIT_CUDA_FP8_TWIN=0; f8 Pa NORMKIT_CUDA_FP8_L2PF=2; f8 Ca NORMKIT_CUDA_FP8_TWIN_CAP=off
f8 Cb NORMKIT_CUDA_FP8_TWIN_CAP=off; f8 Pb NORMKIT_CUDA_FP8_L2PF=2; f8 Tb NORMKIT_CUDA_FP8_TWIN=0; f8 Gb NORMKIT_CUDA_FP8_GRID=rows; f8 D2 A=1
for v in G T P C; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}a,$R/${v}b" --out "$R/summary-fp8-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-fp8-$v.md" | cut -c1-500; done
grep -h "rms_fwd_fp8" "$R/D1/report.md" | head -8
rm -f "$R"/*/report.html
step end
