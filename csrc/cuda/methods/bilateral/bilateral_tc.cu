// "bilateral_tc_32x8x16" / "bilateral_tc_16x16x16": Kondo et al. (2022) kernel-image-loop (KI)
// unrolling of the bilateral filter on the tensor cores, eqs. (10)-(11). For one kernel row u and
// 16 taps v of it, A (pixels x taps) holds the range-weighted values of each output pixel p,
//   numerator:   A[p][v] = w_r(I(q) - I(p)) (I(q) - I(p)) / 4,   denominator: A[p][v] = w_r(...),
// and B's first column holds the 16 spatial weights w_s(u, v) (its other columns are zero): the
// first column of D = A B accumulates the numerator (denominator) of every pixel of A. The paper's
// two fp16 layouts differ in how many pixels one product serves: 16 (16x16x16: M = 16, N = 16, the
// useful column is 1/16 of D) or 32 (32x8x16: M = 32, N = 8, 1/8 of D). Both run as mma.sync
// m16n8k16 (fp16 in, fp32 accumulate): 32x8x16 = the two M halves against one B; 16x16x16 = per
// 16 pixels the two N halves (the second B all zero, as the layout has it). Taps past the kernel
// in the last 16-tap chunk get A = 0 (so a NaN there cannot leak in through a zero weight).
// (I(q) - I(p)) / 4 keeps w_r d inside fp16's range for any two fp16 values; the output is
// p + 4 num / den. The weights w_r are computed on the CUDA cores (one MUFU.EX2 each) as in the
// paper: the tensor cores only replace the two accumulating FMAs per tap (benchmark notes).
#include "core/factories.hpp"
#include "cuda/methods/bilateral/bilateral.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int WARPS = 8, PX = 32;  // a warp computes 32 pixels of one row; a block 8 rows

__device__ __forceinline__ void mma16816(float (&d)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

// NB = number of n8 blocks of the layout's N: 2 for 16x16x16, 1 for 32x8x16.
// SMEM: tile (float) and spatial weights (half, k x kc) in shared memory; else global reads.
template <int NB, bool SMEM>
__global__ void __launch_bounds__(WARPS * 32)
    bilateral_ki(const __half* __restrict__ in, std::int64_t is, int ih, int iw,
                 __half* __restrict__ out, std::int64_t os, int oh, int ow, int k, int kc,
                 const __half* __restrict__ ws_g, float cr16) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.y, lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int x0 = blockIdx.x * PX, y0 = blockIdx.y * WARPS;
  const int tw = PX + kc - 1, th = WARPS + k - 1;
  const __half* ws;
  const float* tile = nullptr;
  if constexpr (SMEM) {
    __half* wss = reinterpret_cast<__half*>(smem_raw);
    float* ts = reinterpret_cast<float*>(smem_raw + ((static_cast<std::size_t>(k) * kc * 2 + 15) & ~std::size_t(15)));
    for (int i = warp * 32 + lane; i < k * kc; i += WARPS * 32) wss[i] = ws_g[i];
    bl_stage(ts, in, is, ih, iw, y0, x0, th, tw);
    __syncthreads();
    ws = wss;
    tile = ts;
  } else {
    ws = ws_g;
  }
  // Value of padded pixel (row y0 + warp + u, column x0 + c); global reads clamp inside.
  auto at = [&](int u, int c) -> float {
    if constexpr (SMEM) {
      return tile[(warp + u) * tw + c];
    } else {
      const int y = min(y0 + warp + u, ih - 1), x = min(x0 + c, iw - 1);
      return __half2float(in[static_cast<std::int64_t>(y) * is + x]);
    }
  };
  const int rad = k / 2;
  // This lane's pixels: rows g and g + 8 of each 16-pixel M tile.
  float p[2][2], pq[2][2];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      p[m][h] = at(rad, m * 16 + g + 8 * h + rad);
      pq[m][h] = -0.25f * p[m][h];
    }
  float dn[2][NB][4] = {}, dd[2][NB][4] = {};
  for (int u = 0; u < k; ++u) {
    for (int c0 = 0; c0 < kc; c0 += 16) {
      // B (16 x 8, col-major fragment): column 0 = spatial weights of taps c0 .. c0 + 15.
      std::uint32_t b0 = 0, b1 = 0;
      if (g == 0) {
        b0 = *reinterpret_cast<const std::uint32_t*>(ws + u * kc + c0 + 2 * t);
        b1 = *reinterpret_cast<const std::uint32_t*>(ws + u * kc + c0 + 2 * t + 8);
      }
      const bool tail = c0 + 16 > k;
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        std::uint32_t an[4], ad[4];
        // A fragment registers: {row g, taps 2t..}, {row g+8, 2t..}, {row g, 2t+8..}, {g+8, 2t+8..}
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int h = j & 1, kk = 2 * t + 8 * (j >> 1);
          float wv[2], wd[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float q = at(u, m * 16 + g + 8 * h + c0 + kk + e);
            const float d = fmaf(q, 0.25f, pq[m][h]);
            float w = bl_exp2(d * (d * cr16));
            if (tail && c0 + kk + e >= k) w = 0.f;
            wv[e] = w;
            wd[e] = (tail && c0 + kk + e >= k) ? 0.f : w * d;
          }
          an[j] = pack_half2(wd[0], wd[1]);
          ad[j] = pack_half2(wv[0], wv[1]);
        }
        mma16816(dn[m][0], an, b0, b1);
        mma16816(dd[m][0], ad, b0, b1);
        if constexpr (NB == 2) {  // the 16x16x16 layout's second N half: B columns 8..15 = 0
          mma16816(dn[m][1], an, 0u, 0u);
          mma16816(dd[m][1], ad, 0u, 0u);
        }
      }
    }
  }
  // Column 0 of D: lanes with t == 0 hold rows g (c[0]) and g + 8 (c[2]).
  if (t == 0) {
    const int y = y0 + warp;
    if (y < oh) {
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int x = x0 + m * 16 + g + 8 * h;
          const float num = dn[m][0][2 * h], den = dd[m][0][2 * h];
          if (x < ow)
            out[static_cast<std::int64_t>(y) * os + x] =
                __float2half_rn(p[m][h] + 4.0f * (num / den));
        }
    }
  }
}

