// separable's row pass of the two-pass form (fp16's half2 lanes, kernels over 64 taps, or plan
// option separable.fused = False): T[t, x] = sum_v b[v] in[t, x + v] into a ring of T rows.
#pragma once
#include "cuda/runtime/sliding.cuh"
#include "cuda/methods/separable/separable.cuh"

namespace tc {
namespace cuda {
namespace sep {

// ---- row pass ------------------------------------------------------------------------------
// Lanes map to image rows (W rows per lane: t and t + BX), threadIdx.y to groups of R outputs
// along x. The tile is stored transposed (x down, rows across) so that the sliding window runs
// along x with conflict-free reads; results go back through shared memory for coalesced stores.
template <Precision P>
__global__ void __launch_bounds__(BX* BY)
    row_pass(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride, int t0,
             int t1, int iw, typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow,
             const typename Prec<P>::Vec* __restrict__ b, int kw) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OX = BY * R, W = T::W, TR = BX * W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sb = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sb + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int x0 = blockIdx.x * OX;
  for (int tb = t0 + blockIdx.y * TR; tb < t1; tb += gridDim.y * TR) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int v0 = 0; v0 < kw; v0 += CT) {
      const int cv = imin(CT, kw - v0), arows = OX + cv - 1;
      __syncthreads();
      // Division-free staging: lanes along x (coalesced reads; the odd pitch keeps the
      // transposed shared stores conflict-free), warps over the block's rows.
      for (int r_ = ty; r_ < BX; r_ += BY) {
        const int t = tb + r_;
        const typename T::Store* row0 = in + t * in_stride;
        const typename T::Store* row1 = in + (t + BX) * in_stride;
#pragma unroll 2
        for (int a = tx; a < arows; a += BX) {
          const int x = x0 + v0 + a;
          typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
          if (x < iw) {
            if (t < t1) e0 = T::load(row0[x]);
            if (W == 2 && t + BX < t1) e1 = T::load(row1[x]);
          }
          tile[a * PITCH_T + r_] = T::pack(e0, e1);
        }
      }
      for (int i = tid; i < cv; i += BX * BY) sb[i] = b[v0 + i];
      __syncthreads();
      slide_column<T, R, kSumBlock<P>>(acc, tile + ty * R * PITCH_T + tx, PITCH_T, cv,
                                      [&](int v) { return sb[v]; });
    }
    __syncthreads();  // reuse the tile to transpose the results
#pragma unroll
    for (int r = 0; r < R; ++r) tile[(ty * R + r) * PITCH_T + tx] = acc[r];
    __syncthreads();
    for (int tl = ty; tl < TR; tl += BY) {
      const int t = tb + tl;
      if (t >= t1) break;
      typename T::Elem* dst = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
      for (int xl = tx; xl < OX; xl += BX) {
        const int x = x0 + xl;
        if (x < ow) dst[x] = T::lane(tile[xl * PITCH_T + (tl % BX)], tl / BX);
      }
    }
  }
}

}  // namespace sep
}  // namespace cuda
}  // namespace tc
