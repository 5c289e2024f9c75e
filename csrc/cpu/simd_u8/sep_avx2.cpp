// Algorithm 7 on AVX2 (256-bit vectors): the passes of sep_impl.hpp with V256.
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"
#include "sep_impl.hpp"

namespace tc {
namespace u8 {

void sep_rows_avx2(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e) {
  sep_rows<V256>(s, j, b, e);
}

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
