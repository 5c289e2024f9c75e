// simd_u8 dispatch and driver (portable C++): kernel analysis (IR bit width, maddubs pair
// safety, separability, division case), the run-time choice of vector tier (AVX-512 for sep and
// pairs, AVX2, portable), a small cache of prepared kernels, the portable path, and the row/column
// driver that handles borders without padding the image (section 3.7): rows outside the image
// are row pointers (reflected, replicated or a shared zero row), and the few blocks that touch
// the left/right border or the row's end run the same vector routine on short per-row strips
// (built once per input row and reused by the kh output rows that read it) instead of a scalar
// remainder loop.
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

Border parse_border(const std::string& name) {
  if (name == "constant") return Border::constant;
  if (name == "replicate") return Border::replicate;
  if (name == "reflect101") return Border::reflect101;
  throw ValueError("unknown border '" + name + "'; valid borders: constant, replicate, reflect101");
}

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::alg1:
      return "alg1";
    case Algo::alg2:
      return "alg2";
    case Algo::alg3:
      return "alg3";
    case Algo::sep:
      return "sep";
    case Algo::pairs:
      return "pairs";
    case Algo::wide:
      return "wide";
    case Algo::portable:
      return "portable";
  }
  return "?";
}

Divider make_divider(std::int64_t d, int w) {
  Divider r;
  int b = 0;
  while ((std::int64_t{1} << (b + 1)) <= d) ++b;
  r.b = b;
  if ((std::int64_t{1} << b) == d) {
    r.kase = 'A';
    return r;
  }
  // f = 2^(w+b) / d < 2^w; compare the remainder with d/2 for the fractional part.
  const unsigned __int128 num = static_cast<unsigned __int128>(1) << (w + b);
  const std::uint64_t q = static_cast<std::uint64_t>(num / static_cast<unsigned __int128>(d));
  const std::uint64_t rem = static_cast<std::uint64_t>(num % static_cast<unsigned __int128>(d));
  if (2 * rem < static_cast<std::uint64_t>(d)) {
    r.kase = 'B';
    r.f = q;
  } else {
    r.kase = 'C';
    r.f = q + 1;
  }
  return r;
}

std::uint8_t clip_div(std::int64_t sum, std::int64_t divisor) {
  if (sum <= 0) return 0;
  const std::int64_t q = sum / divisor;
  return static_cast<std::uint8_t>(q > 255 ? 255 : q);
}

std::uint8_t sep_scalar_output(const Separable& s, const std::int16_t* t) {
  std::int64_t sum = 0;
  for (int v = 0; v < s.kw; ++v) {
    std::uint16_t bits = static_cast<std::uint16_t>(t[v]);
    if (s.biased()) bits ^= 0x8000u;
    const std::int64_t col =
        s.v_unsigned ? std::int64_t{bits} : std::int64_t{static_cast<std::int16_t>(bits)};
    sum += col * s.b[v];
  }
  return clip_div(sum, s.divisor);
}

// ---------------------------------------------------------------- run-time dispatch

const char* isa_name(Isa i) {
  switch (i) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::portable:
      return "portable";
  }
  return "?";
}

bool avx2_supported() { return cpu_has_avx2_fma(); }
bool portable_forced() { return cpu_portable_forced(); }
Isa isa_in_use() {
  if (!avx2_supported() || portable_forced()) return Isa::portable;
  return cpu_has_avx512bw() && !cpu_avx2_forced() ? Isa::avx512 : Isa::avx2;
}
bool use_avx2() { return isa_in_use() != Isa::portable; }

std::string path_note() {
  if (!avx2_supported()) return "AVX2/FMA not supported by this CPU; portable path in use";
  if (portable_forced()) return "TENSORCONV_FORCE_PORTABLE is set; portable path in use";
  if (isa_in_use() == Isa::avx512)
    return "AVX-512 path in use (sep and pairs; the other algorithms AVX2)";
  if (cpu_has_avx512bw()) return "TENSORCONV_FORCE_AVX2 is set; AVX2 path in use";
  return "AVX2 path in use (no AVX-512 BW on this CPU)";
}

// ---------------------------------------------------------------- analysis

