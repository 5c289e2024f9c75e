// cp.async (sm_80+): global -> shared copies that bypass registers, so a block can stage its next
// tile while it computes on the current one. A short source (src-size < 16) is zero-filled,
// which is how tiles are padded past the image edge.
#pragma once
#include <cuda_runtime.h>

namespace tc {
namespace cuda {

// A 16-byte copy of which only the first `bytes` (0..16) come from gmem; the rest is zeroed.
__device__ __forceinline__ void cp_async_bytes(void* smem, const void* gmem, int bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes)
               : "memory");
}

// A 4-byte copy (both addresses 4-byte aligned), through L1: small tables staged beside a tile.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}

// Waits for this thread's outstanding copies; a __syncthreads() must follow before other
// threads read them.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

}  // namespace cuda
}  // namespace tc
