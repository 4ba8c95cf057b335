#!/usr/bin/env bash
# ring call 4 (2026-11-29, eleventh session). Main's kernels with the planner taking any cluster
# of 2-16 CTAs by environment (branch ring, after call 3's revert). Call 2's ncu had the cluster
# forwards of 8 CTAs on 120 of the 132 SMs (15 clusters of 8 fit the GPCs). By environment,
# mirrored: the staged forward on clusters of 6, 10 and 12 CTAs of 256 threads
# (NORMKIT_CUDA_CSTAGE_CT) against the default (8 at N = 262144, 16 with the residual, 4 at
# 131072); the re-reading forward on 6, 10 and 12 CTAs of 512 (NORMKIT_CUDA_CLUSTER_REREAD)
# against 8; then the cluster tests under those shapes (bits differ by cluster size; each
# against the CPU backend).
# DIR (default gpu-run/) from, on branch ring:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step staged
st() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8 --shapes 512x262144,1024x262144,256x131072 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
st sD1 A=1; st s6a NORMKIT_CUDA_CSTAGE_CT=6,256; st s10a NORMKIT_CUDA_CSTAGE_CT=10,256; st s12a NORMKIT_CUDA_CSTAGE_CT=12,256
st s12b NORMKIT_CUDA_CSTAGE_CT=12,256; st s10b NORMKIT_CUDA_CSTAGE_CT=10,256; st s6b NORMKIT_CUDA_CSTAGE_CT=6,256; st sD2 A=1
for v in 6 10 12; do /tmp/normkit-bench ab --old "$R/sD1,$R/sD2" --new "$R/s${v}a,$R/s${v}b" --out "$R/summary-staged-C$v.md" | tail -n 1; done
step reread
rr() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes 8x1048576,128x1048576 --dtypes bf16 --no-candle --out "$R/$1-l" > "$R/$1.log" 2>&1
  env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 8x524288,128x524288 --dtypes f32 --no-candle --out "$R/$1-f" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
rr rD1 A=1; rr r6a NORMKIT_CUDA_CLUSTER_REREAD=6; rr r10a NORMKIT_CUDA_CLUSTER_REREAD=10; rr r12a NORMKIT_CUDA_CLUSTER_REREAD=12
rr r12b NORMKIT_CUDA_CLUSTER_REREAD=12; rr r10b NORMKIT_CUDA_CLUSTER_REREAD=10; rr r6b NORMKIT_CUDA_CLUSTER_REREAD=6; rr rD2 A=1
for v in 6 10 12; do /tmp/normkit-bench ab --old "$R/rD1-l,$R/rD2-l,$R/rD1-f,$R/rD2-f" --new "$R/r${v}a-l,$R/r${v}b-l,$R/r${v}a-f,$R/r${v}b-f" --out "$R/summary-reread-C$v.md" | tail -n 1; done
step tests
for v in 6 12; do timeout 60 env NORMKIT_CUDA_CSTAGE_CT=$v,256 /tmp/cuda-tests --exact cluster::staged_matches_cpu > "$R/tests-staged-C$v.log" 2>&1; echo "staged C$v rc=$?"; grep -E "test result|panicked" "$R/tests-staged-C$v.log" | head -3
  timeout 60 env NORMKIT_CUDA_CLUSTER_REREAD=$v /tmp/cuda-tests --exact cluster::reread_matches_cpu > "$R/tests-reread-C$v.log" 2>&1; echo "reread C$v rc=$?"; grep -E "test result|panicked" "$R/tests-reread-C$v.log" | head -3; done
rm -f "$R"/*/report.html "$R"/*/*/report.html
step end
