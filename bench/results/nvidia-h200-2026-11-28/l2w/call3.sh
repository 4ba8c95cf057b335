#!/usr/bin/env bash
# l2w call 3 (2026-11-28, seventh session): the prefetch's placement. v1 = call 2's build (the
# prefetch before the row's loads; its normkit-bench kept as bin/normkit-bench-v1.xz), v2 = the
# prefetch after the loads with its address from the row's pointer (branch l2w 3rd form), each
# against main (03119d6) and v2 with the prefetch off by environment (its code alone):
# base v1 v2 v2off v2off v2 v1 base. Then the full CUDA suite and memcheck on v2, and torch eager /
# torch.compile / Liger 0.8.5 beside v2's run of the same cells; and LayerNorm's twin at N = 512 and
# 1024 on every grid by environment (D T T D).
# DIR (default gpu-run/) from, on branch l2w:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && xz -T2 -6 -f normkit-bench normkit-bench-base cuda-tests)
#   pip download -q --no-deps liger-kernel==0.8.5 -d DIR/wheels
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
# (The three runners travel as one solid xz tarball, bin/benches.tar.xz, to fit the carry limit.)
xz -dc "$HERE/bin/benches.tar.xz" | tar xf - -C /tmp; xz -dc "$HERE/bin/cuda-tests.xz" > /tmp/cuda-tests
chmod +x /tmp/normkit-bench /tmp/normkit-bench-base /tmp/normkit-bench-v1 /tmp/cuda-tests
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
SB=512x8192,1024x8192,2048x4096,4096x4096,8192x4096,32768x4096,4096x6000,16384x6000,2048x8192,4096x8192,32768x8192,4096x1024,16384x1024,65536x512
bench() { local tag=$1 bin=$2; shift 2
  env "$@" /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$tag-b" > "$R/$tag.log" 2>&1
  env "$@" /tmp/$bin run --backend cuda --ops addrms_fwd --shapes 2048x4096,32768x4096,4096x1024 --dtypes bf16 --no-candle --out "$R/$tag-r" >> "$R/$tag.log" 2>&1
  env "$@" /tmp/$bin run --backend cuda --ops ln_fwd,rms_fwd --shapes 32768x4096,32768x8192 --dtypes f32,f16 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
bench basea normkit-bench-base X=1; bench v1a normkit-bench-v1 X=1; bench v2a normkit-bench X=1; bench offa normkit-bench NORMKIT_CUDA_FWD_L2PF=off
bench offb normkit-bench NORMKIT_CUDA_FWD_L2PF=off; bench v2b normkit-bench X=1; bench v1b normkit-bench-v1 X=1; bench baseb normkit-bench-base X=1
s() { local O="" N=""; for x in -b -r -f; do O="$O,$R/$1a$x,$R/$1b$x"; N="$N,$R/$2a$x,$R/$2b$x"; done; /tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/$3" | tail -n 1; grep -E "^slower" "$R/$3"; }
s base v2 summary-ab.md; s base v1 summary-v1.md; s off v2 summary-pf.md; s base off summary-code.md
step twin
# LayerNorm's twin past its rules (NORMKIT_CUDA_FWD_DECODE: every grid up to that many CTAs), v2.
T=65536x512,16384x512,16384x1024,4096x1024,65536x1024
tw() { local tag=$1; shift; env "$@" /tmp/normkit-bench run --backend cuda --ops ln_fwd,rms_fwd --shapes $T --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$?"; }
tw tw-d1 X=1; tw tw-t1 NORMKIT_CUDA_FWD_DECODE=1000000; tw tw-t2 NORMKIT_CUDA_FWD_DECODE=1000000; tw tw-d2 X=1
/tmp/normkit-bench ab --old "$R/tw-d1,$R/tw-d2" --new "$R/tw-t1,$R/tw-t2" --out "$R/summary-twin.md" | tail -n 1
step tests
timeout 200 /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
step memcheck
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/cuda-tests forward_batch_invariance_past_the_twin > "$R/sanitize-memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -n 3 "$R/sanitize-memcheck.log"
step peers
P=2048x4096,8192x4096,32768x4096,4096x6000,2048x8192,4096x8192,32768x8192,65536x512
pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1; echo "pip rc=$?"
PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 130 python3 "$HERE/peers/bench_peers.py" --budget-s 110 --impls eager,compile,liger --ops rms_fwd,ln_fwd --shapes $P --fp32-shapes 32768x4096 --no-check --out "$R/peers" > "$R/peers.log" 2>&1
echo "peers rc=$?"; tail -n 1 "$R/peers.log"
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes $P --dtypes bf16 --no-candle --out "$R/gridp" > "$R/gridp.log" 2>&1
/tmp/normkit-bench run --backend cuda --ops rms_fwd,ln_fwd --shapes 32768x4096 --dtypes f32 --no-candle --out "$R/gridp-f32" >> "$R/gridp.log" 2>&1
/tmp/normkit-bench merge "$R/gridp/results.json" "$R/gridp-f32/results.json" --peers "$R/peers/bench_peers.json" --out "$R/merged" && grep "at or ahead" "$R/merged/report.md"
rm -f "$R"/*/report.html "$R"/merged*/report.html; rm -rf "$R"/v1?-* 
step end
