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
  // Row a lives in w[a % R]; steps are unrolled by R so every index is a compile-time one.
  // Full blocks of R taps run unguarded (lets the compiler hoist the next shared loads).
  auto step = [&](int t, int q) {
    w[(q + R - 1) % R] = s[(t + R - 1) * pitch];
    const Vec k = coef(t);
#pragma unroll
    for (int r = 0; r < R; ++r) T::fma(acc[r], w[(q + r) % R], k);
  };
  int t0 = 0;
  for (; t0 + R <= n; t0 += R) {
#pragma unroll
    for (int q = 0; q < R; ++q) step(t0 + q, q);
  }
  if (t0 < n) {
#pragma unroll
    for (int q = 0; q < R; ++q)
      if (t0 + q < n) step(t0 + q, q);
  }
}

// Global -> shared staging of n elements by NT threads with U loads in flight per thread (a
// plain loop keeps one, which leaves HBM latency-bound). fetch(i) returns {value, shared index}.
template <class Vec>
struct Staged {
  Vec v;
  int s;
};

template <int U, int NT, class Vec, class Fetch>
__device__ __forceinline__ void stage_tile(Vec* dst, int n, int tid, Fetch fetch) {
  for (int i0 = tid; i0 < n; i0 += NT * U) {
    Staged<Vec> e[U];
#pragma unroll
    for (int j = 0; j < U; ++j)
      if (i0 + j * NT < n) e[j] = fetch(i0 + j * NT);
#pragma unroll
    for (int j = 0; j < U; ++j)
      if (i0 + j * NT < n) dst[e[j].s] = e[j].v;
  }
}

}  // namespace cuda
}  // namespace tc
