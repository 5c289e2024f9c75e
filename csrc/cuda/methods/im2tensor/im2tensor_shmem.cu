// im2tensor_shmem: Algorithm 1 with K_block and S_block staged once per thread block in shared
// memory and reused by every warp and output row of the P_block; P to a workspace, then Tr₊.
// (Kernels too tall for the staged block fall back to reading S from global memory.)
#include "cuda/methods/im2tensor/im2tensor.cuh"

namespace tc {
std::unique_ptr<Plan> make_im2tensor_shmem_plan(const PlanRequest& r) {
  return cuda::i2t::make_plan_for<true, cuda::i2t::Epi::store_p>(r);
}
}  // namespace tc
