// Algorithm 7 (separable kernel = outer(a, b)) written once over vector traits V (V256: AVX2,
// V512: AVX-512); include it inside the including file's target region. The two 1-D passes are
// merged row by row through a temporary row of 16-bit column sums. Unlike the paper the temporary
// keeps the undivided sums (dividing after each pass is not floor(sum / divisor)).
// Vertical k x 1 pass: 16-bit pixels combined by the prepared taps (mirrored rows of symmetric
// factors added first, powers of two shifted, others mullo): every step is exact modulo 2^16 and
// the column sums fit the 16-bit reading analyze() chose.
// Two layouts of the temporary row:
// - planes (16-bit horizontal IRs, the whole sum fits 16 bits): each vector load of kBytes
//   pixels is split into its even columns (and 0x00FF) and odd columns (>> 8), summed into an
//   even-column and an odd-column plane; the horizontal pass reads each tap from the plane and
//   offset its parity selects and stores even | odd << 8, kBytes output pixels per vector. No
//   pixel is widened or narrowed by a shuffle (vpmovzxbw, vpmovuswb: these issue 2 per cycle
//   against 4 for adds and ands; a hand-written 3x3 took 27% fewer cycles per pixel this way).
// - natural order (32-bit horizontal IRs): pixels zero-extended, then madd_epi16 on coefficient
//   pairs into 32-bit IRs (columns read as uint16 are stored biased by -32768 so madd's signed
//   reading is exact).
#pragma once
#include <cstdint>

#include "simd_u8.hpp"