namespace {

constexpr std::int64_t kMaxDivisor = 2147483647;  // 32-bit IRs divide unsigned 31-bit sums
constexpr int kMaxK = 15;
// Separable (Algorithm 7) beats the 2-D algorithms from this kernel size on. The paper found 3x3
// faster with Algorithm 1; with symmetric taps folded and power-of-two taps shifted, our row
// pass makes 3x3 ~10% faster separably on Zen 5 (benchmarks/CPU_NOTES.md).
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

struct Prepared {
  Analysis an;
  Block block;
  Separable sep;
};

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
      // Measured faster than Algorithms 1, 2 and 3 at every k here (benchmarks/CPU_NOTES.md,
      // cpu_u8_algorithms.py); those stay available by name.
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

// ---------------------------------------------------------------- portable block

void portable_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                    std::int64_t off) {
  constexpr int B = 32;
  std::int32_t acc[B] = {};
  for (int u = 0; u < bk.kh; ++u)
    for (int v = 0; v < bk.kw; ++v) {
      const std::int32_t c = bk.k32[u * bk.kw + v];
      if (c == 0) continue;
      const std::uint8_t* r = rows[u] + off + v;
      for (int b = 0; b < B; ++b) acc[b] += c * r[b];
    }
  for (int b = 0; b < B; ++b) outs[0][off + b] = clip_div(acc[b], bk.divisor);
}

void portable_blocks(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                     std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) portable_block(bk, rows, outs, i * bk.outputs);
}

// ---------------------------------------------------------------- driver

// Index of the pixel that position x (possibly outside [0, n)) reads; -1: the constant 0.
inline std::int64_t map_index(std::int64_t x, std::int64_t n, Border border) {
  if (x >= 0 && x < n) return x;
  if (border == Border::constant) return -1;
  if (border == Border::replicate) return x < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  if (x < 0 && -x < n) return -x;  // one reflection: no division (every row's border columns)
  if (x >= n && x < 2 * n - 1) return 2 * (n - 1) - x;
  const std::int64_t period = 2 * (n - 1);
  x %= period;
  if (x < 0) x += period;
  return x < n ? x : period - x;
}

constexpr int kMaxRows = kMaxK + 2;       // kernel rows + register-blocking rows - 1
constexpr double kParallelMinWork = 2e6;  // pixels x taps below which one thread is faster
constexpr double kBinomial3ParallelMin = 2.5e6;  // pixels, for the fused 3x3 binomial pass

struct Image {
  const std::uint8_t* in;
  std::int64_t h, w, in_stride;
  std::uint8_t* out;
  std::int64_t out_stride;
  Border border;
  int ay, ax;
  const std::uint8_t* zero;  // a zero row of w + 64 bytes, for the constant border
};

void row_pointers(const Image& im, std::int64_t first, std::int64_t n, const std::uint8_t** rows) {
  for (std::int64_t u = 0; u < n; ++u) {
    const std::int64_t y = map_index(first + u, im.h, im.border);
    rows[u] = y < 0 ? im.zero : im.in + y * im.in_stride;
  }
}

// Where the blocks of every output row go (the same for all rows of one call): blocks at 0, B,
// 2B, ... (the last one moved back to end at w), left to right so each block's garbage tail is
// overwritten by the next. Blocks starting in [jmin, jmax] read only image pixels and the
// interior run of them goes in one call; the few edge blocks read per-row strips in which the
// columns outside the image are mapped by the border rule.
struct RowPlan {
  std::int64_t run_j = 0, run_n = 0;  // interior run: run_n blocks from run_j
  struct Edge {
    std::int64_t jj;
    bool strip;      // reads a strip (else straight from the image)
    int lo, hi;      // strip bytes [lo, hi) are image columns jj - ax + [lo, hi)
    int src_offset;  // into src: mapped columns of the strip bytes outside [lo, hi)
  };
  std::vector<Edge> left, right;
  std::vector<std::int64_t> src;
  int nstrips = 0;
};

