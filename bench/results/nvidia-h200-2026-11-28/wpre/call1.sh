#!/usr/bin/env bash
# wpre call 1 (2026-11-28, eighth session): branch wpre against main (5e64037) — the plain
# register forwards (16-byte layouts, 4 chunks, rows of whole chunks: FULL) issue the output
# pass's weight (and bias) loads D chunks ahead of their use instead of each right before its
# chunk (volatile loads: one L2 round trip per chunk, after the previous chunk's store). Builds by
# nvcc flags: A (the tree) RMSNorm D = 4, LayerNorm 2, f32 0; B LayerNorm 4, f32 1; C RMSNorm 2,
# LayerNorm 1, f32 2. base A B C C B A base on the cells the plain kernels run and neighbours;
# no tests in this call (the carry limit: the four runners only; the suite in call 2).
# DIR (default gpu-run/) from, on branch wpre:
#   NORMKIT_NVCC_FLAGS="-DNK_FWD_WD_LN=4 -DNK_FWD_WD32=1" cargo build --release -p normkit-benches --features cuda --bin normkit-bench  (-> normkit-bench-B)
#   NORMKIT_NVCC_FLAGS="-DNK_FWD_WD_RMS=2 -DNK_FWD_WD_LN=1 -DNK_FWD_WD32=2" ... (-> normkit-bench-C)
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   the four runners stripped, in one solid archive (under 64 MiB carried):
#   tar cf - normkit-bench normkit-bench-base normkit-bench-B normkit-bench-C | xz -9e > DIR/bin/benches.tar.xz
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/benches.tar.xz" | tar xf - && chmod +x normkit-bench*)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step sweep
SB=1x4096,128x4096,1024x4096,2048x4096,4096x4096,16384x4096,32768x4096,4096x1024,16384x1024,65536x1024,16384x512,65536x512,8192x2048,32768x2048,4096x6000,2048x8192,32768x8192
SF=8192x4096,32768x4096,65536x512,16384x1024,32768x2048
bench() { local tag=$1 bin=$2
  /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd,addrms_fwd --shapes $SB --dtypes bf16 --no-candle --out "$R/$tag-b" > "$R/$tag.log" 2>&1
  /tmp/$bin run --backend cuda --ops rms_fwd,ln_fwd --shapes $SF --dtypes f32,f16 --no-candle --out "$R/$tag-f" >> "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
bench basea normkit-bench-base; bench Aa normkit-bench; bench Ba normkit-bench-B; bench Ca normkit-bench-C
bench Cb normkit-bench-C; bench Bb normkit-bench-B; bench Ab normkit-bench; bench baseb normkit-bench-base
s() { local O="" N=""; for x in -b -f; do O="$O,$R/$1a$x,$R/$1b$x"; N="$N,$R/$2a$x,$R/$2b$x"; done; /tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/$3" | tail -n 1; grep -E "^slower" "$R/$3"; }
s base A summary-A.md; s base B summary-B.md; s base C summary-C.md
rm -f "$R"/*/report.html
step end
