#!/usr/bin/env bash
# wide call 1 (2026-11-28, ninth session): branch wide against main (8d7bba3), old new new old —
# the yT tile calls on one row per CTA past 40960 rows on HBM3e (Fp8Tuning::tile_wide_max_rows;
# tpf/call3's environment sweep had 49152-65536×4096 3% faster so). Then, new build, per-row
# scaling on the per-tensor twin's doubled rows per CTA (NORMKIT_CUDA_FP8_WIDE_ROW=1), D W W D.
# The FP8 tile and batch-invariance tests.
# DIR (default gpu-run/) from, on branch wide:
#   NORMKIT_CUDA_ARCHS=sm_90a cargo xtask gpu-bundle --out DIR --baseline main
#   (cd DIR/bin && tar cf - normkit-bench normkit-bench-base cuda-tests | xz -T1 -9e > all.tar.xz)
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
(cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench normkit-bench-base cuda-tests)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
step() { echo "== $1 $(date +%T)"; }
step ab
ST=16384x4096,32768x4096,40960x4096,40961x4096,49152x4096,65536x4096,32768x2048,65536x2048,65536x3072
SQ=32768x4096,65536x4096
bench() { /tmp/$2 run --backend cuda --ops rms_fwd_fp8_t --shapes $ST --dtypes bf16 --no-candle --out "$R/$1-t" > "$R/$1.log" 2>&1
  /tmp/$2 run --backend cuda --ops rms_fwd_fp8,rms_fwd_fp8_row --shapes $SQ --dtypes bf16 --no-candle --out "$R/$1-q" >> "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
bench old1 normkit-bench-base; bench new1 normkit-bench; bench new2 normkit-bench; bench old2 normkit-bench-base
O=""; N=""; for s in -t -q; do O="$O,$R/old1$s,$R/old2$s"; N="$N,$R/new1$s,$R/new2$s"; done
/tmp/normkit-bench ab --old "${O#,}" --new "${N#,}" --out "$R/summary-ab.md" | tail -n 1
grep -E "^slower" "$R/summary-ab.md"
step rowwide
SR=8192x4096,16384x4096,32768x4096,65536x4096,8192x8192,65536x1024,16384x3072,4096x1024
rb() { env "${@:2}" /tmp/normkit-bench run --backend cuda --ops rms_fwd_fp8_row,addrms_fwd_fp8_row --shapes $SR --dtypes bf16 --no-candle --out "$R/$1" > "$R/$1.log" 2>&1; echo "$1 rc=$? $(date +%T)"; }
rb RDa X=1; rb RWa NORMKIT_CUDA_FP8_WIDE_ROW=1; rb RWb NORMKIT_CUDA_FP8_WIDE_ROW=1; rb RDb X=1
/tmp/normkit-bench ab --old "$R/RDa,$R/RDb" --new "$R/RWa,$R/RWb" --out "$R/summary-RW.md" | tail -n 1
step tests
timeout 120 /tmp/cuda-tests fp8_twin_tile_matches_separate fp8_batch_invariance > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head -5
rm -f "$R"/*/report.html
step end
