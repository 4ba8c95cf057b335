// Decode-latency ladder: graph replay of back-to-back RMSNorm forwards (bf16, N = 4096), one row per CTA.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("ERR %s @%d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
struct Small { const __nv_bfloat16* x; const __nv_bfloat16* w; __nv_bfloat16* y; int m; int n; float eps; };
struct Big { const __nv_bfloat16* x; const __nv_bfloat16* w; __nv_bfloat16* y; int m; int n; float eps; char pad[248 - 40]; };
struct alignas(16) U4 { unsigned a, b, c, d; };
__device__ __forceinline__ void unpack(const U4& r, float* v) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&r);
  for (int i = 0; i < 4; ++i) { float2 f = __bfloat1622float2(h[i]); v[2*i] = f.x; v[2*i+1] = f.y; }
}
__device__ __forceinline__ U4 pack(const float* v) {
  U4 r; __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&r);
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2*i], v[2*i+1]);
  return r;
}
template <int T> __device__ __forceinline__ float block_sum(float a) {
  __shared__ float s[32];
  for (int o = 16; o; o >>= 1) a += __shfl_xor_sync(0xffffffff, a, o);
  if (T == 32) return a;
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  if (l == 0) s[w] = a;
  __syncthreads();
  float r = 0.f;
  for (int i = 0; i < T / 32; ++i) r += s[i];
  return r;
}
// EARLY: w loaded with x. PDL: griddepcontrol (trigger at entry, wait before memory).
template <int T, int K, bool EARLY, bool PDL, class P>
__global__ void __launch_bounds__(T) rms(const P p) {
  if (PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int row = blockIdx.x;
  const U4* xr = reinterpret_cast<const U4*>(p.x + (size_t)row * p.n);
  const U4* wr = reinterpret_cast<const U4*>(p.w);
  U4* yr = reinterpret_cast<U4*>(p.y + (size_t)row * p.n);
  if (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
  U4 h[K], wv[K];
  for (int k = 0; k < K; ++k) h[k] = xr[k * T + threadIdx.x];
  if (EARLY) for (int k = 0; k < K; ++k) wv[k] = wr[k * T + threadIdx.x];
  float acc = 0.f;
  for (int k = 0; k < K; ++k) { float v[8]; unpack(h[k], v); for (int j = 0; j < 8; ++j) acc += v[j] * v[j]; }
  acc = block_sum<T>(acc);
  float rstd = rsqrtf(acc / p.n + p.eps);
  if (!EARLY) for (int k = 0; k < K; ++k) wv[k] = wr[k * T + threadIdx.x];
  for (int k = 0; k < K; ++k) {
    float v[8], w[8], y[8]; unpack(h[k], v); unpack(wv[k], w);
    for (int j = 0; j < 8; ++j) y[j] = v[j] * rstd * w[j];
    yr[k * T + threadIdx.x] = pack(y);
  }
}
template <bool PDL, class P> __global__ void empty(const P p) {
  if (PDL) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); asm volatile("griddepcontrol.wait;" ::: "memory"); }
  if (threadIdx.x == 0 && p.m < 0) p.y[0] = __float2bfloat16(0.f);
}
struct Set { __nv_bfloat16 *x, *w, *y; };
template <class P, class KF>
float time_it(KF kern, int m, int threads, bool pdl, std::vector<Set>& sets, cudaStream_t s, int calls = 64, int reps = 21) {
  cudaGraph_t g; cudaGraphExec_t ge;
  auto launch = [&](int i) {
    Set& st = sets[i % sets.size()];
    P p{}; p.x = st.x; p.w = st.w; p.y = st.y; p.m = m; p.n = 4096; p.eps = 1e-6f;
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(m); cfg.blockDim = dim3(threads); cfg.stream = s;
    cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; a[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = a; cfg.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, kern, p));
  };
  for (int i = 0; i < calls; ++i) launch(i);
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  for (int i = 0; i < calls; ++i) launch(i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a, s); CK(cudaGraphLaunch(ge, s)); cudaEventRecord(b, s); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000.f / calls);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  return t[t.size() / 2];
}
int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp pr; cudaGetDeviceProperties(&pr, 0); printf("device %s\n", pr.name);
  const int ms_[] = {1, 8, 128};
  for (int m : ms_) {
    std::vector<Set> sets(16);
    for (auto& st : sets) {
      CK(cudaMalloc(&st.x, (size_t)m * 4096 * 2)); CK(cudaMalloc(&st.y, (size_t)m * 4096 * 2)); CK(cudaMalloc(&st.w, 4096 * 2));
      CK(cudaMemset(st.x, 0x3c, (size_t)m * 4096 * 2)); CK(cudaMemset(st.w, 0x3c, 4096 * 2));
    }
    struct V { const char* name; float us; };
    std::vector<V> v;
#define RUN(NAME, P, K, TH, PDL) v.push_back({NAME, time_it<P>(K, m, TH, PDL, sets, s)})
    RUN("empty small", Small, (empty<false, Small>), 128, false);
    RUN("empty big", Big, (empty<false, Big>), 128, false);
    RUN("empty pdl", Small, (empty<true, Small>), 128, true);
    RUN("128x4 late-w", Small, (rms<128, 4, false, false, Small>), 128, false);
    RUN("128x4 late-w big", Big, (rms<128, 4, false, false, Big>), 128, false);
    RUN("128x4 early-w", Small, (rms<128, 4, true, false, Small>), 128, false);
    RUN("256x2 early-w", Small, (rms<256, 2, true, false, Small>), 256, false);
    RUN("512x1 early-w", Small, (rms<512, 1, true, false, Small>), 512, false);
    RUN("32x16 early-w", Small, (rms<32, 16, true, false, Small>), 32, false);
    RUN("128x4 late-w pdl", Small, (rms<128, 4, false, true, Small>), 128, true);
    RUN("128x4 early-w pdl", Small, (rms<128, 4, true, true, Small>), 128, true);
    RUN("256x2 early-w pdl", Small, (rms<256, 2, true, true, Small>), 256, true);
    RUN("512x1 early-w pdl", Small, (rms<512, 1, true, true, Small>), 512, true);
    RUN("128x4 early-w pdl big", Big, (rms<128, 4, true, true, Big>), 128, true);
    for (auto& e : v) printf("M=%d %-24s %.3f us\n", m, e.name, e.us);
    for (auto& st : sets) { cudaFree(st.x); cudaFree(st.y); cudaFree(st.w); }
  }
  return 0;
}
