// Algorithm 7 (separable kernel = outer(a, b)), the two 1-D passes merged row by row through a
// temporary row. Vertical k x 1 pass: maddubs with a_u in the even bytes gives the even pixels'
// products, a_u in the odd bytes the odd pixels'; rows are added in 16 bits and the two planes
// interleaved back into pixel order. Unlike the paper the temporary keeps the undivided 16-bit
// column sums (dividing twice is not floor(sum / divisor)), so the horizontal 1 x k pass works
// on 16-bit values: mullo_epi16 with 16-bit IRs when the whole sum fits 16 bits (symmetric rows
// add mirrored columns first, powers of two shift), else madd_epi16 on coefficient pairs with
// 32-bit IRs (columns read as uint16 are stored biased by -32768).
#include <cstdint>
#include <vector>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"

namespace tc {
namespace u8 {
namespace {

// 32 columns; the kernel height is a template argument so the row loop unrolls.
template <int KH>
inline void vertical_chunk(const std::uint8_t* const* rows, std::int64_t x, std::int16_t* v,
                           const __m256i* ce, const __m256i* co, __m256i flip) {
  __m256i e = _mm256_setzero_si256(), o = _mm256_setzero_si256();
  unroll<KH>([&](auto u) {
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[u] + x));
    e = _mm256_add_epi16(e, _mm256_maddubs_epi16(r, ce[u]));
    o = _mm256_add_epi16(o, _mm256_maddubs_epi16(r, co[u]));
  });
  e = _mm256_xor_si256(e, flip);
  o = _mm256_xor_si256(o, flip);
  const __m256i lo = _mm256_unpacklo_epi16(e, o), hi = _mm256_unpackhi_epi16(e, o);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + x), _mm256_permute2x128_si256(lo, hi, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + x + 16),
                      _mm256_permute2x128_si256(lo, hi, 0x31));
}

template <int KH>
struct Vertical {
  static void run(const std::uint8_t* const*& rows, std::int64_t& w, std::int16_t*& v,
                  const __m256i*& ce, const __m256i*& co, __m256i& flip) {
    std::int64_t x = 0;
    for (; x + 32 <= w; x += 32) vertical_chunk<KH>(rows, x, v, ce, co, flip);
    if (x < w) vertical_chunk<KH>(rows, w - 32, v, ce, co, flip);  // overlap the last chunk
  }
};

}  // namespace

void sep_vertical_avx2(const Separable& s, const std::uint8_t* const* rows, std::int64_t w,
                       std::int16_t* v) {
  __m256i cev[16], cov[16];
  for (int u = 0; u < s.kh; ++u) {
    const int a = s.a[u] & 0xFF;  // a fits int8 (analyze checks)
    cev[u] = _mm256_set1_epi16(static_cast<short>(a));
    cov[u] = _mm256_set1_epi16(static_cast<short>(a << 8));
  }
  __m256i flip = _mm256_set1_epi16(s.biased() ? static_cast<short>(0x8000) : 0);
  if (w >= 32) {
    const __m256i* ce = cev;
    const __m256i* co = cov;
    with_kw<Vertical, 15>(s.kh, rows, w, v, ce, co, flip);
    return;
  }
  std::int64_t x = 0;
  for (; x < w; ++x) {
    std::int32_t sum = 0;
    for (int u = 0; u < s.kh; ++u) sum += s.a[u] * rows[u][x];
    std::uint16_t bits = static_cast<std::uint16_t>(sum);
    if (s.biased()) bits ^= 0x8000u;
    v[x] = static_cast<std::int16_t>(bits);
  }
}

namespace {

// One tap of the 16-bit row pass: columns v (and its mirror m >= 0 for symmetric rows, added
// before multiplying: exact modulo 2^16) times b, as a shift when b is a power of two.
struct Tap {
  int v, m, shift;  // shift: log2(b) when b = 2^shift > 0, else -1 (mullo)
  __m256i c;
};

inline __m256i tap_term(const Tap& tp, const std::int16_t* t) {
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + tp.v));
  if (tp.m >= 0)
    a = _mm256_add_epi16(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + tp.m)));
  if (tp.shift == 0) return a;
  if (tp.shift > 0) return _mm256_sll_epi16(a, _mm_cvtsi32_si128(tp.shift));
  return _mm256_mullo_epi16(a, tp.c);
}

