// AVX2 helpers shared by the simd_u8 algorithm files. Include it after every other header: it
// opens the AVX2 target region (the package itself targets baseline x86-64; these files run only
// after the CPU check), so std:: code from earlier headers stays baseline. All helpers are static:
// each translation unit gets its own AVX2 copy and nothing AVX2 leaks into shared inline symbols.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "simd_u8.hpp"

// Everything after this point (in the including file too) is compiled for AVX2+FMA; the file
// ends the region with TC_AVX2_END.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define TC_AVX2_END _Pragma("clang attribute pop")
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define TC_AVX2_END _Pragma("GCC pop_options")
#endif

#include "vec_generic.hpp"

namespace tc {
namespace u8 {
namespace {

// 256-bit vector traits for the ISA-neutral templates (vec_generic.hpp, sep_impl.hpp,
// pairs_impl.hpp); V512 in avx512_common.hpp has the same members.
struct V256 {
  using T = __m256i;
  static constexpr int kBytes = 32;
  static T zero() { return _mm256_setzero_si256(); }
  static T set1_16(short x) { return _mm256_set1_epi16(x); }
  static T set1_32(int x) { return _mm256_set1_epi32(x); }
  static T load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, T v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  // kBytes / 2 bytes zero-extended to 16 bits
  static T load_u8_16(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static T add16(T a, T b) { return _mm256_add_epi16(a, b); }
  static T add32(T a, T b) { return _mm256_add_epi32(a, b); }
  static T or_(T a, T b) { return _mm256_or_si256(a, b); }
  static T xor_(T a, T b) { return _mm256_xor_si256(a, b); }
  static T and_(T a, T b) { return _mm256_and_si256(a, b); }
  static T mullo16(T a, T b) { return _mm256_mullo_epi16(a, b); }
  static T madd16(T a, T b) { return _mm256_madd_epi16(a, b); }
  static T maddubs(T a, T b) { return _mm256_maddubs_epi16(a, b); }
  static T sll16(T a, __m128i s) { return _mm256_sll_epi16(a, s); }
  static T srl16(T a, __m128i s) { return _mm256_srl_epi16(a, s); }
  static T srl32(T a, __m128i s) { return _mm256_srl_epi32(a, s); }
  static T srl64(T a, __m128i s) { return _mm256_srl_epi64(a, s); }
  template <int S>
  static T slli16(T a) { return _mm256_slli_epi16(a, S); }
  template <int S>
  static T srli16(T a) { return _mm256_srli_epi16(a, S); }
  template <int S>
  static T slli32(T a) { return _mm256_slli_epi32(a, S); }
  template <int S>
  static T srli32(T a) { return _mm256_srli_epi32(a, S); }
  static T srli64_32(T a) { return _mm256_srli_epi64(a, 32); }
  static T slli64_32(T a) { return _mm256_slli_epi64(a, 32); }
  static T blend_odd32(T even, T odd) { return _mm256_blend_epi32(even, odd, 0xAA); }
  static T max16(T a, T b) { return _mm256_max_epi16(a, b); }
  static T min_epu16(T a, T b) { return _mm256_min_epu16(a, b); }
  static T mulhi_epu16(T a, T b) { return _mm256_mulhi_epu16(a, b); }
  static T max32(T a, T b) { return _mm256_max_epi32(a, b); }
  static T min_epu32(T a, T b) { return _mm256_min_epu32(a, b); }
  static T mul_epu32(T a, T b) { return _mm256_mul_epu32(a, b); }
  // unsigned 16-bit values -> kBytes / 2 bytes in order, saturated to 255
  static void store_u8_sat16(std::uint8_t* p, T a) {
    a = _mm256_min_epu16(a, _mm256_set1_epi16(255));  // packus saturates signed values
    const __m256i b = _mm256_permute4x64_epi64(_mm256_packus_epi16(a, a), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(b));
  }
  // two such vectors -> kBytes bytes in order
  static void store_u8_sat16x2(std::uint8_t* p, T a, T b) {
    const __m256i m = _mm256_set1_epi16(255);
    a = _mm256_min_epu16(a, m);
    b = _mm256_min_epu16(b, m);
    store(p, _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8));
  }
};

// Two 16-byte loads into the two lanes; one 32-byte load when they are adjacent.
template <int Lane1>
inline __m256i load2(const std::uint8_t* p) {
  if constexpr (Lane1 == 16) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  } else {
    __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + Lane1));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  }
}
// The matching stores: lane 0 at p, lane 1 at p + Lane1 (lane 1 overwrites lane 0's tail).
template <int Lane1>
inline void store2(std::uint8_t* p, __m256i v) {
  if constexpr (Lane1 == 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(v));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + Lane1), _mm256_extracti128_si256(v, 1));
  }
}

