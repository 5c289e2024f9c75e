// Algorithm 7 (separable kernel = outer(a, b)) written once over vector traits V (V256: AVX2,
// V512: AVX-512); include it inside the including file's target region. The two 1-D passes are
// merged row by row through a temporary row of 16-bit column sums. Unlike the paper the temporary
// keeps the undivided sums (dividing after each pass is not floor(sum / divisor)).
// Vertical k x 1 pass: pixels zero-extended to 16 bits and combined by the prepared taps
// (mirrored rows of symmetric factors added first, powers of two shifted, others mullo): every
// step is exact modulo 2^16 and the column sums fit the 16-bit reading analyze() chose.
// Horizontal 1 x k pass: the same taps over columns with 16-bit IRs when the whole sum fits 16
// bits, else madd_epi16 on coefficient pairs into 32-bit IRs (columns read as uint16 are stored
// biased by -32768 so madd's signed reading is exact).
#pragma once
#include <cstdint>

#include "simd_u8.hpp"

namespace tc {
namespace u8 {
namespace {

// acc[q] = sum over taps of term(tap, q); load(index, q) gives vector q at row/column `index`.
template <class V, int N, class Load>
inline void sep_taps(const Separable::Taps& taps, const typename V::T* coef,
                     typename V::T* acc, Load load) {
  using T = typename V::T;
  auto term = [&](int i, T* a) {
    const SepTap& tp = taps.t[i];
    for (int q = 0; q < N; ++q) a[q] = load(tp.v, q);
    if (tp.m >= 0)
      for (int q = 0; q < N; ++q) a[q] = V::add16(a[q], load(tp.m, q));
    if (tp.shift > 0) {
      const __m128i sh = _mm_cvtsi32_si128(tp.shift);
      for (int q = 0; q < N; ++q) a[q] = V::sll16(a[q], sh);
    } else if (tp.shift < 0) {
      for (int q = 0; q < N; ++q) a[q] = V::mullo16(a[q], coef[i]);
    }
  };
  if (taps.n == 0) {
    for (int q = 0; q < N; ++q) acc[q] = V::zero();
    return;
  }
  term(0, acc);
  for (int i = 1; i < taps.n; ++i) {
    T a[N];
    term(i, a);
    for (int q = 0; q < N; ++q) acc[q] = V::add16(acc[q], a[q]);
  }
}

// Vectors per step of the 1-D passes: 8 with 32 registers (AVX-512), 4 with 16 (AVX2: 8 spills).
template <class V>
constexpr int kSepN = V::kBytes == 64 ? 8 : 4;

template <class V>
inline void tap_coefs(const Separable::Taps& taps, typename V::T* coef) {
  for (int i = 0; i < taps.n; ++i) coef[i] = V::set1_16(static_cast<short>(taps.t[i].c));
}

template <class V>
inline void sep_vertical(const Separable& s, const typename V::T* coef,
                         const std::uint8_t* const* rows, std::int64_t w, std::int16_t* v) {
  using T = typename V::T;
  constexpr int L = V::kBytes / 2;  // pixels per vector
  if (w < L) {
    for (std::int64_t x = 0; x < w; ++x) v[x] = sep_column(s, rows, x);
    return;
  }
  const T flip = V::set1_16(s.biased() ? static_cast<short>(0x8000) : 0);
  const bool biased = s.biased();
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    for (int u = 0; u < s.kh; ++u)  // see kPrefetchAhead; N * L pixels = N * L / 64 lines
      for (int o = 0; o < N * L; o += 64)
        _mm_prefetch(reinterpret_cast<const char*>(rows[u] + x + kPrefetchAhead + o),
                     _MM_HINT_T0);
    T acc[N];
    sep_taps<V, N>(s.vtaps, coef, acc,
                   [&](int u, int q) { return V::load_u8_16(rows[u] + x + L * q); });
    if (biased)
      for (int q = 0; q < N; ++q) acc[q] = V::xor_(acc[q], flip);
    for (int q = 0; q < N; ++q) V::store(v + x + L * q, acc[q]);
  };
  std::int64_t x = 0;
  // Wide steps share each tap's set-up over more vectors (the taps are run-time data).
  for (; x + kSepN<V> * L <= w; x += kSepN<V> * L)
    chunk(x, std::integral_constant<int, kSepN<V>>{});
  for (; x + 2 * L <= w; x += 2 * L) chunk(x, std::integral_constant<int, 2>{});
  for (; x + L <= w; x += L) chunk(x, std::integral_constant<int, 1>{});
  if (x < w) chunk(w - L, std::integral_constant<int, 1>{});  // overlap the last vector
}

template <class V>
inline void sep_horizontal16(const Separable& s, const typename V::T* coef, const std::int16_t* t,
                             std::int64_t w, std::uint8_t* out) {
  using T = typename V::T;
  constexpr int L = V::kBytes / 2;  // outputs per vector
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    T acc[N];
    sep_taps<V, N>(s.htaps, coef, acc, [&](int c, int q) { return V::load(t + x + c + L * q); });
    // max with 0 (signed IRs), divide, and the store saturates at 255
    if (s.h_ir == IR::s16)
      for (int q = 0; q < N; ++q) acc[q] = V::max16(acc[q], V::zero());
    for (int q = 0; q < N; ++q) acc[q] = vdiv16<V>(acc[q], s.div);
    if constexpr (N % 2) {
      V::store_u8_sat16(out + x, acc[0]);
    } else {
      for (int q = 0; q < N; q += 2) V::store_u8_sat16x2(out + x + L * q, acc[q], acc[q + 1]);
    }
  };
  std::int64_t x = 0;
  // Wide steps share each tap's set-up over more vectors (the taps are run-time data).
  for (; x + kSepN<V> * L <= w; x += kSepN<V> * L)
    chunk(x, std::integral_constant<int, kSepN<V>>{});
  for (; x + 2 * L <= w; x += 2 * L) chunk(x, std::integral_constant<int, 2>{});
  for (; x + L <= w; x += L) chunk(x, std::integral_constant<int, 1>{});
  if (x < w && w >= L)
    chunk(w - L, std::integral_constant<int, 1>{});
  else
    for (; x < w; ++x) out[x] = sep_scalar_output(s, t + x);
}

// N groups of L columns per step (L/2 even and L/2 odd outputs each), sharing the coefficient
// pairs; the 32-bit sums of outputs 2j (low half) and 2j+1 (high half) meet in one 16-bit pair.
template <class V, int N>
inline void horizontal32_chunk(const Separable& s, const std::int16_t* t, const typename V::T* pairs,
                               int np, std::uint8_t* out) {
  using T = typename V::T;
  constexpr int L = V::kBytes / 2;
  T e[N], o[N];
  for (int q = 0; q < N; ++q) e[q] = o[q] = V::zero();
  for (int i = 0; i < np; ++i) {
    for (int q = 0; q < N; ++q) {
      const std::int16_t* tq = t + L * q + 2 * i;
      e[q] = V::add32(e[q], V::madd16(V::load(tq), pairs[i]));
      o[q] = V::add32(o[q], V::madd16(V::load(tq + 1), pairs[i]));
    }
  }
  // Modulo 2^32 like every 32-bit IR: the final sum fits int32, so wrapping here is exact.
  const T bias = V::set1_32(static_cast<int>(static_cast<std::uint32_t>(s.bias & 0xFFFFFFFF)));
  for (int q = 0; q < N; ++q) {
    const T eq = vfinish32<V>(V::add32(e[q], bias), s.div);
    const T oq = vfinish32<V>(V::add32(o[q], bias), s.div);
    V::store_u8_sat16(out + L * q, V::or_(eq, V::template slli32<16>(oq)));
  }
}

template <class V>
inline void sep_horizontal32(const Separable& s, const typename V::T* pairs,
                             const std::int16_t* t, std::int64_t w, std::uint8_t* out) {
  constexpr int L = V::kBytes / 2;
  const int np = (s.kw + 1) / 2;
  std::int64_t x = 0;
  for (; x + 2 * L <= w; x += 2 * L) horizontal32_chunk<V, 2>(s, t + x, pairs, np, out + x);
  for (; x + L <= w; x += L) horizontal32_chunk<V, 1>(s, t + x, pairs, np, out + x);
  if (x < w && w >= L)
    horizontal32_chunk<V, 1>(s, t + w - L, pairs, np, out + w - L);
  else
    for (; x < w; ++x) out[x] = sep_scalar_output(s, t + x);
}

// Output rows [b, e): the coefficient vectors are set up once for all of them.
template <class V>
void sep_rows(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e) {
  using T = typename V::T;
  T vcoef[kMaxTaps], hcoef[kMaxTaps], pairs[(kMaxTaps + 1) / 2];
  tap_coefs<V>(s.vtaps, vcoef);
  tap_coefs<V>(s.htaps, hcoef);
  for (int i = 0; i < (s.kw + 1) / 2; ++i) {
    const std::int32_t lo = s.b[2 * i], hi = 2 * i + 1 < s.kw ? s.b[2 * i + 1] : 0;
    pairs[i] = V::set1_32(static_cast<std::int32_t>(
        (static_cast<std::uint32_t>(lo) & 0xFFFFu) | (static_cast<std::uint32_t>(hi) << 16)));
  }
  const std::int16_t zero_col = static_cast<std::int16_t>(s.biased() ? 0x8000 : 0);
  std::int16_t* t = j.t;
  for (std::int64_t i = b; i < e; ++i) {
    const std::uint8_t* const* rows = j.rows + i;
    sep_vertical<V>(s, vcoef, rows, j.w, t + j.ax);
    // Border columns of the temporary row: the column sums are linear in the pixels, so a
    // reflected/replicated column's sum is the sum at the mapped column (recomputed from the
    // pixels: reading it back from t right after the vector stores stalls store forwarding).
    for (int c = 0; c < s.kw - 1; ++c) {
      const std::int64_t m = j.border_src[c];
      t[j.border_dst[c]] = m < 0 ? zero_col : sep_column(s, rows, m);
    }
    std::uint8_t* out = j.out + i * j.out_stride;
    if (s.h_ir == IR::s32)
      sep_horizontal32<V>(s, pairs, t, j.w, out);
    else
      sep_horizontal16<V>(s, hcoef, t, j.w, out);
  }
}

}  // namespace
}  // namespace u8
}  // namespace tc