void horizontal16_row(const Separable& s, const std::int16_t* t, std::int64_t w,
                      std::uint8_t* out) {
  Tap taps[16];
  int nt = 0;
  bool symmetric = true;
  for (int v = 0; v < s.kw; ++v) symmetric &= s.b[v] == s.b[s.kw - 1 - v];
  for (int v = 0; v < (symmetric ? (s.kw + 1) / 2 : s.kw); ++v) {
    const std::int32_t b = s.b[v];
    if (b == 0) continue;
    Tap& tp = taps[nt++];
    tp.v = v;
    tp.m = symmetric && s.kw - 1 - v != v ? s.kw - 1 - v : -1;
    tp.shift = -1;
    for (int sh = 0; sh < 15; ++sh)
      if (b == (1 << sh)) tp.shift = sh;
    tp.c = _mm256_set1_epi16(static_cast<short>(b));
  }
  // N accumulators of 16 columns per step: the per-tap set-up is shared by N vectors.
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    __m256i acc[N];
    for (int q = 0; q < N; ++q) acc[q] = _mm256_setzero_si256();
    for (int i = 0; i < nt; ++i)
      for (int q = 0; q < N; ++q)
        acc[q] = _mm256_add_epi16(acc[q], tap_term(taps[i], t + x + 16 * q));
    for (int q = 0; q < N; q += 2) {
      const __m256i a0 = finish16(acc[q], s.h_ir, s.div), a1 = finish16(acc[q + 1], s.h_ir, s.div);
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(a0, a1), 0xD8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x + 16 * q), p);
    }
  };
  std::int64_t x = 0;
  for (; x + 64 <= w; x += 64) chunk(x, std::integral_constant<int, 4>{});
  for (; x + 32 <= w; x += 32) chunk(x, std::integral_constant<int, 2>{});
  if (x < w && w >= 32)
    chunk(w - 32, std::integral_constant<int, 2>{});
  else
    for (; x < w; ++x) out[x] = sep_scalar_output(s, t + x);
}

// N groups of 16 columns per step (even and odd outputs each), sharing the coefficient pairs.
template <int N>
void horizontal32_chunk(const Separable& s, const std::int16_t* t, const __m256i* pairs, int np,
                        std::uint8_t* out) {
  __m256i e[N], o[N];
  for (int q = 0; q < N; ++q) e[q] = o[q] = _mm256_setzero_si256();
  for (int i = 0; i < np; ++i) {
    const __m256i c = pairs[i];
    for (int q = 0; q < N; ++q) {
      const std::int16_t* tq = t + 16 * q + 2 * i;
      e[q] = _mm256_add_epi32(
          e[q], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tq)), c));
      o[q] = _mm256_add_epi32(
          o[q], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tq + 1)), c));
    }
  }
  // Modulo 2^32 like every 32-bit IR: the final sum fits int32, so wrapping here is exact.
  const __m256i bias =
      _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(s.bias & 0xFFFFFFFF)));
  for (int q = 0; q < N; ++q) {
    const __m256i eq = finish32(_mm256_add_epi32(e[q], bias), s.div);
    const __m256i oq = finish32(_mm256_add_epi32(o[q], bias), s.div);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * q), pack_even_odd32(eq, oq));
  }
}

}  // namespace

void sep_horizontal_avx2(const Separable& s, const std::int16_t* t, std::int64_t w,
                         std::uint8_t* out) {
  if (s.h_ir != IR::s32) {
    horizontal16_row(s, t, w, out);
    return;
  }
  __m256i pairs[8];
  const int np = (s.kw + 1) / 2;
  for (int i = 0; i < np; ++i) {
    const std::int32_t lo = s.b[2 * i], hi = 2 * i + 1 < s.kw ? s.b[2 * i + 1] : 0;
    pairs[i] = _mm256_set1_epi32(static_cast<std::int32_t>(
        (static_cast<std::uint32_t>(lo) & 0xFFFFu) | (static_cast<std::uint32_t>(hi) << 16)));
  }
  std::int64_t x = 0;
  for (; x + 32 <= w; x += 32) horizontal32_chunk<2>(s, t + x, pairs, np, out + x);
  for (; x + 16 <= w; x += 16) horizontal32_chunk<1>(s, t + x, pairs, np, out + x);
  if (x < w && w >= 16)
    horizontal32_chunk<1>(s, t + w - 16, pairs, np, out + w - 16);
  else
    for (; x < w; ++x) out[x] = sep_scalar_output(s, t + x);
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
