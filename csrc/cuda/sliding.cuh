// The inner loop shared by naive_shmem and the separable passes: one thread accumulates R
// consecutive outputs along a column of a shared-memory tile, sliding a register window of R
// values down the column, so each tap costs one shared load + one coefficient load for R FMAs.
// Lanes of a warp read consecutive columns of one row: no bank conflicts.
#pragma once
#include <cuda_runtime.h>

namespace tc {
namespace cuda {

// acc[r] += sum_{t < n} s[(r + t) * pitch] * coef(t), for r < R. Reads rows 0 .. n + R - 2.
template <class T, int R, class Vec, class Coef>
__device__ __forceinline__ void slide_column(Vec (&acc)[R], const Vec* s, int pitch, int n,
                                             Coef coef) {
  Vec w[R];
#pragma unroll
  for (int r = 0; r < R - 1; ++r) w[r] = s[r * pitch];
  // Row a lives in w[a % R]; the loop is unrolled by R so every index is a compile-time one.
  // (An unguarded copy for full blocks of R was measured slower: more code, more registers.)
  for (int t0 = 0; t0 < n; t0 += R) {
#pragma unroll
    for (int q = 0; q < R; ++q) {
      if (t0 + q < n) {
        w[(q + R - 1) % R] = s[(t0 + q + R - 1) * pitch];
        const Vec k = coef(t0 + q);
#pragma unroll
        for (int r = 0; r < R; ++r) T::fma(acc[r], w[(q + r) % R], k);
      }
    }
  }
}

}  // namespace cuda
}  // namespace tc
