// fir_dki: diagonal kernel-image-loop unrolling (Kondo et al. 2022, §IV-C, Fig. 3, Table II).
//
// As kernel-loop unrolling, the tensor core multiplies the transposed weights by a pixel patch,
// D = Wᵀ × P with Wᵀ[x][y] = K[y][x] and P[y][n] = I[r + y][j0 + n]: D[x][n] is kernel column
// x's sum for the pixel whose column x sits at patch column n, i.e. pixel j0 + n - x. KL keeps
// only the diagonal n = x; DKI (Table II) uses every diagonal d = n - x of D, each one a column
// sum of pixel j0 + d. A patch therefore contributes to pixels j0 - 15 .. j0 + 15, and patches at
// a stride of the kernel width (16, the tile the kernel is padded to) make each (pixel, kernel
// column) product exactly once: pixel j gets diagonal (j - j0) mod 16 from patch j0 and the
// negative diagonal from the next patch. Kernels wider or taller than one tile add their tiles'
// products into the same D: tile (xt, kc) multiplies Wᵀ rows 16xt.. by patch rows 16kc.. and
// columns j0 + 16xt.., which lands on the same diagonals.
//
// Here: a CTA stages dB + ĥK - 1 image rows of Wc + ĥW + 32 columns; each warp takes output rows
// in turn and walks the row's patches two at a time. Wᵀ fragments stay in registers (NX·KC ≤ 16
// tiles), the patch comes by ldmatrix.trans, and each 16-column block of the row is loaded once
// and multiplied by every Wᵀ tile (tile xt of patch p is block p + xt), so a warp keeps the
// accumulators of the NX + 1 patches a block feeds.
//
// Diagonal sums without shared memory. In the m16n8k16 accumulator lane (g, t) holds D rows x = g,
// g+8 and columns n = 2t+e, 2t+8+e (e = 0, 1), i.e. pixels j0 + s + {-8, 0, 0, +8} with
// s = 2t - g + e: D[g][n] and D[g+8][n+8] share a pixel, and D[g][2t+8+e] of patch p shares one
// with D[g+8][2t+e] of patch p+1 (16 - 8), so a lane sums in registers every product of the pixels
// ≡ s (mod 8) that it holds, one complete value per pixel. Over a pair of patches (j0 = 32P + 16q)
// those are 4 values per e, placed in the slots k of the pair's window of 32 pixels
// [32P - 16, 32P + 16): pixel (s mod 8) - 16 + 8k; lanes with s < 0 take their slot 0 from the
// previous pair (a carried value), the others hand their last value to the next pair. The 4 lanes
// with equal 2t - g (mod 8), one per t, hold the same slots: a reduce-scatter over them (lane ^ 18
// swaps slot halves, then the t ^ 1 partner, g ± 2, swaps single slots) leaves each lane slot t of
// both its e, and one shuffle from lane (g + 1, t) adds the other e of the same pixel. 7 shuffles
// per 32 pixels, no shared-memory traffic; lane (g, t) ends with pixel 32P - 16 + 8t + ((2t-g) & 7)
// of the window, so a warp's 32 stores are 32 consecutive pixels.
#include "core/factories.hpp"
#include "cuda/methods/fir/fir.cuh"

namespace tc {
namespace cuda {
namespace fir {

// The 8 accumulators of one patch (two n8 halves) += Wᵀ tile × B fragment of one 16-column block.
template <class T>
__device__ __forceinline__ void dki_mma(float* acc, const std::uint32_t* a, const std::uint32_t* b) {
  mma_acc<T>(acc, a, b);
  mma_acc<T>(acc + 4, a, b + 2);
}

template <class T, int NX, int KC, bool REUSE>
__global__ void __launch_bounds__(kWarps * 32) dki_kernel_t(Args a) {
  using S = typename T::Stage;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const Cta cta(g);
  const int c0 = cta.c0, r0 = cta.r0, warp = cta.warp, lane = cta.lane, gq = cta.gq, tq = cta.tq;

  std::uint32_t af[NX][KC][4];
  const S* kt = static_cast<const S*>(a.kt);
#pragma unroll
  for (int xt = 0; xt < NX; ++xt)
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) load_wt_frag(af[xt][kc], kt, g.hKp, xt, kc, lane);

  const S* sS = stage<T>(a, smem_raw, r0, c0);
  // ldmatrix.x4.trans: matrix q = lane/8 is (patch rows 8(q&1).., columns 8(q>>1)..), so
  // registers 0-1 are the B fragment of patch columns 0-7, registers 2-3 of columns 8-15.
  const S* lane_b = sS + (((lane >> 3) & 1) * 8 + (lane & 7)) * g.ldS + (lane >> 4) * 8;
  // The lane's place in the reduction (see the top of this file).
  const bool neg0 = 2 * tq - gq < 0, neg1 = 2 * tq - gq + 1 < 0;
  const bool hi1 = tq & 2, hi0 = tq & 1;
  const int src2 = 4 * ((gq + (hi0 ? 6 : 2)) & 7) + (tq ^ 1);
  const int src3 = 4 * ((gq + 1) & 7) + tq;
  const int jl = 8 * tq + ((2 * tq - gq) & 7) - 16;
  const int npair = (g.Wc + 47) / 32;  // windows [32P - 16, 32P + 16) covering [0, Wc)
  const int jend = min(c0 + g.Wc, g.wR);

