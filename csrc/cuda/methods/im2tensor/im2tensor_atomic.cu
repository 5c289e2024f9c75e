// im2tensor_atomic: the fused variant with its partial diagonal sums added atomically into R
// (zeroed first); no workspace. The order of the (at most a few) additions per pixel depends on
// scheduling, so the last bits may differ between runs.
#include "cuda/methods/im2tensor/im2tensor.cuh"

namespace tc {
std::unique_ptr<Plan> make_im2tensor_atomic_plan(const PlanRequest& r) {
  return cuda::i2t::make_plan_for<true, cuda::i2t::Epi::atomic_r>(r);
}
}  // namespace tc