RowPlan plan_rows(const Block& bk, const Image& im) {
  RowPlan p;
  const std::int64_t w = im.w, B = bk.outputs;
  const std::int64_t jmin = im.ax;
  const std::int64_t jmax =
      std::min<std::int64_t>(w - B - (bk.kw - 1 - im.ax), w + im.ax - bk.reads);
  auto edge = [&](std::int64_t jj) {
    RowPlan::Edge e{jj, !(jj >= jmin && jj <= jmax), 0, 0, 0};
    if (e.strip) {
      const std::int64_t x0 = jj - im.ax;
      e.lo = static_cast<int>(std::clamp<std::int64_t>(-x0, 0, bk.reads));
      e.hi = static_cast<int>(std::clamp<std::int64_t>(w - x0, e.lo, bk.reads));
      e.src_offset = static_cast<int>(p.src.size());
      for (int s = 0; s < bk.reads; ++s)
        p.src.push_back(s >= e.lo && s < e.hi ? 0 : map_index(x0 + s, w, im.border));
      ++p.nstrips;
    }
    return e;
  };
  std::int64_t j = 0;
  for (; j < w && j < jmin; j += B) p.left.push_back(edge(j + B <= w ? j : std::max<std::int64_t>(0, w - B)));
  std::int64_t n = 0;
  while (j + n * B <= jmax && j + n * B + B <= w && j + n * B + bk.writes <= w) ++n;
  p.run_j = j;
  p.run_n = n;
  for (j += n * B; j < w; j += B) p.right.push_back(edge(j + B <= w ? j : std::max<std::int64_t>(0, w - B)));
  return p;
}

// Per chunk of rows: the edge strips of the last `ring` input rows, each built once and reused
// by the kh output rows that read it (slot y mod ring holds input row slot_y).
struct StripCache {
  int ring = 0, reads = 0, nstrips = 0;
  std::int64_t slot_y[kMaxRows];
  std::uint8_t* bytes;  // ring x nstrips x reads
  std::uint8_t* at(int slot, int e) { return bytes + (static_cast<std::int64_t>(slot) * nstrips + e) * reads; }
};

// R output rows from i0 with `fn`.
void run_rows(const Block& bk, BlockFn fn, int R, const Image& im, std::int64_t i0,
              const RowPlan& plan, StripCache& cache) {
  const int nrows = bk.kh + R - 1, B = bk.outputs;
  const std::uint8_t* rows[kMaxRows];
  const std::uint8_t* ptrs[kMaxRows];
  int slot[kMaxRows];
  alignas(32) std::uint8_t tmp[3][64];
  std::uint8_t* outs[3];
  const std::int64_t y0 = i0 - im.ay;
  row_pointers(im, y0, nrows, rows);
  const std::int64_t w = im.w;
  if (plan.nstrips > 0) {
    for (int u = 0; u < nrows; ++u) {
      const std::int64_t y = y0 + u;
      slot[u] = static_cast<int>(((y % cache.ring) + cache.ring) % cache.ring);
      if (cache.slot_y[slot[u]] == y) continue;
      cache.slot_y[slot[u]] = y;
      int e = 0;
      for (const auto* side : {&plan.left, &plan.right})
        for (const RowPlan::Edge& ed : *side) {
          if (!ed.strip) continue;
          std::uint8_t* st = cache.at(slot[u], e++);
          const std::int64_t* src = plan.src.data() + ed.src_offset;
          if (ed.hi > ed.lo)
            std::memcpy(st + ed.lo, rows[u] + (ed.jj - im.ax) + ed.lo,
                        static_cast<std::size_t>(ed.hi - ed.lo));
          for (int s = 0; s < ed.lo; ++s) st[s] = src[s] < 0 ? 0 : rows[u][src[s]];
          for (int s = ed.hi; s < bk.reads; ++s) st[s] = src[s] < 0 ? 0 : rows[u][src[s]];
        }
    }
  }
  // One edge block: written in place when its garbage tail stays inside the row, else through
  // tmp.
  int e = 0;
  auto one = [&](const RowPlan::Edge& ed) {
    const std::int64_t jj = ed.jj;
    if (ed.strip) {
      for (int u = 0; u < nrows; ++u) ptrs[u] = cache.at(slot[u], e);
      ++e;
    } else {
      for (int u = 0; u < nrows; ++u) ptrs[u] = rows[u] + (jj - im.ax);
    }
    const bool direct = jj + bk.writes <= w;
    for (int r = 0; r < R; ++r) outs[r] = direct ? im.out + (i0 + r) * im.out_stride + jj : tmp[r];
    fn(bk, ptrs, outs, 1);
    if (!direct) {
      const std::int64_t n = std::min<std::int64_t>(B, w - jj);
      for (int r = 0; r < R; ++r) std::memcpy(im.out + (i0 + r) * im.out_stride + jj, tmp[r], n);
    }
  };
  for (const auto& ed : plan.left) one(ed);
  if (plan.run_n > 0) {
    for (int u = 0; u < nrows; ++u) ptrs[u] = rows[u] + (plan.run_j - im.ax);
    for (int r = 0; r < R; ++r) outs[r] = im.out + (i0 + r) * im.out_stride + plan.run_j;
    fn(bk, ptrs, outs, plan.run_n);
  }
  for (const auto& ed : plan.right) one(ed);
}

