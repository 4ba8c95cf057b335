set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-twin1 cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 200 /tmp/cuda-tests fp8_twin_matches_register kernel_tour > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head
OPS=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,rms_fwd_fp8_t
SH=32768x4096,2048x8192,4096x1024,16384x16384,8x4096,128x4096,1024x4096
for v in old1 new1 new2 old2; do
  case $v in old*) B=normkit-bench-twin1;; *) B=normkit-bench;; esac
  /tmp/$B run --backend cuda --ops $OPS --shapes $SH --dtypes bf16 --no-candle --out "$R/$v" > "$R/$v.log" 2>&1; echo "$v rc=$?"
done
/tmp/normkit-bench ab --old "$R/old1,$R/old2" --new "$R/new1,$R/new2" --out "$R/summary.md"; grep -E "^\| " "$R/summary.md" | cut -d'|' -f2-7
