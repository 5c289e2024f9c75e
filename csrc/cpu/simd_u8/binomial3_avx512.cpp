// The 3x3 binomial Gaussian ([1,2,1] outer [1,2,1], divisor 2^b with 4 <= b <= 8, centred
// anchor) on AVX-512 in one fused pass, without Algorithm 7's temporary row. Each 64-column
// chunk walks down a band of rows: the horizontal [1,2,1] of every input row is computed once,
// in registers, and each output row adds the last three of them, so every input pixel is loaded
// once per band and nothing is stored but the output (the two-pass form stored and reloaded two
// 16-bit planes per output row, and split its plane loads across cache lines).
//
// Horizontal pass, 64 pixels A (columns x .. x+63) with the vectors before (P) and after (N):
// M = columns x-1 .. x+62 and Q = x+1 .. x+64 are cut from P:A and A:N (valignq + vpalignr;
// unaligned loads at x-1 and x+1 split lines and measured 20% slower), and maddubs with the
// constant s = 2^(8-b) gives the column pairs' sums times s: M -> (2j-1, 2j), A -> (2j, 2j+1),
// Q -> (2j+1, 2j+2). Even outputs are M + A, odd outputs A + Q (16-bit; no byte shuffles).
// Vertical: with p(y) = h(y) + h(y+1), output row y is p(y-1) + p(y), two adds per plane.
// The sum times s is at most 4080 * 16 = 65280, so it fits 16 bits unsigned and the output
// byte floor(sum / 2^b) is its high byte: even >> 8 | odd & 0xFF00 (one shift, one ternlog).
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx512_common.hpp"

namespace tc {
namespace u8 {
namespace {

struct Planes2 {
  __m512i e, o;  // even- and odd-column sums (times s)
};

// prefetchw (a no-op hint where unsupported; every AVX-512 CPU has it), as inline assembly so
// that no extra target flag is needed.
__attribute__((always_inline)) inline void prefetch_write(const std::uint8_t* p) {
  __asm__ volatile("prefetchw %0" ::"m"(*p));
}

// Chunk kinds: interior (P and N loaded), left edge (x = 0: P's last byte is column -1's
// border value) and right edge (x = w - 64: N's first byte is column w's).
enum Edge : int { kInterior, kLeft, kRight };

template <int E>
__attribute__((always_inline)) inline Planes2 horizontal(const std::uint8_t* row, std::int64_t x,
                                                         std::int64_t lsrc, std::int64_t rsrc,
                                                         __m512i s) {
  const __m512i a = _mm512_loadu_si512(row + x);
  const __m512i p = E == kLeft ? _mm512_set1_epi8(static_cast<char>(lsrc < 0 ? 0 : row[lsrc]))
                               : _mm512_loadu_si512(row + x - 64);
  const __m512i n = E == kRight ? _mm512_set1_epi8(static_cast<char>(rsrc < 0 ? 0 : row[rsrc]))
                                : _mm512_loadu_si512(row + x + 64);
  // bytes x-1 .. x+62: per 128-bit lane, the lane before's last byte then the lane's first 15
  const __m512i m = _mm512_alignr_epi8(a, _mm512_alignr_epi64(a, p, 6), 15);
  const __m512i q = _mm512_alignr_epi8(_mm512_alignr_epi64(n, a, 2), a, 1);  // x+1 .. x+64
  const __m512i s0 = _mm512_maddubs_epi16(a, s);
  return {_mm512_add_epi16(_mm512_maddubs_epi16(m, s), s0),
          _mm512_add_epi16(_mm512_maddubs_epi16(q, s), s0)};
}

// Output rows [y0, y1) of the 64 columns at x; rows[i] is the input row above output row i.
template <int E>
void walk(const Binomial3& g, std::int64_t x, std::int64_t y0, std::int64_t y1) {
  const __m512i s = _mm512_set1_epi8(static_cast<char>(g.scale));
  const __m512i hi = _mm512_set1_epi16(static_cast<short>(0xFF00));
  const std::int64_t ls = g.lsrc, rs = g.rsrc, os = g.out_stride;
  const std::uint8_t* const* r = g.rows + y0;
  std::uint8_t* out = g.out + y0 * os + x;
  Planes2 h0 = horizontal<E>(r[0], x, ls, rs, s);
  Planes2 h1 = horizontal<E>(r[1], x, ls, rs, s);
  __m512i pe = _mm512_add_epi16(h0.e, h1.e), po = _mm512_add_epi16(h0.o, h1.o);
  r += 2;
  // One output row: the next input row's planes h, p(y) = h1 + h, out = p(y-1) + p(y). Written
  // for two rows per iteration so that the registers alternate instead of being moved.
  auto row = [&](Planes2& h1r, Planes2& h2r, __m512i& pe0, __m512i& po0, __m512i& pe1,
                 __m512i& po1) {
    const std::uint8_t* in = *r++;
    // The line of this row that chunk x + 128 reads first: two chunks (one walk each) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(in + x + 192), _MM_HINT_T0);
    // And ownership of the output line three chunks ahead: the output buffer is usually
    // recycled memory last written elsewhere (another core, or evicted), and a store miss holds
    // the store queue. In cpu_u8.py's interleaving 5-20% faster at 1-2 Mpx (alternating rounds,
    // one process), 2-5% slower when the lines are already in L2 or L3 (back-to-back calls).
    prefetch_write(out + 192);
    h2r = horizontal<E>(in, x, ls, rs, s);
    pe1 = _mm512_add_epi16(h1r.e, h2r.e);
    po1 = _mm512_add_epi16(h1r.o, h2r.o);
    const __m512i e = _mm512_srli_epi16(_mm512_add_epi16(pe0, pe1), 8);
    _mm512_storeu_si512(out, _mm512_ternarylogic_epi32(e, _mm512_add_epi16(po0, po1), hi, 0xF8));
    out += os;
  };
  Planes2 h2;
  __m512i pe2, po2;
  std::int64_t n = y1 - y0;
  for (; n >= 2; n -= 2) {
    row(h1, h2, pe, po, pe2, po2);
    row(h2, h1, pe2, po2, pe, po);
  }
  if (n) row(h1, h2, pe, po, pe2, po2);
}

}  // namespace

void binomial3_rows_avx512(const Binomial3& g, std::int64_t b, std::int64_t e) {
  const std::int64_t w = g.w;
  // Bands of at most g.band rows, split evenly (a short last band would repeat the two rows
  // above it for few outputs).
  const std::int64_t nb = (e - b + g.band - 1) / g.band, band = (e - b + nb - 1) / nb;
  for (std::int64_t y0 = b; y0 < e; y0 += band) {
    const std::int64_t y1 = y0 + band < e ? y0 + band : e;
    walk<kLeft>(g, 0, y0, y1);
    // Interior chunks: x = 64, then the columns at which the output rows start a cache line
    // (g.phase), and one last chunk ending at w - 64 if the grid stops short of it.
    std::int64_t x = 64;
    for (;;) {
      walk<kInterior>(g, x, y0, y1);
      const std::int64_t next = x + 64 - ((x - g.phase) & 63);
      if (next > w - 128) break;
      x = next;
    }
    if (x + 64 < w - 64) walk<kInterior>(g, w - 128, y0, y1);
    walk<kRight>(g, w - 64, y0, y1);
  }
}

}  // namespace u8
}  // namespace tc
TC_AVX512_END
#endif  // TC_X86
