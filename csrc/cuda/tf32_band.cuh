// A 1-D filter along one axis of a shared-memory tile as banded matrix products on the tf32
// tensor cores (mma.sync m16n8k8): for 16 lines m of the tile and 8 outputs n of group p,
//   D[m][n] = sum_k data[m][8p + n + k] * coef[k]  =  sum_j A_j[m][.] * Band_{j-p}[.][n],
// where A_j is the j-th 8-wide chunk of the data and Band_d[k][n] = coef[8d + k - n] (zero
// outside the kernel), so the FMAs of a filter tap run on the tensor cores: one MMA does 1024
// multiply-adds where an FFMA does 32. The band's zeros cost MMA work, which is cheap here.
// For tf32 data only: fp32 by 3xTF32 (x = hi + lo) was measured and dropped (benchmark notes):
// summed in the MMA's truncating fp32 accumulator it biased long positive sums (Gaussian k = 55
// MAPE 9.9e-5 % vs 8.3e-6 % with FFMAs), and summed chunk by chunk with FADDs it was no faster.
#pragma once
#include <cuda_runtime.h>

namespace tc {
namespace cuda {

constexpr int kBandGroups = 4;  // output groups of 8 per warp: 32 outputs along the filter

// Round-to-nearest (ties away) to tf32, as bits; exact for |x| < 2^126 (callers check).
__device__ __forceinline__ unsigned tf32_bits(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Chunks d of the band in B-fragment order, one uint2 per lane: {Band_d[q][g], Band_d[q + 4][g]}
// (g = lane / 4, q = lane % 4), tf32-rounded. Built once per block
// by the block's `threads` threads; `coef` has `len` taps.
template <class Coef>
__device__ __forceinline__ void build_band(uint2* band, const Coef& coef, int len, int nd,
                                           int tid, int threads) {
  auto tap = [&](int i) { return i >= 0 && i < len ? static_cast<float>(coef[i]) : 0.0f; };
  for (int i = tid; i < nd * 32; i += threads) {
    const int d = i >> 5, lane = i & 31, g = lane >> 2, q = lane & 3;
    band[i] = make_uint2(tf32_bits(tap(8 * d + q - g)), tf32_bits(tap(8 * d + q + 4 - g)));
  }
}

// acc[p] += the 16 x 8 outputs of group p (fragment layout of mma m16n8k8: acc[p][0..3] =
// D[g][2q], D[g][2q + 1], D[g + 8][2q], D[g + 8][2q + 1]). data[m][i] = src[m * sm + i * si]
// for i < 8 * (kBandGroups + ND - 1), rounded to tf32 here unless ROUND is false (data already
// tf32, e.g. results of an earlier pass); the band has ND chunks (zero past the kernel's taps). Returns true (in this lane) if a datum is not finite or |x| >= 2^126:
// acc must not be used then (inf * 0 in the band's zeros gives NaN where the direct sum does
// not; tf32_bits overflows): see band_direct.
template <int ND, bool ROUND>
__device__ __forceinline__ bool band_filter(float (&acc)[kBandGroups][4], const float* src,
                                            int sm, int si, const uint2* band) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  uint2 bf[ND];
#pragma unroll
  for (int d = 0; d < ND; ++d) bf[d] = band[d * 32 + lane];
  const float* s0 = src + g * sm + q * si;
  const float* s8 = s0 + 8 * sm;
  bool bad = false;
#pragma unroll
  for (int j = 0; j < kBandGroups + ND - 1; ++j) {
    const float x[4] = {s0[8 * j * si], s8[8 * j * si], s0[(8 * j + 4) * si], s8[(8 * j + 4) * si]};
    unsigned a[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      bad |= !(fabsf(x[e]) < 0x1p126f);
      a[e] = ROUND ? tf32_bits(x[e]) : __float_as_uint(x[e]);
    }
#pragma unroll
    for (int p = 0; p < kBandGroups; ++p) {
      const int d = j - p;
      if (d >= 0 && d < ND) mma_tf32(acc[p], a, bf[d].x, bf[d].y);  // compile-time test
    }
  }
  return bad;
}

// The same outputs in the same layout by direct FMAs over the `len` taps (load() applies the
// precision's operand rounding): the fallback of a warp whose data band_filter refused, so that
// NaN/inf reach only their own windows. Rare, so kept short rather than fast.
template <class Coef, class Load>
__device__ __forceinline__ void band_direct(float (&acc)[kBandGroups][4], const float* src, int sm,
                                         int si, const Coef& coef, int len, Load load) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int p = 0; p < kBandGroups; ++p) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float* x = src + (g + 8 * (e >> 1)) * sm + (8 * p + 2 * q + (e & 1)) * si;
      float s = 0.0f;
#pragma unroll 1
      for (int k = 0; k < len; ++k) s = fmaf(load(x[k * si]), static_cast<float>(coef[k]), s);
      acc[p][e] = s;
    }
  }
}

}  // namespace cuda
}  // namespace tc
