set -u
HERE="$(cd "${1:-gpu-run}" && pwd)"
R="$OUT/r"; mkdir -p "$R"
xz -dc "$HERE/bin/normkit-bench.xz" > /tmp/nb; chmod +x /tmp/nb
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt" 2>&1; date -u >> "$R/device.txt"
one() { local tag=$1; shift; env "$@" /tmp/nb run --backend cuda --ops rms_bwd,ln_bwd,addrms_bwd --shapes 128x4096,256x4096,512x4096,1024x4096,2048x4096 --dtypes bf16 --no-candle --out "$R/$tag" > "$R/$tag.log" 2>&1; echo "$tag rc=$? $(date +%T)"; }
one def X=1
one bs2048 NORMKIT_CUDA_BWD_SMALL=2048
one cps2 NORMKIT_CUDA_BWD_CTAS_PER_SM=2
one cps4 NORMKIT_CUDA_BWD_CTAS_PER_SM=4
one cps8 NORMKIT_CUDA_BWD_CTAS_PER_SM=8
one f0 NORMKIT_CUDA_BWD4F_MAX_M=0
one f0cps4 NORMKIT_CUDA_BWD4F_MAX_M=0 NORMKIT_CUDA_BWD_CTAS_PER_SM=4
one bs2048f0 NORMKIT_CUDA_BWD_SMALL=2048 NORMKIT_CUDA_BWD4F_MAX_M=0
one def2 X=1
cd "$OUT" && tar czf x.tgz r && rm -rf r
