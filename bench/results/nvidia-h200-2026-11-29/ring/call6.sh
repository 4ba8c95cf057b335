#!/usr/bin/env bash
# ring call 6 (2026-11-29, eleventh session). Call 5's grid left 10 of 65 cells behind a peer;
# the five forwards among them by environment on call 4's bundle (planner knobs that keep the
# bits), mirrored D P50 P25 W2 R2 R2 W2 P25 P50 D:
#   P50 / P25: an L2 prefetch rule for 16-bit LayerNorm at N = 16384 and for f32 RMSNorm (50 / 25 %
#              of a wave ahead; f32 LayerNorm's rule at the same distance), main's rules after it;
#   W2: the 8-chunk row at N = 16384 on 2 rows per CTA (NORMKIT_CUDA_FWD_K8W=16384:256:2);
#   R2: add + RMSNorm at N = 8192 on 2 rows per CTA (main's rules after it).
# DIR (default gpu-run/): call 4's bundle.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
L2M="rms:16:1:8192:16777216:50,ln:16:4096:4096:33554432:50,ln:16:8192:8192:33554432:50,ln:16:1:8192:16777216:50"
P50="NORMKIT_CUDA_FWD_L2PF=ln:16:16384:16384:16777216:50,rms:f32:1:max:16777216:50,$L2M,ln:f32:1:max:16777216:50"
P25="NORMKIT_CUDA_FWD_L2PF=ln:16:16384:16384:16777216:25,rms:f32:1:max:16777216:25,$L2M,ln:f32:1:max:16777216:25"
W2="NORMKIT_CUDA_FWD_K8W=16384:256:2"
R2="NORMKIT_CUDA_FWD_RPC=addrms:8192:8192:1:max:2,rms:1025:2048:1:8192:2,addrms:1025:2048:1:512:2,ln:1025:2048:8192:max:2"
run1() { env $2 /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes 16384x16384,4096x16384 --dtypes bf16 --no-candle --out "$R/$1-a" > "$R/$1.log" 2>&1
  env $2 /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes 32768x4096,8192x4096 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1
  env $2 /tmp/normkit-bench run --backend cuda --ops addrms_fwd --shapes 2048x8192,4096x8192,32768x8192 --dtypes bf16 --no-candle --out "$R/$1-r" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step sweep
run1 D1 A=1; run1 P50a "$P50"; run1 P25a "$P25"; run1 W2a "$W2"; run1 R2a "$R2"
run1 R2b "$R2"; run1 W2b "$W2"; run1 P25b "$P25"; run1 P50b "$P50"; run1 D2 A=1
for v in P50 P25 W2 R2; do O=""; N=""; for s in -a -f -r; do O="$O,$R/D1$s,$R/D2$s"; N="$N,$R/${v}a$s,$R/${v}b$s"; done
  /tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-400; done
rm -f "$R"/*/report.html
step end
