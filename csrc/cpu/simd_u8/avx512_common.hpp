// AVX-512 (F + BW) traits for the simd_u8 templates shared with the AVX2 tier (vec_generic.hpp,
// sep_impl.hpp, pairs_impl.hpp). Include it after every other header: it opens the AVX-512
// target region (these files run only after cpu_has_avx512bw()); the file ends it with
// TC_AVX512_END. 64-byte vectors: twice the AVX2 outputs per instruction, and the byte packing
// uses vpmovwb, so nothing is reordered across 128-bit lanes.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "simd_u8.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512bw"))), \
                             apply_to = function)
#define TC_AVX512_END _Pragma("clang attribute pop")
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw")
// GCC 12's own AVX-512 headers start many intrinsics from _mm512_undefined_*() and then warn
// "(may be) used uninitialized" where they inline (GCC bug 105593); silence it for this region.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define TC_AVX512_END _Pragma("GCC diagnostic pop") _Pragma("GCC pop_options")
#endif

#include "vec_generic.hpp"

namespace tc {
namespace u8 {
namespace {

struct V512 {
  using T = __m512i;
  static constexpr int kBytes = 64;
  static T zero() { return _mm512_setzero_si512(); }
  static T set1_16(short x) { return _mm512_set1_epi16(x); }
  static T set1_32(int x) { return _mm512_set1_epi32(x); }
  static T load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(void* p, T v) { _mm512_storeu_si512(p, v); }
  static T load_u8_16(const std::uint8_t* p) {
    return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static T add16(T a, T b) { return _mm512_add_epi16(a, b); }
  static T add32(T a, T b) { return _mm512_add_epi32(a, b); }
  static T or_(T a, T b) { return _mm512_or_si512(a, b); }
  static T xor_(T a, T b) { return _mm512_xor_si512(a, b); }
  static T and_(T a, T b) { return _mm512_and_si512(a, b); }
  static T mullo16(T a, T b) { return _mm512_mullo_epi16(a, b); }
  static T madd16(T a, T b) { return _mm512_madd_epi16(a, b); }
  static T maddubs(T a, T b) { return _mm512_maddubs_epi16(a, b); }
  static T sll16(T a, __m128i s) { return _mm512_sll_epi16(a, s); }
  static T srl16(T a, __m128i s) { return _mm512_srl_epi16(a, s); }
  static T srl32(T a, __m128i s) { return _mm512_srl_epi32(a, s); }
  static T srl64(T a, __m128i s) { return _mm512_srl_epi64(a, s); }
  template <int S>
  static T slli16(T a) { return _mm512_slli_epi16(a, S); }
  template <int S>
  static T srli16(T a) { return _mm512_srli_epi16(a, S); }
  template <int S>
  static T slli32(T a) { return _mm512_slli_epi32(a, S); }
  template <int S>
  static T srli32(T a) { return _mm512_srli_epi32(a, S); }
  static T srli64_32(T a) { return _mm512_srli_epi64(a, 32); }
  static T slli64_32(T a) { return _mm512_slli_epi64(a, 32); }
  static T blend_odd32(T even, T odd) { return _mm512_mask_blend_epi32(0xAAAA, even, odd); }
  static T max16(T a, T b) { return _mm512_max_epi16(a, b); }
  static T min_epu16(T a, T b) { return _mm512_min_epu16(a, b); }
  static T mulhi_epu16(T a, T b) { return _mm512_mulhi_epu16(a, b); }
  static T max32(T a, T b) { return _mm512_max_epi32(a, b); }
  static T min_epu32(T a, T b) { return _mm512_min_epu32(a, b); }
  static T mul_epu32(T a, T b) { return _mm512_mul_epu32(a, b); }
  // unsigned 16-bit values -> bytes saturated to 255 (vpmovuswb: no min needed)
  static void store_u8_sat16(std::uint8_t* p, T a) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtusepi16_epi8(a));
  }
  static void store_u8_sat16x2(std::uint8_t* p, T a, T b) {
    store_u8_sat16(p, a);
    store_u8_sat16(p + 32, b);
  }
};

}  // namespace
}  // namespace u8
}  // namespace tc
