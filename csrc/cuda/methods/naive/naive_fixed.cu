// naive_shmem's fp32 variant for odd square kernels of 3..17 taps a side (naive_fixed.cuh: the
// shape compiled in, taps as uniform FFMA operands, outputs along rows; k = 9 and 15 by Winograd
// F(2, 3) down the columns). make_naive_shmem_plan
// takes it where it applies (plan option naive_shmem.fixed). H100, 4096^2, kernel time: see
// naive_fixed.cuh; the generic kernel takes 0.10 / 0.385 ms at k = 3 / 15.
#include <algorithm>
#include <memory>
#include <string>

#include "cuda/runtime/common.cuh"
#include "cuda/methods/naive/naive_fixed.cuh"

namespace tc {
namespace cuda {
namespace {

template <int K>
class FixedPlan final : public BatchedCudaPlan {
  using G = nfix::Geo<K>;

 public:
  explicit FixedPlan(const PlanRequest& r) : BatchedCudaPlan(r) {
    nfix::fill_taps(taps_, r.kernel, wino_ok_);
    int dev = 0, sms = 0, per_sm = 0;
    TC_CUDA_CHECK(cudaGetDevice(&dev));
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    for (auto kern : {nfix::fixed_kernel<K, true>, nfix::fixed_kernel<K, false>})
      TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(G::smem_bytes)));
    TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, nfix::fixed_kernel<K, true>, G::NT, G::smem_bytes));
    ctas_ = std::max(1, per_sm) * sms;
  }
  std::size_t workspace_bytes() const override { return 0; }  // taps travel with the launch
  bool set_kernel(const double* k) override {
    nfix::fill_taps(taps_, k, wino_ok_);
    return true;
  }

 protected:
  // One launch for the whole stack: persistent CTAs share the rows of every image's strips.
  void run_device_batch(const Tensor2D& in, std::int64_t in_bstride, const Tensor2D& out,
                        std::int64_t out_bstride, std::int64_t batch,
                        cudaStream_t stream) override {
    nfix::Args a{};
    a.in = in.ptr<float>();
    a.in_ld = in.row_stride;
    a.in_bstride = in_bstride;
    a.ih = static_cast<int>(in.rows);
    a.iw = static_cast<int>(in.cols);
    a.out = out.ptr<float>();
    a.out_ld = out.row_stride;
    a.out_bstride = out_bstride;
    a.oh = static_cast<int>(out.rows);
    a.ow = static_cast<int>(out.cols);
    a.strips = ceil_div(a.ow, G::TW);
    a.wino_off = !wino_ok_;
    const bool vec = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && a.in_ld % 4 == 0 &&
                     (batch == 1 || in_bstride % 4 == 0);
    const int grid = nfix::launch_grid<G>(a, batch, ctas_);
    if (vec)
      nfix::fixed_kernel<K, true><<<grid, G::NT, G::smem_bytes, stream>>>(a, taps_);
    else
      nfix::fixed_kernel<K, false><<<grid, G::NT, G::smem_bytes, stream>>>(a, taps_);
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  nfix::Taps<K, G::WINO> taps_;
  bool wino_ok_ = false;  // G::WINO and every transformed tap finite (else every step direct)
  int ctas_ = 1;          // CTAs the GPU holds at once
};

template <int K>
std::unique_ptr<Plan> make_if(const PlanRequest& r) {
  if constexpr (K > kNaiveFixedMaxTaps) {
    return nullptr;
  } else {
    if (r.kh == K) return std::make_unique<FixedPlan<K>>(r);
    return make_if<K + 2>(r);
  }
}

}  // namespace

bool naive_fixed_applies(const PlanRequest& r) {
  // one kernel per plan (per-image kernels take the generic kernel)
  const bool fits = r.precision == Precision::fp32 && !r.complex_data && r.kernel_count == 1 &&
                    r.kh == r.kw && r.kh % 2 == 1 && r.kh >= 3 && r.kh <= kNaiveFixedMaxTaps;
  if (r.options.naive_shmem_fixed == Tri::off) return false;
  if (r.options.naive_shmem_fixed == Tri::on && !fits)
    throw ValueError("naive_shmem.fixed=True takes real fp32 data and one odd square kernel "
                     "of 3.." +
                     std::to_string(kNaiveFixedMaxTaps) + " taps a side; this plan is " +
                     precision_name(r.precision) + (r.complex_data ? " complex" : "") + " with a " +
                     std::to_string(r.kh) + "x" + std::to_string(r.kw) + " kernel");
  return fits;
}

std::unique_ptr<Plan> make_naive_fixed_plan(const PlanRequest& r) { return make_if<3>(r); }

}  // namespace cuda
}  // namespace tc
