// fir_ki: kernel-image-loop unrolling (Kondo et al. 2022, §IV-B, Fig. 2, eq. 9), in the paper's
// two WMMA layouts:
//   16×16×16 (fir_ki): the first row of A holds 16 weights of one kernel row y, A[0][k] =
//     K[y][16xc + k] (the other rows are zero), and B is the transposed one-pixel-slid windows,
//     B[k][n] = I[r + y][j0 + n + 16xc + k]; the first row of D is then row y's share of the 16
//     pixels j0 .. j0+15;
//   32×8×16 (fir_ki_32x8): the same product transposed into the 32-row shape, A[m][k] =
//     I[r + y][j0 + m + 16xc + k] (32 windows), the first column of B the weights; the first
//     column of D is 32 pixels, twice the useful elements per instruction (paper §IV-B).
// Every kernel row and 16-column chunk adds into the same accumulator (the first row/column maps
// to the same pixels), so a pixel group costs kh·⌈kw/16⌉ tiles. The Hankel operand starts at any
// column: its fragments are filled from the staged rows element by element. On mma.sync m16n8k16
// a 16×16×16 tile is two n8 halves and a 32×8×16 tile two m16 halves.
#include "core/factories.hpp"
#include "cuda/methods/fir/fir.cuh"

namespace tc {
namespace cuda {
namespace fir {

template <class T, bool WIDE>
__global__ void __launch_bounds__(kWarps * 32) ki_kernel_t(Args a) {
  using S = typename T::Stage;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const Cta cta(g);
  const int c0 = cta.c0, r0 = cta.r0, warp = cta.warp, gq = cta.gq, tq = cta.tq;
  const S* kt = static_cast<const S*>(a.kt);  // K̂ᵀ[x][y]
  const S* sS = stage<T>(a, smem_raw, r0, c0);
  constexpr int NPIX = WIDE ? 32 : 16;
  const std::uint32_t zero = 0u;

  for (int rr = warp; rr < g.dB; rr += kWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    for (int o0 = 0; o0 < g.Wc; o0 += NPIX) {
      if (c0 + o0 >= g.wR) break;
      float acc[2][4] = {};
      for (int y = 0; y < g.kh; ++y) {
        for (int xc = 0; xc < g.NX; ++xc) {
          // weights K[y][16xc + 2t (+1, +8, +9)]: the lanes of row / column 0 only
          std::uint32_t w0 = zero, w1 = zero;
          if (gq == 0) {
            const S* k = kt + (16 * xc + 2 * tq) * g.hKp + y;
            w0 = pack2(k[0], k[g.hKp]);
            w1 = pack2(k[8 * g.hKp], k[9 * g.hKp]);
          }
          // window pairs: element (window g, k = 2t) at offset g + 2t of the row chunk
          const S* p = sS + (rr + y) * g.ldS + o0 + 16 * xc + gq + 2 * tq;
          if constexpr (WIDE) {
            const std::uint32_t p0 = load_pair_any(p), p8 = load_pair_any(p + 8),
                                p16 = load_pair_any(p + 16), p24 = load_pair_any(p + 24),
                                p32 = load_pair_any(p + 32);
            const std::uint32_t a0[4] = {p0, p8, p8, p16}, a1[4] = {p16, p24, p24, p32};
            const std::uint32_t b[2] = {w0, w1};
            mma_acc<T>(acc[0], a0, b);
            mma_acc<T>(acc[1], a1, b);
          } else {
            const std::uint32_t p0 = load_pair_any(p), p8 = load_pair_any(p + 8),
                                p16 = load_pair_any(p + 16);
            const std::uint32_t af[4] = {w0, zero, w1, zero};
            const std::uint32_t b0[2] = {p0, p8}, b1[2] = {p8, p16};
            mma_acc<T>(acc[0], af, b0);
            mma_acc<T>(acc[1], af, b1);
          }
        }
      }
      if constexpr (WIDE) {
        // column 0 of D: lanes t = 0 hold rows g and g + 8 of each m16 half
        if (tq == 0) {
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int j = c0 + o0 + 16 * h + gq + 8 * e;
              if (j < g.wR) emit<T>(a, r, j, acc[h][2 * e]);
            }
        }
      } else {
        // row 0 of D: lanes g = 0 hold columns 2t, 2t+1 of each n8 half
        if (gq == 0) {
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int j = c0 + o0 + 8 * h + 2 * tq + e;
              if (j < g.wR) emit<T>(a, r, j, acc[h][e]);
            }
        }
      }
    }
  }
}

template <class T>
KernelFn ki_kernel(const Geo&, bool wide) {
  return wide ? ki_kernel_t<T, true> : ki_kernel_t<T, false>;
}

#define TC_FIR_INST(T) template KernelFn ki_kernel<T>(const Geo&, bool);
TC_FIR_FOR_PRECISIONS(TC_FIR_INST)
#undef TC_FIR_INST

}  // namespace fir
}  // namespace cuda

std::unique_ptr<Plan> make_fir_ki_plan(const PlanRequest& r) {
  return cuda::fir::make_plan_for(
      r, r.options.fir_ki_32x8 ? cuda::fir::Scheme::ki32 : cuda::fir::Scheme::ki16);
}
std::unique_ptr<Plan> make_fir_ki_32x8_plan(const PlanRequest& r) {
  return cuda::fir::make_plan_for(r, cuda::fir::Scheme::ki32);
}
}  // namespace tc
