#!/usr/bin/env bash
# Forward and backward table rows swept by environment on one build (2026-11-27): does a wider
# group at N = 4096 (and 8192, 2048) help every M, not only the few-row case where call "smc"
# saw addrms_fwd 128x4096 3.56 -> 2.56 us with NORMKIT_CUDA_FWD_TABLE=4096:256:1? A table row
# applies at every M (the forward is batch-invariant: the group sets the reduction order), so
# it can change only if no M loses. Each setting runs twice, interleaved (A B B A).
# DIR/bin/normkit-bench-base.xz is the build under test. Results: $OUT/x.tgz.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench-base.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
one() { local tag=$1 ops=$2 shapes=$3; shift 3; env "$@" /tmp/nb run --backend cuda --ops $ops --shapes $shapes --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
abba() { local name=$1 ops=$2 shapes=$3 env=$4
  one $name-def1 $ops $shapes X=1; one $name-new1 $ops $shapes $env; one $name-new2 $ops $shapes $env; one $name-def2 $ops $shapes X=1
  /tmp/nb ab --old "$R/$name-def1,$R/$name-def2" --new "$R/$name-new1,$R/$name-new2" --out "$R/summary-$name.md" | tail -n 1; }
F=rms_fwd,ln_fwd,addrms_fwd
abba f4096 $F,rms_fwd_fp8 1x4096,8x4096,32x4096,128x4096,512x4096,2048x4096,8192x4096,32768x4096 NORMKIT_CUDA_FWD_TABLE=4096:256:1
abba f8192 $F 1x8192,8x8192,128x8192,1024x8192,4096x8192,32768x8192 NORMKIT_CUDA_FWD_TABLE=8192:512:1
abba f2048a $F 8x2048,128x2048,1024x2048,16384x2048,65536x2048 NORMKIT_CUDA_FWD_TABLE=2048:128:1
abba f2048b $F 8x2048,128x2048,1024x2048,16384x2048,65536x2048 NORMKIT_CUDA_FWD_TABLE=2048:256:1
abba b4096 rms_bwd,ln_bwd,addrms_bwd 2x4096,8x4096,32x4096,128x4096,512x4096,4096x4096,32768x4096 NORMKIT_CUDA_BWD4_TABLE=4096:256:1
cd "$OUT" && tar czf x.tgz r && rm -rf r