  for (int rr = warp; rr < g.dB; rr += kWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    const S* brow = lane_b + rr * g.ldS;
    float hc[2] = {0.f, 0.f}, ca[2] = {0.f, 0.f};  // carries (D[g][2t+8+e]; slot 4 of a pair)
    float R[NX + 1][8];  // REUSE: patches 2P .. 2P + NX of the current pair
    if constexpr (REUSE) {
#pragma unroll
      for (int i = 0; i < NX + 1; ++i)
#pragma unroll
        for (int e = 0; e < 8; ++e) R[i][e] = 0.f;
      // Blocks 0 .. NX-2 feed patches 0 .. NX-2 before the first pair.
#pragma unroll
      for (int b = 0; b + 1 < NX; ++b)
#pragma unroll
        for (int kc = 0; kc < KC; ++kc) {
          std::uint32_t bf[4];
          ldmatrix_x4_trans(bf, brow + 16 * kc * g.ldS + 16 * b);
#pragma unroll
          for (int xt = 0; xt <= b; ++xt) dki_mma<T>(R[b - xt], af[xt][kc], bf);
        }
    }
    for (int P = 0; P < npair; ++P) {
      if (c0 + 32 * P - 16 >= g.wR) break;  // no output pixel in this window (warp-uniform)
      if constexpr (REUSE) {
#pragma unroll
        for (int e = 0; e < 8; ++e) R[NX - 1][e] = R[NX][e] = 0.f;
#pragma unroll
        for (int bo = NX - 1; bo <= NX; ++bo)
#pragma unroll
          for (int kc = 0; kc < KC; ++kc) {
            std::uint32_t bf[4];
            ldmatrix_x4_trans(bf, brow + 16 * kc * g.ldS + 16 * (2 * P + bo));
#pragma unroll
            for (int xt = 0; xt < NX; ++xt) dki_mma<T>(R[bo - xt], af[xt][kc], bf);
          }
      } else {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
#pragma unroll
          for (int e = 0; e < 8; ++e) R[q][e] = 0.f;
          if (q == 1 && P + 1 == npair) break;  // the last pair's second patch feeds no output
#pragma unroll
          for (int kc = 0; kc < KC; ++kc)
#pragma unroll
            for (int xt = 0; xt < NX; ++xt) {
              std::uint32_t bf[4];
              ldmatrix_x4_trans(bf, brow + 16 * kc * g.ldS + 16 * (2 * P + q + xt));
              dki_mma<T>(R[q], af[xt][kc], bf);
            }
        }
      }
      float w[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        // Pixels 32P + s + {-8, 0} (patch 2P) and + {8, 16} (patch 2P + 1).
        const float b0 = R[0][2 + e] + hc[e], a0 = R[0][e] + R[0][6 + e];
        const float b1 = R[1][2 + e] + R[0][4 + e], a1 = R[1][e] + R[1][6 + e];
        hc[e] = R[1][4 + e];
        const bool neg = e ? neg1 : neg0;
        const float s0 = neg ? b0 : ca[e], s1 = neg ? a0 : b0;
        const float s2 = neg ? b1 : a0, s3 = neg ? a1 : b1;
        ca[e] = a1;
        float kl = hi1 ? s2 : s0, kh = hi1 ? s3 : s1;
        kl += __shfl_xor_sync(0xffffffffu, hi1 ? s0 : s2, 18);
        kh += __shfl_xor_sync(0xffffffffu, hi1 ? s1 : s3, 18);
        w[e] = (hi0 ? kh : kl) + __shfl_sync(0xffffffffu, hi0 ? kl : kh, src2);
      }
      const float v = w[0] + __shfl_sync(0xffffffffu, w[1], src3);
      const int j = c0 + 32 * P + jl;
      if (j >= c0 && j < jend) emit<T>(a, r, j, v);
      if constexpr (REUSE) {
#pragma unroll
        for (int i = 0; i + 2 <= NX; ++i)
#pragma unroll
          for (int e = 0; e < 8; ++e) R[i][e] = R[i + 2][e];
      }
    }
  }
}

template <class T, bool REUSE>
KernelFn dki_select(const Geo& g) {
#define TC_FIR_DKI(X_, K_) \
  case X_ * 8 + K_: return dki_kernel_t<T, X_, K_, REUSE>;
#define TC_FIR_DKI_K(X_) TC_FIR_DKI(X_, 1) TC_FIR_DKI(X_, 2) TC_FIR_DKI(X_, 3) TC_FIR_DKI(X_, 4)
  switch (g.NX * 8 + g.KC) {
    TC_FIR_DKI_K(1) TC_FIR_DKI_K(2) TC_FIR_DKI_K(3) TC_FIR_DKI_K(4)
  }
#undef TC_FIR_DKI_K
#undef TC_FIR_DKI
  throw ValueError("fir_dki: no kernel for this block shape");
}

// B reuse keeps NX + 1 patches' accumulators live: at 16 tiles that is ~130 registers, one CTA
// per SM, slower than loading each tile's B (harness, k = 63: 0.58 vs 0.46 ms at 256 x 32).
template <class T>
KernelFn dki_kernel(const Geo& g) {
  return g.NX * g.KC < 16 ? dki_select<T, true>(g) : dki_select<T, false>(g);
}

#define TC_FIR_INST(T) template KernelFn dki_kernel<T>(const Geo&);
TC_FIR_FOR_PRECISIONS(TC_FIR_INST)
#undef TC_FIR_INST

}  // namespace fir
}  // namespace cuda

// TC_FIR_DKI_KERNELS_ONLY: benchmarks/harness/fir_dki_harness.cu includes this file for its kernels alone.
#ifndef TC_FIR_DKI_KERNELS_ONLY
std::unique_ptr<Plan> make_fir_dki_plan(const PlanRequest& r) {
  return cuda::fir::make_plan_for(r, cuda::fir::Scheme::dki);
}
#endif
}  // namespace tc
