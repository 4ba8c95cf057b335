#!/usr/bin/env bash
# f32o3 call 4 (2026-11-29, thirteenth session; run in the same device call as call 3, results in
# $OUT/r4). Where the short f32 rows lose to torch.compile (rms_fwd f32 4096x1024 0.72x in call 1):
# ncu (speed of light, memory, occupancy, launch, warp states) on normkit's kernel and on
# torch.compile's at f32 4096x1024 and 4096x8192, clocks as benchmarked.
# DIR: call 3's bundle.
set -u
source "$(dirname "$0")/../../lib.sh"
nk_init "${1:-gpu-run}" r4
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats"
summ() { ncu -i /tmp/ncu-$1.ncu-rep --page details >> "$R/ncu-$1.log" 2>&1
  grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Warp Cycles Per Issued|Waves Per SM" "$R/ncu-$1.log" | head -30; }
prof() { timeout 100 ncu --clock-control none $SEC -k regex:nk_fwd -c 2 -s 20 -o /tmp/ncu-$1 /tmp/normkit-bench run --backend cuda --ops rms_fwd --shapes $2 --dtypes f32 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$1.log" 2>&1; echo "ncu $1 rc=$? $(date +%T)"; summ $1; }
cat > /tmp/tc.py <<'PY'
import sys, torch
m, n = map(int, sys.argv[1].split("x"))
x = torch.randn(m, n, device="cuda", dtype=torch.float32)
w = torch.randn(n, device="cuda", dtype=torch.float32)
def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
f = torch.compile(rms, dynamic=False)
for _ in range(30):
    y = f(x, w)
torch.cuda.synchronize()
PY
tprof() { timeout 150 ncu --clock-control none $SEC -k regex:triton -c 2 -s 20 -o /tmp/ncu-$1 python3 /tmp/tc.py $2 > "$R/ncu-$1.log" 2>&1; echo "ncu $1 rc=$? $(date +%T)"; summ $1; }
step ncu
prof nk-1k 4096x1024; tprof tc-1k 4096x1024
prof nk-8k 4096x8192; tprof tc-8k 4096x8192
nk_end
