// Algorithm 7 on AVX2 (256-bit vectors): the passes of sep_impl.hpp with V256.
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"
#include "sep_impl.hpp"

namespace tc {
namespace u8 {

void sep_vertical_avx2(const Separable& s, const std::uint8_t* const* rows, std::int64_t w,
                       std::int16_t* v) {
  sep_vertical<V256>(s, rows, w, v);
}

void sep_horizontal_avx2(const Separable& s, const std::int16_t* t, std::int64_t w,
                         std::uint8_t* out) {
  sep_horizontal<V256>(s, t, w, out);
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
