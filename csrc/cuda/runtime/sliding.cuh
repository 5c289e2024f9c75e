// The inner loop shared by naive_shmem and the separable passes: one thread accumulates R
// consecutive outputs along a column of a shared-memory tile, sliding a register window of R
// values down the column, so each tap costs one shared load + one coefficient load for R FMAs.
// Lanes of a warp read consecutive columns of one row: no bank conflicts.
#pragma once
#include <cuda_runtime.h>

namespace tc {
namespace cuda {

// acc[r] += sum_{t < n} s[(r + t) * pitch] * coef(t), for r < R. Reads rows 0 .. n + R - 2.
// B > 0 (a multiple of R): each block of B taps is summed apart and then added to acc, so a long
// sum's rounding grows with its blocks, not its taps (the separable passes' two-pass form, which
// takes kernels past 64 taps: an fp32 Gaussian of 161 taps on the H100 had MAPE 1.3e-5 % as one
// running sum).
template <class T, int R, int B = 0, class Vec, class Coef>
__device__ __forceinline__ void slide_column(Vec (&acc)[R], const Vec* s, int pitch, int n,
                                             Coef coef) {
  static_assert(B % R == 0, "blocks of whole steps of R taps");
  Vec w[R];
#pragma unroll
  for (int r = 0; r < R - 1; ++r) w[r] = s[r * pitch];
  Vec part[B > 0 ? R : 1];
  // Row a lives in w[a % R]; the loop is unrolled by R so every index is a compile-time one.
  // (An unguarded copy for full blocks of R was measured slower: more code, more registers.)
  for (int t0 = 0; t0 < n; t0 += R) {
    if constexpr (B > 0) {
      if (t0 % B == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) part[r] = T::zero();
      }
    }
#pragma unroll
    for (int q = 0; q < R; ++q) {
      if (t0 + q < n) {
        w[(q + R - 1) % R] = s[(t0 + q + R - 1) * pitch];
        const Vec k = coef(t0 + q);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if constexpr (B > 0) T::fma(part[r], w[(q + r) % R], k);
          else T::fma(acc[r], w[(q + r) % R], k);
        }
      }
    }
    if constexpr (B > 0) {
      if ((t0 + R) % B == 0 || t0 + R >= n) {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = T::add(acc[r], part[r]);
      }
    }
  }
}

}  // namespace cuda
}  // namespace tc