int thread_count(int threads) { return threads > 0 ? threads : default_threads(); }

// Rows are handed out in chunks (~8 per thread) rather than one slice per thread: on a shared
// machine a briefly descheduled core then delays one chunk, not half the image.
std::int64_t chunk_of(std::int64_t n, int nthreads) {
  return std::max<std::int64_t>(1, n / (8 * std::max(1, nthreads)));
}

void run_blocks(const Block& bk, const Image& im, int threads) {
  const int R = bk.rows_out;
  const std::int64_t nblk = (im.h + R - 1) / R;
  const int nt = thread_count(threads);
  const std::int64_t chunk = chunk_of(nblk, nt);
  const RowPlan plan = plan_rows(bk, im);
  // Strip caches, one per chunk, allocated here so a failure raises MemoryError in the caller.
  const int ring = bk.kh + R - 1;
  const std::int64_t per_chunk = static_cast<std::int64_t>(ring) * plan.nstrips * bk.reads;
  std::vector<std::uint8_t> strips(static_cast<std::size_t>(((nblk + chunk - 1) / chunk) * per_chunk));
  parallel_chunks(nblk, nt, chunk, [&](std::int64_t b, std::int64_t e) {
    StripCache cache;
    cache.ring = ring;
    cache.reads = bk.reads;
    cache.nstrips = plan.nstrips;
    cache.bytes = strips.data() + (b / chunk) * per_chunk;
    std::fill(cache.slot_y, cache.slot_y + kMaxRows, std::numeric_limits<std::int64_t>::min());
    for (std::int64_t ib = b; ib < e; ++ib) {
      const std::int64_t i0 = ib * R;
      if (i0 + R <= im.h) {
        run_rows(bk, bk.fn, R, im, i0, plan, cache);
      } else {
        for (std::int64_t i = i0; i < im.h; ++i) run_rows(bk, bk.fn1, 1, im, i, plan, cache);
      }
    }
  });
}

}  // namespace

std::int64_t binomial3_band(std::int64_t stride) {
  bool seen[64] = {};
  int sets = 0;
  for (std::int64_t y = 0; y < 64; ++y) {
    const auto set = static_cast<std::size_t>(((y * stride) >> 6) & 63);
    sets += !seen[set];
    seen[set] = true;
  }
  return std::min<std::int64_t>(64, std::max(4, 4 * sets));
}

