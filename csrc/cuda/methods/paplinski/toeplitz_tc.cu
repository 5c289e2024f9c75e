// toeplitz_tc (beyond Paplinski 1995): the valid correlation as sums over kernel rows of image
// rows times banded Toeplitz blocks of rcm, on the tensor cores (toeplitz_tc.cuh). The plan
// holds the band table (each kernel row zero-padded, in the operands' format) and the taps for
// the non-finite fallback: O(kernel), nothing grows with the image.
#include "core/factories.hpp"
#include "cuda/methods/paplinski/toeplitz_tc.cuh"

namespace tc {
namespace cuda {
namespace tz {
namespace {

template <Precision P, class Gm>
class ToeplitzPlan final : public CudaPlan {
 public:
  explicit ToeplitzPlan(const PlanRequest& r)
      : CudaPlan(r), st_(prepare<P, Gm>(r.kernel, static_cast<int>(r.kh), static_cast<int>(r.kw))) {
    band_.upload(st_.band.data(), st_.band.size() * sizeof(st_.band[0]));
    kd_.upload(st_.kd.data(), st_.kd.size() * sizeof(st_.kd[0]));
  }

  std::size_t workspace_bytes() const override { return band_.bytes() + kd_.bytes(); }
  // A new kernel: its tables now (the geometry is the shape's), uploaded at the next call.
  bool set_kernel(const double* k) override {
    Setup<P, Gm> s = prepare<P, Gm>(k, static_cast<int>(kh_), static_cast<int>(kw_));
    if (s.band.size() != st_.band.size() || s.kd.size() != st_.kd.size()) return false;
    st_ = std::move(s);
    dirty_ = true;
    return true;
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    Args a{};
    a.in = in.data;
    a.in_ld = in.row_stride;
    a.out = out.data;
    a.out_ld = out.row_stride;
    a.ih = static_cast<int>(ih_);
    a.iw = static_cast<int>(iw_);
    a.oh = static_cast<int>(out.rows);
    a.ow = static_cast<int>(out.cols);
    a.kh = static_cast<int>(kh_);
    a.kw = static_cast<int>(kw_);
    if (dirty_) {  // pageable sources: staged before the calls return
      TC_CUDA_CHECK(cudaMemcpyAsync(band_.get(), st_.band.data(), band_.bytes(),
                                    cudaMemcpyHostToDevice, stream));
      TC_CUDA_CHECK(cudaMemcpyAsync(kd_.get(), st_.kd.data(), kd_.bytes(),
                                    cudaMemcpyHostToDevice, stream));
      dirty_ = false;
    }
    launch<P, Gm>(a, st_, band_.get(), kd_.get(), stream);
  }

 private:
  Setup<P, Gm> st_;
  DeviceBuffer band_, kd_;
  bool dirty_ = false;  // st_ holds a kernel the device buffers do not yet
};

}  // namespace
}  // namespace tz
}  // namespace cuda

std::unique_ptr<Plan> make_toeplitz_tc_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    constexpr Precision P = decltype(tag)::value;
    using C = cuda::tz::Cfg<P>;
    if constexpr (P == Precision::tf32) {  // geometry by kernel area (measured: Cfg<tf32>)
      const long long area = static_cast<long long>(r.kh) * static_cast<long long>(r.kw);
      if (area > C::kSmallArea && area <= C::kMidArea)
        return std::make_unique<cuda::tz::ToeplitzPlan<P, typename C::GeoMid>>(r);
    }
    return std::make_unique<cuda::tz::ToeplitzPlan<P, typename C::Geo>>(r);
  });
}

}  // namespace tc
