// fir_kl: kernel-loop unrolling (Kondo et al. 2022, §IV-A, Fig. 1, eqs. 5-6).
//
// For one output pixel (r, j), the transposed weights Wᵀ[x][y] = K[y][x] multiply the pixel
// patch P[y][n] = I[r + y][j + n]: D = Wᵀ × P, and D[x][x] = sum_y K[y][x] I[r+y][j+x] is
// kernel column x's share of the pixel (eq. 6), so the pixel is the trace of D. Kernels larger
// than one 16×16 tile add each tile's product (Wᵀ rows 16xt.., patch rows 16kc.., columns
// j + 16xt..) into the same D, whose trace is then the whole sum. Only the 16 diagonal elements
// of each 16×16 product are used: the paper's point that this pattern under-uses the tensor core.
// One warp per pixel: the patch starts at any column, so its fragments are filled from the staged
// rows element by element; the trace is a warp sum.
#include "core/factories.hpp"
#include "cuda/methods/fir/fir.cuh"

namespace tc {
namespace cuda {
namespace fir {

template <class T>
__global__ void __launch_bounds__(kWarps * 32) kl_kernel_t(Args a) {
  using S = typename T::Stage;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const Cta cta(g);
  const int c0 = cta.c0, r0 = cta.r0, warp = cta.warp, lane = cta.lane, gq = cta.gq, tq = cta.tq;
  const S* kt = static_cast<const S*>(a.kt);
  const S* sS = stage<T>(a, smem_raw, r0, c0);
  const int ldS = g.ldS;

  for (int rr = warp; rr < g.dB; rr += kWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    for (int o = 0; o < g.Wc; ++o) {
      const int j = c0 + o;
      if (j >= g.wR) break;
      float acc[2][4] = {};
      for (int kc = 0; kc < g.KC; ++kc) {
        for (int xt = 0; xt < g.NX; ++xt) {
          std::uint32_t af[4];
          load_wt_frag(af, kt, g.hKp, xt, kc, lane);
          // B = P (k = y, n = patch column): a lane holds rows 2t, 2t+1 (+8) of column g (+8).
          const S* p = sS + (rr + 16 * kc + 2 * tq) * ldS + o + 16 * xt + gq;
          const std::uint32_t b0[2] = {pack2(p[0], p[ldS]), pack2(p[8 * ldS], p[9 * ldS])};
          const std::uint32_t b1[2] = {pack2(p[8], p[ldS + 8]),
                                       pack2(p[8 * ldS + 8], p[9 * ldS + 8])};
          mma_acc<T>(acc[0], af, b0);
          mma_acc<T>(acc[1], af, b1);
        }
      }
      // D[m][m]: lane (g, t) holds (g, 2t + e) of the first n8 half and (g + 8, 8 + 2t + e) of
      // the second, diagonal when g = 2t + e.
      float d = gq == 2 * tq ? acc[0][0] + acc[1][2] : gq == 2 * tq + 1 ? acc[0][1] + acc[1][3]
                                                                          : 0.f;
#pragma unroll
      for (int s = 16; s >= 1; s >>= 1) d += __shfl_xor_sync(0xffffffffu, d, s);
      if (lane == 0) emit<T>(a, r, j, d);
    }
  }
}

template <class T>
KernelFn kl_kernel(const Geo&) {
  return kl_kernel_t<T>;
}

#define TC_FIR_INST(T) template KernelFn kl_kernel<T>(const Geo&);
TC_FIR_FOR_PRECISIONS(TC_FIR_INST)
#undef TC_FIR_INST

}  // namespace fir
}  // namespace cuda

std::unique_ptr<Plan> make_fir_kl_plan(const PlanRequest& r) {
  return cuda::fir::make_plan_for(r, cuda::fir::Scheme::kl);
}
}  // namespace tc
