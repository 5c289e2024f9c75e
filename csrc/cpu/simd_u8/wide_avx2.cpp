// 16-bit coefficients (paper section 5: "extending Algorithms 1 and 2 by using 16-bit
// computations"): for kernels whose values do not fit 8 bits, or whose adjacent 8-bit pairs would
// saturate maddubs, pixels are widened to 16 bits and multiplied by coefficient pairs with
// madd_epi16 into exact 32-bit sums. Even outputs take pixel pairs (j+2t, j+2t+1), odd outputs
// the same pairs one pixel later; 16 outputs per block, packed like Algorithm 3.
#include <cstdint>
#include <vector>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"

namespace tc {
namespace u8 {
namespace {

void wide_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                std::int64_t off) {
  const int pairs = (bk.kw + 1) / 2;
  const std::int32_t* cp = bk.k32.data();
  __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
  for (int u = 0; u < bk.kh; ++u) {
    const std::uint8_t* r = rows[u] + off;
    for (int t = 0; t < pairs; ++t) {
      const __m256i c = _mm256_set1_epi32(cp[u * pairs + t]);
      const __m256i pe =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * t)));
      const __m256i po =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * t + 1)));
      even = _mm256_add_epi32(even, _mm256_madd_epi16(pe, c));
      odd = _mm256_add_epi32(odd, _mm256_madd_epi16(po, c));
    }
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(outs[0] + off),
                   pack_even_odd32(finish32(even, bk.div), finish32(odd, bk.div)));
}

}  // namespace

void build_wide_avx2(Block& b, const std::int32_t* k) {
  const int pairs = (b.kw + 1) / 2;
  b.k32.assign(static_cast<std::size_t>(b.kh * pairs), 0);
  for (int u = 0; u < b.kh; ++u)
    for (int t = 0; t < pairs; ++t) {
      const std::int32_t lo = k[u * b.kw + 2 * t];
      const std::int32_t hi = 2 * t + 1 < b.kw ? k[u * b.kw + 2 * t + 1] : 0;
      b.k32[u * pairs + t] = static_cast<std::int32_t>((static_cast<std::uint32_t>(lo) & 0xFFFFu) |
                                                       (static_cast<std::uint32_t>(hi) << 16));
    }
  b.outputs = 16;
  b.reads = b.kw + 16;
  b.writes = 16;
  b.fn = b.fn1 = &repeat<&wide_block>;
  b.rows_out = 1;
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
