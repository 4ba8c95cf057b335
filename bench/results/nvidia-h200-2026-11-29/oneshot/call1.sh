#!/usr/bin/env bash
# oneshot call 1 (2026-11-29, twelfth session). The long-row forwards stop at 58-77% of the copy
# ceiling (NOTES v32). QuACK's forward at these N (rmsnorm_config.py, Hopper, 16-bit): clusters of
# 16 CTAs of 256 threads from N > 128K, the slice in shared memory, one cluster per row (the
# hardware schedules the next cluster as one leaves, so several rows' CTAs share an SM). Main's
# staged kernel in that shape by environment (same bits in each shape; the shapes change bits
# between each other), mirrored D G Q QG QG Q G D:
#   G:  NORMKIT_CUDA_CSTAGE_GRID=rows (one cluster per row, main's cluster shapes);
#   Q:  NORMKIT_CUDA_CSTAGE_CT=16,256 (clusters of 16 x 256 walking the rows; at N = 1M a slice
#       of 128 KiB, so the staged kernel replaces the re-reading one);
#   QG: both.
# DIR (default gpu-run/) from main (38a5204): NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR
#   (cd DIR/bin && tar cf - normkit-bench cuda-tests | xz -T2 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
G="NORMKIT_CUDA_CSTAGE_GRID=rows"
Q="NORMKIT_CUDA_CSTAGE_CT=16,256"
run1() { env $2 /tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes 512x262144,1024x262144,128x1048576,8x1048576 --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
step sweep
run1 D1 A=1; run1 Ga "$G"; run1 Qa "$Q"; run1 QGa "$Q $G"
run1 QGb "$Q $G"; run1 Qb "$Q"; run1 Gb "$G"; run1 D2 A=1
for v in G Q QG; do /tmp/normkit-bench ab --old "$R/D1,$R/D2" --new "$R/${v}a,$R/${v}b" --out "$R/summary-$v.md" | tail -n 1; grep -E "^faster|^slower" "$R/summary-$v.md" | cut -c1-600; done
rm -f "$R"/*/report.html
step end
