// CUDA half of tensorconv.astropy's NaN interpolation (see ../cpu/nan_interp.hpp): marking the
// invalid pixels (zeroed in place, listed with one atomic per warp), a scatter of their weights
// (fp64 atomics), and one thread per output for the finish (with the exact window recompute
// where the weight sum cancels). All pointers are device pointers; everything runs on the
// caller's stream and the invalid count stays on the device (no host sync).
#include "cpu/nan_interp.hpp"
#include "cuda/runtime/common.cuh"

namespace tc {
namespace {

// S[pr - u, pc - v] += w[u, v] over the kernel row u of invalid pixel n (t = n * kh + u).
template <class S>
__device__ __forceinline__ void scatter_one(const NanInterpArgs& a, std::int64_t t) {
  const std::int64_t n = t / a.kh, u = t % a.kh;
  const std::int64_t p = a.nan_idx[n];
  const std::int64_t pr = p / a.p_cols, pc = p % a.p_cols;
  const std::int64_t orow = pr - u;
  if (orow < 0 || orow >= a.out_rows) return;
  const std::int64_t c0 = pc - a.kw + 1 > 0 ? pc - a.kw + 1 : 0;
  const std::int64_t c1 = pc < a.out_cols - 1 ? pc : a.out_cols - 1;
  S* srow = static_cast<S*>(a.s) + orow * a.out_cols;
  const double* w = a.kernel + u * a.kw;
  for (std::int64_t oc = c0; oc <= c1; ++oc) atomicAdd(srow + oc, static_cast<S>(w[pc - oc]));
}

// A grid-stride loop: the count may live in device memory, so no host sync sizes the grid.
template <class S>
__global__ void scatter_kernel(NanInterpArgs a) {
  const std::int64_t work = (a.n_nan_dev ? *a.n_nan_dev : a.n_nan) * a.kh;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       t < work; t += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    scatter_one<S>(a, t);
}

template <class T, class S>
__global__ void finish_kernel(NanInterpArgs a) {
  const std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (t >= a.out_rows * a.out_cols) return;
  const std::int64_t i = t / a.out_cols, j = t % a.out_cols;
  T* top = static_cast<T*>(a.top) + i * a.out_stride + j;
  const T v = nan_interp_detail::finish<T>(
      a, static_cast<const T*>(a.p0), i, j, *top,
      static_cast<double>(static_cast<const S*>(a.s)[i * a.out_cols + j]));
  *top = v;
  if (v != v && a.nan_results)  // rare: windows without valid weight
    atomicAdd(reinterpret_cast<unsigned long long*>(a.nan_results), 1ull);
}

template <class T, class S>
void launch(const NanInterpArgs& a, cudaStream_t stream, int sms) {
  if (a.n_nan_dev || a.n_nan > 0) {
    scatter_kernel<S><<<static_cast<unsigned>(sms * 8), 256, 0, stream>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  }
  const std::int64_t outputs = a.out_rows * a.out_cols;
  finish_kernel<T, S><<<static_cast<unsigned>((outputs + 255) / 256), 256, 0, stream>>>(a);
  TC_CUDA_LAUNCH_CHECK();
}

template <class T>
__global__ void mark_kernel(T* p, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                            std::uint8_t* invalid, std::int64_t* idx, unsigned long long* count,
                            bool nonfinite) {
  const std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  bool bad = false;
  if (t < rows * cols) {
    T* q = p + (t / cols) * stride + t % cols;
    const T v = *q;
    bad = nonfinite ? !isfinite(v) : isnan(v);
    invalid[t] = bad;
    if (bad) *q = T(0);
  }
  const unsigned lanes = __ballot_sync(0xffffffffu, bad);  // one atomic per warp
  if (!lanes) return;
  const int lane = threadIdx.x & 31, leader = __ffs(lanes) - 1;
  unsigned long long base = 0;
  if (lane == leader) base = atomicAdd(count, static_cast<unsigned long long>(__popc(lanes)));
  base = __shfl_sync(0xffffffffu, base, leader);
  if (bad) idx[base + __popc(lanes & ((1u << lane) - 1u))] = t;
}

}  // namespace

void nan_mark_cuda(void* p, std::int64_t rows, std::int64_t cols, std::int64_t stride, DType dtype,
                   std::uint8_t* invalid, std::int64_t* idx, std::int64_t* count, bool nonfinite,
                   std::uintptr_t stream_handle) {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  const unsigned grid = static_cast<unsigned>((n + 255) / 256);
  auto* cnt = reinterpret_cast<unsigned long long*>(count);
  if (dtype == DType::f64)
    mark_kernel<double><<<grid, 256, 0, stream>>>(static_cast<double*>(p), rows, cols, stride,
                                                  invalid, idx, cnt, nonfinite);
  else if (dtype == DType::f32)
    mark_kernel<float><<<grid, 256, 0, stream>>>(static_cast<float*>(p), rows, cols, stride,
                                                 invalid, idx, cnt, nonfinite);
  else
    throw TypeError("nan_mark: storage must be float32 or float64");
  TC_CUDA_LAUNCH_CHECK();
}

void nan_interp_cuda(const NanInterpArgs& a) {
  if (a.dtype != DType::f32 && a.dtype != DType::f64)
    throw TypeError("nan_interp: storage must be float32 or float64");
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(a.stream);
  int dev = 0, sms = 0;
  TC_CUDA_CHECK(cudaGetDevice(&dev));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (a.dtype == DType::f64)
    a.s_f32 ? launch<double, float>(a, stream, sms) : launch<double, double>(a, stream, sms);
  else
    a.s_f32 ? launch<float, float>(a, stream, sms) : launch<float, double>(a, stream, sms);
}

}  // namespace tc
