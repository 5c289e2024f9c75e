// "naive" (im2tensor paper 5.1.2): one thread per output pixel loops over the kernel, reading the
// image and the kernel straight from global memory (through L1). fp16 carries two neighbouring
// pixels per thread in a half2, as the paper's baseline does.
#include <algorithm>

#include "core/factories.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {
namespace {

template <Precision P>
__global__ void __launch_bounds__(256)
    naive_kernel(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride,
                 typename Prec<P>::Store* __restrict__ out, std::int64_t out_stride, int oh,
                 int ow, const typename Prec<P>::Vec* __restrict__ k, int kh, int kw) {
  using T = Prec<P>;
  const int x = (blockIdx.x * blockDim.x + threadIdx.x) * T::W;
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < oh; y += gridDim.y * blockDim.y) {
    if (x >= ow) return;
    const bool pair = T::W == 2 && x + 1 < ow;  // the second lane exists
    typename T::Vec acc = T::zero();
    for (int u = 0; u < kh; ++u) {
      const typename T::Store* row = in + (y + u) * in_stride + x;
      const typename T::Vec* krow = k + u * kw;
      for (int v = 0; v < kw; ++v) {
        const typename T::Elem a = T::load(row[v]);
        const typename T::Elem b = pair ? T::load(row[v + 1]) : T::zero_elem();
        T::fma(acc, T::pack(a, b), __ldg(krow + v));
      }
    }
    typename T::Store* o = out + y * out_stride + x;
    o[0] = T::store(T::lane(acc, 0));
    if (pair) o[1] = T::store(T::lane(acc, 1));
  }
}

template <Precision P>
class NaivePlan final : public CudaPlan {
 public:
  explicit NaivePlan(const PlanRequest& r) : CudaPlan(r) {
    upload_coefficients<P>(r.kernel, r.kh * r.kw, coef_);
  }
  std::size_t workspace_bytes() const override { return 0; }  // the kernel is not "extra"

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    using T = Prec<P>;
    const dim3 block(32, 8);
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const dim3 grid(ceil_div(ceil_div(ow, T::W), block.x), std::min(ceil_div(oh, block.y), 65535));
    naive_kernel<P><<<grid, block, 0, stream>>>(
        in.ptr<typename T::Store>(), in.row_stride, out.ptr<typename T::Store>(), out.row_stride,
        oh, ow, coef_.get<typename T::Vec>(), static_cast<int>(kh_), static_cast<int>(kw_));
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  DeviceBuffer coef_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_naive_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    return std::make_unique<cuda::NaivePlan<decltype(tag)::value>>(r);
  });
}

}  // namespace tc
