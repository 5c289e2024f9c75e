// Algorithm 2 (k >= 7, 16-bit IRs): one vector coefficient per kernel row (the row copied to
// every G-byte group, G = kw rounded up to even, so even kernels need no zero padding) and the
// input reloaded at the G byte offsets X instead of keeping G shifted coefficients in registers.
// Shift X computes outputs X, X+G, ...; after maddubs, vertical and horizontal (G/2 slots) adds,
// its results are moved to slot X/2 + (G/2) p of plane X%2 (out_even / out_odd), the planes are
// divided once each and packed into bytes. Each lane yields G*P outputs (P groups per lane).
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
struct Alg2Shape {
  static constexpr int G = (KW + 1) & ~1;
  static constexpr int P = (16 - KW) / G + 1;  // groups per lane
  static constexpr int L = G * P;              // outputs per lane
  template <int X>
  static constexpr int mask() {
    int m = 0;
    for (int p = 0; p < P; ++p) m |= 1 << (X / 2 + (G / 2) * p);
    return m;
  }
};

template <int KW>
void alg2_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                std::int64_t off) {
  using S = Alg2Shape<KW>;
  constexpr int G = S::G, L = S::L;
  const int kh = bk.kh;
  const std::uint8_t* tab = bk.tab.data();
  __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
  unroll<G>([&](auto X) {
    __m256i acc = _mm256_setzero_si256();
    for (int u = 0; u < kh; ++u)
      acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(load2<L>(rows[u] + off + X), vcoef(tab, u)));
    place16<X, S::template mask<X>()>(even, odd, shl<2 * (X / 2)>(reduce16<G / 2>(acc)));
  });
  store2<L>(outs[0] + off, pack16(even, odd, bk.ir, bk.div));
}

template <int KW>
struct Build {
  static void run(Block& b, const std::int32_t*& k) {
    build_grouped<Alg2Shape<KW>, &alg2_block<KW>>(b, k);
  }
};

}  // namespace

void build_alg2_avx2(Block& b, const std::int32_t* k) { with_kw<Build, 15>(b.kw, b, k); }

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
