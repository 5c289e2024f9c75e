// The NaN/inf repair pass (nonfinite.cuh): a direct float64 recompute of non-finite outputs.
#include <algorithm>

#include "cuda/runtime/nonfinite.cuh"

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

// Output rows per warp of mark_windows_kernel (each chunk reads its kh - 1 halo rows again).
constexpr int kWindowRows = 64;

// One warp per 32 output columns x chunk of kWindowRows output rows: input rows in order, each
// row's non-finite pixels as ballot masks of 32 columns, a lane's window [x, x + kw) tested on
// them; `last` is the latest row (of this chunk) whose window columns hold one, so output row y
// (input rows y .. y + kh - 1) is marked when last >= y. Reads each input row ~(1 + kw / 32)
// times per chunk, writes only the marked outputs.
template <class S>
__global__ void __launch_bounds__(256)
    mark_windows_kernel(const int* __restrict__ flag, const S* __restrict__ in, long long in_ld,
                        int iw, S* __restrict__ out, long long out_ld, int oh, int ow, int kh,
                        int kw) {
  if (*flag == 0) return;
  const int lane = threadIdx.x & 31;
  const int x0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 32;
  if (x0 >= ow) return;  // warp-uniform
  const int x = x0 + lane;
  const S marked = from_f64<S>(__longlong_as_double(0x7ff8000000000000LL));  // NaN
  for (int y0 = blockIdx.y * kWindowRows; y0 < oh; y0 += gridDim.y * kWindowRows) {
    const int y1 = min(y0 + kWindowRows, oh);
    int last = -1;
    for (int r = y0; r < y1 + kh - 1; ++r) {
      const S* row = in + static_cast<long long>(r) * in_ld;
      bool hit = false;
      for (int c = 0; c < 31 + kw; c += 32) {
        const int col = x0 + c + lane;
        const unsigned m = __ballot_sync(0xffffffffu, col < iw && nonfinite(row[col]));
        const int lo = max(lane - c, 0), hi = min(lane - c + kw, 32);  // the window's bits
        if (lo < hi)
          hit |= (m & (hi == 32 ? 0xffffffffu : (1u << hi) - 1u) & ~((1u << lo) - 1u)) != 0u;
      }
      if (hit) last = r;
      const int y = r - kh + 1;
      if (y >= y0 && x < ow && last >= y) out[static_cast<long long>(y) * out_ld + x] = marked;
    }
  }
}

template <class S>
void launch_mark_windows(const int* flag, const Tensor2D& in, const Tensor2D& out, int kh, int kw,
                         cudaStream_t st) {
  const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
  const dim3 grid(ceil_div(ow, 256), std::min(ceil_div(oh, kWindowRows), 65535));
  mark_windows_kernel<S><<<grid, 256, 0, st>>>(flag, in.ptr<S>(), in.row_stride,
                                               static_cast<int>(in.cols), out.ptr<S>(),
                                               out.row_stride, oh, ow, kh, kw);
  TC_CUDA_LAUNCH_CHECK();
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

void NonfiniteRepair::set_kernel(const double* k) {
  pending_.set(k, static_cast<std::size_t>(kh_) * kw_);
}

void NonfiniteRepair::flush(cudaStream_t st) const { pending_.upload(k_.get(), st); }

void NonfiniteRepair::arm(cudaStream_t st) const {
  flush(st);
  TC_CUDA_CHECK(cudaMemsetAsync(flag_.get(), 0, sizeof(int), st));
}

void NonfiniteRepair::run(const Tensor2D& in, const Tensor2D& out, cudaStream_t st,
                          bool flagged) const {
  flush(st);
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

void NonfiniteRepair::run_windows(const Tensor2D& in, const Tensor2D& out,
                                  cudaStream_t st) const {
  flush(st);
  if (out.rows == 0 || out.cols == 0) return;
  switch (in.dtype) {
    case DType::f16: launch_mark_windows<__half>(flag(), in, out, kh_, kw_, st); break;
    case DType::f32: launch_mark_windows<float>(flag(), in, out, kh_, kw_, st); break;
    case DType::f64: launch_mark_windows<double>(flag(), in, out, kh_, kw_, st); break;
    default: throw TypeError("non-finite repair: real float16/32/64 data only");
  }
  run(in, out, st, true);
}

}  // namespace cuda
}  // namespace tc
