// AVX-512 `direct` (fp32 and fp64); direct.cpp calls it only on CPUs with AVX-512. A tile of R = 4 output
// rows x C = 6 vectors of columns (24 of the 32 ZMM registers) stays in registers while the
// kh + 3 input rows under it stream past: each vector loaded from an input row feeds the R output
// rows it touches (kernel rows u, u-1, u-2, u-3, broadcast once per tap), so 6 loads and 4
// broadcasts serve 24 FMAs. The first and last three input rows of a tile touch fewer output
// rows; each such pattern is its own instantiation (no branches or zero taps in the FMA loop).
// Column tails use narrower tiles whose last vector is masked, so no column falls to scalar code.
// Row groups of 4 are shared out by the work-sharing pool (parallel.hpp).
#include "direct_avx2.hpp"

#include "cpu_features.hpp"

// the two instantiations the header promises, in either branch below
#define TC_INSTANTIATE(T)                                                                    \
  template void correlate_valid_avx512(const T*, std::int64_t, T*, std::int64_t, std::int64_t, \
                                       std::int64_t, const T*, std::int64_t, std::int64_t);
#if TC_X86
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "parallel.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's _mm512_undefined_* (bug 105593)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define TC_INLINE inline __attribute__((always_inline))

namespace tc {
namespace {

// 64-byte vectors of float (16) or double (8)
template <bool F32>
struct ZTypes {
  using R = __m512;
  using M = __mmask16;
};
template <>
struct ZTypes<false> {
  using R = __m512d;
  using M = __mmask8;
};
template <class T>
struct Z {
  static constexpr bool f32 = sizeof(T) == 4;
  using R = typename ZTypes<f32>::R;
  using M = typename ZTypes<f32>::M;
  static constexpr int n = 64 / sizeof(T);
  static TC_INLINE R zero() {
    if constexpr (f32) return _mm512_setzero_ps(); else return _mm512_setzero_pd();
  }
  static TC_INLINE R load(const T* p) {
    if constexpr (f32) return _mm512_loadu_ps(p); else return _mm512_loadu_pd(p);
  }
  static TC_INLINE R load(const T* p, M m) {
    if constexpr (f32) return _mm512_maskz_loadu_ps(m, p); else return _mm512_maskz_loadu_pd(m, p);
  }
  static TC_INLINE R bcast(const T* p) {
    if constexpr (f32) return _mm512_set1_ps(*p); else return _mm512_set1_pd(*p);
  }
  static TC_INLINE R fma(R a, R b, R c) {
    if constexpr (f32) return _mm512_fmadd_ps(a, b, c); else return _mm512_fmadd_pd(a, b, c);
  }
  static TC_INLINE void store(T* p, R v) {
    if constexpr (f32) _mm512_storeu_ps(p, v); else _mm512_storeu_pd(p, v);
  }
  static TC_INLINE void store(T* p, R v, M m) {
    if constexpr (f32) _mm512_mask_storeu_ps(p, m, v); else _mm512_mask_storeu_pd(p, m, v);
  }
};

constexpr int kRows = 4, kCols = 6;

// One input row through output rows Lo..Hi of the tile: acc[r] += k row (u - r) * row.
// Masked: the last vector's load stops at the mask (its lanes past the row are never used).
template <class T, int C, int Lo, int Hi, bool Masked>
TC_INLINE void pass(typename Z<T>::R (&acc)[kRows][kCols], const T* row, const T* ku,
                    std::int64_t kw, typename Z<T>::M m) {
  using V = Z<T>;
  constexpr int n = V::n;
  for (std::int64_t v = 0; v < kw; ++v) {
    typename V::R b[kRows];
#pragma GCC unroll 4
    for (int r = Lo; r <= Hi; ++r) b[r] = V::bcast(ku - r * kw + v);
#pragma GCC unroll 6
    for (int c = 0; c < C; ++c) {
      const auto x = Masked && c == C - 1 ? V::load(row + v + c * n, m) : V::load(row + v + c * n);
#pragma GCC unroll 4
      for (int r = Lo; r <= Hi; ++r) acc[r][c] = V::fma(b[r], x, acc[r][c]);
    }
  }
}

// Rows (1..4) output rows x C vectors at (i, j); the mask covers the last vector's columns.
// npf rows from pf (at column j) are the next row group's new input rows: prefetched one row
// group ahead (the hardware prefetchers miss the tile's short runs over kh + 3 rows: a 512^2
// image fresh from memory took 3x its cached time at k = 3).
template <class T, int Rows, int C, bool Masked>
void tile(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t i, std::int64_t j,
          const T* k, std::int64_t kh, std::int64_t kw, typename Z<T>::M m, const T* pf,
          int npf) {
  using V = Z<T>;
  constexpr int n = V::n;
  for (int r = 0; r < npf; ++r)
#pragma GCC unroll 7
    for (int c = 0; c <= C; ++c)
      _mm_prefetch(reinterpret_cast<const char*>(pf + r * is + j + c * n), _MM_HINT_T0);
  typename V::R acc[kRows][kCols];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 6
    for (int c = 0; c < kCols; ++c) acc[r][c] = V::zero();
  const T* base = in + i * is + j;
  for (std::int64_t u = 0; u < kh + Rows - 1; ++u) {
    const T* row = base + u * is;
    const T* ku = k + u * kw;  // kernel row u - r is ku - r * kw
    const int lo = static_cast<int>(std::max<std::int64_t>(0, u - kh + 1));
    const int hi = static_cast<int>(std::min<std::int64_t>(Rows - 1, u));
    // (lo, hi) -> one instantiation; the common case (every row) is tested first
#define TC_PASS(L, H)                                                        \
  if (lo == L && hi == H) {                                                  \
    if constexpr (H < Rows) pass<T, C, L, H, Masked>(acc, row, ku, kw, m);   \
    continue;                                                                \
  }
    TC_PASS(0, Rows - 1)
    TC_PASS(0, 0) TC_PASS(0, 1) TC_PASS(0, 2) TC_PASS(0, 3)
    TC_PASS(1, 1) TC_PASS(1, 2) TC_PASS(1, 3)
    TC_PASS(2, 2) TC_PASS(2, 3)
    TC_PASS(3, 3)
#undef TC_PASS
  }
  T* o = out + i * os + j;
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 6
    for (int c = 0; c < C; ++c) {
      if (Masked && c == C - 1)
        V::store(o + r * os + c * n, acc[r][c], m);
      else
        V::store(o + r * os + c * n, acc[r][c]);
    }
}

template <class T, int Rows>
void row_group(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t i,
               std::int64_t orows, std::int64_t ocols, const T* k, std::int64_t kh,
               std::int64_t kw) {
  using V = Z<T>;
  constexpr int n = V::n;
  // input rows i + kh + 3 .. i + kh + 6 (those of the next group that this one does not read)
  const std::int64_t pr = i + kh + kRows - 1;
  const int npf = static_cast<int>(
      std::max<std::int64_t>(0, std::min<std::int64_t>(kRows, orows + kh - 1 - pr)));
  const T* pf = in + (npf ? pr : 0) * is;
  std::int64_t j = 0;
  for (; j + kCols * n <= ocols; j += kCols * n)
    tile<T, Rows, kCols, false>(in, is, out, os, i, j, k, kh, kw, 0, pf, npf);
  const std::int64_t rest = ocols - j;
  if (rest == 0) return;
  const int c = static_cast<int>((rest + n - 1) / n);
  const int last = static_cast<int>(rest - (c - 1) * n);
  const typename V::M m = static_cast<typename V::M>((1u << last) - 1u);
  switch (c) {
    case 1: tile<T, Rows, 1, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
    case 2: tile<T, Rows, 2, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
    case 3: tile<T, Rows, 3, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
    case 4: tile<T, Rows, 4, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
    case 5: tile<T, Rows, 5, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
    default: tile<T, Rows, 6, true>(in, is, out, os, i, j, k, kh, kw, m, pf, npf); break;
  }
}

template <class T>
void run(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t orows,
         std::int64_t ocols, const T* k, std::int64_t kh, std::int64_t kw) {
  const std::int64_t groups = (orows + kRows - 1) / kRows;
  const int nt = direct_threads(orows, ocols, kh, kw);
  parallel_chunks(groups, nt, std::max<std::int64_t>(1, groups / (8 * nt)),
                  [&](std::int64_t b, std::int64_t e) {
                    for (std::int64_t g = b; g < e; ++g) {
                      const std::int64_t i = g * kRows;
                      switch (std::min<std::int64_t>(kRows, orows - i)) {
                        case 4: row_group<T, 4>(in, is, out, os, i, orows, ocols, k, kh, kw); break;
                        case 3: row_group<T, 3>(in, is, out, os, i, orows, ocols, k, kh, kw); break;
                        case 2: row_group<T, 2>(in, is, out, os, i, orows, ocols, k, kh, kw); break;
                        default: row_group<T, 1>(in, is, out, os, i, orows, ocols, k, kh, kw); break;
                      }
                    }
                  });
}

}  // namespace

template <class T>
void correlate_valid_avx512(const T* in, std::int64_t in_stride, T* out, std::int64_t out_stride,
                            std::int64_t orows, std::int64_t ocols, const T* k, std::int64_t kh,
                            std::int64_t kw) {
  run(in, in_stride, out, out_stride, orows, ocols, k, kh, kw);
}
TC_INSTANTIATE(float)
TC_INSTANTIATE(double)

}  // namespace tc

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#else  // not x86: never called (direct.cpp's use_avx512() is false)
namespace tc {
template <class T>
void correlate_valid_avx512(const T*, std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t,
                            const T*, std::int64_t, std::int64_t) {}
TC_INSTANTIATE(float)
TC_INSTANTIATE(double)
}  // namespace tc
#endif  // TC_X86
#undef TC_INSTANTIATE
