#!/usr/bin/env bash
# Session 2026-11-28 (4), pf call 4 — why the large forwards trail torch.compile and Liger on the
# H200 (call 3: rms_fwd 32768×4096 0.91×, 16384×16384 0.89×, ln_fwd 16384×16384 0.79×): the
# landed build of call 2 (same bundle) by environment, each configuration twice (A..H H..A):
# D default; T2 two rows per CTA (NORMKIT_CUDA_FWD_TABLE 4096:128:2, 8192:256:2, 16384:512:2,
# 512:16:16); W twice the threads (4096:256:1, 8192:512:1, 16384:1024:1, 512:32:8); K8 eight
# chunks per thread (4096:64:1, 8192:128:1, 16384:256:1, every op, NORMKIT_CUDA_FWD_K8=all); T0
# no twin past decode (NORMKIT_CUDA_FWD_DECODE=0); P0 no programmatic dependent launch; PS
# persistent grids (NORMKIT_CUDA_FWD_GRID=persist); NK8 no 8-chunk kernels.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/normkit-bench; chmod +x /tmp/normkit-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
S=32768x4096,16384x4096,16384x16384,32768x8192,2048x8192,65536x512,4096x1024
O=rms_fwd,ln_fwd,addrms_fwd,rms_fwd_fp8,rms_fwd_fp8_row
one() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops $O --shapes $S --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
cfg() { case $1 in
  D) echo X=1;;
  T2) echo NORMKIT_CUDA_FWD_TABLE=4096:128:2,8192:256:2,16384:512:2,512:16:16;;
  W) echo NORMKIT_CUDA_FWD_TABLE=4096:256:1,8192:512:1,16384:1024:1,512:32:8;;
  K8) echo NORMKIT_CUDA_FWD_TABLE=4096:64:1,8192:128:1,16384:256:1 NORMKIT_CUDA_FWD_K8=all;;
  T0) echo NORMKIT_CUDA_FWD_DECODE=0;;
  P0) echo NORMKIT_CUDA_PDL=0;;
  PS) echo NORMKIT_CUDA_FWD_GRID=persist;;
  NK8) echo NORMKIT_CUDA_FWD_K8=0;;
esac; }
step sweep
for c in D T2 W K8 T0 P0 PS NK8; do one $c-a $(cfg $c); done
for c in NK8 PS P0 T0 K8 W T2 D; do one $c-b $(cfg $c); done
for c in T2 W K8 T0 P0 PS NK8; do /tmp/normkit-bench ab --old "$R/D-a,$R/D-b" --new "$R/$c-a,$R/$c-b" --out "$R/summary-$c.md" | tail -n 1; done
python3 "$HERE/pivot.py" "$R" D:D-a,D-b T2:T2-a,T2-b W:W-a,W-b K8:K8-a,K8-b T0:T0-a,T0-b P0:P0-a,P0-b PS:PS-a,PS-b NK8:NK8-a,NK8-b > "$R/summary-sweep.md" 2>&1 || true
rm -f "$R"/*/report.html
step end
