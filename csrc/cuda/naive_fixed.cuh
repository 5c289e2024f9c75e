// naive_shmem's fp32 variant for small square kernels (naive_fixed.cu): the kernel's shape is
// compiled in, so every tap is an FFMA whose coefficient is a uniform operand (the taps travel
// by value as a launch parameter) and the inner loop is FFMAs and shared loads only. A thread owns
// R outputs down one column; per kernel column v it loads the R + K - 1 image values of column
// x + v once and does R K FFMAs. Each kernel column's K products are summed apart, then the
// columns (two short sums instead of one of K^2 terms: H100, 4096^2, k = 15, median relative
// error 3.9e-6 % against naive_shmem's 1.5e-5 %). Measured on the H100 (benchmarks/
// naive_fixed_harness.cu): issue-bound, 83 % of issue slots busy, FFMAs 66 % of the instructions.
#pragma once
#include <cstdint>
#include <memory>

#include "../core/registry.hpp"
#include "common.cuh"

namespace tc {
namespace cuda {

constexpr int kNaiveFixedMaxTaps = 17;  // beyond, fft (rows) is the faster fp32 method
// Whether a naive_shmem plan takes this variant (naive_shmem.fixed: None where it fits; True
// refuses a plan it does not fit, naming why; False never), and its factory (naive_fixed.cu).
bool naive_fixed_applies(const PlanRequest& r);
std::unique_ptr<Plan> make_naive_fixed_plan(const PlanRequest& r);

namespace nfix {

template <int K> struct Taps {
  float k[K * K];
};

// Block: TX columns x TY row groups of R rows; its tile (TY R + K - 1) x (TX + K - 1) staged once.
constexpr int kR = 16, kTX = 128, kTY = 2;
template <int K> constexpr int min_blocks() { return K <= 9 ? 3 : 2; }

template <int K, int R = kR, int TX = kTX, int TY = kTY, int MINB = min_blocks<K>()>
__global__ void __launch_bounds__(TX * TY, MINB)
    fixed_kernel(const float* __restrict__ in, std::int64_t in_ld, int ih, int iw,
                 float* __restrict__ out, std::int64_t out_ld, int oh, int ow,
                 std::int64_t in_bstride, std::int64_t out_bstride,  // image blockIdx.z of a stack
                 const __grid_constant__ Taps<K> t) {
  constexpr int TH = TY * R, SH = TH + K - 1, SW = TX + K - 1;
  __shared__ float sm[SH * SW];  // consecutive threads read consecutive columns: no conflicts
  in += blockIdx.z * in_bstride;
  out += blockIdx.z * out_bstride;
  const int x0 = blockIdx.x * TX, tx = threadIdx.x, ry = threadIdx.y * R;
  for (int y0 = blockIdx.y * TH; y0 < oh; y0 += gridDim.y * TH) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.y * TX + tx; i < SH * SW; i += TX * TY) {
      const int r = i / SW, c = i - r * SW;
      const int gy = y0 + r, gx = x0 + c;
      sm[i] = gy < ih && gx < iw ? __ldg(in + gy * in_ld + gx) : 0.f;
    }
    __syncthreads();
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.f;
#pragma unroll
    for (int v = 0; v < K; ++v) {
      float col[R + K - 1];
#pragma unroll
      for (int i = 0; i < R + K - 1; ++i) col[i] = sm[(ry + i) * SW + tx + v];
      float part[R];
#pragma unroll
      for (int r = 0; r < R; ++r) part[r] = col[r] * t.k[v];
#pragma unroll
      for (int u = 1; u < K; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) part[r] = fmaf(col[r + u], t.k[u * K + v], part[r]);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] += part[r];
      // keeps the next column's shared loads below this one's FFMAs (hoisted, they spilled)
      asm volatile("" ::: "memory");
    }
    const int x = x0 + tx;
    if (x < ow) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int y = y0 + ry + r;
        if (y < oh) out[y * out_ld + x] = acc[r];
      }
    }
  }
}

}  // namespace nfix
}  // namespace cuda
}  // namespace tc
