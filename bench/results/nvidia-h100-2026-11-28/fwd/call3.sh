#!/usr/bin/env bash
# Session 2026-11-28 (2), fwd call 3: the forward twin's CTAs per SM capped by shared-memory
# padding (Tuning::fwd_twin_cap, env NORMKIT_CUDA_FWD_TWIN_CAP=LO:HI:K, off by default; the same
# kernels) — fwd/call2 found add + RMSNorm 64/128×4096 bf16 0.7–0.9 µs slower than f16 with the
# same code but for 64 against 72 registers (4 against 3 CTAs per SM), and PDL off removing it:
# the next call's early CTAs stacking on the SMs the grid leaves idle? The base build (main,
# 7ca9f34) and the new build's default, then K = 1, 2, 3 on 1–1024 rows; O D K1 K2 K3 K3 K2 K1 D O.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-base; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
S=8x4096,16x4096,32x4096,64x4096,128x4096,256x4096,128x2048,128x8192
F=rms_fwd,addrms_fwd,ln_fwd
one() { local tag=$1 bin=$2; shift 2; env "$@" /tmp/$bin run --backend cuda --ops $F --shapes $S --dtypes bf16,f16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
C=NORMKIT_CUDA_FWD_TWIN_CAP
one olda normkit-bench-base X=1; one defa normkit-bench X=1; one k1a normkit-bench $C=1:1024:1; one k2a normkit-bench $C=1:1024:2; one k3a normkit-bench $C=1:1024:3
one k3b normkit-bench $C=1:1024:3; one k2b normkit-bench $C=1:1024:2; one k1b normkit-bench $C=1:1024:1; one defb normkit-bench X=1; one oldb normkit-bench-base X=1
for v in def k1 k2 k3; do /tmp/normkit-bench ab --old "$R/olda,$R/oldb" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; done
rm -f "$R"/*/report.html
step end
