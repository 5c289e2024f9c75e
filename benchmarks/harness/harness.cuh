// What the standalone kernel harnesses (toeplitz_tune.cu, fir_dki_harness.cu) share: the one
// out-of-line symbol the package headers need (TC_CUDA_CHECK's throw_cuda, defined in the
// package's common.cu), a device allocation, and the timing rule of the benchmarks (CUDA events,
// 3 warm-ups, median of 20). Include it from the harness's single translation unit.
#pragma once
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {
[[noreturn]] void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string(cudaGetErrorString(e)) + " at " + what + " " + file + ":" +
                           std::to_string(line));
}
}  // namespace cuda
}  // namespace tc

namespace harness {

struct Dev {
  void* p = nullptr;
  explicit Dev(std::size_t n) { TC_CUDA_CHECK(cudaMalloc(&p, n)); }
  ~Dev() { cudaFree(p); }
};

// Median of 20 timed launches after 3 warm-ups, in ms; launch() enqueues one run.
template <class F>
float median_ms(F&& launch) {
  cudaEvent_t e0, e1;
  TC_CUDA_CHECK(cudaEventCreate(&e0));
  TC_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 23; ++r) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float x;
    cudaEventElapsedTime(&x, e0, e1);
    if (r >= 3) t.push_back(x);
  }
  TC_CUDA_CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 0.5f * (t[9] + t[10]);
}

}  // namespace harness
