// Shared pieces of the CUDA bilateral filters (formula and non-finite rule: cpu/bilateral.hpp):
// the exp2 on the MUFU unit, shared-memory staging of an image tile, and the plan base that holds
// the host set-up. bilateral_cuda.cu (CUDA cores) and bilateral_tc.cu (Kondo's kernel-image-loop
// scheme on the tensor cores) use them.
#pragma once
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/bilateral.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {

// 2^x in one MUFU.EX2 (relative error ~2^-22, -inf -> 0, NaN -> NaN); doubles use exp2.
__device__ __forceinline__ float bl_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ double bl_exp2(double x) { return exp2(x); }

__device__ __forceinline__ float bl_load(float v) { return v; }
__device__ __forceinline__ double bl_load(double v) { return v; }
__device__ __forceinline__ float bl_load(__half v) { return __half2float(v); }

// Copies the rows x cols tile at (y0, x0) of `in` (ih x iw, row stride `is`) into `tile`
// (pitch `cols`) as T, zero outside the image; all threads of the block take part.
template <class T, class S>
__device__ __forceinline__ void bl_stage(T* tile, const S* __restrict__ in, std::int64_t is,
                                         int ih, int iw, int y0, int x0, int rows, int cols) {
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = tid; i < rows * cols; i += nthreads) {
    const int r = i / cols, c = i - r * cols, y = y0 + r, x = x0 + c;
    tile[i] = (y < ih && x < iw) ? static_cast<T>(bl_load(in[static_cast<std::int64_t>(y) * is + x]))
                                 : T(0);
  }
}

// Shared memory a block may use before the kernels read the image from global memory instead
// (very large radii: the window's rows no longer fit beside each other).
constexpr std::size_t kBilateralSmemMax = 96 * 1024;

// True (and the kernel's dynamic shared memory raised to `smem`) when the tile fits.
template <class Kernel>
bool bl_use_smem(Kernel kern, std::size_t smem, int device) {
  int optin = 0;
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > std::min<std::size_t>(kBilateralSmemMax, static_cast<std::size_t>(optin)))
    return false;
  raise_dynamic_smem(kern, smem);
  return true;
}

// Base of the bilateral plans: the device copy of the spatial weights (the only workspace) and
// the choice between the shared-memory and the global-memory form of a kernel.
class BilateralPlanBase : public CudaPlan {
 public:
  using CudaPlan::CudaPlan;
  std::size_t workspace_bytes() const override { return weights_.bytes(); }

 protected:
  template <class Kernel>
  void set_smem(Kernel smem_form, std::size_t smem) {
    smem_ = smem;
    use_smem_ = bl_use_smem(smem_form, smem, device());
  }
  template <class Kernel, class... Args>
  void launch(Kernel smem_form, Kernel global_form, dim3 grid, dim3 block, cudaStream_t stream,
              Args... args) {
    (use_smem_ ? smem_form : global_form)<<<grid, block, use_smem_ ? smem_ : 0, stream>>>(
        args...);
    TC_CUDA_LAUNCH_CHECK();
  }
  DeviceBuffer weights_;

 private:
  std::size_t smem_ = 0;
  bool use_smem_ = true;
};

}  // namespace cuda
}  // namespace tc
