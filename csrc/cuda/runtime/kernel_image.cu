// Whether this binary holds code for the current GPU, and which: a binary built for other architectures
// (and without PTX the driver can compile for this one) fails every launch with
// cudaErrorNoKernelImageForDevice, so the device probe (core/device_probe.cpp) asks once.
#include <cuda_runtime.h>

#include <string>

namespace tc {
namespace cuda {
namespace {
__global__ void probe_kernel(int* p) {
  if (p) *p = 1;
}
}  // namespace

// `code_arch`: the virtual architecture the code chosen for this GPU comes from (ptxVersion, e.g.
// 80 for compute_80 PTX compiled by the driver, 90 for sm_90a SASS); every .cu of the build has
// the same architectures, so one kernel speaks for all.
std::string kernel_image_error(int cc, int* code_arch) {
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, probe_kernel);
  if (e == cudaSuccess) {
    *code_arch = a.ptxVersion;
    return "";
  }
  cudaGetLastError();
  const std::string arch = std::to_string(cc / 10) + std::to_string(cc % 10);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
    return "this build has no code for the GPU's sm_" + arch + " (built for " TC_CUDA_ARCHS
           "); rebuild with CMAKE_CUDA_ARCHITECTURES=" + arch;
  return std::string("CUDA cannot load this build's kernels: ") + cudaGetErrorString(e);
}

}  // namespace cuda
}  // namespace tc
