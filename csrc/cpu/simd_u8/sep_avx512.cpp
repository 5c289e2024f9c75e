// Algorithm 7 on AVX-512 (512-bit vectors): the passes of sep_impl.hpp with V512.
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx512_common.hpp"
#include "sep_impl.hpp"

namespace tc {
namespace u8 {

void sep_rows_avx512(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e) {
  sep_rows<V512>(s, j, b, e);
}

}  // namespace u8
}  // namespace tc
TC_AVX512_END
#endif  // TC_X86
