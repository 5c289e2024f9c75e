// Runtime CUDA probes. With the static runtime these never throw: no driver or no device simply
// reads as "unavailable" with CUDA's own message.
#include "registry.hpp"

#ifdef TC_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tc {

bool built_with_cuda() {
#ifdef TC_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::string cuda_unavailable_reason() {
#ifdef TC_WITH_CUDA
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
      return std::string("no usable CUDA device (no NVIDIA driver, or one older than this CUDA "
                         "runtime needs): ") + cudaGetErrorString(e);
    return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device found";
  return "";
#else
  return "tensorconv was built without CUDA (nvcc not found at build time)";
#endif
}

bool cuda_available() { return cuda_unavailable_reason().empty(); }

int cuda_compute_capability() {
#ifdef TC_WITH_CUDA
  if (!cuda_available()) return 0;
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major * 10 + minor;
#else
  return 0;
#endif
}

std::string cuda_device_name() {
#ifdef TC_WITH_CUDA
  if (!cuda_available()) return "";
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
    return "";
  return prop.name;
#else
  return "";
#endif
}

}  // namespace tc
