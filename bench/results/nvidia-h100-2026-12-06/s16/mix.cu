// Traffic ceilings by read:write mix (session 16, issue 16): how fast does an H100 move the bytes
// of an FP8 forward (2 bytes read, 1 written per element; with the residual 4 read, 3 written)
// when nothing is computed? Each kernel streams the same element count as 32768x4096; GB/s counts
// every byte read and written, as normkit-bench does. One CTA per 16 KiB of x (no grid-stride walk,
// as the bf16 twin), 256 threads, 16-byte loads. The FP8 store keeps the high byte of each bf16
// (the traffic of a conversion, not its rounding). Build: nvcc -O3 -arch=sm_90a mix.cu -o mix
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void copy1(const uint4* __restrict__ x, uint4* __restrict__ y, size_t n16) {
    size_t i = (size_t)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) v[k] = x[i + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) y[i + k * blockDim.x] = v[k];
}
__device__ __forceinline__ uint2 hi8(uint4 a) {
    auto h = [](uint32_t p, uint32_t q) { return ((p >> 8) & 0xff) | ((p >> 16) & 0xff00) | (((q >> 8) & 0xff) << 16) | ((q >> 24) << 24); };
    return make_uint2(h(a.x, a.y), h(a.z, a.w));
}
// read x (bf16), write y (fp8)
__global__ void cast(const uint4* __restrict__ x, uint2* __restrict__ y, size_t n16) {
    size_t i = (size_t)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) v[k] = x[i + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) y[i + k * blockDim.x] = hi8(v[k]);
}
// read x, r (bf16), write h (bf16) and y (fp8)
__global__ void castres(const uint4* __restrict__ x, const uint4* __restrict__ r, uint4* __restrict__ h, uint2* __restrict__ y, size_t n16) {
    size_t i = (size_t)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint4 v[4], w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) { v[k] = x[i + k * blockDim.x]; w[k] = r[i + k * blockDim.x]; }
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) {
        uint4 s = make_uint4(v[k].x ^ w[k].x, v[k].y ^ w[k].y, v[k].z ^ w[k].z, v[k].w ^ w[k].w);
        h[i + k * blockDim.x] = s; y[i + k * blockDim.x] = hi8(s);
    }
}
// read only (x), a sum kept so nothing is dead; writes one word per CTA
__global__ void readonly(const uint4* __restrict__ x, uint32_t* __restrict__ o, size_t n16) {
    size_t i = (size_t)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint32_t s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n16) { uint4 a = x[i + k * blockDim.x]; s ^= a.x ^ a.y ^ a.z ^ a.w; }
    if (s == 0x12345678u) o[blockIdx.x] = s;
}

int main() {
    const size_t elems = 32768ull * 4096, n16 = elems / 8;
    void *x, *r, *h, *y, *o;
    CK(cudaMalloc(&x, elems * 2)); CK(cudaMalloc(&r, elems * 2)); CK(cudaMalloc(&h, elems * 2));
    CK(cudaMalloc(&y, elems * 2)); CK(cudaMalloc(&o, 1 << 20));
    CK(cudaMemset(x, 0x3c, elems * 2)); CK(cudaMemset(r, 0x11, elems * 2));
    cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
    const int T = 256; const unsigned grid = (unsigned)((n16 + T * 4 - 1) / (T * 4));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    auto time = [&](const char* name, double bytes, auto launch) {
        for (int i = 0; i < 5; ++i) launch();
        float best = 1e9, sum = 0; const int reps = 30;
        for (int i = 0; i < reps; ++i) {
            cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
            float ms; cudaEventElapsedTime(&ms, a, b); sum += ms; if (ms < best) best = ms;
        }
        double us = sum / reps * 1e3;
        printf("%-10s %8.1f us  %7.1f GB/s (mean)  %7.1f GB/s (best)\n", name, us, bytes / us * 1e-3, bytes / (best * 1e3) * 1e-3);
        return bytes / us * 1e-3;
    };
    printf("device %s, %zu elements (32768x4096), %d threads, %u CTAs\n", pr.name, elems, T, grid);
    for (int pass = 0; pass < 2; ++pass) {
        double c = time("copy 1:1", elems * 4.0, [&] { copy1<<<grid, T>>>((const uint4*)x, (uint4*)y, n16); });
        double q = time("cast 2:1", elems * 3.0, [&] { cast<<<grid, T>>>((const uint4*)x, (uint2*)y, n16); });
        double qr = time("res 4:3", elems * 7.0, [&] { castres<<<grid, T>>>((const uint4*)x, (const uint4*)r, (uint4*)h, (uint2*)y, n16); });
        double ro = time("read only", elems * 2.0, [&] { readonly<<<grid, T>>>((const uint4*)x, (uint32_t*)o, n16); });
        printf("pass %d: cast %.1f%% of copy, res %.1f%%, read-only %.1f%%\n", pass, 100 * q / c, 100 * qr / c, 100 * ro / c);
    }
    CK(cudaGetLastError());
    return 0;
}
