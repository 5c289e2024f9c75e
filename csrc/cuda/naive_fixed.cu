// naive_shmem's fp32 variant for odd square kernels of 3..17 taps a side (naive_fixed.cuh: the
// shape compiled in, taps as uniform FFMA operands). make_naive_shmem_plan takes it where it
// applies (plan option naive_shmem.fixed). H100, 4096^2, kernel time (benchmarks/
// naive_fixed_harness.cu): 0.070 / 0.109 / 0.141 / 0.217 ms at k = 3 / 7 / 11 / 15, where the
// generic kernel took 0.10 / - / - / 0.385 and toeplitz_tc's fp32 (DMMA) 0.079 / - / - / 0.255.
#include <algorithm>
#include <memory>
#include <string>

#include "common.cuh"
#include "naive_fixed.cuh"

namespace tc {
namespace cuda {
namespace {

template <int K>
class FixedPlan final : public BatchedCudaPlan {
 public:
  explicit FixedPlan(const PlanRequest& r) : BatchedCudaPlan(r) {
    for (int i = 0; i < K * K; ++i) taps_.k[i] = static_cast<float>(r.kernel[i]);
  }
  std::size_t workspace_bytes() const override { return 0; }  // taps travel with the launch

 protected:
  // One launch per 65535 images (gridDim.z); row tiles past gridDim.y are walked by the blocks.
  void run_device_batch(const Tensor2D& in, std::int64_t in_bstride, const Tensor2D& out,
                        std::int64_t out_bstride, std::int64_t batch,
                        cudaStream_t stream) override {
    constexpr int TH = nfix::kTY * nfix::kR;
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const dim3 block(nfix::kTX, nfix::kTY);
    for (std::int64_t b0 = 0; b0 < batch; b0 += 65535) {
      const dim3 grid(ceil_div(ow, nfix::kTX), std::min(ceil_div(oh, TH), 65535),
                      static_cast<unsigned>(std::min<std::int64_t>(batch - b0, 65535)));
      nfix::fixed_kernel<K><<<grid, block, 0, stream>>>(
          in.ptr<float>() + b0 * in_bstride, in.row_stride, static_cast<int>(in.rows),
          static_cast<int>(in.cols), out.ptr<float>() + b0 * out_bstride, out.row_stride, oh, ow,
          in_bstride, out_bstride, taps_);
      TC_CUDA_LAUNCH_CHECK();
    }
  }

 private:
  nfix::Taps<K> taps_;
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
  const bool fits = r.precision == Precision::fp32 && !r.complex_data && r.kh == r.kw &&
                    r.kh % 2 == 1 && r.kh >= 3 && r.kh <= kNaiveFixedMaxTaps;
  if (r.options.naive_shmem_fixed == Tri::off) return false;
  if (r.options.naive_shmem_fixed == Tri::on && !fits)
    throw ValueError("naive_shmem.fixed=True takes real fp32 data and odd square kernels of 3.." +
                     std::to_string(kNaiveFixedMaxTaps) + " taps a side; this plan is " +
                     precision_name(r.precision) + (r.complex_data ? " complex" : "") + " with a " +
                     std::to_string(r.kh) + "x" + std::to_string(r.kw) + " kernel");
  return fits;
}

std::unique_ptr<Plan> make_naive_fixed_plan(const PlanRequest& r) { return make_if<3>(r); }

}  // namespace cuda
}  // namespace tc
