// "pairs" (our variant, beyond the paper): each pair of adjacent coefficients (c[u][2t],
// c[u][2t+1]) is broadcast to every byte pair of a vector, and maddubs is applied to the input
// loaded at offset 2t (its 16 pair sums are the two taps' share of the 16 even outputs) and at
// 2t+1 (the odd outputs). No horizontal additions, no shifted coefficients, no per-lane limits:
// 32 outputs per block for any kernel width, packed with the paper's out_even/out_odd scheme.
// 16-bit IRs: even/odd planes accumulate in 16 bits. 32-bit IRs: 16-bit partial sums are
// widened into four 32-bit planes (outputs 4q, 4q+1, 4q+2, 4q+3) whenever the next pair could
// overflow them (the widening points come from the coefficients, see build).
#include <cstdint>
#include <vector>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"

namespace tc {
namespace u8 {
namespace {

// Table layout: one broadcast pair vector per (u, t) in tab (pair i = u * np + t); for 32-bit
// IRs, k32 holds the 16-bit groups (see pairs32_block and build_pairs_avx2).
inline __m256i load(const std::uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// NP = pairs per kernel row (a template argument so the pair loop unrolls).
template <int NP>
void pairs16_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                   std::int64_t off) {
  const std::uint8_t* tab = bk.tab.data();
  __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
  for (int u = 0; u < bk.kh; ++u) {
    const std::uint8_t* r = rows[u] + off;
    const std::uint8_t* cu = tab + 32 * NP * u;
    unroll<NP>([&](auto t) {
      const __m256i c = vcoef(cu, t);
      even = _mm256_add_epi16(even, _mm256_maddubs_epi16(load(r + 2 * t), c));
      odd = _mm256_add_epi16(odd, _mm256_maddubs_epi16(load(r + 2 * t + 1), c));
    });
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(outs[0] + off), pack16(even, odd, bk.ir, bk.div));
}

template <int NP>
struct Pairs16 {
  static void run(BlockFn& fn) { fn = &repeat<&pairs16_block<NP>>; }
};

// Group sums S lie in [lo, lo + 65535]: they start from -lo, so the 16-bit value is S - lo >= 0
// and widens by zero-extension; the planes get sum(lo) back at the end. even (outputs 2i) and
// odd (2i+1) partial sums -> 32-bit planes of outputs 4q + r.
inline void widen(__m256i even, __m256i odd, __m256i* plane) {
  const __m256i low = _mm256_set1_epi32(0xFFFF);
  plane[0] = _mm256_add_epi32(plane[0], _mm256_and_si256(even, low));
  plane[2] = _mm256_add_epi32(plane[2], _mm256_srli_epi32(even, 16));
  plane[1] = _mm256_add_epi32(plane[1], _mm256_and_si256(odd, low));
  plane[3] = _mm256_add_epi32(plane[3], _mm256_srli_epi32(odd, 16));
}

void pairs32_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                   std::int64_t off) {
  // k32: [ngroups, bias, (len, start) per group, (row, offset) per pair]
  const std::int32_t* g32 = bk.k32.data();
  const int ngroups = g32[0];
  const std::int32_t* grp = g32 + 2;
  const std::int32_t* where = grp + 2 * ngroups;
  const std::uint8_t* tab = bk.tab.data();
  const __m256i bias = _mm256_set1_epi32(g32[1]);
  __m256i plane[4] = {bias, bias, bias, bias};
  int i = 0;
  for (int g = 0; g < ngroups; ++g) {
    __m256i even = _mm256_set1_epi16(static_cast<short>(grp[2 * g + 1])), odd = even;
    for (const int end = i + grp[2 * g]; i < end; ++i) {
      const std::uint8_t* r = rows[where[2 * i]] + off + where[2 * i + 1];
      const __m256i c = vcoef(tab, i);
      even = _mm256_add_epi16(even, _mm256_maddubs_epi16(load(r), c));
      odd = _mm256_add_epi16(odd, _mm256_maddubs_epi16(load(r + 1), c));
    }
    widen(even, odd, plane);
  }
  __m256i out = finish32(plane[0], bk.div);
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[1], bk.div), 8));
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[2], bk.div), 16));
  out = _mm256_or_si256(out, _mm256_slli_epi32(finish32(plane[3], bk.div), 24));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(outs[0] + off), out);
}

}  // namespace

void build_pairs_avx2(Block& b, const std::int32_t* k) {
  const int np = (b.kw + 1) / 2;
  b.tab.assign(static_cast<std::size_t>(32 * b.kh * np), 0);
  // Greedy 16-bit groups for 32-bit IRs: a group's sums over uint8 pixels span
  // [255 * neg, 255 * pos]; exact in 16 bits (offset by -lo) while that span is <= 65535.
  std::vector<std::int32_t> grp, where;
  std::int64_t pos = 0, neg = 0, bias = 0;
  auto close = [&]() {
    if (grp.empty()) return;
    grp.back() = static_cast<std::int32_t>(static_cast<std::int16_t>(-255 * neg));  // start -lo
    bias += 255 * neg;
  };
  for (int u = 0; u < b.kh; ++u)
    for (int t = 0; t < np; ++t) {
      const std::int32_t c0 = k[u * b.kw + 2 * t];
      const std::int32_t c1 = 2 * t + 1 < b.kw ? k[u * b.kw + 2 * t + 1] : 0;
      for (int x = 0; x < 32; x += 2) {
        b.tab[32 * (u * np + t) + x] = static_cast<std::uint8_t>(c0);
        b.tab[32 * (u * np + t) + x + 1] = static_cast<std::uint8_t>(c1);
      }
      const std::int64_t p = (c0 > 0 ? c0 : 0) + (c1 > 0 ? c1 : 0);
      const std::int64_t n = (c0 < 0 ? c0 : 0) + (c1 < 0 ? c1 : 0);
      if (grp.empty() || 255 * ((pos + p) - (neg + n)) > 65535) {
        close();
        grp.push_back(0);  // length
        grp.push_back(0);  // start value, set by close()
        pos = neg = 0;
      }
      pos += p;
      neg += n;
      ++grp[grp.size() - 2];
      where.push_back(u);
      where.push_back(2 * t);
    }
  close();
  b.k32.assign({static_cast<std::int32_t>(grp.size() / 2), static_cast<std::int32_t>(bias)});
  b.k32.insert(b.k32.end(), grp.begin(), grp.end());
  b.k32.insert(b.k32.end(), where.begin(), where.end());
  b.outputs = 32;
  b.reads = b.kw + 32;
  b.writes = 32;
  if (b.ir == IR::s32) {
    b.fn = &repeat<&pairs32_block>;
  } else {
    with_kw<Pairs16, 8>(np, b.fn);
  }
  b.fn1 = b.fn;
  b.rows_out = 1;
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
