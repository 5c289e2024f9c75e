// simd_u8 kernel analysis (portable C++): IR bit width, maddubs pair safety, separability,
// division case, the algorithm and vector tier a kernel gets, and a small cache of prepared
// kernels (analysis, coefficient tables, taps) keyed by kernel, divisor, request and tier.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "../../core/factories.hpp"
#include "../../core/types.hpp"
#include "../cpu_features.hpp"
#include "../parallel.hpp"
#include "simd_u8.hpp"

namespace tc {
namespace u8 {

// ---------------------------------------------------------------- analysis

namespace {

constexpr std::int64_t kMaxDivisor = 2147483647;  // 32-bit IRs divide unsigned 31-bit sums
// Separable (Algorithm 7) beats the 2-D algorithms from this kernel size on. The paper found 3x3
// faster with Algorithm 1; with symmetric taps folded and power-of-two taps shifted, our row
// pass makes 3x3 ~10% faster separably on Zen 5 (docs/design/cpu-u8.md).
constexpr int kSepMin = 3;

std::int64_t pos(std::int64_t v) { return v > 0 ? v : 0; }
std::int64_t neg(std::int64_t v) { return v < 0 ? v : 0; }

// maddubs adds two u8 x s8 products with signed saturation: exact when 255 * (pair's positive
// part) <= 32767 and 255 * (pair's negative part) >= -32768, for every pair the layout forms.
// offset 0: pairs (c0,c1),(c2,c3)...; offset 1 (Algorithm 1's odd shifts): (0,c0),(c1,c2)...
bool pairs_safe(const std::int32_t* k, int kh, int kw, int offset) {
  for (int u = 0; u < kh; ++u)
    for (int v = -offset; v < kw; v += 2) {
      const std::int64_t c0 = v >= 0 ? k[u * kw + v] : 0;
      const std::int64_t c1 = v + 1 < kw ? k[u * kw + v + 1] : 0;
      if (255 * (pos(c0) + pos(c1)) > 32767 || 255 * (neg(c0) + neg(c1)) < -32768) return false;
    }
  return true;
}

// Which 16-bit reading keeps every possible sum exact, if any (modular 16-bit adds are exact when
// the final sum fits the chosen range; case B adds 1 before the multiply).
bool fits16(std::int64_t lo, std::int64_t hi, std::int64_t d, IR& ir, std::string& why) {
  if (d > 65535) {
    why = "divisor " + std::to_string(d) + " > 65535 needs 32-bit IRs";
    return false;
  }
  // Unsigned first: non-negative sums skip the max with 0 before dividing.
  const bool case_b = make_divider(d, 16).kase == 'B';
  if (lo >= 0 && hi <= (case_b ? 65534 : 65535)) {
    ir = IR::u16;
    return true;
  }
  if (lo >= -32768 && hi <= 32767) {
    ir = IR::s16;
    return true;
  }
  why = "sums over uint8 images span [" + std::to_string(lo) + ", " + std::to_string(hi) +
        "], beyond 16 bits";
  return false;
}

// Integer rank-1 factorization k = outer(a, b) with a primitive (gcd 1) and, when possible,
// non-negative. Empty when the kernel is not an outer product of integer vectors.
bool factor(const std::int32_t* k, int kh, int kw, std::vector<std::int32_t>& a,
            std::vector<std::int32_t>& b) {
  int u0 = -1, v0 = -1;
  for (int i = 0; i < kh * kw && u0 < 0; ++i)
    if (k[i] != 0) u0 = i / kw, v0 = i % kw;
  if (u0 < 0) return false;
  std::int64_t g = 0;
  for (int u = 0; u < kh; ++u) g = std::gcd(g, std::int64_t{std::abs(k[u * kw + v0])});
  a.assign(kh, 0);
  b.assign(kw, 0);
  bool any_neg = false, any_pos = false;
  for (int u = 0; u < kh; ++u) {
    a[u] = static_cast<std::int32_t>(k[u * kw + v0] / g);
    any_neg |= a[u] < 0;
    any_pos |= a[u] > 0;
  }
  if (any_neg && !any_pos)
    for (auto& x : a) x = -x;
  for (int v = 0; v < kw; ++v) {
    if (k[u0 * kw + v] % a[u0] != 0) return false;
    b[v] = k[u0 * kw + v] / a[u0];
  }
  for (int u = 0; u < kh; ++u)
    for (int v = 0; v < kw; ++v)
      if (std::int64_t{a[u]} * b[v] != k[u * kw + v]) return false;
  return true;
}

// The taps of one 1-D factor: mirrored entries of a symmetric factor folded into one tap, zero
// entries skipped, powers of two marked for a shift.
Separable::Taps make_taps(const std::vector<std::int32_t>& f) {
  Separable::Taps r;
  const int k = static_cast<int>(f.size());
  bool symmetric = true;
  for (int v = 0; v < k; ++v) symmetric &= f[v] == f[k - 1 - v];
  for (int v = 0; v < (symmetric ? (k + 1) / 2 : k); ++v) {
    if (f[v] == 0) continue;
    SepTap& tp = r.t[r.n++];
    tp.v = v;
    tp.m = symmetric && k - 1 - v != v ? k - 1 - v : -1;
    tp.c = f[v];
    tp.shift = -1;
    for (int sh = 0; sh < 15; ++sh)
      if (f[v] == (1 << sh)) tp.shift = sh;
  }
  return r;
}

Prepared prepare(const std::int32_t* k, int kh, int kw, std::int64_t d, const std::string& request,
                 Isa isa) {
  const bool avx2 = isa != Isa::portable;
  if (kh < 1 || kw < 1 || kh > kMaxK || kw > kMaxK)
    throw ValueError("kernel shape (" + std::to_string(kh) + ", " + std::to_string(kw) +
                     ") is outside 1..15 in some dimension; simd_u8 supports kernels up to 15x15");
  if (d < 1 || d > kMaxDivisor)
    throw ValueError("divisor must be an integer in 1.." + std::to_string(kMaxDivisor) +
                     " (32-bit IRs hold the sums), got " + std::to_string(d));
  Prepared p;
  Analysis& an = p.an;
  bool int8 = true;
  for (int i = 0; i < kh * kw; ++i) {
    if (k[i] < -32768 || k[i] > 32767)
      throw ValueError("kernel value " + std::to_string(k[i]) +
                       " does not fit 16 bits; simd_u8 multiplies by 8- or 16-bit coefficients");
    int8 &= k[i] >= -128 && k[i] <= 127;
    an.sum_min += 255 * neg(k[i]);
    an.sum_max += 255 * pos(k[i]);
  }
  IR ir16 = IR::s16;
  std::string why16;
  const bool ok16 = fits16(an.sum_min, an.sum_max, d, ir16, why16);
  const bool pairs0 = int8 && pairs_safe(k, kh, kw, 0);
  const bool pairs1 = int8 && pairs_safe(k, kh, kw, 1);
  const std::string not8 = int8 ? "" : "kernel values do not fit 8 bits";
  const std::string sat = "adjacent 8-bit coefficients would saturate maddubs' 16-bit pair sums";

  an.separable = factor(k, kh, kw, an.a, an.b);
  Separable& s = p.sep;
  std::string why_sep;
  bool ok_sep = an.separable;
  if (!an.separable) why_sep = "the kernel is not an outer product of integer vectors";
  if (ok_sep) {
    s.kh = kh, s.kw = kw, s.a = an.a, s.b = an.b, s.divisor = d;
    std::int64_t vlo = 0, vhi = 0;
    bool a8 = true;
    for (auto x : s.a) vlo += 255 * neg(x), vhi += 255 * pos(x), a8 &= x >= -128 && x <= 127;
    if (!a8) {
      ok_sep = false;
      why_sep = "the vertical factor does not fit 8 bits";
    } else if (vlo >= -32768 && vhi <= 32767) {
      s.v_unsigned = false;
    } else if (vlo >= 0 && vhi <= 65535) {
      s.v_unsigned = true;
    } else {
      ok_sep = false;
      why_sep = "the vertical factor's column sums do not fit 16 bits";
    }
    if (ok_sep) {
      IR h = IR::s32;
      std::string unused;
      if (!fits16(an.sum_min, an.sum_max, d, h, unused)) h = IR::s32;
      // mullo_epi16 is exact modulo 2^16, so 16-bit IRs only need the whole sum to fit.
      s.h_ir = h;
      std::int64_t bsum = 0;
      for (auto x : s.b) bsum += x;
      s.bias = s.biased() ? 32768 * bsum : 0;
      s.div = make_divider(d, s.h_ir == IR::s32 ? 32 : 16);
      s.clip255 = an.sum_max / d > 255;
      s.vtaps = make_taps(s.a);
      s.htaps = make_taps(s.b);
      s.run = isa == Isa::avx512 ? &sep_rows_avx512 : &sep_rows_avx2;
      static const std::int32_t kBinomial3[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
      if (isa == Isa::avx512 && kh == 3 && kw == 3 && std::equal(k, k + 9, kBinomial3) &&
          s.div.kase == 'A' && s.div.b >= 4 && s.div.b <= 8)
        s.binomial3_scale = 1 << (8 - s.div.b);
    }
  }

  std::string req = request.empty() ? "auto" : request;
  Algo algo = Algo::portable;
  if (req == "auto") {
    if (!avx2) {
      algo = Algo::portable;
      an.why = path_note();
    } else if (ok_sep && std::min(kh, kw) >= kSepMin) {
      algo = Algo::sep;
      an.why = "separable kernel, k >= " + std::to_string(kSepMin);
      if (s.binomial3_scale)
        an.why += "; 3x3 binomial: one fused pass (AVX-512, centred anchor, from " +
                  std::to_string(kBinomial3MinW) + " columns)";
    } else if (pairs0) {
      // Measured faster than Algorithms 1, 2 and 3 at every k here (docs/design/cpu-u8.md,
      // benchmarks/harness/cpu_u8_algorithms.py); those stay available by name.
      algo = Algo::pairs;
      an.why = std::string("8-bit coefficients, ") + (ok16 ? "16-bit IRs" : "32-bit IRs: " + why16);
    } else {
      algo = Algo::wide;
      an.why = "16-bit coefficients: " + (int8 ? sat : not8);
    }
  } else {
    auto fail = [&](const std::string& why) {
      throw ValueError("algorithm '" + req + "' cannot compute this kernel exactly: " + why);
    };
    if (req == "portable") {
      algo = Algo::portable;
    } else {
      if (req != "alg1" && req != "alg2" && req != "alg3" && req != "sep" && req != "pairs" &&
          req != "wide")
        throw ValueError("unknown algorithm '" + req +
                         "'; valid: auto, alg1, alg2, alg3, sep, pairs, wide, portable");
      if (!avx2) fail("it needs the AVX2 path, which is off here (" + path_note() + ")");
      if (req == "alg1") {
        if (kh > 5 || kw > 5)
          fail(
              "Algorithm 1 is for kernels up to 5x5 (its kh*(kw+1) shifted coefficients outgrow "
              "the registers)");
        if (!int8) fail(not8);
        if (!pairs1) fail(sat);
        if (!ok16) fail(why16);
        algo = Algo::alg1;
      } else if (req == "alg2") {
        if (!int8) fail(not8);
        if (!pairs0) fail(sat);
        if (!ok16) fail(why16);
        algo = Algo::alg2;
      } else if (req == "alg3") {
        if (!int8) fail(not8);
        if (!pairs0) fail(sat);
        algo = Algo::alg3;
      } else if (req == "sep") {
        if (!ok_sep) fail(why_sep);
        algo = Algo::sep;
      } else if (req == "pairs") {
        if (!int8) fail(not8);
        if (!pairs0) fail(sat);
        algo = Algo::pairs;
      } else {
        algo = Algo::wide;
      }
    }
    an.why = "requested";
  }
  an.algo = algo;

  Block& bk = p.block;
  bk.kh = kh;
  bk.kw = kw;
  bk.divisor = d;
  switch (algo) {
    case Algo::alg1:
      an.row_block = kh <= 3 ? 3 : (kh <= 5 ? 2 : 1);
      bk.ir = ir16;
      bk.div = make_divider(d, 16);
      build_alg1_avx2(bk, k, an.row_block);
      break;
    case Algo::alg2:
      bk.ir = ir16;
      bk.div = make_divider(d, 16);
      build_alg2_avx2(bk, k);
      break;
    case Algo::alg3:
      bk.ir = IR::s32;
      bk.div = make_divider(d, 32);
      build_alg3_avx2(bk, k);
      break;
    case Algo::pairs:
      bk.ir = ok16 ? ir16 : IR::s32;
      bk.div = make_divider(d, ok16 ? 16 : 32);
      if (isa == Isa::avx512)
        build_pairs_avx512(bk, k);
      else
        build_pairs_avx2(bk, k);
      break;
    case Algo::wide:
      bk.ir = IR::s32;
      bk.div = make_divider(d, 32);
      build_wide_avx2(bk, k);
      break;
    case Algo::portable:
      bk.ir = IR::s32;
      bk.div = make_divider(d, 32);
      build_portable(bk, k);
      break;
    case Algo::sep:
      break;
  }
  an.row_block = bk.rows_out;
  if (algo == Algo::sep) {
    an.ir_bits = s.h_ir == IR::s32 ? 32 : 16;
    an.ir_unsigned = s.h_ir == IR::u16;
    an.div_case = s.div.kase;
    an.row_block = 1;
  } else {
    an.ir_bits = bk.ir == IR::s32 ? 32 : 16;
    an.ir_unsigned = bk.ir == IR::u16;
    an.div_case = bk.div.kase;
  }
  if (algo == Algo::portable) an.div_case = '-';  // exact integer '/'
  an.isa = isa_name(algo == Algo::portable ? Isa::portable
                    : (algo == Algo::sep || algo == Algo::pairs) ? isa
                                                                 : Isa::avx2);
  return p;
}

}  // namespace

namespace {

// Recently prepared kernels (analysis, coefficient tables, taps), so repeated calls with one
// kernel skip the analysis and table building: keyed by kernel, divisor, request and tier.
struct CacheEntry {
  std::vector<std::int32_t> k;
  int kh, kw;
  std::int64_t d;
  std::string request;
  Isa isa;
  std::shared_ptr<const Prepared> p;
};

}  // namespace

std::shared_ptr<const Prepared> prepared(const std::int32_t* k, int kh, int kw, std::int64_t d,
                                         const std::string& request, Isa isa) {
  static std::mutex mu;
  static std::vector<CacheEntry> cache;  // most recently used last
  constexpr std::size_t kEntries = 16;
  const std::size_t nk = kh > 0 && kw > 0 ? static_cast<std::size_t>(kh) * kw : 0;
  {
    std::lock_guard<std::mutex> lk(mu);
    for (std::size_t i = cache.size(); i-- > 0;) {
      const CacheEntry& e = cache[i];
      if (e.kh == kh && e.kw == kw && e.d == d && e.isa == isa && e.request == request &&
          std::equal(k, k + nk, e.k.begin())) {
        if (i + 1 != cache.size()) std::rotate(cache.begin() + i, cache.begin() + i + 1, cache.end());
        return cache.back().p;
      }
    }
  }
  auto p = std::make_shared<const Prepared>(prepare(k, kh, kw, d, request, isa));
  std::lock_guard<std::mutex> lk(mu);
  cache.push_back(CacheEntry{std::vector<std::int32_t>(k, k + nk), kh, kw, d, request, isa, p});
  if (cache.size() > kEntries) cache.erase(cache.begin());
  return p;
}


Analysis analyze(const std::int32_t* k, int kh, int kw, std::int64_t divisor,
                 const std::string& algorithm, Isa isa) {
  return prepared(k, kh, kw, divisor, algorithm, isa)->an;
}

}  // namespace u8
}  // namespace tc
