#!/usr/bin/env bash
# ln4k call 1 (2026-11-28, ninth session): main's planner (wide/call2's new build = cf65b79) by
# environment at LayerNorm N = 4096 (issue 15's 4096×4096 cell, 0.98× Liger in tpf/call3): the L2
# prefetch rule for the half-thread LayerNorm at N = 4096 from 2^23 elements instead of 2^25 (L1);
# no half-thread rule at LayerNorm N = 4096 (H0), and that with the plain kernel's L2 rule (H0L,
# the default list: the plain kernels from 2^24). D L1 H0 H0L H0L H0 L1 D.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
S=2048x4096,3000x4096,4096x4096,6000x4096,8192x4096,16384x4096
L1=NORMKIT_CUDA_FWD_L2PF=rms:16:1:8192:16777216:50,ln:16:4096:4096:8388608:50,ln:16:8192:8192:33554432:50,ln:16:1:8192:16777216:50,ln:f32:1:max:16777216:50
H0=NORMKIT_CUDA_FWD_HALF=rms:4097:8192:512:max,rms:2049:4096:2048:max,ln:8192:8192:512:max,rms:513:1024:4096:max,rms:257:512:8192:max,ln:512:512:8192:max,ln:1024:1024:4096:max,ln:2048:2048:2048:4096
sb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes $S --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
sb Da X=1; sb L1a $L1; sb H0a $H0; sb H0La $H0 $L1; sb H0Lb $H0 $L1; sb H0b $H0; sb L1b $L1; sb Db X=1
for v in L1 H0 H0L; do /tmp/normkit-bench ab --old "$R/Da,$R/Db" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
step end
