// Algorithm 1 (k <= 5, 16-bit IRs): each kernel row becomes G = kw+1 (rounded up to even)
// "shifted" vector coefficients, copies of the row placed at byte X, X+G, X+2G, ... of every
// 128-bit lane. One load per input row then feeds all G shifts (no reloads, no byte shifts of the
// input); maddubs multiplies 8-bit pixels by 8-bit coefficients into 16-bit pair sums, the rows
// are added vertically, each group's G/2 slots are added horizontally, and the results are
// blended into out_even / out_odd (output j lands in slot j/2 of plane j%2), divided once per
// plane and packed into bytes with one shift and one OR. Each lane yields 17-kw outputs; lane 1
// is loaded 17-kw bytes after lane 0 so the two lanes cover adjacent output runs.
// Register blocking (section 3.3): R output rows share every loaded input row. Kernel height and
// width are template arguments (k <= 5), so everything unrolls.
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
struct Alg1Shape {
  static constexpr int G = (KW + 2) & ~1;  // group width: kw + 1 rounded up to even
  static constexpr int N = 17 - KW;        // outputs per lane (j + kw <= 16)
  // Slots of the plane that shift X fills: X/2 + (G/2) p for every group that fits the lane.
  template <int X>
  static constexpr int mask() {
    int m = 0;
    for (int p = 0; X + G * p <= 16 - KW; ++p) m |= 1 << (X / 2 + (G / 2) * p);
    return m;
  }
};

template <int KH, int KW, int R>
void alg1_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                std::int64_t off) {
  using S = Alg1Shape<KW>;
  constexpr int G = S::G, N = S::N;
  const std::uint8_t* tab = bk.tab.data();
  // Fully unrolled (kernel rows, output rows, shifts): the R*G accumulators stay in registers.
  __m256i acc[R][G];
  unroll<R>([&](auto r) { unroll<G>([&](auto X) { acc[r][X] = _mm256_setzero_si256(); }); });
  unroll<KH + R - 1>([&](auto u) {
    const __m256i px = load2<N>(rows[u] + off);
    unroll<R>([&](auto r) {
      constexpr int cu = decltype(u)::value - decltype(r)::value;  // kernel row met by row r
      if constexpr (cu >= 0 && cu < KH) {
        unroll<G>([&](auto X) {
          acc[r][X] = _mm256_add_epi16(acc[r][X], _mm256_maddubs_epi16(px, vcoef(tab, cu * G + X)));
        });
      }
    });
  });
  unroll<R>([&](auto r) {
    __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
    unroll<G>(
        [&](auto X) { place16<X, S::template mask<X>()>(even, odd, reduce16<G / 2>(acc[r][X])); });
    store2<N>(outs[r] + off, pack16(even, odd, bk.ir, bk.div));
  });
}

template <int KH, int KW>
struct Build {
  static void run(Block& b, const std::int32_t*& k, int& row_block) {
    using S = Alg1Shape<KW>;
    b.tab.assign(static_cast<std::size_t>(32 * S::G * b.kh), 0);
    for (int u = 0; u < b.kh; ++u)
      for (int x = 0; x < S::G; ++x) {
        std::uint8_t* vec = b.tab.data() + 32 * (u * S::G + x);
        for (int lane = 0; lane < 2; ++lane)
          for (int p = 0; x + S::G * p <= 16 - KW; ++p)
            for (int v = 0; v < KW; ++v)
              vec[16 * lane + x + S::G * p + v] = static_cast<std::uint8_t>(k[u * KW + v]);
      }
    b.outputs = 2 * S::N;
    b.reads = S::N + 16;
    b.writes = S::N + 16;
    b.fn1 = &repeat<&alg1_block<KH, KW, 1>>;
    if (row_block >= 3) {
      b.fn = &repeat<&alg1_block<KH, KW, 3>>;
      b.rows_out = 3;
    } else if (row_block == 2) {
      b.fn = &repeat<&alg1_block<KH, KW, 2>>;
      b.rows_out = 2;
    } else {
      b.fn = b.fn1;
      b.rows_out = 1;
    }
  }
};

}  // namespace

void build_alg1_avx2(Block& b, const std::int32_t* k, int row_block) {
  with_khkw<Build, 5>(b.kh, b.kw, b, k, row_block);  // analyze() keeps Algorithm 1 to k <= 5
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
