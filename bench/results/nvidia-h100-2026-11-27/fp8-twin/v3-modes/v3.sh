set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
for b in normkit-bench normkit-bench-pf2 normkit-bench-base cuda-tests; do xz -dc "$HERE/bin/$b.xz" > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
timeout 200 /tmp/cuda-tests fp8_twin_matches_register kernel_tour > "$R/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAIL|panicked" "$R/tests.log" | head
OPS=rms_fwd_fp8,rms_fwd_fp8_row,addrms_fwd_fp8,rms_fwd_fp8_t
SH=32768x4096,2048x8192,4096x1024,16384x16384,8x4096,128x4096,1024x4096,65536x512,8192x2048
for v in b1 p1 n1 n2 p2 b2; do
  case $v in b*) B=normkit-bench-base;; p*) B=normkit-bench-pf2;; *) B=normkit-bench;; esac
  /tmp/$B run --backend cuda --ops $OPS --shapes $SH --dtypes bf16 --no-candle --out "$R/$v" > "$R/$v.log" 2>&1; echo "$v rc=$?"
done
/tmp/normkit-bench ab --old "$R/p1,$R/p2" --new "$R/n1,$R/n2" --out "$R/summary-vs-pf2.md"
/tmp/normkit-bench ab --old "$R/b1,$R/b2" --new "$R/n1,$R/n2" --out "$R/summary-vs-base.md"
paste -d'|' <(grep -E "^\| " "$R/summary-vs-base.md" | cut -d'|' -f2-7) <(grep -E "^\| " "$R/summary-vs-pf2.md" | cut -d'|' -f5-7)