namespace {

void run_separable(const Separable& s, const Image& im, int threads) {
  const std::int64_t w = im.w, tlen = sep_temp_len(w, s.kw);
  const int nt = thread_count(threads);
  const std::int64_t chunk = chunk_of(im.h, nt);
  // Input row pointers, border rows mapped: output row i reads rows[i .. i + kh).
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(im.h + s.kh - 1));
  row_pointers(im, -im.ay, static_cast<int>(rows.size()), rows.data());
  std::int64_t border_src[kMaxK], border_dst[kMaxK];  // the same for every row
  for (int c = 0; c < s.kw - 1; ++c) {
    const std::int64_t x = c < im.ax ? c - im.ax : w + (c - im.ax);
    border_src[c] = map_index(x, w, im.border);
    border_dst[c] = im.ax + x;
  }
  if (s.binomial3_scale && im.ay == 1 && im.ax == 1 && w >= kBinomial3MinW) {
    const int phase = static_cast<int>(-reinterpret_cast<std::uintptr_t>(im.out) & 63);
    const Binomial3 g{rows.data(), w,     border_src[0],     border_src[1],
                      im.out,      im.out_stride, s.binomial3_scale, phase,
                      binomial3_band(im.in_stride)};
    // The fused pass takes ~0.03 ns per pixel on one core, so below kBinomial3ParallelMin
    // pixels the whole job is about as long as a worker's wake-up (20-40 us on an idle vCPU;
    // on this VM most wakes even land on the caller's vCPU): one thread was faster from
    // 1280x720 to 1920x1080 in cpu_u8.py (4 alternating runs), two from 2048x1536 on.
    const double px = static_cast<double>(im.h) * static_cast<double>(w);
    const int nt3 = px < kBinomial3ParallelMin ? 1 : nt;
    parallel_chunks(im.h, nt3, chunk_of(im.h, nt3),
                    [&](std::int64_t b, std::int64_t e) { binomial3_rows_avx512(g, b, e); });
    return;
  }
  // Algorithm 7's temporary row, one per chunk, allocated here so a failure raises MemoryError
  // in the caller rather than terminating a worker thread.
  const std::int64_t nchunks = (im.h + chunk - 1) / chunk;
  std::vector<std::int16_t, Aligned64<std::int16_t>> temps(
      static_cast<std::size_t>(nchunks * tlen), 0);
  // Rows narrower than one AVX-512 vector would run the plane passes' scalar remainder: the
  // AVX2 passes (same arithmetic, half the width) cover 32 .. 63 columns with vectors.
  const SepRowsFn run = s.run == &sep_rows_avx512 && w < 64 ? &sep_rows_avx2 : s.run;
  parallel_chunks(im.h, nt, chunk, [&](std::int64_t b, std::int64_t e) {
    const SepRows j{rows.data(), w,          temps.data() + (b / chunk) * tlen, im.ax,
                    border_src,  border_dst, im.out,                            im.out_stride};
    run(s, j, b, e);
  });
}

}  // namespace

void build_portable(Block& b, const std::int32_t* k) {
  b.k32.assign(k, k + b.kh * b.kw);
  b.outputs = 32;
  b.reads = 32 + b.kw - 1;
  b.writes = 32;
  b.fn = b.fn1 = &portable_blocks;
  b.rows_out = 1;
}

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

}  // namespace

Analysis analyze(const std::int32_t* k, int kh, int kw, std::int64_t divisor,
                 const std::string& algorithm, Isa isa) {
  return prepared(k, kh, kw, divisor, algorithm, isa)->an;
}

void filter2d(const std::uint8_t* in, std::int64_t h, std::int64_t w, std::int64_t in_stride,
              std::uint8_t* out, std::int64_t out_stride, const std::int32_t* k, int kh, int kw,
              std::int64_t divisor, Border border, int ay, int ax, const std::string& algorithm,
              int threads) {
  if (h < 1 || w < 1) throw ValueError("image is empty");
  if (ay < 0 || ay >= kh || ax < 0 || ax >= kw)
    throw ValueError("anchor must lie inside the kernel");
  const auto p = prepared(k, kh, kw, divisor, algorithm, isa_in_use());
  std::vector<std::uint8_t> zero(border == Border::constant ? static_cast<std::size_t>(w + 64) : 0,
                                 0);
  Image im{in, h, w, in_stride, out, out_stride, border, ay, ax, zero.data()};
  const bool sep = p->an.algo == Algo::sep;
  // Small images run on the calling thread: waking workers costs more than they save.
  const double work = static_cast<double>(h) * static_cast<double>(w) * (sep ? kh + kw : kh * kw);
  if (work < kParallelMinWork) threads = 1;
  if (sep)
    run_separable(p->sep, im, threads);
  else
    run_blocks(p->block, im, threads);
}

}  // namespace u8
}  // namespace tc

namespace tc {
std::string simd_u8_note() { return u8::path_note(); }
}  // namespace tc
