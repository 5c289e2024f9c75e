// The NaN/inf repair pass (nonfinite.cuh): a direct float64 recompute of non-finite outputs.
#include <algorithm>

#include "nonfinite.cuh"

namespace tc {
namespace cuda {
namespace {

__device__ __forceinline__ double to_f64(__half v) { return __half2float(v); }
__device__ __forceinline__ double to_f64(float v) { return v; }
__device__ __forceinline__ double to_f64(double v) { return v; }
template <class S> __device__ __forceinline__ S from_f64(double v) { return static_cast<S>(v); }
template <> __device__ __forceinline__ __half from_f64<__half>(double v) {
  return __double2half(v);
}

// Grid-stride over the output rows (blockIdx.y) and 32-column segments, one warp per segment
// (warp-uniform loops: every lane takes part in the ballots and shuffles). The warp sums the
// window of each non-finite output of its segment in float64, lanes over the kh * kw taps, then
// one shuffle reduction: a thread alone took ~0.3 ms for 55x55 windows on the H100.
template <class S>
__global__ void __launch_bounds__(256)
    repair_kernel(const int* __restrict__ flag, const S* __restrict__ in, long long in_ld,
                  S* __restrict__ out, long long out_ld, int oh, int ow,
                  const double* __restrict__ k, int kh, int kw) {
  if (flag != nullptr && *flag == 0) return;
  const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
  const int first = (blockIdx.x * wpb + (threadIdx.x >> 5)) * 32, step = gridDim.x * wpb * 32;
  for (int y = blockIdx.y; y < oh; y += gridDim.y) {
    S* orow = out + static_cast<long long>(y) * out_ld;
    const S* irow = in + static_cast<long long>(y) * in_ld;
    for (int x0 = first; x0 < ow; x0 += step) {
      const int x = x0 + lane;
      unsigned bad = __ballot_sync(0xffffffffu, x < ow && nonfinite(orow[x]));
      while (bad != 0u) {
        const int xb = x0 + __ffs(bad) - 1;
        bad &= bad - 1u;
        double s = 0.0;
        int u = lane / kw, v = lane - u * kw;  // tap lane, lane + 32, ... in row-major order
        while (u < kh) {
          s = fma(to_f64(irow[static_cast<long long>(u) * in_ld + xb + v]),
                  k[static_cast<long long>(u) * kw + v], s);
          for (v += 32; v >= kw; v -= kw) ++u;
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) orow[xb] = from_f64<S>(s);
      }
    }
  }
}

}  // namespace

NonfiniteRepair::NonfiniteRepair(const PlanRequest& r)
    : kh_(static_cast<int>(r.kh)), kw_(static_cast<int>(r.kw)) {
  k_.upload(r.kernel, sizeof(double) * r.kh * r.kw);
  flag_.reset(sizeof(int));
  TC_CUDA_CHECK(cudaMemset(flag_.get(), 0, sizeof(int)));
  int dev = 0, sms = 0;
  TC_CUDA_CHECK(cudaGetDevice(&dev));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  blocks_ = 8 * sms;
}

void NonfiniteRepair::arm(cudaStream_t st) const {
  TC_CUDA_CHECK(cudaMemsetAsync(flag_.get(), 0, sizeof(int), st));
}

void NonfiniteRepair::run(const Tensor2D& in, const Tensor2D& out, cudaStream_t st,
                          bool flagged) const {
  const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
  const int bx = std::min(ceil_div(ow, 256), 8);
  const dim3 grid(bx, std::min(std::max(blocks_ / bx, 1), std::min(oh, 65535)));
  const int* f = flagged ? flag_.get<int>() : nullptr;
  const double* k = k_.get<double>();
  switch (in.dtype) {
    case DType::f16:
      repair_kernel<__half><<<grid, 256, 0, st>>>(f, in.ptr<__half>(), in.row_stride,
                                                  out.ptr<__half>(), out.row_stride, oh, ow, k,
                                                  kh_, kw_);
      break;
    case DType::f32:
      repair_kernel<float><<<grid, 256, 0, st>>>(f, in.ptr<float>(), in.row_stride,
                                                 out.ptr<float>(), out.row_stride, oh, ow, k,
                                                 kh_, kw_);
      break;
    case DType::f64:
      repair_kernel<double><<<grid, 256, 0, st>>>(f, in.ptr<double>(), in.row_stride,
                                                  out.ptr<double>(), out.row_stride, oh, ow, k,
                                                  kh_, kw_);
      break;
    default:
      throw TypeError("non-finite repair: real float16/32/64 data only");
  }
  TC_CUDA_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace tc
