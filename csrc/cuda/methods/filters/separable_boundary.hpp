// One-launch separable 2-D filter with scipy.ndimage's boundary modes built in (the kernel is
// csrc/cuda/methods/filters/separable_boundary.cu): tensorconv.filters.gaussian's GPU path. Plain C++
// so that the bindings include it in CPU-only builds too.
#pragma once
#include <cstdint>

#include "core/types.hpp"

namespace tc {

// scipy.ndimage's modes (the values the bindings pass): reflect = 'd c b a | a b c d',
// mirror = 'd c b | a b c d', nearest = edge, wrap = periodic, constant = cval.
enum class NdMode : int { reflect = 0, constant = 1, nearest = 2, mirror = 3, wrap = 4 };

struct SeparableBoundaryArgs {
  const void* in = nullptr;  // device, rows x cols, unit column stride
  std::int64_t rows = 0, cols = 0, in_stride = 0;
  void* out = nullptr;       // device, rows x cols
  std::int64_t out_stride = 0;
  DType dtype = DType::f32;  // f32 (fp32 sums) or f64
  // Host float64 weights: w0 (k0 taps, axis 0, rows) then w1 (k1 taps, axis 1), correlation
  // order, both lengths odd (the centre tap is the output pixel); copied into the launch.
  const double* weights = nullptr;
  int k0 = 1, k1 = 1;
  int mode0 = 0, mode1 = 0;  // NdMode per axis
  double cval = 0.0;
  std::uintptr_t stream = 0;
  int tile_rows = 0;  // 0: chosen per kernel length; 16, 32 or 64 to force (tuning)
  // Kernel variant (tuning harness benchmarks/harness/separable_boundary_check.cu; not user-facing):
  // 0 the default rule, 1 the generic kernel (any taps, fp32/fp64), 2.. the fp32 kernels with
  // the tap count compiled in (k0 == k1 <= 23; separable_boundary_fixed.cu); a forced variant
  // that does not apply is a ValueError.
  int variant = 0;
};

// Whether the fused kernel takes these kernel lengths and image (shared memory and grid limits
// of the current device); when not, the caller takes another path.
bool separable_boundary_supported(std::int64_t rows, std::int64_t cols, int k0, int k1,
                                  DType dtype);
// Launches on a.stream (no synchronization); ValueError for what it does not support, CUDA
// errors (launch configuration) as exceptions.
void separable_boundary(const SeparableBoundaryArgs& a);
// Number of variants (valid SeparableBoundaryArgs::variant values are 0 .. n - 1) and a short
// name of each, for the tuning harness's table.
int separable_boundary_variants();
const char* separable_boundary_variant_name(int v);
// The calling host thread's last launch (tuning harness): variant run, tile rows, block size,
// resident blocks per SM, registers per thread, shared bytes per block.
struct SeparableBoundaryLaunch {
  const void* kernel = nullptr;
  int variant = 0, tile_rows = 0, threads = 0, blocks_per_sm = 0, regs = 0;
  long long smem = 0;
};
SeparableBoundaryLaunch separable_boundary_last_launch();

}  // namespace tc
