# The backward register / row-batch grid's CTAs per SM (NORMKIT_CUDA_BWD_CTAS_PER_SM, no cap by
# default) at 256–32768 rows of N = 1024–8192, bf16, A B C D D C B A on one build.
set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
SH=256x4096,512x4096,1024x4096,2048x4096,4096x4096,16384x4096,32768x4096,512x1024,4096x1024,32768x1024,512x2048,4096x2048,32768x2048,256x8192,1024x8192,4096x8192,16384x8192
one() { local tag=$1; shift; env "$@" /tmp/nb run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes $SH --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
one def1 X=1; one cap1a NORMKIT_CUDA_BWD_CTAS_PER_SM=1; one cap2a NORMKIT_CUDA_BWD_CTAS_PER_SM=2; one cap3a NORMKIT_CUDA_BWD_CTAS_PER_SM=3
one cap3b NORMKIT_CUDA_BWD_CTAS_PER_SM=3; one cap2b NORMKIT_CUDA_BWD_CTAS_PER_SM=2; one cap1b NORMKIT_CUDA_BWD_CTAS_PER_SM=1; one def2 X=1
cd "$OUT" && tar czf x.tgz r && rm -rf r
