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
// Here: a CTA stages dB + ĥK - 1 image rows of 128 + ĥW + 16 columns; each warp takes output rows
// in turn and walks the 128 / 16 + 1 patches of its row (the last one, shared with the next CTA,
// only for its negative diagonals). Wᵀ fragments stay in registers (NX·KC ≤ 16 tiles), the
// patch comes by ldmatrix.trans. The diagonals of each patch's 16×16 D are summed into a per-warp
// row of pixel sums in shared memory: Wᵀ's rows are ordered x(g) = 2g, x(g+8) = 2g+1, so lane
// (g, t)'s 8 accumulator elements lie on 6 diagonals 2(t-g) + {-1,0,1} (+8 for the second n8
// half); lanes (g, t), (g+1, t+1), ... share them and are summed by two shuffles, and the head
// of each such chain adds its 6 sums to the row (one step per slot, __syncwarp between them, as
// heads' slots overlap). The row is written out once per output row.
#include "../../core/factories.hpp"
#include "fir.cuh"

namespace tc {
namespace cuda {
namespace fir {

namespace {
// Per-warp pixel sums: offset o of the CTA's columns (-16 <= o < Wc + 16) at racc[o + 16].
__host__ __device__ inline int racc_words(int Wc) { return Wc + 32; }
}  // namespace

std::size_t dki_extra_smem(const Geo& g) { return sizeof(float) * kWarps * racc_words(g.Wc); }

template <class T, int NX, int KC>
__global__ void __launch_bounds__(kWarps * 32) dki_kernel_t(Args a) {
  using S = typename T::Stage;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const Cta cta(g);
  const int c0 = cta.c0, r0 = cta.r0, warp = cta.warp, lane = cta.lane, gq = cta.gq, tq = cta.tq;
  float* racc = reinterpret_cast<float*>(smem_raw + stage_bytes(g)) + warp * racc_words(g.Wc);
  for (int i = lane; i < racc_words(g.Wc); i += 32) racc[i] = 0.f;

  std::uint32_t af[NX][KC][4];
  const S* kt = static_cast<const S*>(a.kt);
#pragma unroll
  for (int xt = 0; xt < NX; ++xt)
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) load_wt_frag<true>(af[xt][kc], kt, g.hKp, xt, kc, lane);

  const S* sS = stage<T>(a, smem_raw, r0, c0);
  // ldmatrix.x4.trans: matrix q = lane/8 is (patch rows 8(q&1).., columns 8(q>>1)..), so
  // registers 0-1 are the B fragment of patch columns 0-7, registers 2-3 of columns 8-15.
  const S* lane_b = sS + (((lane >> 3) & 1) * 8 + (lane & 7)) * g.ldS + (lane >> 4) * 8;
  const bool step1 = gq <= 6 && tq <= 2, step2 = gq <= 5 && tq <= 1;
  const bool head = tq == 0 || gq == 0;
  const int npatch = g.Wc / 16 + 1;

  for (int rr = warp; rr < g.dB; rr += kWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    for (int p = 0; p < npatch; ++p) {
      if (c0 + 16 * p - 15 >= g.wR) break;  // no pixel of this patch is an output
      float acc[2][4] = {};
#pragma unroll
      for (int kc = 0; kc < KC; ++kc)
#pragma unroll
        for (int xt = 0; xt < NX; ++xt) {
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, lane_b + (rr + 16 * kc) * g.ldS + 16 * (p + xt));
          mma_acc<T>(acc[0], af[xt][kc], b);
          mma_acc<T>(acc[1], af[xt][kc], b + 2);
        }
      // Element (row g or g+8, column 8h + 2t + e) lies on diagonal 8h + 2(t-g) + e - (row/8).
      float v[6] = {acc[0][2], acc[0][0] + acc[0][3], acc[0][1],
                    acc[1][2], acc[1][0] + acc[1][3], acc[1][1]};
#pragma unroll
      for (int k = 0; k < 6; ++k) {
        const float u = __shfl_down_sync(0xffffffffu, v[k], 5);
        if (step1) v[k] += u;
      }
#pragma unroll
      for (int k = 0; k < 6; ++k) {
        const float u = __shfl_down_sync(0xffffffffu, v[k], 10);
        if (step2) v[k] += u;
      }
      float* q = racc + 16 + 16 * p + 2 * (tq - gq);
#pragma unroll
      for (int k = 0; k < 6; ++k) {
        if (head) q[k < 3 ? k - 1 : k + 4] += v[k];
        __syncwarp();
      }
    }
    for (int o = lane; o < g.Wc; o += 32) {
      const int j = c0 + o;
      if (j < g.wR) emit<T>(a, r, j, racc[16 + o]);
    }
    __syncwarp();
    for (int i = lane; i < racc_words(g.Wc); i += 32) racc[i] = 0.f;
    __syncwarp();
  }
}

template <class T>
KernelFn dki_kernel(const Geo& g) {
#define TC_FIR_DKI(X_, K_) \
  case X_ * 8 + K_: return dki_kernel_t<T, X_, K_>;
#define TC_FIR_DKI_K(X_) TC_FIR_DKI(X_, 1) TC_FIR_DKI(X_, 2) TC_FIR_DKI(X_, 3) TC_FIR_DKI(X_, 4)
  switch (g.NX * 8 + g.KC) {
    TC_FIR_DKI_K(1) TC_FIR_DKI_K(2) TC_FIR_DKI_K(3) TC_FIR_DKI_K(4)
  }
#undef TC_FIR_DKI_K
#undef TC_FIR_DKI
  throw ValueError("fir_dki: no kernel for this block shape");
}

#define TC_FIR_INST(T) template KernelFn dki_kernel<T>(const Geo&);
TC_FIR_FOR_PRECISIONS(TC_FIR_INST)
#undef TC_FIR_INST

}  // namespace fir
}  // namespace cuda

std::unique_ptr<Plan> make_fir_dki_plan(const PlanRequest& r) {
  return cuda::fir::make_plan_for(r, cuda::fir::Scheme::dki);
}
}  // namespace tc
