// AVX2/FMA `direct` (fp32 and fp64), register-blocked as in Kelefouras 2022 section 3.3: a tile of
// 2 output rows x C vectors of columns stays in registers; each input row is loaded once per tile
// and feeds both output rows (kernel rows u and u-1), so one load serves two FMAs. Kernel taps are
// broadcast from memory. Column tails use one-vector tiles, then scalar FMAs in the tiles' order
// (every output is the same FMA chain wherever it sits). Row pairs are shared
// out by the work-sharing pool (parallel.hpp).
#include "direct_avx2.hpp"

#include "cpu_features.hpp"
#if TC_X86
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "parallel.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace tc {
namespace {

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using R = __m256;
  static constexpr int n = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static float fma1(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
  }
};
template <>
struct Vec<double> {
  using R = __m256d;
  static constexpr int n = 4;
  static R zero() { return _mm256_setzero_pd(); }
  static R load(const double* p) { return _mm256_loadu_pd(p); }
  static R bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
  static void store(double* p, R v) { _mm256_storeu_pd(p, v); }
  static double fma1(double a, double b, double c) {
    return _mm_cvtsd_f64(_mm_fmadd_sd(_mm_set_sd(a), _mm_set_sd(b), _mm_set_sd(c)));
  }
};

// Rows output rows (1 or 2) x C vectors starting at (i, j).
template <class T, int Rows, int C>
void tile(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t i, std::int64_t j,
          const T* k, std::int64_t kh, std::int64_t kw) {
  using V = Vec<T>;
  constexpr int n = V::n;
  typename V::R a0[C], a1[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) a0[c] = a1[c] = V::zero();
  const T* base = in + i * is + j;
  // Input row u feeds output row i with kernel row u and row i+1 with kernel row u-1.
  for (std::int64_t u = 0; u < kh + Rows - 1; ++u) {
    const T* row = base + u * is;
    const bool top = u < kh, bottom = Rows == 2 && u >= 1;
    const T* k0 = k + u * kw;
    const T* k1 = k + (u - 1) * kw;
    if (top && bottom) {
      for (std::int64_t v = 0; v < kw; ++v) {
        const auto b0 = V::bcast(k0 + v), b1 = V::bcast(k1 + v);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          const auto x = V::load(row + v + c * n);
          a0[c] = V::fma(b0, x, a0[c]);
          a1[c] = V::fma(b1, x, a1[c]);
        }
      }
    } else if (top) {
      for (std::int64_t v = 0; v < kw; ++v) {
        const auto b0 = V::bcast(k0 + v);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) a0[c] = V::fma(b0, V::load(row + v + c * n), a0[c]);
      }
    } else {
      for (std::int64_t v = 0; v < kw; ++v) {
        const auto b1 = V::bcast(k1 + v);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) a1[c] = V::fma(b1, V::load(row + v + c * n), a1[c]);
      }
    }
  }
  T* o = out + i * os + j;
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    V::store(o + c * n, a0[c]);
    if (Rows == 2) V::store(o + os + c * n, a1[c]);
  }
}

template <class T, int Rows>
void row_block(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t i,
               std::int64_t ocols, const T* k, std::int64_t kh, std::int64_t kw) {
  constexpr int n = Vec<T>::n, C = 4;
  std::int64_t j = 0;
  for (; j + C * n <= ocols; j += C * n) tile<T, Rows, C>(in, is, out, os, i, j, k, kh, kw);
  for (; j + n <= ocols; j += n) tile<T, Rows, 1>(in, is, out, os, i, j, k, kh, kw);
  // The last columns one at a time, by the tiles' arithmetic: one fused multiply-add per tap in
  // the same (u, v) order from +0, so an output's bits never depend on its column (translation
  // invariance: a tile of the same window elsewhere gives the same result).
  for (; j < ocols; ++j)
    for (int r = 0; r < Rows; ++r) {
      T acc = 0;
      for (std::int64_t u = 0; u < kh; ++u)
        for (std::int64_t v = 0; v < kw; ++v)
          acc = Vec<T>::fma1(k[u * kw + v], in[(i + r + u) * is + j + v], acc);
      out[(i + r) * os + j] = acc;
    }
}

template <class T>
void run(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t orows,
         std::int64_t ocols, const T* k, std::int64_t kh, std::int64_t kw) {
  const std::int64_t pairs = orows / 2;
  const int nt = direct_threads(orows, ocols, kh, kw);
  parallel_chunks(pairs + 1, nt, std::max<std::int64_t>(1, pairs / (8 * nt)),
                  [&](std::int64_t b, std::int64_t e) {
                    for (std::int64_t p = b; p < e; ++p) {
                      if (p < pairs)
                        row_block<T, 2>(in, is, out, os, 2 * p, ocols, k, kh, kw);
                      else if (orows % 2)
                        row_block<T, 1>(in, is, out, os, orows - 1, ocols, k, kh, kw);
                    }
                  });
}

}  // namespace

void correlate_valid_avx2(const float* in, std::int64_t in_stride, float* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const float* k, std::int64_t kh, std::int64_t kw) {
  run(in, in_stride, out, out_stride, orows, ocols, k, kh, kw);
}
void correlate_valid_avx2(const double* in, std::int64_t in_stride, double* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const double* k, std::int64_t kh, std::int64_t kw) {
  run(in, in_stride, out, out_stride, orows, ocols, k, kh, kw);
}

}  // namespace tc

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#else  // not x86: never called (cpu_use_avx2() is false)
namespace tc {
void correlate_valid_avx2(const float*, std::int64_t, float*, std::int64_t, std::int64_t,
                          std::int64_t, const float*, std::int64_t, std::int64_t) {}
void correlate_valid_avx2(const double*, std::int64_t, double*, std::int64_t, std::int64_t,
                          std::int64_t, const double*, std::int64_t, std::int64_t) {}
}  // namespace tc
#endif  // TC_X86
