// im2tensor_fused (Algorithm 2): shared-memory staging, diagonal sums inside each P_block, the
// partial sums written to the C buffer with the paper's row sharing (§4.2.4, eqs. 18-19), then
// the recombination pass. Workspace: hR × NC × wR partial sums (plan.workspace_bytes).
#include "cuda/methods/im2tensor/im2tensor.cuh"

namespace tc {
std::unique_ptr<Plan> make_im2tensor_fused_plan(const PlanRequest& r) {
  return cuda::i2t::make_plan_for<true, cuda::i2t::Epi::partial_c>(r);
}
}  // namespace tc
