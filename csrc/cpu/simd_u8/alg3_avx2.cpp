// Algorithm 3 (32-bit IRs, the Algorithm 2 layout): maddubs' 16-bit pair sums are widened at once
// by madd_epi16 with ones (adjacent pairs -> 32 bits), so groups are G = kw rounded up to a
// multiple of 4 bytes and never share a 32-bit slot. Shift X's results move to dword X/4 +
// (G/4) p of plane X%4; the four planes are divided (Algorithm 6) and packed with byte shifts.
#include <cstdint>
#include <vector>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"

namespace tc {
namespace u8 {
namespace {

template <int KW>
struct Alg3Shape {
  static constexpr int G = (KW + 3) & ~3;
  static constexpr int P = (16 - KW) / G + 1;
  static constexpr int L = G * P;
  template <int X>
  static constexpr int mask() {  // blend_epi32 selects dwords of both lanes: repeat per lane
    int m = 0;
    for (int p = 0; p < P; ++p) m |= 1 << (X / 4 + (G / 4) * p);
    return m | (m << 4);
  }
};

template <int KW>
void alg3_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                std::int64_t off) {
  using S = Alg3Shape<KW>;
  constexpr int G = S::G, L = S::L;
  const int kh = bk.kh;
  const std::uint8_t* tab = bk.tab.data();
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i plane[4];
  unroll<G>([&](auto X) {
    __m256i acc = _mm256_setzero_si256();
    for (int u = 0; u < kh; ++u) {
      const __m256i m16 = _mm256_maddubs_epi16(load2<L>(rows[u] + off + X), vcoef(tab, u));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(m16, ones));
    }
    const __m256i m = shl<4 * (X / 4)>(reduce32<G / 4>(acc));
    if constexpr (X < 4)
      plane[X] = m;
    else
      plane[X % 4] = _mm256_blend_epi32(plane[X % 4], m, S::template mask<X>());
  });
  __m256i out = finish32(plane[0], bk.div);
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[1], bk.div), 8));
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[2], bk.div), 16));
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[3], bk.div), 24));
  store2<L>(outs[0] + off, out);
}

template <int KW>
struct Build {
  static void run(Block& b, const std::int32_t*& k) {
    build_grouped<Alg3Shape<KW>, &alg3_block<KW>>(b, k);
  }
};

}  // namespace

void build_alg3_avx2(Block& b, const std::int32_t* k) { with_kw<Build, 15>(b.kw, b, k); }

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
