// im2tensor (Algorithm 1): P = K̂ᵀŜ on tensor cores without materializing S; each warp reads the
// rows of I its fragment tile needs straight from global memory (L1/L2 do the reuse), P goes to
// a workspace, then the Tr₊ pass sums its diagonals.
#include "cuda/methods/im2tensor/im2tensor.cuh"

namespace tc {
std::unique_ptr<Plan> make_im2tensor_plan(const PlanRequest& r) {
  return cuda::i2t::make_plan_for<false, cuda::i2t::Epi::store_p>(r);
}
}  // namespace tc
