// "pairs" on AVX2 (256-bit vectors, 32 outputs per block): pairs_impl.hpp with V256.
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx2_common.hpp"
#include "pairs_impl.hpp"

namespace tc {
namespace u8 {

void build_pairs_avx2(Block& b, const std::int32_t* k) { build_pairs<V256>(b, k); }

}  // namespace u8
}  // namespace tc
TC_AVX2_END
#endif  // TC_X86
