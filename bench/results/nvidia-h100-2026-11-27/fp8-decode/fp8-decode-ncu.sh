set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
for op in rms_fwd_fp8 rms_fwd addrms_fwd_fp8; do for s in 8x4096 128x4096; do
  timeout 60 ncu --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum -k regex:nk_ --launch-count 6 /tmp/nb run --backend cuda --ops $op --shapes $s --dtypes bf16 --quick --no-candle --out /tmp/ncu-x > "$R/ncu-$op-$s.log" 2>&1; echo "ncu $op $s rc=$?"; done; done
/tmp/nb run --backend cuda --ops rms_fwd_fp8,rms_fwd,addrms_fwd_fp8,rms_fwd_fp8_row --shapes 1x4096,8x4096,128x4096 --dtypes bf16 --no-candle --out "$R/fp8-decode" > "$R/fp8-decode.log" 2>&1; echo "bench rc=$?"
NORMKIT_CUDA_FP8_REG=0 /tmp/nb run --backend cuda --ops rms_fwd_fp8 --shapes 1x4096,8x4096,128x4096 --dtypes bf16 --no-candle --out "$R/fp8-decode-noreg" > "$R/fp8-decode-noreg.log" 2>&1; echo "bench2 rc=$?"
cd "$OUT" && tar czf x.tgz r && rm -rf r
