// A bandwidth-bound kernel for real Nsight Compute captures (scripts/capture-ncu): copies a
// buffer of --mib MiB into another, --launches times, so each launch reads and writes about that
// many bytes of HBM. Without a profiler it prints its own event-timed bandwidth per launch: the
// uninstrumented run a profiled-kernel receipt is paired with (docs/BANDWIDTH.md).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t e = (call);                                                     \
    if (e != cudaSuccess) {                                                     \
      std::fprintf(stderr, "hbm_copy: %s: %s\n", #call, cudaGetErrorString(e)); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

__global__ void hbm_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

int main(int argc, char** argv) {
  size_t mib = 1024;
  int launches = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--launches") == 0) launches = std::atoi(argv[i + 1]);
  }
  const size_t bytes = mib << 20;
  const size_t n = bytes / sizeof(float4);
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemset(in, 1, bytes));
  CHECK(cudaMemset(out, 0, bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int blocks = prop.multiProcessorCount * 8;
  std::printf("hbm_copy: %s, %d SMs, %zu MiB read + %zu MiB written per launch, %d launches\n", prop.name,
              prop.multiProcessorCount, mib, mib, launches);
  for (int l = 0; l < launches; ++l) {
    CHECK(cudaEventRecord(start));
    hbm_copy<<<blocks, 256>>>(in, out, n);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("launch %d: %.3f ms, %.1f GB/s (read + write, event-timed)\n", l, ms, 2.0 * bytes / (ms * 1e6));
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return 0;
}
