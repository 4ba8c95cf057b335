#!/usr/bin/env bash
# Call 18 (2026-11-28, sixth session): call 17's bundle (branch l2t against main 9e2e7ea) at
# N = 2048, where call 17 had rms_fwd_fp8_t 65536x2048 1.9% slower: main, l2t with the prefetch
# off (NORMKIT_CUDA_FP8_L2PF=0: the tile kernel's code without its prefetch), l2t as built, each
# twice (A O N N O A).
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
T=8192x2048,32768x2048,65536x2048,16384x4096,65536x4096
run1() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --ops rms_fwd_fp8_t --shapes $T --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
run1 A-a normkit-bench-base X=1; run1 O-a normkit-bench NORMKIT_CUDA_FP8_L2PF=0; run1 N-a normkit-bench X=1
run1 N-b normkit-bench X=1; run1 O-b normkit-bench NORMKIT_CUDA_FP8_L2PF=0; run1 A-b normkit-bench-base X=1
/tmp/normkit-bench ab --old "$R/A-a,$R/A-b" --new "$R/O-a,$R/O-b" --out "$R/summary-off.md" | tail -n 1
/tmp/normkit-bench ab --old "$R/A-a,$R/A-b" --new "$R/N-a,$R/N-b" --out "$R/summary-on.md" | tail -n 1
rm -f "$R"/*/report.html
