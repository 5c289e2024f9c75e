// Runtime CUDA probes. With the static runtime these never throw: no driver, a driver older than
// the runtime, no device, or no code in this build for the device simply reads as "unavailable"
// with one line saying why. The device probe runs once per process.
#include <mutex>

#include "registry.hpp"

#ifdef TC_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda/runtime/cuda_libs.hpp"

namespace tc::cuda {
std::string kernel_image_error(int cc, int* code_arch);  // kernel_image.cu
}
#endif

namespace tc {

bool built_with_cuda() {
#ifdef TC_WITH_CUDA
  return true;
#else
  return false;
#endif
}

namespace {
struct Probe {
  std::string reason;  // "" when usable
  int cc = 0, code_arch = 0;
  std::string name;
  DeviceSpeed speed;
};

const Probe& probe() {
  static Probe p;
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef TC_WITH_CUDA
    int n = 0, driver = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it so later calls start clean
      const std::string rt = std::to_string(CUDART_VERSION / 1000) + "." +
                             std::to_string(CUDART_VERSION % 1000 / 10);
      if (e == cudaErrorInsufficientDriver) cudaDriverGetVersion(&driver);
      if (e == cudaErrorInsufficientDriver && driver == 0) {  // the runtime found no libcuda
        p.reason = "no NVIDIA driver (libcuda.so.1 not found)";
      } else if (e == cudaErrorInsufficientDriver) {
        p.reason = "the NVIDIA driver is too old for this build's CUDA " + rt + " runtime" +
                   " (the driver supports CUDA " + std::to_string(driver / 1000) + "." +
                   std::to_string(driver % 1000 / 10) + "); update the driver";
      } else if (e == cudaErrorNoDevice) {
        p.reason = "no CUDA device found";
      } else {
        p.reason = std::string("no usable CUDA device (no NVIDIA driver?): ") +
                   cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
      }
      return;
    }
    if (n == 0) {
      p.reason = "no CUDA device found";
      return;
    }
    int dev = 0, major = 0, minor = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      cudaGetLastError();
      p.reason = "no usable CUDA device: cudaGetDeviceProperties failed";
      return;
    }
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    p.cc = major * 10 + minor;
    p.name = prop.name;
    int sm_khz = 0, mem_khz = 0;
    cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
    p.speed.sm_count = prop.multiProcessorCount;
    p.speed.sm_clock_mhz = sm_khz / 1e3;
    // double data rate: two transfers per memory clock over the bus
    p.speed.memory_bandwidth_gbs = 2.0 * mem_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;
    cudaGetLastError();  // an attribute this driver lacks reads as 0
    p.reason = cuda::kernel_image_error(p.cc, &p.code_arch);
#else
    p.reason = "tensorconv was built without CUDA (TENSORCONV_CUDA=OFF, or no nvcc at build time)";
#endif
  });
  return p;
}
}  // namespace

std::string cuda_unavailable_reason() { return probe().reason; }

bool cuda_available() { return probe().reason.empty(); }

int cuda_compute_capability() { return cuda_available() ? probe().cc : 0; }

std::string cuda_device_name() { return cuda_available() ? probe().name : ""; }

int cuda_code_arch() { return cuda_available() ? probe().code_arch : 0; }

DeviceSpeed cuda_device_speed() { return cuda_available() ? probe().speed : DeviceSpeed{}; }

std::string cuda_library_unavailable_reason(CudaLibrary lib) {
#ifdef TC_WITH_CUDA
  return cuda_libs::unavailable_reason(lib);
#else
  return lib == CudaLibrary::none ? "" : "tensorconv was built without CUDA";
#endif
}

std::string cuda_library_path(CudaLibrary lib) {
#ifdef TC_WITH_CUDA
  return cuda_libs::loaded_path(lib);
#else
  (void)lib;
  return "";
#endif
}

void set_cuda_library_dirs(std::vector<std::string> dirs) {
#ifdef TC_WITH_CUDA
  cuda_libs::set_search_dirs(std::move(dirs));
#else
  (void)dirs;
#endif
}

}  // namespace tc
