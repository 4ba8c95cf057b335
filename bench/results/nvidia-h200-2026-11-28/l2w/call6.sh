#!/usr/bin/env bash
# l2w call 6 (2026-11-28, seventh session): main's build (7769890, call 5's bundle) by environment —
# the L2 prefetch's distance at 25% and 75% of a wave against the rules' 50% (D P25 P75 P75 P25 D)
# on the cells still behind the peers and their neighbours, the half-thread LayerNorm's rule
# from 2^24 as well.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
rules() { echo "rms:16:1:8192:16777216:$1,ln:16:4096:4096:$2:$1,ln:16:8192:8192:$2:$1,ln:16:1:8192:16777216:$1,ln:f32:1:max:16777216:$1"; }
S=32768x8192,32768x4096,8192x4096,4096x4096,2048x8192,16384x1024,65536x512
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$tag-b" > "$R/$tag.log" 2>&1
  env "$@" /tmp/normkit-bench run --backend cuda --ops ln_fwd --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
one Da X=1; one P25a NORMKIT_CUDA_FWD_L2PF=$(rules 25 16777216); one P75a NORMKIT_CUDA_FWD_L2PF=$(rules 75 16777216)
one P75b NORMKIT_CUDA_FWD_L2PF=$(rules 75 16777216); one P25b NORMKIT_CUDA_FWD_L2PF=$(rules 25 16777216); one Db X=1
for p in P25 P75; do /tmp/normkit-bench ab --old "$R/Da-b,$R/Db-b,$R/Da-f,$R/Db-f" --new "$R/${p}a-b,$R/${p}b-b,$R/${p}a-f,$R/${p}b-f" --out "$R/summary-$p.md" | tail -n 1; grep -E "^(slower|faster)" "$R/summary-$p.md" | cut -c1-400; done
rm -f "$R"/*/report.html
