#!/usr/bin/env bash
# Call 2 again at the small and middle M (1-2048 rows of 16384, LayerNorm only): the rows where
# the 8-chunk twin runs today. Otherwise as call 2, whose header follows.
# (call 2:) (2026-11-29, eleventh session). ln_fwd 16384×16384, the grid's widest gap (0.93×
# torch.compile in ring/call5): LayerNorm at N = 16384 on the half-thread kernel (the table's
# 512-thread rows on 256 threads of 8 chunks, the table's bits) instead of the 8-chunk row, by
# environment on main's kernels (ring/call4's bundle), mirrored D H HL HL H D:
#   H:  NORMKIT_CUDA_FWD_K8W=off and a half-thread rule for LayerNorm at N = 16384, every M
#       (main's rules after it); RMSNorm then takes the table's row (its figures here are not a
#       candidate);
#   HL: H with the half-thread LayerNorm's L2 prefetch (its `_l2` build), 50% of a wave ahead.
# DIR (default gpu-run/): ring/call4's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
HM="rms:4097:8192:512:max,rms:2049:4096:2048:max,ln:8192:8192:512:max,ln:4096:4096:2048:8192,rms:513:1024:4096:max,rms:257:512:8192:max,ln:512:512:8192:max,ln:1024:1024:4096:max,ln:2048:2048:2048:4096"
L2M="rms:16:1:8192:16777216:50,ln:16:4096:4096:33554432:50,ln:16:8192:8192:33554432:50,ln:16:1:8192:16777216:50,ln:f32:1:max:16777216:50"
H="NORMKIT_CUDA_FWD_K8W=off NORMKIT_CUDA_FWD_HALF=ln:16384:16384:1:max,$HM"
HL="$H NORMKIT_CUDA_FWD_L2PF=ln:16:16384:16384:16777216:50,$L2M"
run1() { env $2 /tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 1x16384,32x16384,64x16384,128x16384,256x16384,512x16384,2048x16384 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step sweep
run1 D1 A=1; run1 Ha "$H"; run1 HLa "$HL"; run1 HLb "$HL"; run1 Hb "$H"; run1 D2 A=1
for v in H HL; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
grep "ln_fwd" "$R"/summary-H*.md | cut -c1-200
rm -f "$R"/*/report.html
step end
