set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
OPS=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,rms_fwd
SH=32768x4096,2048x8192,4096x1024,16384x16384
for v in p1 r1 rt1 p2 r2 rt2; do
  case $v in p*) E="";; r*) E="NORMKIT_CUDA_FP8_GRID=rows";; esac
  case $v in rt*) E="$E NORMKIT_CUDA_FP8_TWIN=0";; esac
  env $E /tmp/nb run --backend cuda --ops $OPS --shapes $SH --dtypes bf16 --no-candle --out "$R/$v" > "$R/$v.log" 2>&1; echo "$v ($E) rc=$?"
  grep -E "^cuda " "$R/$v.log"
done