namespace tc {
namespace u8 {
namespace {

// acc[q] = sum over taps of term(tap, q), q < M; fetch(index, a, add) sets (add: adds to)
// a[0 .. M) the M vectors at row or column `index`.
template <class V, int M, class Fetch>
inline void sep_taps(const Separable::Taps& taps, const typename V::T* coef,
                     typename V::T* acc, Fetch fetch) {
  using T = typename V::T;
  auto term = [&](int i, T* a) {
    const SepTap& tp = taps.t[i];
    fetch(tp.v, a, false);
    if (tp.m >= 0) fetch(tp.m, a, true);
    if (tp.shift == 1) {  // x2 as an add: adds issue on all four vector pipes, shifts on two
      for (int q = 0; q < M; ++q) a[q] = V::add16(a[q], a[q]);
    } else if (tp.shift > 1) {
      const __m128i sh = _mm_cvtsi32_si128(tp.shift);
      for (int q = 0; q < M; ++q) a[q] = V::sll16(a[q], sh);
    } else if (tp.shift < 0) {
      for (int q = 0; q < M; ++q) a[q] = V::mullo16(a[q], coef[i]);
    }
  };
  if (taps.n == 0) {
    for (int q = 0; q < M; ++q) acc[q] = V::zero();
    return;
  }
  term(0, acc);
  for (int i = 1; i < taps.n; ++i) {
    T a[M];
    term(i, a);
    for (int q = 0; q < M; ++q) acc[q] = V::add16(acc[q], a[q]);
  }
}

template <class V>
inline void tap_coefs(const Separable::Taps& taps, typename V::T* coef) {
  for (int i = 0; i < taps.n; ++i) coef[i] = V::set1_16(static_cast<short>(taps.t[i].c));
}

// chunk(x, n) over [x0, w) in steps of N, 2, then 1 units of `per` columns (wide steps share each
// tap's set-up over more vectors: the taps are run-time data); returns the first column left.
template <int N, class Chunk>
inline std::int64_t sweep(std::int64_t x0, std::int64_t w, std::int64_t per, Chunk chunk) {
  std::int64_t x = x0;
  for (; x + N * per <= w; x += N * per) chunk(x, std::integral_constant<int, N>{});
  for (; x + 2 * per <= w; x += 2 * per) chunk(x, std::integral_constant<int, 2>{});
  for (; x + per <= w; x += per) chunk(x, std::integral_constant<int, 1>{});
  return x;
}

// Software prefetch of the row the next output row adds (the others were read by the previous
// output rows), kPrefetchAhead bytes ahead of a chunk of `bytes` pixels.
inline void prefetch_row(const std::uint8_t* row, std::int64_t x, int bytes) {
  for (int o = 0; o < bytes; o += 64)
    prefetch_at(row, x + kPrefetchAhead + o);
}

// ---------------------------------------------------------------- plane layout (16-bit IRs)

// Vectors per step: 4 even + 4 odd accumulators with 32 registers (AVX-512), 2 + 2 with 16.
template <class V>
constexpr int kPlaneN = V::kBytes == 64 ? 4 : 2;

// Column c (c may be negative: border columns) lives at p[c & 1][c >> 1].
struct Planes {
  std::int16_t* p[2];
  std::int16_t& at(std::int64_t c) const { return p[c & 1][c >> 1]; }
};

// chunk(x, n) for the plane passes, n vectors of B columns from an even x: one vector at 0, then
// steps from `phase` (even: the row's first column whose byte address starts a cache line, so
// the steps' loads and stores do not split lines), and a last vector overlapping from an even
// column. Returns the first column left to scalar code (w - 1 for odd w; 0 when w < B). Rows
// narrower than 8 vectors pass phase 0: there the extra first vector cost more than the split
// lines (300x200: 5% slower aligned).
template <int N, int B, class Chunk>
inline std::int64_t plane_sweep(std::int64_t w, int phase, Chunk chunk) {
  if (w < B) return 0;
  std::int64_t x = 0;
  if (phase > 0 && phase + B <= w) {
    chunk(0, std::integral_constant<int, 1>{});
    x = phase;
  }
  x = sweep<N>(x, w, B, chunk);
  if (x < w) {
    x = (w - B) & ~std::int64_t{1};
    chunk(x, std::integral_constant<int, 1>{});
    x += B;
  }
  return x;
}

template <class V>
inline void sep_vertical_planes(const Separable& s, const typename V::T* coef,
                                const std::uint8_t* const* rows, std::int64_t w, const Planes pl,
                                int phase) {
  using T = typename V::T;
  constexpr int B = V::kBytes, L = B / 2;  // pixels per load, 16-bit elements per plane vector
  const T lo = V::set1_16(0x00FF);
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    prefetch_row(rows[s.kh - 1], x, N * B);
    T acc[2 * N];
    sep_taps<V, 2 * N>(s.vtaps, coef, acc, [&](int u, T* a, bool add) {
      for (int q = 0; q < N; ++q) {
        const T r = V::load(rows[u] + x + B * q);
        const T e = V::and_(r, lo), o = V::template srli16<8>(r);
        a[q] = add ? V::add16(a[q], e) : e;
        a[N + q] = add ? V::add16(a[N + q], o) : o;
      }
    });
    for (int q = 0; q < N; ++q) {
      V::store(pl.p[0] + x / 2 + L * q, acc[q]);
      V::store(pl.p[1] + x / 2 + L * q, acc[N + q]);
    }
  };
  std::int64_t x = plane_sweep<kPlaneN<V>, B>(w, phase, chunk);
  for (; x < w; ++x) pl.at(x) = sep_column(s, rows, x);
}

// How the horizontal plane passes finish, copied out of the Separable into a local: the byte
// stores to the output may alias anything, so fields read through a reference were reloaded
// after every store (with the plane pointers: ~2x the cycles of a 3x3 row).
struct PlaneOut {
  bool s16, clip255;  // max with 0 first; min with 255 after dividing
  Divider div;
  explicit PlaneOut(const Separable& s)
      : s16(s.h_ir == IR::s16), clip255(s.clip255), div(s.div) {}
};

// acc[0 .. N) even and acc[N .. 2N) odd 16-bit sums -> N * kBytes output pixels at out: max with
// 0, divide (Algorithm 5), min with 255, even | odd << 8. Each choice is made once for all 2N
// vectors (per vector, the branches cost as much as the math); always inlined (as a call it
// passed acc through memory: 37% of a 3x3 run).
template <class V, int N>
__attribute__((always_inline)) inline void store_planes_out(const PlaneOut& po,
                                                            typename V::T* acc,
                                                            std::uint8_t* out) {
  using T = typename V::T;
  constexpr int M = 2 * N;
  if (po.s16)
    for (int q = 0; q < M; ++q) acc[q] = V::max16(acc[q], V::zero());
  const __m128i sb = _mm_cvtsi32_si128(po.div.b);
  if (po.div.kase == 'A') {
    for (int q = 0; q < M; ++q) acc[q] = V::srl16(acc[q], sb);
  } else {  // cases B and C as vdiv16
    const T f = V::set1_16(static_cast<short>(static_cast<std::uint16_t>(po.div.f)));
    if (po.div.kase == 'B')
      for (int q = 0; q < M; ++q) acc[q] = V::add16(acc[q], V::set1_16(1));
    for (int q = 0; q < M; ++q) acc[q] = V::srl16(V::mulhi_epu16(acc[q], f), sb);
  }
  if (po.clip255)
    for (int q = 0; q < M; ++q) acc[q] = V::min_epu16(acc[q], V::set1_16(255));
  for (int q = 0; q < N; ++q)
    V::store(out + V::kBytes * q, V::or_(acc[q], V::template slli16<8>(acc[N + q])));
}

// Exact scalar output at column x from the planes (row remainders).
inline std::uint8_t planes_scalar_output(const Separable& s, const Planes& pl, std::int64_t x,
                                         int ax) {
  std::int16_t t[kMaxTaps];
  for (int v = 0; v < s.kw; ++v) t[v] = pl.at(x + v - ax);
  return sep_scalar_output(s, t);
}

template <class V>
inline void sep_horizontal_planes(const Separable& s, const typename V::T* coef, const Planes pl,
                                  int ax, std::int64_t w, std::uint8_t* out, int phase) {
  using T = typename V::T;
  constexpr int B = V::kBytes, L = B / 2;
  const PlaneOut po(s);
  const Separable::Taps taps = s.htaps;  // a local: see PlaneOut
  auto chunk = [&](std::int64_t x, auto n) {  // outputs x .. x + N * B, x even
    constexpr int N = decltype(n)::value;
    T acc[2 * N];
    // Tap at column offset d = c - ax: the even output 2j reads column 2j + d, the odd output
    // 2j + 1 column 2j + 1 + d: plane d & 1 at j + (d >> 1), plane (d + 1) & 1 at
    // j + ((d + 1) >> 1).
    sep_taps<V, 2 * N>(taps, coef, acc, [&](int c, T* a, bool add) {
      const int d = c - ax;
      const std::int16_t* pe = pl.p[d & 1] + x / 2 + (d >> 1);
      const std::int16_t* po = pl.p[(d + 1) & 1] + x / 2 + ((d + 1) >> 1);
      for (int q = 0; q < N; ++q) {
        const T e = V::load(pe + L * q), o = V::load(po + L * q);
        a[q] = add ? V::add16(a[q], e) : e;
        a[N + q] = add ? V::add16(a[N + q], o) : o;
      }
    });
    store_planes_out<V, N>(po, acc, out + x);
  };
  std::int64_t x = plane_sweep<kPlaneN<V>, B>(w, phase, chunk);
  for (; x < w; ++x) out[x] = planes_scalar_output(s, pl, x, ax);
}

// Symmetric 3- and 5-tap factors with the anchor at the centre (the binomial Gaussians among
// them): the same plane passes with the tap structure known at compile time, so the rows and
// plane offsets are immediates, each column vector is loaded once for all taps that read it,
// and no per-tap pointer arithmetic or register spills remain (the run-time tap loop above
// took ~2x the cycles of this form at 3x3). Only the multipliers stay run-time data: x1, x2
// (an add) or mullo, chosen once per tap and chunk.
template <class V, int K>
struct SymTaps {
  static constexpr int R = K / 2;  // taps i < R: entries i and K - 1 - i; tap R: the centre
  int kind[R + 1];                 // 0: x1, 1: x2, 2: mullo by c[i]
  typename V::T c[R + 1];
  explicit SymTaps(const std::vector<std::int32_t>& f) {  // f: K entries (else unused: ones)
    for (int i = 0; i <= R; ++i) {
      if (static_cast<int>(f.size()) != K) {
        kind[i] = 0;
        c[i] = V::set1_16(1);
        continue;
      }
      kind[i] = f[i] == 1 ? 0 : f[i] == 2 ? 1 : 2;
      c[i] = V::set1_16(static_cast<short>(f[i]));
    }
  }
  // a[0 .. M) times tap i's entry
  template <int M>
  void scale(int i, typename V::T* a) const {
    if (kind[i] == 1)
      for (int q = 0; q < M; ++q) a[q] = V::add16(a[q], a[q]);
    else if (kind[i] == 2)
      for (int q = 0; q < M; ++q) a[q] = V::mullo16(a[q], c[i]);
  }
};

// Whether the sym passes compute factor f: symmetric, 3 or 5 taps.
inline bool sym_factor(const std::vector<std::int32_t>& f) {
  const int k = static_cast<int>(f.size());
  if (k != 3 && k != 5) return false;
  for (int v = 0; v < k; ++v)
    if (f[v] != f[k - 1 - v]) return false;
  return true;
}

template <class V, int K>
inline void sep_vertical_sym(const SymTaps<V, K>& taps, const Separable& s,
                             const std::uint8_t* const* rows, std::int64_t w, const Planes pl,
                             int phase) {
  using T = typename V::T;
  constexpr int B = V::kBytes, L = B / 2, R = K / 2;
  const SymTaps<V, K> tp = taps;  // locals: see PlaneOut
  const T lo = V::set1_16(0x00FF);
  const std::uint8_t* r[K];
  for (int u = 0; u < K; ++u) r[u] = rows[u];
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    prefetch_row(r[K - 1], x, N * B);
    T acc[2 * N];
    unroll<R + 1>([&](auto I) {
      constexpr int i = decltype(I)::value;
      T a[2 * N];
      for (int q = 0; q < N; ++q) {
        const T p = V::load(r[i] + x + B * q);
        a[q] = V::and_(p, lo);
        a[N + q] = V::template srli16<8>(p);
        if constexpr (i < R) {
          const T m = V::load(r[K - 1 - i] + x + B * q);
          a[q] = V::add16(a[q], V::and_(m, lo));
          a[N + q] = V::add16(a[N + q], V::template srli16<8>(m));
        }
      }
      tp.template scale<2 * N>(i, a);
      for (int q = 0; q < 2 * N; ++q) acc[q] = i == 0 ? a[q] : V::add16(acc[q], a[q]);
    });
    for (int q = 0; q < N; ++q) {
      V::store(pl.p[0] + x / 2 + L * q, acc[q]);
      V::store(pl.p[1] + x / 2 + L * q, acc[N + q]);
    }
  };
  std::int64_t x = plane_sweep<kPlaneN<V>, B>(w, phase, chunk);
  for (; x < w; ++x) pl.at(x) = sep_column(s, rows, x);
}

// Vectors per step of the sym horizontal pass: its K + 1 column vectors per vector stay in
// registers (32 on AVX-512: 2 steps; 16 on AVX2: 1).
template <class V>
constexpr int kSymN = V::kBytes == 64 ? 2 : 1;

template <class V, int K>
inline void sep_horizontal_sym(const SymTaps<V, K>& taps, const Separable& s, const Planes pl,
                               std::int64_t w, std::uint8_t* out, int phase) {
  using T = typename V::T;
  constexpr int B = V::kBytes, L = B / 2, R = K / 2;
  const SymTaps<V, K> tp = taps;  // locals: see PlaneOut
  const PlaneOut po(s);
  auto chunk = [&](std::int64_t x, auto n) {  // outputs x .. x + N * B, x even
    constexpr int N = decltype(n)::value;
    // column offset k (-R .. R + 1 around the even output): plane k & 1 at j + (k >> 1)
    auto col = [&](int q, auto k) {
      constexpr int c = decltype(k)::value;
      return V::load(pl.p[c & 1] + x / 2 + (c >> 1) + L * q);
    };
    T acc[2 * N];
    unroll<R + 1>([&](auto I) {
      constexpr int i = decltype(I)::value;
      constexpr int d = i - R;  // this tap's column offset; its mirror's is -d
      T a[2 * N];
      for (int q = 0; q < N; ++q) {
        a[q] = col(q, std::integral_constant<int, d>{});
        a[N + q] = col(q, std::integral_constant<int, d + 1>{});
        if constexpr (i < R) {
          a[q] = V::add16(a[q], col(q, std::integral_constant<int, -d>{}));
          a[N + q] = V::add16(a[N + q], col(q, std::integral_constant<int, 1 - d>{}));
        }
      }
      tp.template scale<2 * N>(i, a);
      for (int q = 0; q < 2 * N; ++q) acc[q] = i == 0 ? a[q] : V::add16(acc[q], a[q]);
    });
    store_planes_out<V, N>(po, acc, out + x);
  };
  std::int64_t x = plane_sweep<kSymN<V>, B>(w, phase, chunk);
  for (; x < w; ++x) out[x] = planes_scalar_output(s, pl, x, R);
}

// ---------------------------------------------------------------- natural order (32-bit IRs)

// Vectors per step: 8 with 32 registers (AVX-512), 4 with 16 (AVX2: 8 spills).
template <class V>
constexpr int kSepN = V::kBytes == 64 ? 8 : 4;

template <class V>
inline void sep_vertical(const Separable& s, const typename V::T* coef,
                         const std::uint8_t* const* rows, std::int64_t w, std::int16_t* v) {
  using T = typename V::T;
  constexpr int L = V::kBytes / 2;  // pixels per vector
  if (w < L) {
    for (std::int64_t x = 0; x < w; ++x) v[x] = sep_column(s, rows, x);
    return;
  }
  const T flip = V::set1_16(s.biased() ? static_cast<short>(0x8000) : 0);
  const bool biased = s.biased();
  auto chunk = [&](std::int64_t x, auto n) {
    constexpr int N = decltype(n)::value;
    prefetch_row(rows[s.kh - 1], x, N * L);
    T acc[N];
    sep_taps<V, N>(s.vtaps, coef, acc, [&](int u, T* a, bool add) {
      for (int q = 0; q < N; ++q) {
        const T r = V::load_u8_16(rows[u] + x + L * q);
        a[q] = add ? V::add16(a[q], r) : r;
      }
    });
    if (biased)
      for (int q = 0; q < N; ++q) acc[q] = V::xor_(acc[q], flip);
    for (int q = 0; q < N; ++q) V::store(v + x + L * q, acc[q]);
  };
  if (sweep<kSepN<V>>(0, w, L, chunk) < w)
    chunk(w - L, std::integral_constant<int, 1>{});  // overlap the last vector
}

// N groups of L columns per step (L/2 even and L/2 odd outputs each), sharing the coefficient
// pairs; the 32-bit sums of outputs 2j (low half) and 2j+1 (high half) meet in one 16-bit pair.
template <class V, int N>
inline void horizontal32_chunk(const Separable& s, const std::int16_t* t, const typename V::T* pairs,
                               int np, std::uint8_t* out) {
  using T = typename V::T;
  constexpr int L = V::kBytes / 2;
  T e[N], o[N];
  for (int q = 0; q < N; ++q) e[q] = o[q] = V::zero();
  for (int i = 0; i < np; ++i) {
    for (int q = 0; q < N; ++q) {
      const std::int16_t* tq = t + L * q + 2 * i;
      e[q] = V::add32(e[q], V::madd16(V::load(tq), pairs[i]));
      o[q] = V::add32(o[q], V::madd16(V::load(tq + 1), pairs[i]));
    }
  }
  // Modulo 2^32 like every 32-bit IR: the final sum fits int32, so wrapping here is exact.
  const T bias = V::set1_32(static_cast<int>(static_cast<std::uint32_t>(s.bias & 0xFFFFFFFF)));
  for (int q = 0; q < N; ++q) {
    const T eq = vfinish32<V>(V::add32(e[q], bias), s.div);
    const T oq = vfinish32<V>(V::add32(o[q], bias), s.div);
    V::store_u8_sat16(out + L * q, V::or_(eq, V::template slli32<16>(oq)));
  }
}

template <class V>
inline void sep_horizontal32(const Separable& s, const typename V::T* pairs,
                             const std::int16_t* t, std::int64_t w, std::uint8_t* out) {
  constexpr int L = V::kBytes / 2;
  const int np = (s.kw + 1) / 2;
  std::int64_t x = sweep<2>(0, w, L, [&](std::int64_t x, auto n) {
    horizontal32_chunk<V, decltype(n)::value>(s, t + x, pairs, np, out + x);
  });
  if (x < w && w >= L)
    horizontal32_chunk<V, 1>(s, t + w - L, pairs, np, out + w - L);
  else
    for (; x < w; ++x) out[x] = sep_scalar_output(s, t + x);
}

// Output rows [b, e): the coefficient vectors are set up once for all of them.
template <class V>
void sep_rows(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e) {
  using T = typename V::T;
  T vcoef[kMaxTaps], hcoef[kMaxTaps], pairs[(kMaxTaps + 1) / 2];
  tap_coefs<V>(s.vtaps, vcoef);
  tap_coefs<V>(s.htaps, hcoef);
  for (int i = 0; i < (s.kw + 1) / 2; ++i) {
    const std::int32_t lo = s.b[2 * i], hi = 2 * i + 1 < s.kw ? s.b[2 * i + 1] : 0;
    pairs[i] = V::set1_32(static_cast<std::int32_t>(
        (static_cast<std::uint32_t>(lo) & 0xFFFFu) | (static_cast<std::uint32_t>(hi) << 16)));
  }
  const std::int16_t zero_col = static_cast<std::int16_t>(s.biased() ? 0x8000 : 0);
  const bool planes = s.h_ir != IR::s32;
  // Natural order: t[ax] (column 0) starts a cache line. Planes: per row, placed so that the
  // column `phase` at which the row's output bytes start a cache line does (plane_sweep).
  const std::int64_t half = ((j.w + s.kw + 1) / 2 + 64) & ~std::int64_t{31};
  std::int16_t* t = j.t + 32 - j.ax;
  const int vsym = planes && sym_factor(s.a) ? s.kh : 0;
  const int hsym = planes && sym_factor(s.b) && j.ax == s.kw / 2 ? s.kw : 0;
  const SymTaps<V, 3> v3(s.a), h3(s.b);
  const SymTaps<V, 5> v5(s.a), h5(s.b);
  for (std::int64_t i = b; i < e; ++i) {
    const std::uint8_t* const* rows = j.rows + i;
    std::uint8_t* out = j.out + i * j.out_stride;
    int phase = static_cast<int>(-reinterpret_cast<std::uintptr_t>(out) & (V::kBytes - 1));
    if ((phase & 1) || j.w < 8 * V::kBytes) phase = 0;  // planes start at even columns
    const Planes pl{{j.t + 64 - phase / 2, j.t + 64 - phase / 2 + half}};
    if (vsym == 3)
      sep_vertical_sym<V, 3>(v3, s, rows, j.w, pl, phase);
    else if (vsym == 5)
      sep_vertical_sym<V, 5>(v5, s, rows, j.w, pl, phase);
    else if (planes)
      sep_vertical_planes<V>(s, vcoef, rows, j.w, pl, phase);
    else
      sep_vertical<V>(s, vcoef, rows, j.w, t + j.ax);
    // Border columns of the temporary row: the column sums are linear in the pixels, so a
    // reflected/replicated column's sum is the sum at the mapped column (recomputed from the
    // pixels: reading it back right after the vector stores stalls store forwarding).
    for (int c = 0; c < s.kw - 1; ++c) {
      const std::int64_t m = j.border_src[c];
      const std::int16_t v = m < 0 ? zero_col : sep_column(s, rows, m);
      if (planes)
        pl.at(j.border_dst[c] - j.ax) = v;
      else
        t[j.border_dst[c]] = v;
    }
    if (hsym == 3)
      sep_horizontal_sym<V, 3>(h3, s, pl, j.w, out, phase);
    else if (hsym == 5)
      sep_horizontal_sym<V, 5>(h5, s, pl, j.w, out, phase);
    else if (planes)
      sep_horizontal_planes<V>(s, hcoef, pl, j.ax, j.w, out, phase);
    else
      sep_horizontal32<V>(s, pairs, t, j.w, out);
  }
}

}  // namespace
}  // namespace u8
}  // namespace tc
