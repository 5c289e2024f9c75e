// separable's column pass of the two-pass form: out[y, x] (+)= sum_u a[u] T[y + u, x] over the
// ring of T rows the row pass wrote.
#pragma once
#include "cuda/runtime/sliding.cuh"
#include "cuda/methods/separable/separable.cuh"

namespace tc {
namespace cuda {
namespace sep {

// ---- column pass ---------------------------------------------------------------------------
// Lanes map to columns (W per lane: x and x + BX), threadIdx.y to groups of R output rows.
// FIRST: no running sum to add; LAST: write the storage type to `out`, else the running sum.
template <Precision P, bool FIRST, bool LAST>
__global__ void __launch_bounds__(BX* BY)
    column_pass(const typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow, int y0,
                int y1, int t_end, typename Prec<P>::Elem* sum, std::int64_t sum_stride,
                typename Prec<P>::Store* out, std::int64_t out_stride,
                const typename Prec<P>::Vec* __restrict__ a, int kh, int* nf) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OH = BY * R, W = T::W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sa = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sa + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int xb = blockIdx.x * BX * W;
  for (int yb = y0 + blockIdx.y * OH; yb < y1; yb += gridDim.y * OH) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int u0 = 0; u0 < kh; u0 += CT) {
      const int cu = imin(CT, kh - u0), rows = OH + cu - 1;
      __syncthreads();
      for (int r_ = ty; r_ < rows; r_ += BY) {
        const int t = yb + u0 + r_, x = xb + tx;
        typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
        if (t < t_end) {
          const typename T::Elem* row = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
          if (x < ow) e0 = T::round(row[x]);
          if (W == 2 && x + BX < ow) e1 = T::round(row[x + BX]);
        }
        tile[r_ * BX + tx] = T::pack(e0, e1);
      }
      for (int i = tid; i < cu; i += BX * BY) sa[i] = a[u0 + i];
      __syncthreads();
      slide_column<T, R, kSumBlock<P>>(acc, tile + ty * R * BX + tx, BX, cu,
                                      [&](int u) { return sa[u]; });
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int y = yb + ty * R + r;
      if (y >= y1) break;
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const int x = xb + tx + l * BX;
        if (x >= ow) continue;
        emit<P, FIRST, LAST>(T::lane(acc[r], l), sum + y * sum_stride + x,
                             out + y * out_stride + x, nf);
      }
    }
  }
}

}  // namespace sep
}  // namespace cuda
}  // namespace tc
