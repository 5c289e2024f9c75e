// A 1-D filter along one axis of a shared-memory tile as banded matrix products on the tensor
// cores (mma.sync m16n8k8): for 16 lines m of the tile and 8 outputs n of group p,
//   D[m][n] = sum_k data[m][8p + n + k] * coef[k]  =  sum_j A_j[m][.] * Band_{j-p}[.][n],
// where A_j is the j-th 8-wide chunk of the data and Band_d[k][n] = coef[8d + k - n] (zero
// outside the kernel), so the FMAs of a filter tap run on the tensor cores: one MMA does 1024
// multiply-adds where an FFMA does 32. The band's zeros cost MMA work, which is cheap here.
// Two operand types, the same fragment layout (m16n8k8 tf32 and f64 share it):
//  - BandTf32: tf32 operands, fp32 accumulator (the tf32 precision);
//  - BandF64: fp32 data and taps widened to fp64 (exact products), fp64 accumulator (DMMA):
//    fp32 results at least as accurate as fp32 FMAs. fp32 by 3xTF32 (x = hi + lo) was measured
//    and dropped (benchmark notes): summed in the MMA's truncating fp32 accumulator it biased
//    long positive sums (Gaussian k = 55 MAPE 9.9e-5 % vs 8.3e-6 % with FFMAs), and summed chunk
//    by chunk with FADDs it was no faster.
#pragma once
#include <cuda_runtime.h>

namespace tc {
namespace cuda {

// Output groups of 8 per warp in fused_pass: 32 outputs along the filter (fused_ws_pass: 8).
constexpr int kBandGroups = 4;

// Round-to-nearest (ties away) to tf32, as bits; exact for |x| < 2^126 (callers check).
__device__ __forceinline__ unsigned tf32_bits(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}

struct BandTf32 {
  using Acc = float;
  using Op = unsigned;  // tf32 bits
  using BFrag = uint2;
  static constexpr float kLimit = 0x1p126f;  // tf32_bits is exact below
  __device__ static Op op(float x, bool round) { return round ? tf32_bits(x) : __float_as_uint(x); }
  __device__ static BFrag bfrag(float b0, float b1) {
    return make_uint2(tf32_bits(b0), tf32_bits(b1));
  }
  __device__ static void mma(Acc (&d)[4], const Op (&a)[4], BFrag b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  }
};

struct BandF64 {
  using Acc = double;
  using Op = double;
  using BFrag = double2;
  static constexpr float kLimit = __builtin_huge_valf();  // finite fp32: exact in fp64
  __device__ static Op op(float x, bool) { return static_cast<double>(x); }
  __device__ static BFrag bfrag(float b0, float b1) { return make_double2(b0, b1); }
  __device__ static void mma(Acc (&d)[4], const Op (&a)[4], BFrag b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // f64 m16n8k8: sm_90 on (plans check)
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b.x), "d"(b.y));
#else
    __trap();
#endif
  }
};

// Chunks d of the band in B-fragment order, one BFrag per lane: {Band_d[q][g], Band_d[q + 4][g]}
// (g = lane / 4, q = lane % 4). Built once per block by the block's `threads` threads; `coef`
// has `len` taps.
template <class M, class Coef>
__device__ __forceinline__ void build_band(typename M::BFrag* band, const Coef& coef, int len,
                                           int nd, int tid, int threads) {
  auto tap = [&](int i) { return i >= 0 && i < len ? static_cast<float>(coef[i]) : 0.0f; };
  for (int i = tid; i < nd * 32; i += threads) {
    const int d = i >> 5, lane = i & 31, g = lane >> 2, q = lane & 3;
    band[i] = M::bfrag(tap(8 * d + q - g), tap(8 * d + q + 4 - g));
  }
}

// acc[p] += the 16 x 8 outputs of group p < G (fragment layout of mma m16n8k8: acc[p][0..3] =
// D[g][2q], D[g][2q + 1], D[g + 8][2q], D[g + 8][2q + 1]). data[m][8j + i] = chunk(j)[m * sm +
// i * si] for i < 8 and j < G + ND - 1 (a chunk per call keeps ring buffers possible),
// read as zero from index `lim` on (the band's zeros meet them: rows being rewritten elsewhere
// are not read; lim >= 8 (G + ND - 3), so only the last two chunks test it); rounded
// to tf32 here unless ROUND is false (data already tf32, e.g. results of an earlier pass); the
// band has ND chunks (zero past the kernel's taps).
// Returns true (in this lane) if a datum is not finite (tf32: or |x| >= 2^126): acc must not be
// used then (inf * 0 in the band's zeros gives NaN where the direct sum does not; tf32_bits
// overflows): see band_direct. CHECK false: no test (false returned; the caller knows the data
// are finite). BAND_REGS: the band's fragments live in registers for the call (else each is
// loaded where used: fewer registers).
template <class M, int ND, bool ROUND, bool BAND_REGS = true, bool CHECK = true, int G,
          class Chunk>
__device__ __forceinline__ bool band_filter(typename M::Acc (&acc)[G][4], Chunk chunk,
                                            int sm, int si, int lim,
                                            const typename M::BFrag* band) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  typename M::BFrag bf[BAND_REGS ? ND : 1];
  if constexpr (BAND_REGS) {
#pragma unroll
    for (int d = 0; d < ND; ++d) bf[d] = band[d * 32 + lane];
  }
  bool bad = false;
#pragma unroll
  for (int j = 0; j < G + ND - 1; ++j) {
    const float* s0 = chunk(j) + g * sm + q * si;
    const float* s8 = s0 + 8 * sm;
    const bool tail = j >= G + ND - 3;  // may reach lim
    const bool lo = !tail || 8 * j + q < lim, hi = !tail || 8 * j + q + 4 < lim;
    const float x[4] = {lo ? s0[0] : 0.0f, lo ? s8[0] : 0.0f, hi ? s0[4 * si] : 0.0f,
                        hi ? s8[4 * si] : 0.0f};
    typename M::Op a[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (CHECK) bad |= !(fabsf(x[e]) < M::kLimit);
      a[e] = M::op(x[e], ROUND);
    }
#pragma unroll
    for (int p = 0; p < G; ++p) {
      const int d = j - p;
      if (d < 0 || d >= ND) continue;  // compile-time test
      if constexpr (BAND_REGS) M::mma(acc[p], a, bf[d]);
      else M::mma(acc[p], a, band[d * 32 + lane]);
    }
  }
  return bad;
}

// The same outputs in the same layout by direct FMAs over the `len` taps in the accumulator's
// type (load() applies the precision's operand rounding): the fallback of a warp whose data
// band_filter refused, so that NaN/inf reach only their own windows. Rare, so kept short.
template <class Acc, int G, class Chunk, class Coef, class Load>
__device__ __forceinline__ void band_direct(Acc (&acc)[G][4], Chunk chunk, int sm,
                                            int si, const Coef& coef, int len, Load load) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int p = 0; p < G; ++p) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int m = g + 8 * (e >> 1), i0 = 8 * p + 2 * q + (e & 1);
      Acc s = 0;
#pragma unroll 1
      for (int k = 0; k < len; ++k) {
        const int i = i0 + k;
        s = fma(static_cast<Acc>(load(chunk(i >> 3)[m * sm + (i & 7) * si])),
                static_cast<Acc>(coef[k]), s);
      }
      acc[p][e] = s;
    }
  }
}

}  // namespace cuda
}  // namespace tc