template <int NB>
class BilateralTcPlan final : public BilateralPlanBase {
 public:
  explicit BilateralTcPlan(const PlanRequest& r) : BilateralPlanBase(r) {
    const BilateralSetup s = bilateral_setup(r);
    const int k = static_cast<int>(kh_);
    kc_ = (k + 15) / 16 * 16;
    std::vector<__half> ws(static_cast<std::size_t>(k) * kc_, __float2half(0.f));
    for (int u = 0; u < k; ++u)
      for (int v = 0; v < k; ++v)
        ws[static_cast<std::size_t>(u) * kc_ + v] =
            __float2half(static_cast<float>(r.kernel[static_cast<std::size_t>(u) * k + v]));
    weights_.upload(ws.data(), ws.size() * sizeof(__half));
    // d is (q - p) / 4, so the exponent's coefficient is 16 cr.
    cr16_ = static_cast<float>(std::max(16.0 * s.cr, -static_cast<double>(FLT_MAX)));
    set_smem(bilateral_ki<NB, true>,
             ((static_cast<std::size_t>(k) * kc_ * 2 + 15) & ~std::size_t(15)) +
                 static_cast<std::size_t>(WARPS + k - 1) * (PX + kc_ - 1) * sizeof(float));
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    launch(bilateral_ki<NB, true>, bilateral_ki<NB, false>,
           dim3(ceil_div(ow, PX), ceil_div(oh, WARPS)), dim3(32, WARPS), stream,
           in.ptr<__half>(), in.row_stride, static_cast<int>(in.rows),
           static_cast<int>(in.cols), out.ptr<__half>(), out.row_stride, oh, ow,
           static_cast<int>(kh_), kc_, weights_.get<__half>(), cr16_);
  }

 private:
  int kc_ = 16;
  float cr16_ = 0;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_bilateral_tc_32x8x16_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return std::make_unique<cuda::BilateralTcPlan<1>>(r);
}

std::unique_ptr<Plan> make_bilateral_tc_16x16x16_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return std::make_unique<cuda::BilateralTcPlan<2>>(r);
}

}  // namespace tc