// Sum S consecutive 16-bit slots into the first one (per 128-bit lane; shifts bring zeros in):
// partial sums of 1, 2, 4, 8 slots, combined by the binary digits of S.
template <int Bytes>
inline __m256i shr(__m256i v) {
  if constexpr (Bytes == 0)
    return v;
  else if constexpr (Bytes >= 16)
    return _mm256_setzero_si256();
  else
    return _mm256_srli_si256(v, Bytes);
}
template <int S, int Unit, class Add>
inline __m256i reduce_slots(__m256i m, Add add) {
  static_assert(S >= 1 && S <= 8, "slot count");
  __m256i p1 = m;
  __m256i p2 = S >= 2 ? add(p1, shr<Unit>(p1)) : p1;
  __m256i p4 = S >= 4 ? add(p2, shr<2 * Unit>(p2)) : p2;
  __m256i p8 = S >= 8 ? add(p4, shr<4 * Unit>(p4)) : p4;
  if constexpr (S == 1)
    return p1;
  else if constexpr (S == 2)
    return p2;
  else if constexpr (S == 3)
    return add(p2, shr<2 * Unit>(p1));
  else if constexpr (S == 4)
    return p4;
  else if constexpr (S == 5)
    return add(p4, shr<4 * Unit>(p1));
  else if constexpr (S == 6)
    return add(p4, shr<4 * Unit>(p2));
  else if constexpr (S == 7)
    return add(add(p4, shr<4 * Unit>(p2)), shr<6 * Unit>(p1));
  else
    return p8;
}
struct Add16 {
  __m256i operator()(__m256i a, __m256i b) const { return _mm256_add_epi16(a, b); }
};
struct Add32 {
  __m256i operator()(__m256i a, __m256i b) const { return _mm256_add_epi32(a, b); }
};
template <int S>
inline __m256i reduce16(__m256i m) {
  return reduce_slots<S, 2>(m, Add16{});
}
template <int S>
inline __m256i reduce32(__m256i m) {
  return reduce_slots<S, 4>(m, Add32{});
}

inline __m256i finish16(__m256i acc, IR ir, const Divider& d) { return vfinish16<V256>(acc, ir, d); }
inline __m256i finish32(__m256i acc, const Divider& d) { return vfinish32<V256>(acc, d); }

template <int Bytes>
inline __m256i shl(__m256i v) {
  if constexpr (Bytes == 0)
    return v;
  else
    return _mm256_slli_si256(v, Bytes);
}

// Algorithms 2 and 3: one vector coefficient per kernel row, the row copied at byte G*p (p < P)
// of both lanes, zeros elsewhere.
inline void fill_row_groups(Block& b, const std::int32_t* k, int g, int groups) {
  b.tab.assign(static_cast<std::size_t>(32 * b.kh), 0);
  for (int u = 0; u < b.kh; ++u)
    for (int lane = 0; lane < 2; ++lane)
      for (int p = 0; p < groups; ++p)
        for (int v = 0; v < b.kw; ++v)
          b.tab[32 * u + 16 * lane + g * p + v] = static_cast<std::uint8_t>(k[u * b.kw + v]);
}

// out_even / out_odd (Algorithms 1 and 2): the results of shift X go to plane X % 2, in the
// slots Mask selects (the first two shifts just initialise the planes).
template <int X, int Mask>
inline void place16(__m256i& even, __m256i& odd, __m256i m) {
  if constexpr (X == 0)
    even = m;
  else if constexpr (X == 1)
    odd = m;
  else if constexpr (X % 2 == 0)
    even = _mm256_blend_epi16(even, m, Mask);
  else
    odd = _mm256_blend_epi16(odd, m, Mask);
}
// Divide both planes and interleave them into bytes in output order (one shift, one OR).
inline __m256i pack16(__m256i even, __m256i odd, IR ir, const Divider& d) {
  return _mm256_or_si256(finish16(even, ir, d), _mm256_slli_epi16(finish16(odd, ir, d), 8));
}

// Algorithms 2 and 3 share their set-up: one grouped vector coefficient per kernel row, blocks of
// 2 * L outputs read at shifts 0..G-1.
template <class Shape, OneBlock One>
inline void build_grouped(Block& b, const std::int32_t* k) {
  fill_row_groups(b, k, Shape::G, Shape::P);
  b.outputs = 2 * Shape::L;
  b.reads = Shape::L + Shape::G - 1 + 16;
  b.writes = Shape::L + 16;
  b.fn = b.fn1 = &repeat<One>;
  b.rows_out = 1;
}

// Two 32-bit planes of pixel values (dword i: outputs 2i and 2i + 1 of 16) -> 16 bytes in order.
inline __m128i pack_even_odd32(__m256i even, __m256i odd) {
  const __m256i both = _mm256_or_si256(even, _mm256_slli_epi32(odd, 8));
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                        1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i s = _mm256_shuffle_epi8(both, pick);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(s, 0x08));
}

inline __m256i vcoef(const std::uint8_t* tab, int i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tab + 32 * i));
}

}  // namespace
}  // namespace u8
}  // namespace tc
