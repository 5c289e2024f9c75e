// "pairs" (our variant, beyond the paper), written once over vector traits V (V256: AVX2, V512:
// AVX-512); include it inside the including file's target region. Each pair of adjacent
// coefficients (c[u][2t], c[u][2t+1]) is broadcast to every byte pair of a vector, and maddubs
// is applied to the input loaded at offset 2t (its pair sums are the two taps' share of the even
// outputs) and at 2t+1 (the odd outputs). No horizontal additions, no shifted coefficients, no
// per-lane limits: V::kBytes outputs per block for any kernel width, packed with the paper's
// out_even/out_odd scheme (even results in the low byte of each 16-bit slot, odd in the high).
// 16-bit IRs: even/odd planes accumulate in 16 bits. 32-bit IRs: 16-bit partial sums are
// widened into four 32-bit planes (outputs 4q, 4q+1, 4q+2, 4q+3) whenever the next pair could
// overflow them (the widening points come from the coefficients, see build_pairs).
#pragma once
#include <cstdint>
#include <vector>

#include "simd_u8.hpp"

namespace tc {
namespace u8 {
namespace {

// Table layout: one broadcast pair vector (V::kBytes bytes) per (u, t) in tab (pair
// i = u * np + t); for 32-bit IRs, k32 holds the 16-bit groups (see pairs32_block, build_pairs).
// NP = pairs per kernel row (a template argument so the pair loop unrolls). R output rows at once
// (register blocking, section 3.3): each loaded input row and coefficient vector serves every
// output row it belongs to, which cuts the loads per output (they, not the arithmetic, bound it).
template <class V, int NP, int R>
void pairs16_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                   std::int64_t off) {
  using T = typename V::T;
  const std::uint8_t* tab = bk.tab.data();
  T even[R], odd[R];
  for (int q = 0; q < R; ++q) even[q] = odd[q] = V::zero();
  for (int u = 0; u < bk.kh + R - 1; ++u) {
    const std::uint8_t* r = rows[u] + off;
    unroll<NP>([&](auto t) {
      const T a = V::load(r + 2 * t), b = V::load(r + 2 * t + 1);
      unroll<R>([&](auto q) {
        const int cu = u - q;  // kernel row that input row u meets in output row q
        if (R == 1 || (cu >= 0 && cu < bk.kh)) {
          const T c = V::load(tab + V::kBytes * (NP * cu + t));
          even[q] = V::add16(even[q], V::maddubs(a, c));
          odd[q] = V::add16(odd[q], V::maddubs(b, c));
        }
      });
    });
  }
  for (int q = 0; q < R; ++q)
    V::store(outs[q] + off, V::or_(vfinish16<V>(even[q], bk.ir, bk.div),
                                   V::template slli16<8>(vfinish16<V>(odd[q], bk.ir, bk.div))));
}

template <class V>
struct Pairs16 {
  template <int NP>
  struct At {
    static void run(Block& b) {
      b.fn = &repeat<&pairs16_block<V, NP, 3>>;
      b.fn1 = &repeat<&pairs16_block<V, NP, 1>>;
      b.rows_out = 3;
    }
  };
};

// Group sums S lie in [lo, lo + 65535]: they start from -lo, so the 16-bit value is S - lo >= 0
// and widens by zero-extension; the planes get sum(lo) back at the end. even (outputs 2i) and
// odd (2i+1) partial sums -> 32-bit planes of outputs 4q + r.
template <class V>
inline void widen(typename V::T even, typename V::T odd, typename V::T* plane) {
  const auto low = V::set1_32(0xFFFF);
  plane[0] = V::add32(plane[0], V::and_(even, low));
  plane[2] = V::add32(plane[2], V::template srli32<16>(even));
  plane[1] = V::add32(plane[1], V::and_(odd, low));
  plane[3] = V::add32(plane[3], V::template srli32<16>(odd));
}

template <class V>
void pairs32_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                   std::int64_t off) {
  using T = typename V::T;
  // k32: [ngroups, bias, (len, start) per group, (row, offset) per pair]
  const std::int32_t* g32 = bk.k32.data();
  const int ngroups = g32[0];
  const std::int32_t* grp = g32 + 2;
  const std::int32_t* where = grp + 2 * ngroups;
  const std::uint8_t* tab = bk.tab.data();
  const T bias = V::set1_32(g32[1]);
  T plane[4] = {bias, bias, bias, bias};
  int i = 0;
  for (int g = 0; g < ngroups; ++g) {
    T even = V::set1_16(static_cast<short>(grp[2 * g + 1])), odd = even;
    for (const int end = i + grp[2 * g]; i < end; ++i) {
      const std::uint8_t* r = rows[where[2 * i]] + off + where[2 * i + 1];
      const T c = V::load(tab + V::kBytes * i);
      even = V::add16(even, V::maddubs(V::load(r), c));
      odd = V::add16(odd, V::maddubs(V::load(r + 1), c));
    }
    widen<V>(even, odd, plane);
  }
  T out = vfinish32<V>(plane[0], bk.div);
  out = V::or_(out, V::template slli32<8>(vfinish32<V>(plane[1], bk.div)));
  out = V::or_(out, V::template slli32<16>(vfinish32<V>(plane[2], bk.div)));
  out = V::or_(out, V::template slli32<24>(vfinish32<V>(plane[3], bk.div)));
  V::store(outs[0] + off, out);
}

template <class V>
void build_pairs(Block& b, const std::int32_t* k) {
  constexpr int VB = V::kBytes;
  const int np = (b.kw + 1) / 2;
  b.tab.assign(static_cast<std::size_t>(VB * b.kh * np), 0);
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
      for (int x = 0; x < VB; x += 2) {
        b.tab[VB * (u * np + t) + x] = static_cast<std::uint8_t>(c0);
        b.tab[VB * (u * np + t) + x + 1] = static_cast<std::uint8_t>(c1);
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
  b.outputs = VB;
  b.reads = b.kw + VB;
  b.writes = VB;
  if (b.ir == IR::s32) {
    b.fn = b.fn1 = &repeat<&pairs32_block<V>>;
    b.rows_out = 1;
  } else {
    with_kw<Pairs16<V>::template At, 8>(np, b);
  }
}

}  // namespace
}  // namespace u8
}  // namespace tc
