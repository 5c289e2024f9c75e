// ISA-neutral parts of the simd_u8 vector code: compile-time loops, width dispatch, and the
// division/finishing steps written once over a vector-traits type V (V256 in avx2_common.hpp,
// V512 in avx512_common.hpp). No target region of its own: each including file includes it after
// opening its region, so every template here is compiled for that file's ISA (and, inside the
// anonymous namespace, stays private to that translation unit).
#pragma once
#include <cstdint>
#include <utility>

#include "simd_u8.hpp"

namespace tc {
namespace u8 {
namespace {

// Compile-time unrolled loop: f(std::integral_constant<int, I>) for I = 0..N-1, so shift and
// blend immediates can depend on the loop index.
template <class F, int... I>
inline void unroll_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline void unroll(F&& f) {
  unroll_impl(f, std::make_integer_sequence<int, N>{});
}

// Calls Build<kw>::run(args...) for the run-time kernel width 1..Max (the widths are template
// arguments so shifts and blends get immediates).
template <template <int> class Build, int Max, int KW = 1, class... A>
inline void with_kw(int kw, A&... args) {
  if constexpr (KW <= Max) {
    if (kw == KW)
      Build<KW>::run(args...);
    else
      with_kw<Build, Max, KW + 1>(kw, args...);
  }
}

// Build<kh, kw>::run(args...) for run-time kh, kw in 1..Max.
template <template <int, int> class Build, int Max, int KH = 1, int KW = 1, class... A>
inline void with_khkw(int kh, int kw, A&... args) {
  if constexpr (KH <= Max) {
    if constexpr (KW <= Max) {
      if (kh == KH && kw == KW)
        Build<KH, KW>::run(args...);
      else
        with_khkw<Build, Max, KH, KW + 1>(kh, kw, args...);
    } else {
      with_khkw<Build, Max, KH + 1, 1>(kh, kw, args...);
    }
  }
}

// Software prefetch distance along the input rows. The blocks read kh + R - 1 rows through one
// load instruction, so the hardware's per-instruction stride prefetcher sees no stride; with
// cold caches (any idle gap: the core's sleep state flushes L1/L2) the loads then missed one
// line at a time (measured 4x slower at 1920x1080, 3x3, after a 5 ms sleep).
constexpr int kPrefetchAhead = 512;

// A prefetch of base + offset bytes, the address formed in integers: a row pointer may be a
// placeholder that is never read (border rows), and pointer arithmetic past its object is
// undefined behaviour even where only a prefetch (which never faults) uses the result.
inline void prefetch_at(const void* base, std::int64_t offset) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(base) +
                                             static_cast<std::uintptr_t>(offset)),
               _MM_HINT_T0);
}

// n consecutive blocks of one algorithm (the block body inlines into the loop).
using OneBlock = void (*)(const Block&, const std::uint8_t* const*, std::uint8_t* const*,
                          std::int64_t);
template <OneBlock One>
void repeat(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
            std::int64_t n) {
  const std::int64_t step = bk.outputs;
  const int nrows = bk.kh + bk.rows_out - 1;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int u = 0; u < nrows; ++u)
      prefetch_at(rows[u], i * step + kPrefetchAhead);
    One(bk, rows, outs, i * step);
  }
}

// Algorithm 5: 16-bit vector division of unsigned x (x + 1 must not wrap in case B).
template <class V>
inline typename V::T vdiv16(typename V::T x, const Divider& d) {
  const __m128i sb = _mm_cvtsi32_si128(d.b);
  if (d.kase == 'A') return V::srl16(x, sb);
  const auto f = V::set1_16(static_cast<short>(static_cast<std::uint16_t>(d.f)));
  if (d.kase == 'B') x = V::add16(x, V::set1_16(1));
  return V::srl16(V::mulhi_epu16(x, f), sb);  // (x * f) >> 16 >> b
}

// Algorithm 6: 32-bit vector division of unsigned x (even and odd lanes through mul_epu32).
template <class V>
inline typename V::T vdiv32(typename V::T x, const Divider& d) {
  if (d.kase == 'A') return V::srl32(x, _mm_cvtsi32_si128(d.b));
  const auto f = V::set1_32(static_cast<int>(static_cast<std::uint32_t>(d.f)));
  const __m128i sh = _mm_cvtsi32_si128(32 + d.b);
  if (d.kase == 'B') x = V::add32(x, V::set1_32(1));
  const auto even = V::srl64(V::mul_epu32(x, f), sh);
  const auto odd = V::srl64(V::mul_epu32(V::srli64_32(x), f), sh);
  return V::blend_odd32(even, V::slli64_32(odd));
}

// 16-bit IRs -> pixel values 0..255 in the low byte of each 16-bit slot.
template <class V>
inline typename V::T vfinish16(typename V::T acc, IR ir, const Divider& d) {
  if (ir == IR::s16) acc = V::max16(acc, V::zero());
  return V::min_epu16(vdiv16<V>(acc, d), V::set1_16(255));
}
// 32-bit IRs -> pixel values 0..255 in the low byte of each 32-bit slot.
template <class V>
inline typename V::T vfinish32(typename V::T acc, const Divider& d) {
  acc = V::max32(acc, V::zero());
  return V::min_epu32(vdiv32<V>(acc, d), V::set1_32(255));
}

}  // namespace
}  // namespace u8
}  // namespace tc
