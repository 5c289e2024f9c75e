// simd_u8 dispatch (portable C++): border and algorithm names, Algorithm 4's exact division,
// the scalar outputs every tier shares, and the run-time choice of vector tier (AVX-512 for sep
// and pairs, AVX2, portable). The kernel analysis is analysis.cpp, the row driver driver.cpp.
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

}  // namespace u8
}  // namespace tc

namespace tc {
std::string simd_u8_note() { return u8::path_note(); }
}  // namespace tc
